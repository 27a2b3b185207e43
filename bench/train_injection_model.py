"""Train the learned injection detector and write judge/safety/detector.npz.

    PYTHONPATH=$PWD .venv/bin/python bench/train_injection_model.py [--mirror /work/.mirror]
        [--out judge/safety/detector.npz] [--check]

Data: the **tuning** families of bench/injection_data.py only (held-out families are never
read here). Texts are folded (:func:`judge.safety.folding.fold`), encoded runs decoded, and cut
into windows (:func:`judge.safety.detector.windows`); an injection record gives at most its
first three windows as positives (long attacks are mostly filler), a benign record all its
windows (gold traces subsampled to :data:`MAX_GOLD_WINDOWS`).

Model: logistic regression (liblinear, C=:data:`C`, balanced classes) on hashed character
2-5-grams. Threshold: 5-fold out-of-fold scores on the tuning records (folds grouped by
record), the lowest threshold whose out-of-fold false-flag rate is at most
:data:`MAX_FALSE_FLAGS_LOOKALIKE` on generated look-alikes, :data:`MAX_FALSE_FLAGS_HANDWRITTEN`
on hand-written ones and :data:`MAX_FALSE_FLAGS_GOLD` on gold evidence items. ``--check``
retrains and compares with the shipped file instead of writing it (same data -> same weights
to within one float16 step).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.digests import Hasher
from judge.safety import detector, folding

sys.path.insert(0, str(Path(__file__).resolve().parent))

from injection_data import DEFAULT_MIRROR, Record, all_records  # noqa: E402

C: float = 4.0
MAX_GOLD_WINDOWS: int = 40_000
MAX_FALSE_FLAGS_LOOKALIKE: float = 0.01
MAX_FALSE_FLAGS_GOLD: float = 0.0002
#: Decided after the first held-out measurement of handwritten-v4 showed most of its false
#: flags came from the learned detector (see RELIABILITY.md): not a held-out choice.
MAX_FALSE_FLAGS_HANDWRITTEN: float = 0.01
SEED: int = 7
#: Tuning families not trained on (still scored by bench/injection_eval.py).
EXCLUDED = frozenset({"tensor-trust-hijacking"})


def record_windows(record: Record) -> list[str]:
    """The folded windows a record is scored on (text, decoded runs, and its turns)."""
    texts = [record.text] if record.text else [t["content"] for t in record.turns]
    out: list[str] = []
    for text in texts:
        views = [text, *folding.decoded_views(text)]
        for view in views:
            out.extend(detector.windows(folding.fold(view)))
    return out


def build(records: list[Record]) -> tuple[list[str], list[int], list[int], list[Record]]:
    """(windows, labels, record index of each window, records used)."""
    rnd = random.Random(SEED)
    # Tensor Trust hijacks ("say access granted") are not aimed at a verdict: trained on, they
    # taught the model that any imperative is an injection (false flags on LLMBar tasks).
    tuning = [r for r in records if r.split == "tuning" and r.family not in EXCLUDED]
    gold = [r for r in tuning if r.category.startswith("gold:")]
    rest = [r for r in tuning if not r.category.startswith("gold:")]
    docs: list[str] = []
    labels: list[int] = []
    owner: list[int] = []
    used: list[Record] = []
    gold_windows = 0
    rnd.shuffle(gold)
    for record in rest + gold:
        wins = record_windows(record)
        if record.label == "injection":
            wins = wins[:3]
        elif record.family.startswith("swebench"):
            if gold_windows >= MAX_GOLD_WINDOWS:
                continue
            gold_windows += len(wins)
        if not wins:
            continue
        used.append(record)
        for w in wins:
            docs.append(w)
            labels.append(1 if record.label == "injection" else 0)
            owner.append(len(used) - 1)
    return docs, labels, owner, used


def fit(docs: list[str], labels: list[int]) -> tuple[Any, float]:
    """(coef as float32 array, intercept)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = detector.vectorizer().transform(docs)
    clf = LogisticRegression(
        C=C, class_weight="balanced", solver="liblinear", max_iter=2000, random_state=SEED
    )
    clf.fit(x, np.asarray(labels))
    return clf.coef_[0].astype(np.float32), float(clf.intercept_[0])


def out_of_fold(docs: list[str], labels: list[int], owner: list[int]) -> list[float]:
    """Out-of-fold P(injection) of every window, 5 folds grouped by record."""
    import numpy as np

    folds = [o % 5 for o in owner]
    scores = [0.0] * len(docs)
    vec = detector.vectorizer()
    for k in range(5):
        train = [i for i, f in enumerate(folds) if f != k]
        test = [i for i, f in enumerate(folds) if f == k]
        coef, intercept = fit([docs[i] for i in train], [labels[i] for i in train])
        margin = vec.transform([docs[i] for i in test]) @ coef + intercept
        for i, p in zip(test, 1 / (1 + np.exp(-margin)), strict=True):
            scores[i] = float(p)
    return scores


