"""The third net against prompt injection: a facts-only copy of a run, written by code.

The flagger (``judge.safety.injection``) and the second net (:mod:`judge.judging.masking`) both
stop an injection only when a detector recognises it. This net does not try to: for a verdict a
card would decide automatically, the run is judged again from a *facts-only copy* in which
nothing the agent read survives as text. What is kept:

- the task and the diff (what is judged; a copy cannot withhold them), the diff's prose
  withheld by syntax (:mod:`judge.judging.facts_diff`: comments, Python docstrings, prose and
  data files become markers and facts written by code, string literals their length and
  test names aliases; its code stays);
- the agent's own actions: the shell commands of its turns (fenced ``bash``/``sh`` blocks) and
  its tool calls (``TOOL_CALLS:`` lines, ``<tool_call>`` blocks, the ``[tool] $ command`` lines
  the importers write), their free text reduced to lengths and their paths to kinds
  (:mod:`judge.judging.facts_commands`); an agent turn with none of them (prose only: a
  summary, a reply, a thought) is left out, since an agent relays what it read;
- for every tool output (test runs, errors, file contents, web pages, any tool's result), one
  line of facts written by this module from patterns, with none of the output's words: the
  command it answers (the agent's), exit codes, the test counts of its runner summaries, a
  Python traceback and the names of built-in exceptions, fixed phrases for a missing command or
  file, a denied permission or a timeout, and its size in lines and characters.

Everything else (system and developer turns, the simulated user, notes, tool outputs' text,
turn ids and roles as the trace spelled them) is left out: turns are renamed ``turn-N`` (their
position in the run) with the roles ``agent`` and ``tool``, and each keeps the evidence kind the
whole run's classification gave it (so a test run is still shown as a test run). A text in any
language or encoding, split over turns or hidden in a turn's role or id, cannot reach the judge
through the copy; only numbers and fixed words can, and a forged count (an output that prints
"0 failed") is shown as the count it printed, beside the others the run printed.

The copy is a check, made like the masked copy (:func:`judge.judging.masking.check_copy`): its id
ends in :data:`FACTS_SUFFIX`, its meta names its origin, and its judgments carry ``masked_from``
(left out of calibration, scores, run-set rates and exports like every check) with
``masked_evidence == [FACTS_ONLY]``. Routing compares them with the case's own judgments
(``judge.routing.gates``: "facts_changed", "facts_missing"). Which verdicts are checked, and
when the calls are made, is :mod:`judge.review.facts_check`'s.

Limits: a pairwise case (its candidates are what is judged) and a case without a trace have no
copy. The diff keeps its code, so text planted in the diff's code (a string literal, a test's
name, the text of an HTML element, any line of a file of unknown type) reaches the copy's judge
as it reaches the first (the limits of :mod:`judge.judging.facts_diff`). A judge that needs
the prose (a conversation with a simulated user, a policy in a system turn, an answer given in
the agent's final message, the reasoning in a comment) finds little in the copy and may abstain
or change its verdict: that sends the case to a person, which is the cost of the check,
measured in RELIABILITY.md.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Iterator, Sequence

from judge.evidence import AGENT_ROLES, classify_turns
from judge.judging.facts_commands import Aliases, reduce_actions
from judge.judging.facts_diff import facts_diff
from judge.judging.masking import check_copy, masked_origin
from judge.types import FACTS_ONLY, Case, TraceTurn, TurnKind

#: Appended to the id of the facts-only copy of a case.
FACTS_SUFFIX = "#facts"
#: Where each line of facts starts: the judge reads that the output's text was not shown.
FACTS_HEAD = "[output reduced to facts by code; its text is not shown]"
#: The evidence kinds of a tool's output (reduced to facts); every other non-agent turn is
#: left out.
OUTPUT_KINDS: frozenset[TurnKind] = frozenset({"tool_result", "test_run", "error"})
#: A command shown is cut at this many characters (its first line only).
COMMAND_CHARS = 200
#: Test-count summaries shown per output: the last ones (a runner prints its own last).
MAX_SUMMARIES = 3

# --- the agent's own actions -----------------------------------------------------------------

_SHELL_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?:bash|sh|shell|console|zsh)[ \t]*\n(.*?)^[ \t]*```", re.DOTALL | re.M
)
_TOOL_CALLS_LINE = re.compile(r"^TOOL_CALLS:[ \t]*\S.*$", re.MULTILINE)
_TOOL_CALL_BLOCK = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)
#: ``judge.traces``' rendering of a call: ``[Bash] $ pytest -q``, ``[search] {"q": "x"}``.
_RENDERED_CALL = re.compile(r"^\[[\w.:/-]{1,64}\](?:[ \t]+(?:\$[ \t].*|\{.*))?$", re.MULTILINE)


def agent_commands(text: str) -> list[str]:
    """The commands and tool calls in an agent turn's text, in order, as they were written
    (shell blocks keep their fence); its prose is not among them."""
    found: list[tuple[int, str]] = []
    for match in _SHELL_FENCE.finditer(text):
        body = match.group(1).rstrip("\n")
        if body.strip():
            found.append((match.start(), f"```bash\n{body}\n```"))
    outside = _SHELL_FENCE.sub(lambda m: " " * len(m.group(0)), text)
    for regex in (_TOOL_CALLS_LINE, _TOOL_CALL_BLOCK, _RENDERED_CALL):
        found.extend((m.start(), m.group(0).strip()) for m in regex.finditer(outside))
    return [command for _, command in sorted(found)]


def _first_line(commands: Sequence[str]) -> str | None:
    """The first line of the last command, cut to :data:`COMMAND_CHARS` (what an output
    answers)."""
    if not commands:
        return None
    lines = [
        line.strip()
        for line in commands[-1].splitlines()
        if line.strip() and not line.strip().startswith("```")
    ]
    if not lines:
        return None
    line = lines[0]
    return line if len(line) <= COMMAND_CHARS else line[: COMMAND_CHARS - 3] + "..."


# --- facts of an output ----------------------------------------------------------------------

_EXIT = re.compile(
    r"<returncode>\s*(-?\d{1,4})\s*</returncode>|"
    r"\b(?:exit(?:ed)?(?: with)?[ _](?:code|status)|return ?code|returncode)\b"
    r"[:= ]{0,3}(-?\d{1,4})\b",
    re.IGNORECASE,
)
#: Counts a runner's summary line gives, by the word after the number (plural forms folded).
_COUNT_WORDS = {
    "passed": "passed",
    "passing": "passed",
    "pass": "passed",
    "failed": "failed",
    "failing": "failed",
    "failures": "failed",
    "failure": "failed",
    "fail": "failed",
    "error": "errors",
    "errors": "errors",
    "skipped": "skipped",
    "pending": "skipped",
    "ignored": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
    "deselected": "deselected",
    "total": "total",
}
_COUNT = re.compile(
    r"\b(\d{1,7})\s+(?:tests?\s+)?("
    + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True))
    + r")\b"
)
#: unittest: ``FAILED (failures=1, errors=2)``, ``OK (skipped=1)``; and ``Ran 4 tests in``.
_UNITTEST_RESULT = re.compile(r"^(FAILED|OK)\b(?: \(([^)\n]{0,200})\))?\s*$", re.MULTILINE)
_UNITTEST_KEY = re.compile(r"\b(failures|errors|skipped|expected failures)=(\d{1,7})\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d{1,7}) tests? in ", re.MULTILINE)
#: go test: ``--- FAIL: TestX``, ``--- PASS: TestY``.
_GO_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): ", re.MULTILINE)
#: A summary line: short, with a count of passed, failed or errors.
_SUMMARY_MAX_CHARS = 300
_ORDER = ("failed", "errors", "passed", "skipped", "xfailed", "xpassed", "deselected", "total")

#: Built-in exception names (computed, not written: a name from this set is shown, any other
#: exception is shown as "an exception").
_BUILTIN_EXCEPTIONS = frozenset(
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException)
    and name.endswith(("Error", "Exception", "Exit", "Interrupt"))
)
_EXCEPTION = re.compile(r"\b([A-Z]\w{0,60}(?:Error|Exception))\b(?::|$)", re.MULTILINE)
#: Fixed phrases for what an output reports, each shown in these words when its pattern is in it.
_SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Python traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("command not found", re.compile(r"command not found|is not recognized as an internal")),
    ("no such file or directory", re.compile(r"No such file or directory|FileNotFoundError")),
    ("permission denied", re.compile(r"Permission denied|PermissionError")),
    ("a timeout", re.compile(r"\btimed out\b|\bTimeoutError\b|\btimeout expired\b", re.I)),
    ("a syntax error", re.compile(r"\bSyntaxError\b|syntax error", re.I)),
    ("a segmentation fault", re.compile(r"Segmentation fault|SIGSEGV")),
    ("killed", re.compile(r"^Killed\s*$", re.MULTILINE)),
)


def exit_codes(text: str) -> list[int]:
    """The exit codes an output reports, distinct, in order of first appearance."""
    codes: list[int] = []
    for match in _EXIT.finditer(text):
        code = int(match.group(1) or match.group(2))
        if code not in codes:
            codes.append(code)
    return codes


def _counts_of_line(line: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(line):
        counts.setdefault(_COUNT_WORDS[word], int(number))
    return counts


def _render_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in _ORDER if k in counts)


def runner_counts(text: str) -> list[str]:
    """The test counts of every runner summary in an output, each as ``"1 failed, 3 passed"``
    (numbers and fixed words only), in order, without repeats."""
    found: list[str] = []

    def add(counts: dict[str, int]) -> None:
        shown = _render_counts(counts)
        if shown and shown not in found:
            found.append(shown)

    for line in text.splitlines():
        if len(line) > _SUMMARY_MAX_CHARS:
            continue
        counts = _counts_of_line(line)
        if counts.keys() & {"passed", "failed", "errors"}:
            add(counts)
    ran = [int(n) for n in _UNITTEST_RAN.findall(text)]
    for k, result in enumerate(_UNITTEST_RESULT.finditer(text)):
        if not ran:
            break
        keys = {key: int(n) for key, n in _UNITTEST_KEY.findall(result.group(2) or "")}
        total = ran[min(k, len(ran) - 1)]
        failed, errors = keys.get("failures", 0), keys.get("errors", 0)
        counts = {"failed": failed, "errors": errors, "total": total}
        if result.group(1) == "OK":
            counts = {"passed": total - keys.get("skipped", 0), "total": total}
        if "skipped" in keys:
            counts["skipped"] = keys["skipped"]
        add({k: v for k, v in counts.items() if v or k in ("total", "passed")})
    go = [m.group(1) for m in _GO_RESULT.finditer(text)]
    if go:
        add(
            {
                "failed": go.count("FAIL"),
                "passed": go.count("PASS"),
                **({"skipped": go.count("SKIP")} if "SKIP" in go else {}),
            }
        )
    return found[-MAX_SUMMARIES:]


def _json_error(text: str) -> bool:
    """An output that is a JSON object with an ``error`` key (a tool's error answer)."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")) or len(stripped) > 100_000:
        return False
    try:
        value = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(value, dict) and any(str(k).lower() == "error" for k in value)


def output_facts(text: str, command: str | None = None) -> str:
    """One line of facts about a tool's output, written by code: the command it answers (the
    agent's own, when known), its exit codes, test counts, error signals and size. None of
    the output's words is in it, only numbers, built-in exception names and fixed phrases."""
    parts: list[str] = []
    if command:
        parts.append(f"command: {command}")
    codes = exit_codes(text)
    if len(codes) == 1:
        parts.append(f"exit code {codes[0]}")
    elif codes:
        parts.append("exit codes reported: " + ", ".join(str(c) for c in codes))
    summaries = runner_counts(text)
    if summaries:
        parts.append("counts printed: " + "; ".join(summaries))
    signals = [phrase for phrase, regex in _SIGNALS if regex.search(text)]
    if _json_error(text):
        signals.append("an error object")
    exceptions = list(dict.fromkeys(_EXCEPTION.findall(text)))
    named = [e for e in exceptions if e in _BUILTIN_EXCEPTIONS]
    if named:
        signals.append("exceptions: " + ", ".join(named[:5]))
    elif exceptions:
        signals.append("an exception")
    if signals:
        parts.append("reports " + "; ".join(signals))
    lines = len(text.splitlines())
    size = f"{lines} line{'s' if lines != 1 else ''}, {len(text)} characters"
    parts.append("empty" if not text.strip() else size)
    return f"{FACTS_HEAD} " + "; ".join(parts)


# --- the copy --------------------------------------------------------------------------------


def _facts_turns(case: Case, aliases: Aliases) -> Iterator[TraceTurn]:
    """The facts-only trace of ``case`` (see the module docstring); ``aliases`` show the
    copy's diff."""
    command: str | None = None
    for classified in classify_turns(case.trace):
        turn, kind = classified.turn, classified.kind
        turn_id = f"turn-{classified.index + 1}"
        if turn.role.lower() in AGENT_ROLES:
            commands = reduce_actions(agent_commands(turn.content), aliases)
            command = _first_line(commands)
            if commands:
                yield TraceTurn(
                    id=turn_id,
                    role="agent",
                    content="\n\n".join(commands),
                    step=turn.step,
                    kind="tool_call",
                )
            continue
        if kind in OUTPUT_KINDS:
            yield TraceTurn(
                id=turn_id,
                role="tool",
                content=output_facts(turn.content, command),
                step=turn.step,
                kind=kind,
            )


def facts_case(case: Case) -> Case | None:
    """The facts-only copy of ``case``, or None when it has none (a pairwise case, or a run
    without a trace: nothing the agent read is shown)."""
    if case.kind == "pairwise" or not case.trace:
        return None
    aliases = Aliases()  # one table: a test has one alias in the diff and the commands
    diff = facts_diff(case.diff, aliases.alias) if case.diff else case.diff
    trace = list(_facts_turns(case, aliases.showing(diff)))  # commands: facts_commands.py
    return check_copy(case, FACTS_SUFFIX, [FACTS_ONLY], trace=trace, diff=diff)


def facts_origin(case: Case) -> str | None:
    """The id of the case ``case`` is the facts-only copy of, or None."""
    origin, withheld = masked_origin(case)
    return origin if withheld == [FACTS_ONLY] else None
