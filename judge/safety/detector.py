"""The learned injection detector: logistic regression on hashed character n-grams.

Rules name what they look for; this model scores what they have no rule for (paraphrases,
languages and placements the rules never saw). It reads text already folded by
:func:`judge.safety.folding.fold`, cut into windows of about :data:`WINDOW_CHARS` characters
(an instruction planted in a long log is a few lines: scoring the whole log would dilute it),
and flags a text when its best window scores at least the operating threshold.

Features are ``HashingVectorizer(analyzer="char_wb", ngram_range=(2, 5))`` counts, so the
model has no vocabulary to ship: the weights are one vector of :data:`N_FEATURES` float16
values and an intercept, in ``judge/safety/detector.npz`` (about 0.5 MB), loaded on first
use. ``bench/train_injection_model.py`` trains it (data: bench/data/injection/README.md) and
picks the threshold on the tuning split only. scikit-learn and numpy are imported lazily.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from judge.safety.languages import has_idea

#: The shipped weights.
MODEL_PATH = Path(__file__).resolve().parent / "detector.npz"
N_FEATURES: int = 2**18
NGRAM_RANGE: tuple[int, int] = (2, 5)
#: The most windows of one text the model scores (see Model.score).
MAX_WINDOWS: int = 256
#: Windows are lines grouped up to this many characters; a longer line is cut into pieces
#: that overlap by a quarter.
WINDOW_CHARS: int = 320


def vectorizer() -> Any:
    """The feature extractor (stateless: the same hashing in training and here)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(
        analyzer="char_wb",
        ngram_range=NGRAM_RANGE,
        n_features=N_FEATURES,
        alternate_sign=False,
        lowercase=False,
        norm="l2",
        dtype=_float32(),
    )


def _float32() -> Any:
    import numpy as np

    return np.float32


_BLANK = re.compile(r"\s+")


def windows(folded: str) -> list[str]:
    """``folded`` text cut into windows: consecutive lines joined up to :data:`WINDOW_CHARS`
    characters, long lines cut with overlap. Whitespace runs become one space."""
    out: list[str] = []
    current = ""
    step = WINDOW_CHARS * 3 // 4
    for raw in folded.split("\n"):
        line = _BLANK.sub(" ", raw).strip()
        if not line:
            continue
        if len(line) > WINDOW_CHARS:
            if current:
                out.append(current)
                current = ""
            out.extend(line[i : i + WINDOW_CHARS] for i in range(0, len(line) - step, step))
            continue
        if current and len(current) + 1 + len(line) > WINDOW_CHARS:
            out.append(current)
            current = line
        else:
            current = f"{current} {line}" if current else line
    if current:
        out.append(current)
    return out


#: Ideas of judge.safety.languages one of which a window must contain for the model to count:
#: the model extends the rules to paraphrases of the same ideas, in any of the lexicon's
#: languages; a generic instruction ("Rewrite the given sentence") or a line about passing
#: tests is not an injection unless it names a judge or the instructions.
GATE_IDEAS = frozenset({"JUDGE", "IGNORE", "INSTR"})


#: English words about grading that the lexicon leaves out because they are too common for
#: its rules ("correct", "score"), but that may open the gate.
_GATE_WORDS = re.compile(
    r"\b(?:verdict|evaluat\w*|grad(?:er|ers|ing)|judg\w*|scor(?:er|ing)"
    r"|rubric|review(?:er|ers|ing))\b"
)


#: Literals one of which every match of the English gate words contains (a prefilter).
GATE_WORD_LITERALS: tuple[str, ...] = (
    "verdict",
    "evaluat",
    "grader",
    "grading",
    "judg",
    "scorer",
    "scoring",
    "rubric",
    "review",
)


#: A window needs this many words for the model to count: it generalises over sentences, and
#: on a few words ("3 passed") it has too little to go on (the rules cover short commands).
MIN_WORDS: int = 4
_WORDS = re.compile(r"\w+")


def gate(window: str) -> bool:
    """``window`` (folded) names a judge, a verdict, the instructions, or setting them aside,
    in at least :data:`MIN_WORDS` words (or a script written without spaces)."""
    words = len(_WORDS.findall(window))
    if words < MIN_WORDS and (window.isascii() or len(window) < 8):
        return False
    return _GATE_WORDS.search(window) is not None or has_idea(window, GATE_IDEAS)


class Model:
    """Loaded weights: ``score`` gives P(injection) of each window, ``threshold`` the
    operating point."""

    def __init__(self, coef: Any, intercept: float, threshold: float, meta: dict[str, str]):
        self.coef = coef
        self.intercept = intercept
        self.threshold = threshold
        self.meta = meta
        self._vectorizer = vectorizer()
        self._analyzer = self._vectorizer.build_analyzer()

    def features(self, texts: list[str]) -> Any:
        """The feature rows of ``texts``: the same matrix as ``vectorizer().transform``,
        built without its per-call parameter validation (about 1 ms a call, which is most of
        the cost for the few short windows of an evidence item)."""
        try:
            from sklearn.feature_extraction._hashing_fast import transform as hashing
        except ImportError:  # a future scikit-learn moved it: the public path is the same
            return self._vectorizer.transform(texts)
        import numpy as np
        import scipy.sparse as sp

        raw = (((gram, 1) for gram in self._analyzer(text)) for text in texts)
        indices, indptr, values = hashing(raw, N_FEATURES, np.float32, False, seed=0)
        x = sp.csr_matrix((values, indices, indptr), shape=(len(texts), N_FEATURES))
        x.sum_duplicates()
        rows = np.repeat(np.arange(len(texts)), np.diff(x.indptr))
        norms = np.sqrt(
            np.bincount(rows, weights=x.data.astype(np.float64) ** 2, minlength=len(texts))
        )
        norms[norms == 0] = 1.0
        x.data /= norms[rows].astype(np.float32)
        return x

    def window_scores(self, texts: list[str]) -> list[float]:
        """P(injection) of each (folded, windowed) text."""
        import numpy as np

        if not texts:
            return []
        margin = self.features(texts) @ self.coef + self.intercept
        return [float(p) for p in 1.0 / (1.0 + np.exp(-margin))]

    def score(self, folded: str, may_pass: Callable[[str], bool] | None = None) -> float:
        """P(injection) of the best window of ``folded`` text that passes :func:`gate`; 0.0
        when none does. At most :data:`MAX_WINDOWS` gated windows are scored (the first and
        the last halves): a text that long is a log far beyond what a judge is shown, and the
        rules still read all of it. ``may_pass``: a quick test that is true of every window
        :func:`gate` passes (a prefilter), tried first."""
        if may_pass is None:
            gated = [w for w in windows(folded) if gate(w)]
        else:
            gated = [w for w in windows(folded) if may_pass(w) and gate(w)]
        if len(gated) > MAX_WINDOWS:
            gated = gated[: MAX_WINDOWS // 2] + gated[-MAX_WINDOWS // 2 :]
        return max(self.window_scores(gated), default=0.0)


def load_model(path: Path = MODEL_PATH) -> Model | None:
    """The weights at ``path``; None when the file is absent (then only the rules run)."""
    import numpy as np

    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        coef = data["coef"].astype(np.float32)
        meta = {str(k): str(v) for k, v in zip(data["meta_keys"], data["meta_values"], strict=True)}
        return Model(coef, float(data["intercept"]), float(data["threshold"]), meta)


@lru_cache(maxsize=1)
def shipped_model() -> Model | None:
    """The shipped weights, loaded once."""
    return load_model()
