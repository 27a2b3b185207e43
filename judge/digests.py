"""Digests, seeded hashes and timestamps: the one place that spells ``sha256:`` and UTC.

Every content digest in judge is ``sha256:<hex>`` (cache keys and the judgment ids derived
from them included; ``tests/test_architecture.py`` checks no other module writes the prefix);
every seeded choice (audits, double labels,
display order, cluster splits) is a keyed SHA-256 so that it needs no shared state; every
stored timestamp is UTC ISO 8601.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

PREFIX = "sha256:"


def _bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def sha256_hex(data: bytes | str) -> str:
    """The bare SHA-256 hex digest of bytes (or UTF-8 text): hashes kept without a prefix
    (session tokens, ids derived from content)."""
    return hashlib.sha256(_bytes(data)).hexdigest()


def sha256_raw(data: bytes | str) -> bytes:
    """The 32 bytes of the SHA-256 of bytes (or UTF-8 text): a part of a larger digest."""
    return hashlib.sha256(_bytes(data)).digest()


def bytes_digest(data: bytes) -> str:
    """``sha256:<hex>`` of raw bytes."""
    return PREFIX + sha256_hex(data)


def text_digest(text: str) -> str:
    """``sha256:<hex>`` of UTF-8 text."""
    return bytes_digest(text.encode("utf-8"))


def canonical_json(obj: Any) -> str:
    """The canonical JSON of ``obj``: sorted keys, no spaces, UTF-8 kept, str() for the rest."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(obj: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``obj``."""
    return text_digest(canonical_json(obj))


def cache_key(
    *,
    rubric_digest: str,
    evidence_digest: str,
    prompt_digest: str,
    model: str,
    params: Mapping[str, Any],
    order: str | None,
    sample: int,
    variant: int = 0,
    selector_version: str = "",
    masked_from: str | None = None,
) -> str:
    """The identity of one paid-for judgment.

    The selector version is part of it although the prompt digest already covers what the
    model saw: a card binds one selector version, so judgments made under another are not
    reused for it (a selector change is rare; a store whose cached judgments carry an old
    version could never be calibrated as one judge).

    ``masked_from``: for the masked check of a case (judge.judging.masking), the case it checks:
    two runs can mask down to one prompt, and each needs its own check."""
    key = digest(
        {
            "rubric": rubric_digest,
            "evidence": evidence_digest,
            "prompt": prompt_digest,
            "model": model,
            "params": dict(params),
            "order": order,
            "sample": sample,
            "variant": variant,
            "selector": selector_version,
        }
    )
    return key if masked_from is None else digest({"cache_key": key, "masked_from": masked_from})


#: The parts of a cache key: the parameters of :func:`cache_key`.
CACHE_KEY_PARTS: tuple[str, ...] = tuple(inspect.signature(cache_key).parameters)


def cache_key_of(source: object) -> str:
    """The cache key of a record that carries every part of one as an attribute of the same
    name (a judgment's Provenance)."""
    return cache_key(**{part: getattr(source, part) for part in CACHE_KEY_PARTS})


class Hasher:
    """A ``sha256:<hex>`` digest built piece by piece (files, rows, training data) without
    holding the whole input: ``Hasher(first).update(more)...digest()``."""

    def __init__(self, data: bytes | str = b"") -> None:
        self._sha = hashlib.sha256(_bytes(data))

    def update(self, data: bytes | str) -> Hasher:
        """Add bytes (or UTF-8 text) to what is digested; the hasher itself, to chain."""
        self._sha.update(_bytes(data))
        return self

    def digest(self) -> str:
        """``sha256:<hex>`` of everything added so far."""
        return PREFIX + self._sha.hexdigest()


def is_digest(value: str) -> bool:
    """Whether ``value`` is written as a digest (``sha256:...``) rather than, say, ID@VERSION."""
    return value.startswith(PREFIX)


def full_digest(value: str) -> str:
    """A digest given with or without its ``sha256:`` prefix, with it."""
    return value if is_digest(value) else PREFIX + value


def digest_hex(value: str) -> str:
    """The hex of a digest: its ``sha256:`` prefix stripped (a bare hex given stays as it is)."""
    return value.removeprefix(PREFIX)


def judgment_id(key: str) -> str:
    """The id of the judgment paid for under cache key ``key``: ``j-`` and its first 20 hex
    digits."""
    return "j-" + digest_hex(key)[:20]


def short_hash(text: str, n: int = 20) -> str:
    """The first ``n`` hex digits of SHA-256(text): ids derived from content."""
    return sha256_hex(text)[:n]


def content_uuid(*parts: Any) -> str:
    """A UUID fixed by ``parts``: the first 128 bits of SHA-256 of their canonical JSON, with
    the version (8, "custom", RFC 9562) and variant bits set. Ids a platform keys records by,
    derived from content, so that sending the same thing again names the same record."""
    raw = bytearray(sha256_raw(canonical_json(list(parts)))[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def seeded_hex(seed: int | str, key: str) -> str:
    """SHA-256 hex of ``"{seed}:{key}"``: a seeded order of keys without shared state."""
    return sha256_hex(f"{seed}:{key}")


def seeded_unit(seed: int | str, key: str) -> float:
    """A number in [0, 1) fixed by (seed, key): seeded sampling without shared state.

    The same key is always (or never) chosen under one seed, however many other keys are
    drawn with it."""
    return int(seeded_hex(seed, key)[:15], 16) / 16**15


def utcnow() -> datetime:
    """The current moment, timezone-aware UTC."""
    return datetime.now(UTC)


def now_iso() -> str:
    """The current moment as UTC ISO 8601 text (how the store keeps timestamps)."""
    return utcnow().isoformat()
