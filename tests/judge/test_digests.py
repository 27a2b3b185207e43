"""judge/digests.py: every digest is spelled there. The expected values are worked out by hand
with sha256sum (``printf 'abc' | sha256sum``), not by the code under test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from judge.digests import (
    Hasher,
    digest_hex,
    full_digest,
    is_digest,
    judgment_id,
    sha256_raw,
    text_digest,
)
from judge.evidence import items_digest
from judge.review import runs_digest
from judge.store.tables import TransferTables, row_digest

EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # sha256 of b""
ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256 of b"abc"


def test_a_hasher_digests_its_pieces_as_one_text() -> None:
    assert Hasher().digest() == "sha256:" + EMPTY
    assert Hasher("a").update(b"b").update("c").digest() == "sha256:" + ABC
    assert Hasher("abc").digest() == text_digest("abc")


def test_the_raw_digest_is_the_32_bytes_of_the_hex() -> None:
    assert sha256_raw("abc") == sha256_raw(b"abc") == bytes.fromhex(ABC)


def test_the_prefix_is_recognised_added_and_stripped() -> None:
    assert is_digest("sha256:" + ABC)
    assert not is_digest("agent-run-success@2") and not is_digest(ABC)
    assert full_digest(ABC) == full_digest("sha256:" + ABC) == "sha256:" + ABC
    assert digest_hex("sha256:" + ABC) == digest_hex(ABC) == ABC


def test_a_judgment_id_is_the_first_20_hex_digits_of_its_cache_key() -> None:
    assert judgment_id("sha256:" + ABC) == "j-ba7816bf8f01cfea4141"


def test_the_digests_of_evidence_plans_and_tables_are_unchanged() -> None:
    # The canonical JSON of no items is "[]".
    assert items_digest([]) == (
        "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
    )
    # A plan's runs: their sorted ids, one a line ("a\nb").
    assert runs_digest(["b", "a"]) == (
        "sha256:7e18f737311b2dc3b2f269dd78396b0351f14fb66efa879f768cb23181883c78"
    )
    # A row: the raw SHA-256 of its canonical JSON ({"a":1,"b":"é"}).
    row = {"b": "é", "a": 1}
    assert row_digest(row).hex() == (
        "09ad9fd2fb648cb2f62141215828ea00a62c299db05d20aa9ade2f527a301cc6"
    )

    class Rows(TransferTables):
        def table_rows(self, table: str) -> Iterator[dict[str, Any]]:
            return iter([{"a": 2, "b": None}, row])

    # A table: the SHA-256 of its rows' raw digests, sorted ({"a":1,...} first: 09ad < b474).
    assert Rows().table_digest("t") == (
        2,
        "sha256:d3942dae89aa9f543e5c4bd0f3c20fdeb624968b7c0699783a9307929222ccf5",
    )
