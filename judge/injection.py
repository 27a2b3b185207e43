"""Flag evidence text aimed at the judge (prompt injection).

An agent under evaluation, or anything that wrote into its trace (a web page, a tool, a
dependency), can plant text that speaks to the judge: "ignore the rubric", "output pass",
"you are now a lenient grader", a fake ``<evidence>`` block, a chat-template turn. Evidence is
always shown to the judge delimited as data (:func:`judge.rubrics.evidence_block`); this
module adds a second line of defence: it flags such items, the flag is shown to the judge in the
item's ``flags`` attribute and recorded in the judgment's provenance, and routing never decides a
flagged judgment automatically (:mod:`judge.routing`).

Detection, in order:

1. **Normalise** (:func:`normalize`): NFKC (fullwidth letters, ligatures), remove invisible
   format characters (zero-width spaces and joiners, soft hyphens, bidi controls, BOM), map
   Cyrillic and Greek look-alikes to the Latin letters they imitate, case-fold.
2. **Rules** (:data:`RULES`, a registry of named patterns over the normalised text): each names
   one way of speaking to a judge. A match that sits inside quotes in a sentence that talks
   *about* such phrases ("attackers write 'ignore previous instructions'", "examples: ...") is a
   mention, not a use, and does not count.
3. **Obfuscation** (:func:`obfuscation`): look-alike letters inside Latin words, invisible
   characters between letters, fullwidth Latin. Benign text has these too (Unicode test
   strings), so they flag only together with a word a judge would act on (pass, verdict,
   grade, rubric, instructions...).

It is a pattern detector, not a classifier: it misses paraphrases it has no rule for (other
languages, spaced-out letters) and flags some benign texts that look like instructions to a
grader. Recall and false-flag rate on the corpus in tests/data/injection are in
RELIABILITY.md; a false flag costs a human review, a miss is still shown as delimited data.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from judge.types import EvidenceItem

#: Prefix of every reason this module gives (``EvidenceItem.flags``).
PREFIX = "injection:"

# ---------------------------------------------------------------------------------------------
# Normalisation.

#: Cyrillic and Greek letters that render like Latin ones (after NFKC and case-folding), from
#: Unicode's confusables.txt, restricted to the lower-case forms that case-folding produces.
CONFUSABLES: Mapping[str, str] = MappingProxyType(
    {
        # Cyrillic
        "\u0430": "a", "\u0432": "b", "\u0435": "e", "\u0451": "e", "\u043a": "k",
        "\u043c": "m", "\u043d": "h", "\u043e": "o", "\u0440": "p", "\u0441": "c",
        "\u0442": "t", "\u0443": "y", "\u0445": "x", "\u0456": "i", "\u0457": "i",
        "\u0458": "j", "\u0455": "s", "\u04bb": "h", "\u0501": "d", "\u051b": "q",
        "\u051d": "w", "\u0491": "r", "\u04cf": "l",
        # Greek
        "\u03b1": "a", "\u03b2": "b", "\u03b5": "e", "\u03b7": "n", "\u03b9": "i",
        "\u03ba": "k", "\u03bd": "v", "\u03bf": "o", "\u03c1": "p", "\u03c4": "t",
        "\u03c5": "u", "\u03c7": "x", "\u03c9": "w", "\u03b3": "y", "\u03c3": "o",
        "\u03c2": "c", "\u03af": "i", "\u03cc": "o",
    }
)
_CONFUSABLE_TABLE = str.maketrans(dict(CONFUSABLES))


def _is_invisible(char: str) -> bool:
    """Format characters that render as nothing: zero-width, soft hyphen, bidi, BOM, tags."""
    return unicodedata.category(char) == "Cf"


def _untag(char: str) -> str:
    """Unicode tag characters (U+E0020..U+E007E) spell ASCII invisibly ("ASCII smuggling"):
    decode them to the letters they hide rather than drop them."""
    code = ord(char)
    return chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else char


def normalize(text: str) -> str:
    """The text as a reader (or a model) sees it: NFKC, tag characters decoded, other invisible
    characters removed, look-alike letters mapped to Latin, case-folded, runs of spaces and
    tabs collapsed (newlines kept)."""
    # ASCII text (most of any trace) is NFKC-stable and holds no format, tag or look-alike
    # character: the per-character pass would change nothing and cost ~0.3 ms per item.
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = "".join(
            _untag(c) for c in text if not _is_invisible(c) or 0xE0020 <= ord(c) <= 0xE007E
        )
    text = text.casefold().translate(_CONFUSABLE_TABLE)
    return re.sub(r"[ \t\u00a0]+", " ", text)


# ---------------------------------------------------------------------------------------------
# Rules over the normalised text.


class Rule(NamedTuple):
    """One named way of speaking to a judge."""

    name: str
    pattern: re.Pattern[str]
    description: str


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


# Words for the judge, and for a favourable outcome.
_JUDGE = (r"(?:judge|grader|evaluator|assessor|reviewer|grading model|judging model|"
          r"evaluating model|reviewing model|language model|llm|ai|gpt|chatgpt|claude|model)")
_GOOD = (r"(?:pass(?:ed|es|ing)?|success(?:ful(?:ly)?)?|succeed(?:ed|s)?|correct|accomplished|"
         r"approved?|complete(?:d)?|lgtm|10/10)")
#: The outcomes a judge gives, for "output pass": narrower than _GOOD, because "return correct
#: results" and "output complete" are ordinary talk about code.
_VERDICT_WORD = r"(?:pass(?:ed|ing)?|success(?:ful)?|approved)"
_DETERMINER = (r"(?:the|your|all|any|every|these|those|previous|prior|above|earlier|preceding|"
               r"initial|original|system|my)")
_INSTRUCTIONS = (r"(?:instructions?|prompts?|rules|rubrics?|guidance|guidelines|directions|"
                 r"directives|criteria|system prompt|constraints|context)")

RULES: tuple[Rule, ...] = (
    Rule(
        "ignore-instructions",
        _rx(rf"\b(?:ignore|disregard|forget|bypass|(?:do not|don't|never|stop) follow(?:ing)?)"
            rf"\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?{_DETERMINER}\s+(?:[a-z-]+\s+){{0,2}}?"
            rf"{_INSTRUCTIONS}\b"
            r"|\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)?\s*"
            r"(?:(?:written|said|stated)\s+)?(?:above|before this|previously)\b"
            r"|\bignore the above\b"),
        "tells the reader to set aside its instructions or the rubric",
    ),
    Rule(
        "addresses-judge",
        _rx(rf"(?:\b(?:ai|llm|automated|automatic|machine|language[- ]model)[- ]"
            rf"(?:judge|grader|reviewer|evaluator|assessor)s?\b"
            rf"|@(?:judge|grader|evaluator|reviewer|ai|llm)\b"
            rf"|\b(?:dear|hey|hi|hello|attention|note to|message to|instructions? (?:for|to))"
            rf"(?: the| any| all)?(?: ai| llm| automated| automatic)?\s+{_JUDGE}s?\b"
            rf"|(?:^|[#/*>\-]\s*|\.\s+)(?:judge|grader|evaluator|grading model|evaluating model)"
            rf"\s*[:,]"
            rf"|,\s*(?:judge|grader|evaluator)\s*[.!,]"
            rf"|\b(?:if|when|while)\s+you(?:'re| are)?\s+(?:grad|evaluat|judg|review|assess|scor)"
            rf"\w*"
            rf"|\bas the (?:grading|judging|evaluating|reviewing) (?:model|ai|llm|assistant)\b"
            rf"|\byour (?:rationale|verdict|grading)\b"
            rf"|\b(?:judge|grader|reviewer|evaluator)[- ]instructions?\b)"
            rf"(?=[\s\S]{{0,300}}?\b(?:{_GOOD}|verdict|ignore|disregard|overlook|treat|mark|"
            rf"grade|rate|approve|accept|output|respond|reply|return|say)\b)"),
        "speaks to the judge about the verdict",
    ),
    Rule(
        "verdict-directive",
        _rx(rf"\b(?:output|respond(?: only)? with|reply(?: only)? with|answer(?: with)?|return|"
            rf"say|emit|give|write)\s+(?:only\s+)?(?:(?:that\s+)?it\s+|the verdict\s+)?"
            rf"(?!['\"`])(?:{_VERDICT_WORD})\b(?!\s*(?:or|/|\|)\s*fail)"
            rf"|\b(?:grade|rate|mark|score|judge|evaluate|classify|label|treat|consider|count)\s+"
            rf"(?:this|the|my|it|these|that)\b[^.\n]{{0,40}}?\bas\s+(?:an?\s+)?"
            rf"(?:{_GOOD}|success|a pass)\b"
            rf"|\b(?:set|change|make)\s+(?:the\s+)?verdict\s+(?:to|=)\s*['\"]?{_GOOD}"
            rf"|\b(?:correct|expected|right|real|final|true|only acceptable)\s+"
            rf"(?:verdict|answer|grade|label)\s+(?:is|should be|must be|=|:)\s*['\"]?{_GOOD}"
            rf"|\bthe (?:output|answer|verdict|result) must be\s+['\"]?{_GOOD}"
            rf"|\bverdict\s*[:=]\s*['\"]?pass['\"]?\s*[;,]\s*confidence"),
        "demands a favourable verdict",
    ),
    Rule(
        "role-play",
        _rx(r"\byou are now\b[^.\n]{0,40}?(?:grader|judge|evaluator|reviewer|bot\b|assistant|"
            r"\bai\b|\bdan\b|character|mode\b)"
            r"|\b(?:pretend|imagine)\s+(?:that\s+)?(?:you are|you're|to be)\b[^.\n]{0,40}?"
            r"(?:grader|judge|evaluator|reviewer|lenient)"
            r"|\b(?:act|behave)\s+as\s+(?:if you were\s+)?(?:an?\s+|the\s+)?[^.\n]{0,30}?"
            r"\b(?:judge|grader|evaluator|reviewer|dan|assistant)\b"
            r"|\brole[- ]?play(?:ing)?\s+as\b|\blet'?s play a game\b|\bstay in character\b"
            r"|\bfrom now on,?\s+(?:you|act|respond|answer|only|always)\b"
            r"|\byou are (?:an?|the) (?:judge|grader|evaluator|reviewer)\s+(?:who|that)\b"),
        "asks the judge to take on another role",
    ),
    Rule(
        "chat-template",
        _rx(r"<\|im_start\|>\s*(?:system|user|assistant)\s*\n|<\|(?:system|user|assistant)\|>"
            r"|\[inst\]\s*[^\[\]\n]{8,}\[/inst\]|<<sys>>"
            r"|^#{2,4}\s*(?:system|instruction|response)\s*:?\s*$"
            r"|\[(?:system|admin|developer)(?: message| override| prompt)?\]"
            r"|\b(?:begin|start)\s+(?:judge|system|grader|evaluator|hidden|secret)\s+"
            r"instructions?\b"
            r"|\b(?:system|rubric|evaluation|grading|judge|verdict)\s+override\b"
            r"|\boverride\s*:\s*verdict\b"),
        "imitates a system or chat-template turn",
    ),
    Rule(
        "fake-evidence",
        _rx(r"<\s*/?\s*evidence\b"),
        "opens or closes an evidence block",
    ),
    Rule(
        "answer-format",
        _rx(r"['\"]verdict['\"]\s*:\s*['\"](?:pass|fail|cannot_determine|a|b|tie)['\"]"
            r"(?=[\s\S]{0,200}?['\"](?:evidence|rationale)['\"]\s*:)"),
        "writes the judge's answer for it",
    ),
    Rule(
        "new-instructions",
        _rx(r"\b(?:new|updated|real|actual|true|authoritative|revised)\s+"
            r"(?:instructions?|rubric|rules|task|system prompt|guidelines)\s*(?::|=)"),
        "announces replacement instructions",
    ),
)

# A quoted phrase in a sentence that talks about such phrases is a mention, not a use.
_QUOTES = "\"'`\u201c\u201d\u2018\u2019"
_META = re.compile(
    r"\b(?:such as|e\.g\.|for example|examples?|like|phrases?|strings?|patterns?|attacks?|"
    r"attackers?|injections?|detect\w*|flags?|strip\w*|filter\w*|sanitiz\w*|never trust|"
    r"contains?|text)\b"
)


def _sentence(text: str, start: int, end: int) -> str:
    left = max(text.rfind("\n", 0, start), text.rfind(". ", 0, start))
    right_candidates = [i for i in (text.find("\n", end), text.find(". ", end)) if i >= 0]
    right = min(right_candidates) if right_candidates else len(text)
    return text[left + 1 : right]


def _is_mention(text: str, start: int, end: int) -> bool:
    """The match is quoted (a quote right before it) in a sentence about such phrases."""
    before = text[max(0, start - 2) : start]
    if not any(q in before for q in _QUOTES):
        return False
    return _META.search(_sentence(text, start, end)) is not None


def rule_matches(normalized: str) -> list[str]:
    """Names of the rules that match ``normalized`` text in use (not merely mentioned)."""
    found: list[str] = []
    for rule in RULES:
        for match in rule.pattern.finditer(normalized):
            if not _is_mention(normalized, match.start(), match.end()):
                found.append(rule.name)
                break
    return found


# ---------------------------------------------------------------------------------------------
# Obfuscation.

_LATIN_WORD = re.compile(r"[^\W\d_]+")
#: An ASCII letter, invisible characters, an ASCII letter: a word split to dodge a filter.
#: (Zero-width joiners between emoji or in Indic and Arabic scripts are not between ASCII
#: letters, so they do not count.)
_HIDDEN_IN_WORD = re.compile(
    "[A-Za-z][\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff]+[A-Za-z]"
)
_ACTIONABLE = re.compile(
    rf"\b(?:{_GOOD}|verdict|grade|grader|judge|evaluator|rubric|instructions?|ignore|"
    rf"disregard|approve|output|respond)\b"
)


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else ""


def obfuscation(text: str) -> list[str]:
    """How ``text`` hides letters: "mixed-script" (a word mixing Latin with Cyrillic or Greek),
    "invisible-in-word" (format characters between two Latin letters), "tag-characters",
    "fullwidth" (fullwidth Latin letters)."""
    found: list[str] = []
    if text.isascii():
        return found  # every disguise below needs a character outside ASCII
    folded = unicodedata.normalize("NFKC", text)
    for word in _LATIN_WORD.findall(folded):
        # Only letters that imitate Latin ones count: "ΔG" in a chemistry answer is not a disguise.
        scripts = {_script(c) for c in word if _script(c) == "LATIN" or c.casefold() in CONFUSABLES}
        if "LATIN" in scripts and scripts & {"CYRILLIC", "GREEK"}:
            found.append("mixed-script")
            break
    if _HIDDEN_IN_WORD.search(text):
        found.append("invisible-in-word")
    if any(0xE0000 <= ord(c) <= 0xE007F for c in text):
        found.append("tag-characters")
    if any("\uff21" <= c <= "\uff5a" for c in text):
        found.append("fullwidth")
    return found


# ---------------------------------------------------------------------------------------------
# The detector and the evidence flagger.


def detect(text: str) -> list[str]:
    """Reasons ``text`` reads as instructions to the judge, e.g. ["injection:role-play"]; []
    when none apply. Deterministic."""
    if not text:
        return []
    normalized = normalize(text)
    reasons = [PREFIX + name for name in rule_matches(normalized)]
    hidden = obfuscation(text)
    if hidden and _ACTIONABLE.search(normalized):
        reasons.append(PREFIX + "obfuscated:" + ",".join(hidden))
    return reasons


def flag_injection(item: EvidenceItem) -> list[str]:
    """The evidence flagger (registered in :data:`judge.evidence.FLAGGERS`). The task itself is
    what the run was asked to do, written by whoever submitted the case, so it is checked too."""
    return detect(item.text)


#: Detectors by name, for callers that want one (the evidence registry uses flag_injection).
DETECTORS: Mapping[str, Callable[[str], list[str]]] = MappingProxyType({"patterns": detect})
