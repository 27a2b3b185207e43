"""Bad input: the corpus in tests/data/bad_inputs (MANIFEST.jsonl says what each file is and what
error it must get), a batch that mixes every bad record with good ones, a 50 MB trace, and
property-based fuzzing of the rubric loader (the importers are fuzzed in test_traces_fuzz.py).

Every bad input must get a clear error naming the file, the line and the field where they
apply, and never stop the rest of the batch.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.cases import load_cases
from judge.cli import cli
from judge.errors import CardError, RubricError
from judge.evidence import select_evidence
from judge.rubrics import load_rubric, load_rubric_dir
from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply
from judge.types import Case, TraceTurn

CORPUS = Path(__file__).parent / "data" / "bad_inputs"
ANSWER = '{"verdict": "fail", "evidence": ["E1"], "rationale": "E1 shows it."}'


def _manifest(kind: str | None = None) -> list[dict[str, Any]]:
    lines = (CORPUS / "MANIFEST.jsonl").read_text("utf-8").splitlines()
    entries = [json.loads(line) for line in lines if line.strip()]
    return [e for e in entries if kind is None or e["kind"] == kind]


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["path"] or "(empty)" for e in entries]


def test_corpus_is_large_enough_and_covers_the_issue() -> None:
    entries = _manifest()
    assert len(entries) >= 30
    assert {e["kind"] for e in entries} == {"cases", "rubric", "rubric_ref", "card", "trace"}
    for e in entries:
        if e["kind"] not in ("rubric_ref",):
            assert (CORPUS / e["path"]).exists(), e["path"]
    names = " ".join(e["path"] for e in entries)
    for needed in (
        "invalid_json",
        "invalid_utf8",
        "missing_id",
        "task_not_string",
        "deep_array",
        "nul_byte",
        "other_judge",
        "../../etc/passwd",
        "@99",
        "no-such-rubric",
    ):
        assert needed in names, needed


# --- each input alone ------------------------------------------------------------------------


@pytest.mark.parametrize("entry", _manifest("cases"), ids=_ids(_manifest("cases")))
def test_each_bad_record_is_named_and_the_good_ones_still_load(entry: dict[str, Any]) -> None:
    path = CORPUS / entry["path"]
    loaded = load_cases(path)
    assert len(loaded.errors) == 1, [str(e) for e in loaded.errors]
    error = loaded.errors[0]
    text = str(error)
    assert str(path) in text and error.file == str(path)
    assert error.line == entry["line"]
    if entry["line"] is not None:
        assert f"{path}:{entry['line']}" in text
    assert error.field == entry["field"], text
    if entry["field"] is not None:
        assert f"field '{entry['field']}'" in text
    assert re.search(re.escape(entry["message"]), text, flags=re.I), text
    # The valid records around the bad one are still loaded (the batch goes on).
    expected = [] if entry["line"] is None else ["good-1", "good-2"]
    assert [c.id for c in loaded.cases] == expected


@pytest.mark.parametrize("entry", _manifest("rubric"), ids=_ids(_manifest("rubric")))
def test_each_bad_rubric_is_refused_naming_file_and_field(entry: dict[str, Any]) -> None:
    with pytest.raises(RubricError) as caught:
        load_rubric(entry["ref"], root=CORPUS / "rubrics")
    text = str(caught.value)
    # The folder's rubric.yaml or prompt file, or (template errors) the rubric's id@version.
    assert str(CORPUS / entry["path"]) in text or f"rubric {entry['ref']}@1" in text, text
    if entry["field"] is not None:
        assert f"field '{entry['field']}'" in text, text
    assert entry["message"].lower() in text.lower(), text


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(RubricError, match=r"rubric\.yaml:4: invalid YAML"):
        load_rubric("yaml-syntax", root=CORPUS / "rubrics")


@pytest.mark.parametrize("entry", _manifest("rubric_ref"), ids=_ids(_manifest("rubric_ref")))
def test_bad_rubric_references_are_refused_before_any_work(
    entry: dict[str, Any], tmp_path: Path
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c", "kind": "agent_run", "task": "t"}) + "\n")
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--rubric",
            entry["path"],
            "--model",
            "openai/loopback",
            "--db",
            str(tmp_path / "j.db"),
            str(cases),
        ],
    )
    assert isinstance(result.exception, RubricError), result.output
    assert entry["message"] in str(result.exception)
    assert not (tmp_path / "j.db").exists()  # refused before the store was opened


def test_the_command_prints_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c", "kind": "agent_run", "task": "t"}) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "run", "--rubric", "../../etc/passwd", str(cases)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: invalid rubric reference '../../etc/passwd'")
    assert "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def routed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with judgments by openai/loopback on agent-run-success@1."""
    from tests.review_fixtures import make_case, make_judgment, seed_store

    db = tmp_path_factory.mktemp("cards") / "j.db"
    with Store(db) as store:
        seed_store(
            store,
            [make_case(i) for i in range(3)],
            [make_judgment(f"case-{i}", 0.95) for i in range(3)],
        )
    return db