#: Hand-written benign look-alikes (denser in judge words than the generated ones).
HANDWRITTEN = frozenset({"corpus-v1-dev", "handwritten-v2", "handwritten-v3"})


def choose_threshold(
    scores: list[float],
    docs: list[str],
    owner: list[int],
    used: list[Record],
    gate: Callable[[str], bool] = detector.gate,
) -> float:
    """Lowest threshold meeting every false-flag cap on out-of-fold record scores (each
    record's best window that passes ``gate``, as at inference): generated look-alikes,
    hand-written look-alikes and gold items are capped separately."""
    best = [0.0] * len(used)
    for s, d, o in zip(scores, docs, owner, strict=True):
        if gate(d):
            best[o] = max(best[o], s)
    benign = [(b, r) for b, r in zip(best, used, strict=True) if r.label == "benign"]
    groups = {
        "generated look-alikes": (
            [b for b, r in benign if r.family == "synthetic-benign"],
            MAX_FALSE_FLAGS_LOOKALIKE,
        ),
        "hand-written look-alikes": (
            [b for b, r in benign if r.family in HANDWRITTEN],
            MAX_FALSE_FLAGS_HANDWRITTEN,
        ),
        "gold items": (
            [b for b, r in benign if r.category.startswith("gold:")],
            MAX_FALSE_FLAGS_GOLD,
        ),
    }
    injections = [b for b, r in zip(best, used, strict=True) if r.label == "injection"]
    for step in range(50, 1000):
        t = step / 1000
        rates = {
            name: sum(b >= t for b in values) / max(1, len(values))
            for name, (values, _) in groups.items()
        }
        if all(rates[name] <= cap for name, (_, cap) in groups.items()):
            recall = sum(b >= t for b in injections) / max(1, len(injections))
            for family in sorted({r.family for r in used if r.label == "injection"}):
                fam = [
                    b
                    for b, r in zip(best, used, strict=True)
                    if r.family == family and r.label == "injection"
                ]
                print(f"  out-of-fold recall {family}: {sum(b >= t for b in fam)}/{len(fam)}")
            print(
                f"threshold {t:.3f}: out-of-fold recall {recall:.3f} on {len(injections)} "
                "injections; false flags "
                + ", ".join(
                    f"{rates[name]:.4f} on {len(values)} {name}"
                    for name, (values, _) in groups.items()
                )
            )
            return t
    return 0.999


def data_digest(docs: list[str], labels: list[int]) -> str:
    """sha256 of the training windows and labels (what the weights were trained on)."""
    h = Hasher()
    for d, y in zip(docs, labels, strict=True):
        h.update(f"{y}\t{d}\n")
    return h.digest()


def save(path: Path, coef: Any, intercept: float, threshold: float, meta: dict[str, str]) -> None:
    """Write the weights (float16) and metadata."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        coef=coef.astype(np.float16),
        intercept=np.float64(intercept),
        threshold=np.float64(threshold),
        meta_keys=np.array(list(meta)),
        meta_values=np.array(list(meta.values())),
    )


def main() -> int:
    """Train, choose the threshold, write (or --check) the weights."""
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR)
    parser.add_argument("--out", type=Path, default=detector.MODEL_PATH)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    records = all_records(args.mirror)
    docs, labels, owner, used = build(records)
    families = sorted({r.family for r in used})
    print(
        f"{len(docs)} windows ({sum(labels)} injection) from {len(used)} tuning records; "
        f"families: {', '.join(families)}"
    )
    threshold = choose_threshold(out_of_fold(docs, labels, owner), docs, owner, used)
    coef, intercept = fit(docs, labels)
    meta = {
        "data_digest": data_digest(docs, labels),
        "families": ",".join(families),
        "C": str(C),
        "n_features": str(detector.N_FEATURES),
    }
    if args.check:
        shipped = detector.load_model(args.out)
        if shipped is None:
            print(f"no weights at {args.out}")
            return 1
        same_data = shipped.meta.get("data_digest") == meta["data_digest"]
        # Within one float16 step: liblinear's float32 result moves in its last bits between
        # library builds (2 of 262,144 weights crossed a float16 rounding boundary, 0.002 at
        # |w| in [2, 4), when scikit-learn 1.9.1 / SciPy 1.17.1 retrained the shipped file).
        close = bool(
            np.allclose(
                shipped.coef, coef.astype(np.float16).astype(np.float32), rtol=1e-3, atol=1e-3
            )
        )
        print(
            f"same training data: {same_data}; same weights (float16): {close}; threshold "
            f"{shipped.threshold:.3f} vs {threshold:.3f}"
        )
        return 0 if same_data and close and abs(shipped.threshold - threshold) < 1e-9 else 1
    save(args.out, coef, intercept, threshold, meta)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