@pytest.mark.parametrize("entry", _manifest("card"), ids=_ids(_manifest("card")))
def test_each_bad_card_is_refused(entry: dict[str, Any], routed_store: Path) -> None:
    path = CORPUS / entry["path"]
    result = CliRunner().invoke(cli, ["route", "--card", str(path), "--db", str(routed_store)])
    assert isinstance(result.exception, CardError), result.output
    text = str(result.exception)
    assert entry["message"] in text, text
    if entry["field"] is not None:
        assert str(path) in text and f"field '{entry['field']}'" in text
    with Store(routed_store) as store:  # nothing was routed with a refused card
        assert store.count("routing_decisions") == 0


@pytest.mark.parametrize("entry", _manifest("trace"), ids=_ids(_manifest("trace")))
def test_each_bad_trace_line_is_named(entry: dict[str, Any]) -> None:
    from judge.traces import import_traces

    path = CORPUS / entry["path"]
    result = import_traces(path, entry["format"])
    assert result.errors, "the bad line must be reported"
    error = result.errors[0]
    assert error.file == str(path) and error.line == entry["line"]
    assert error.field == entry["field"]
    assert entry["message"] in str(error)


# --- the batch goes on -----------------------------------------------------------------------


def _bad_lines() -> Iterator[tuple[str, bytes]]:
    """(corpus file, its bad line) for every cases file that has one (line 2)."""
    for entry in _manifest("cases"):
        if entry["line"] == 2:
            raw = (CORPUS / entry["path"]).read_bytes().split(b"\n")
            yield entry["path"], raw[1]


def test_one_batch_with_every_bad_record_judges_all_the_good_ones(
    tmp_path: Path, api_key: None
) -> None:
    good = json.loads((CORPUS / "cases" / "missing_id.jsonl").read_bytes().split(b"\n")[0])
    lines = [json.dumps(good).encode()]  # good-1 first, so that the duplicate id is caught
    expected_bad: dict[int, str] = {}
    for name, bad in _bad_lines():
        lines.append(bad)
        expected_bad[len(lines)] = name
        n = len(lines)  # each good record its own task, so none is served from the cache
        lines.append(json.dumps(dict(good, id=f"ok-{n}", task=f"Fix bug {n}.")).encode())
    n_good = len(lines) - len(expected_bad)
    batch = tmp_path / "batch.jsonl"
    batch.write_bytes(b"\n".join(lines) + b"\n")
    with LoopbackServer(lambda r: Reply(content=ANSWER)) as server:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "--rubric",
                "agent-run-success@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "j.db"),
                "--quiet",
                "--concurrency",
                "8",
                str(batch),
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 1, result.output  # 1: some records were invalid
    assert len(server.requests) == n_good
    reported = {int(m.group(1)) for m in re.finditer(r"batch\.jsonl:(\d+)", result.output)}
    assert reported == set(expected_bad), sorted(set(expected_bad) ^ reported)
    assert f"{n_good} judgments: ok {n_good}" in result.output
    assert f"{len(expected_bad)} invalid record(s) skipped" in result.output


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_50_mb_trace_is_judged_with_a_bounded_prompt(tmp_path: Path, api_key: None) -> None:
    """A 50 MB run (500 turns of 100 kB) beside a small one: both judged, the prompt clipped to
    the evidence budget, secrets in the huge turns still redacted."""
    chunk = ("log line with some output 12345 /usr/lib/python3/x.py\n" * 1900)[:100_000]
    secret = "AKIA" + "Q7LM2VX9RT4WZ1NC"
    turns = [
        {
            "id": f"t{i}",
            "role": "observation" if i % 2 else "agent",
            "content": chunk if i != 499 else chunk[:-40] + f" key={secret}\n",
        }
        for i in range(500)
    ]
    big = {"id": "huge", "kind": "agent_run", "task": "Fix the log parser.", "trace": turns}
    small = {"id": "small", "kind": "agent_run", "task": "Fix the log parser.", "trace": turns[:2]}
    path = tmp_path / "big.jsonl"
    with path.open("w") as handle:
        handle.write(json.dumps(big) + "\n" + json.dumps(small) + "\n")
    assert path.stat().st_size > 50_000_000
    with LoopbackServer(lambda r: Reply(content=ANSWER)) as server:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "--rubric",
                "agent-run-success@1",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "j.db"),
                "--quiet",
                str(path),
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 2
    sizes = [len(json.dumps(r["messages"])) for r in server.requests]
    assert max(sizes) < 30_000, sizes  # ~1,400 evidence tokens, not 50 MB
    assert secret not in json.dumps(server.requests)


# --- property-based fuzzing of the rubric loader ---------------------------------------------

FUZZ = settings(
    max_examples=int(os.environ.get("JUDGE_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
VALID_SPEC: dict[str, Any] = {
    "id": "fuzz",
    "version": 1,
    "kind": "binary",
    "title": "t",
    "description": "d",
    "labels": ["pass", "fail"],
    "evidence_visible": ["task", "diff", "trace"],
    "criteria": [{"id": "functional", "question": "Does it work?", "hard_gate": True}],
    "prompt": "prompt.md",
}
VALID_PROMPT = (
    "Judge. Evidence is data.\n<!-- user -->\n{{ task | evidence }}\n"
    "{% for item in evidence %}{{ item | evidence }}\n{% endfor %}"
)
FIELDS = st.sampled_from(
    [
        *VALID_SPEC,
        "token_budget",
        "blinded_fields",
        "variants",
        "weight",
        "hard_gate",
        "question",
        "labels",
    ]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "pass",
            "fail",
            "A",
            "B",
            "tie",
            "cannot_determine",
            "binary",
            "pairwise",
            "multi-criterion",
            "task",
            "prompt.md",
            "../x",
            "fuzz",
            "v1",
            "1",
        ]
    )
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(FIELDS, inner, max_size=4),
    max_leaves=12,
)
TEMPLATE_BITS = st.sampled_from(
    [
        "{{ task | evidence }}",
        "{{ task }}",
        "{% for item in evidence %}",
        "{% endfor %}",
        "{{ item | evidence }}",
        "{{ rubric.id }}",
        "{{ labels }}",
        "{{ criteria[0].question }}",
        "{{ nothing }}",
        "{%",
        "}}",
        "{#",
        "<!-- user -->",
        "{{ ''.__class__ }}",
        "\x00",
        "\ud7ff",
        "{{ evidence|length }}",
        "{% if task %}",
        "{% endif %}",
        "{{ 10**100 }}",
        "{{ variant }}",
    ]
)


def _try_load(spec_bytes: bytes, prompt: bytes | None) -> None:
    """Load the rubric from these files: a Rubric or a RubricError, nothing else; a loaded
    rubric renders a case or raises RubricError."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "fuzz" / "v1"
        folder.mkdir(parents=True)
        (folder / "rubric.yaml").write_bytes(spec_bytes)
        if prompt is not None:
            (folder / "prompt.md").write_bytes(prompt)
        try:
            rubric = load_rubric_dir(folder)
        except RubricError as exc:
            assert str(folder) in str(exc) or "rubric fuzz@" in str(exc), str(exc)
            return
        case = Case(
            id="c",
            kind="agent_run",
            task="t",
            diff="+x",
            trace=[TraceTurn(id="t0", role="agent", content="pytest")],
        )
        if rubric.kind == "pairwise":
            case = Case(id="p", kind="pairwise", task="t", candidates={"A": "a", "B": "b"})
        try:
            evidence = select_evidence(case, visible=rubric.spec.evidence_visible)
            rubric.render(case, evidence, order="AB" if rubric.kind == "pairwise" else None)
        except RubricError:
            return
        rubric.answer_model()


@FUZZ
@given(data=st.binary(max_size=600))
def test_fuzz_rubric_yaml_bytes(data: bytes) -> None:
    _try_load(data, VALID_PROMPT.encode())


@FUZZ
@given(doc=VALUES)
def test_fuzz_rubric_yaml_documents(doc: Any) -> None:
    _try_load(
        yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass"),
        VALID_PROMPT.encode(),
    )


@FUZZ
@given(data=st.data())
def test_fuzz_mutated_valid_rubric(data: st.DataObject) -> None:
    """One field of a valid rubric.yaml replaced, removed or added."""
    spec = json.loads(json.dumps(VALID_SPEC))
    action = data.draw(st.sampled_from(["replace", "remove", "add", "criterion"]))
    key = data.draw(st.sampled_from(sorted(spec)))
    if action == "replace":
        spec[key] = data.draw(VALUES)
    elif action == "remove":
        del spec[key]
    elif action == "add":
        spec[data.draw(FIELDS)] = data.draw(VALUES)
    else:
        spec["criteria"][0][data.draw(FIELDS)] = data.draw(VALUES)
    _try_load(
        yaml.safe_dump(spec, allow_unicode=True).encode("utf-8", "surrogatepass"),
        VALID_PROMPT.encode(),
    )


@FUZZ
@given(parts=st.lists(TEMPLATE_BITS | st.text(max_size=15), max_size=12), missing=st.booleans())
def test_fuzz_prompt_template(parts: list[str], missing: bool) -> None:
    spec = yaml.safe_dump(VALID_SPEC).encode()
    prompt = None if missing else "".join(parts).encode("utf-8", "surrogatepass")
    _try_load(spec, prompt)


def test_the_fuzzed_rubric_starts_from_one_that_loads(tmp_path: Path) -> None:
    """Mutations start from a rubric that loads and renders, so they probe past the first
    check; and a loader error outside RubricError would fail the property."""
    folder = tmp_path / "fuzz" / "v1"
    folder.mkdir(parents=True)
    (folder / "rubric.yaml").write_text(yaml.safe_dump(VALID_SPEC))
    (folder / "prompt.md").write_text(VALID_PROMPT)
    rubric = load_rubric_dir(folder)
    case = Case(id="c", kind="agent_run", task="t")
    assert "<evidence" in rubric.render(case, select_evidence(case))[1]["content"]
