"""Inspect AI logs: every layout inspect_ai writes (``.eval`` with zstd or deflate members,
monolith or chunked samples; ``.json``), one case per sample and epoch, bad input named and the
rest kept, memory bounded by one sample, and the same cases as inspect_ai's own reader."""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.traces import detect_format, files_in, import_traces
from judge.traces.inspect_eval import read_sample
from judge.traces.inspect_zip import ZipReader
from judge.types import Case
from tests.conftest import DATA as TEST_DATA
from tests.conftest import require_inspect_ai

DATA = TEST_DATA / "traces" / "inspect"
CALC = DATA / "calc.eval"
LOGS = sorted(p for p in DATA.iterdir() if p.suffix in (".eval", ".json"))


def _by_sample(cases: list[Case]) -> dict[tuple[str, int], Case]:
    return {(c.slices["task_id"], c.slices["trial"]): c for c in cases}


def _turns(case: Case) -> list[tuple[str, str | None, str, int | None]]:
    """The trace without the sources (which name the place in the file)."""
    return [(t.role, t.kind, t.content, t.step) for t in case.trace]


def _members(path: Path) -> dict[str, bytes]:
    with ZipReader(path) as log:
        return {name: log.read(name) for name in log.names()}


def _write_eval(path: Path, members: dict[str, Any]) -> Path:
    """A .eval written with deflate members (values: bytes, or JSON to dump)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name, value in members.items():
            out.writestr(name, value if isinstance(value, bytes) else json.dumps(value))
    return path


# --- the formats -----------------------------------------------------------------------------


def test_a_zstd_eval_log_gives_one_case_per_sample_and_epoch() -> None:
    result = import_traces(CALC)
    assert result.errors == [] and result.warnings == []
    cases = _by_sample(result.cases)
    assert sorted(cases) == [("2", 1), ("2", 2), ("add", 1), ("add", 2)]
    add, div = cases["add", 1], cases["2", 1]
    assert add.id == f"add/epoch1/{add.meta['uuid']}" and add.kind == "agent_run"
    assert add.task == "What is 2+3? Use the calculator."
    assert add.agent_model == "mockllm/model"
    assert add.slices == {
        "agent": "inspect",
        "eval_task": "calc",
        "task_id": "add",
        "trial": 1,
        "agent_model": "mockllm/model",
        "infra_error": False,
    }
    assert _turns(add) == [
        ("user", "message", "What is 2+3? Use the calculator.", None),
        ("assistant", "message", "I will use the calculator tool.", 1),
        ("assistant", "tool_call", '[calculator] {"expression": "2+3"}', 1),
        ("tool", "tool_result", "5", 1),
        ("assistant", "note", "The calculator returned 5, so the sum is 5.", 2),
        ("assistant", "final_answer", "The answer is 5.", 2),
    ]
    assert add.trace[2].source == "samples/add_epoch_1.json:messages[1].tool_calls[0]"
    # Sample 2: chat-message input (system prompt, text and an image), a tool error.
    assert div.task == "What is 1/0? Use the calculator.\n[image]"
    assert _turns(div)[0] == ("system", "system", "You are a terse arithmetic assistant.", None)
    assert _turns(div)[4] == ("tool", "error", "tool error (unknown): division by zero", 1)
    assert div.trace[-1].kind == "final_answer"
    meta = add.meta
    assert meta["eval_id"] and meta["run_id"] and meta["eval_task_id"]
    assert meta["log_version"] == 2 and meta["inspect_version"] == "0.3.285"
    assert meta["scores"]["includes"]["value"] == "C"
    assert meta["scores"]["tool_calls_used"]["metadata"] == {"tool_call_count": 1}
    assert meta["official"] == {"scorer": "includes", "label": "pass"}
    assert div.meta["target"] == ["undefined", "infinity"]
    assert result.gold == {
        c.id: "pass" if c.slices["task_id"] == "add" else "fail" for c in cases.values()
    }


def test_a_json_log_reads_like_the_eval_log() -> None:
    eval_cases = _by_sample(import_traces(CALC).cases)
    result = import_traces(DATA / "calc.json")
    assert result.errors == []
    json_cases = _by_sample(result.cases)
    assert sorted(json_cases) == sorted(eval_cases)
    for key, case in json_cases.items():
        assert _turns(case) == _turns(eval_cases[key]) and case.task == eval_cases[key].task
    first = min(result.cases, key=lambda c: c.meta["line"])
    assert first.meta["where"] == "samples[0]" and first.trace[0].source.startswith("samples[0].")
    assert len(result.gold) == 4


def test_chunked_samples_read_as_the_monolith_ones() -> None:
    monolith = {c.id: c for c in import_traces(CALC).cases}
    chunked = import_traces(DATA / "calc_chunked.eval")
    assert chunked.errors == [] and sorted(c.id for c in chunked.cases) == sorted(monolith)
    for case in chunked.cases:
        same = monolith[case.id]
        assert _turns(case) == _turns(same) and case.task == same.task
        assert case.slices == same.slices and case.meta["scores"] == same.meta["scores"]
        assert (
            case.meta["where"]
            == f"samples/{case.slices['task_id']}_epoch_{case.slices['trial']}/sample.json"
        )


@pytest.mark.parametrize("name", ["calc.eval", "calc_chunked.eval"])
def test_attachments_are_resolved(name: str) -> None:
    path = DATA / name
    with ZipReader(path) as log:
        member = next(n for n in log.names() if n.startswith("samples/2_epoch_1"))
        sample = read_sample(log, member)
    image = sample["messages"][1]["content"][1]["image"]
    assert image.startswith("data:image/png;base64,")  # was attachment://<hash> or <index>


def test_an_attachment_in_message_text_is_resolved(tmp_path: Path) -> None:
    members = _members(CALC)
    sample = json.loads(members["samples/add_epoch_1.json"])
    sample["messages"][-1]["content"][1]["text"] = "attachment://feedbeef"
    sample["attachments"] = {"feedbeef": "The answer is 5 (from an attachment)."}
    members["samples/add_epoch_1.json"] = json.dumps(sample).encode()
    result = import_traces(_write_eval(tmp_path / "att.eval", members))
    case = next(c for c in result.cases if c.id.startswith("add/epoch1/"))
    assert case.trace[-1].content == "The answer is 5 (from an attachment)."


def test_deflate_and_old_logs() -> None:
    for name in ("log_formats.eval", "log_formats.json"):
        result = import_traces(DATA / name)
        assert result.errors == [], name
        [case] = result.cases
        # No uuid and no eval id in logs of inspect_ai 0.3.41: the run id keeps cases apart.
        assert case.id == "1/epoch1/BpiPFmbVcMCRUAXv8ovCTx"
        assert case.agent_model == "ollama/llama3.1" and case.slices["eval_task"] == "popularity"
        assert [t.kind for t in case.trace] == ["system", "message", "final_answer"]
        assert result.gold == {case.id: "fail"}  # match = I
    result = import_traces(DATA / "log_message_deduplication.eval")
    [case] = result.cases
    assert result.errors == [] and case.meta["log_version"] == 3 and not result.notes
    assert case.slices["task_id"] == "0" and case.meta["sample_id"] == "0"
    kinds = [t.kind for t in case.trace]
    assert kinds.count("tool_call") == kinds.count("tool_result") == 5


def test_a_failed_sample_is_kept_as_an_infrastructure_error() -> None:
    result = import_traces(DATA / "calc_error.eval")
    [case] = result.cases
    assert case.meta["error"] == "RuntimeError('kaboom: the explode tool crashed')"
    assert case.slices["infra_error"] is True and result.gold == {}
    assert [t.kind for t in case.trace] == ["message", "message", "tool_call"]
    assert any("sample 'crash' epoch 1 failed: RuntimeError" in n for n in result.notes)


def test_a_sample_that_failed_before_any_message_is_an_error_naming_why(tmp_path: Path) -> None:
    members = _members(DATA / "calc_error.eval")
    sample = json.loads(members["samples/crash_epoch_1.json"])
    sample["messages"] = []
    members["samples/crash_epoch_1.json"] = json.dumps(sample).encode()
    result = import_traces(_write_eval(tmp_path / "setup_failed.eval", members))
    [error] = result.errors
    assert result.cases == [] and error.field == "samples/crash_epoch_1.json:messages"
    assert "failed before any message (RuntimeError('kaboom" in error.reason
    assert "infra_error" in str(error)


def test_a_scorer_patch_is_the_diff_and_an_unscored_sample_has_no_outcome() -> None:
    result = import_traces(DATA / "patch.eval")
    cases = _by_sample(result.cases)
    fixed, skipped = cases["fix", 1], cases["skip", 1]
    assert fixed.diff is not None and fixed.diff.startswith("diff --git a/calc.py b/calc.py")
    assert fixed.meta["diff_source"] == "scores.patch_applied.metadata.model_patch"
    assert result.gold == {fixed.id: "pass"}  # the number 1
    assert skipped.meta["scores"]["patch_applied"] == {
        "value": None,
        "explanation": "no patch was made",
        "reason": "no_response",
        "unscored": True,
    }
    assert skipped.diff is None and "official" in skipped.meta
    assert skipped.meta["official"] == {"scorer": "patch_applied", "label": None}


def test_an_unscored_nan_in_a_json_log_is_read(tmp_path: Path) -> None:
    members = _members(DATA / "patch.eval")
    samples = [json.loads(members[n]) for n in members if n.startswith("samples/")]
    path = tmp_path / "patch.json"
    path.write_text(json.dumps({**json.loads(members["header.json"]), "samples": samples}))
    assert "NaN" in path.read_text()  # a bare token, as inspect_ai writes it
    result = import_traces(path)
    assert result.errors == [] and len(result.cases) == 2
    skipped = next(c for c in result.cases if c.slices["task_id"] == "skip")
    assert skipped.meta["scores"]["patch_applied"]["unscored"] is True
    json.dumps(skipped.model_dump(mode="json"), allow_nan=False)  # nothing non-finite is kept


def test_a_json_log_with_its_samples_first_is_read(tmp_path: Path) -> None:
    data = json.loads((DATA / "calc.json").read_text())
    path = tmp_path / "reordered.json"
    path.write_text(json.dumps({"version": 2, "samples": data.pop("samples"), **data}))
    result = import_traces(path, "inspect")  # not inspect_ai's key order: not detected
    assert result.errors == [] and len(result.cases) == 4
    assert {c.agent_model for c in result.cases} == {"mockllm/model"}
    path.write_text(json.dumps({**data, "samples": {"not": "a list"}}))
    [error] = import_traces(path, "inspect").errors
    assert error.field == "samples" and "not an array" in error.reason


def test_a_sample_logged_twice_is_read_from_its_last_copy(tmp_path: Path) -> None:
    members = _members(CALC)
    name = "samples/add_epoch_1.json"
    retried = json.loads(members[name])
    retried["messages"][-1]["content"][1]["text"] = "The answer is 5 (second attempt)."
    path = tmp_path / "retried.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for member, data in members.items():
            out.writestr(member, data)
        with pytest.warns(UserWarning, match="Duplicate name"):
            out.writestr(name, json.dumps(retried))  # Inspect appends a retried sample so
    result = import_traces(path)
    assert result.errors == [] and len(result.cases) == 4
    case = next(c for c in result.cases if c.meta["where"] == name)
    assert case.trace[-1].content == "The answer is 5 (second attempt)."


def test_logs_are_detected_from_their_content(tmp_path: Path) -> None:
    for path in LOGS:
        assert detect_format(path) == "inspect", path.name
    renamed = tmp_path / "log.bin"
    renamed.write_bytes(CALC.read_bytes())
    assert detect_format(renamed) == "inspect"
    other_zip = _write_eval(tmp_path / "other.eval", {"readme.txt": b"not a log"})
    with pytest.raises(Exception, match="cannot tell the trace format"):
        detect_format(other_zip)
    assert files_in(DATA) == LOGS


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inside", "whole"),
    [("samples/2_epoch_1.json", 1), ("samples/2_epoch_2.json", 3), ("header.json", 4)],
)
def test_a_truncated_eval_keeps_every_whole_sample(tmp_path: Path, inside: str, whole: int) -> None:
    with ZipReader(CALC) as log:
        cut = log.members[inside].offset + 100  # the file ends inside this member
    path = tmp_path / "cut.eval"
    path.write_bytes(CALC.read_bytes()[:cut])
    result = import_traces(path)
    assert len(result.cases) == whole
    [damage] = result.errors
    assert damage.file == str(path) and "the log is damaged" in str(damage)
    assert f"member {inside!r} is cut short" in damage.reason
    # Without header.json, the journal's start record is the header.
    assert all(c.meta["log_status"] == "started" for c in result.cases)
    assert any("log status 'started'" in n for n in result.notes)


def test_zip64_local_headers_read_whole_and_cut_short(tmp_path: Path) -> None:
    """Sizes in a ZIP64 extra field (0xFFFFFFFF in the header), as Inspect writes members that
    may grow past 4 GiB: read from the central directory, and by walking the local headers of a
    log whose directory is cut off."""
    path = tmp_path / "zip64.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name, data in _members(CALC).items():
            with out.open(name, "w", force_zip64=True) as member:
                member.write(data)
    assert path.read_bytes()[18:26] == b"\xff" * 8  # sizes of the first local header
    whole = import_traces(path)
    assert whole.errors == [] and len(whole.cases) == 4
    cut = tmp_path / "zip64_cut.eval"
    cut.write_bytes(path.read_bytes()[:-300])  # the central directory's end is gone
    result = import_traces(cut)
    assert len(result.cases) == 4 and "no end-of-central-directory" in result.errors[0].reason


def test_a_damaged_member_is_named_and_the_others_read(tmp_path: Path) -> None:
    data = bytearray(CALC.read_bytes())
    with ZipReader(CALC) as log:
        member = log.members["samples/2_epoch_1.json"]
    data[member.offset + 80] ^= 0xFF  # inside the compressed data
    path = tmp_path / "damaged.eval"
    path.write_bytes(bytes(data))
    result = import_traces(path)
    assert len(result.cases) == 3
    [error] = result.errors
    assert error.field == "samples/2_epoch_1.json" and error.file == str(path)
    assert "samples/2_epoch_1.json" in error.reason


def test_an_unknown_version_is_read_leniently_and_named(tmp_path: Path) -> None:
    text = (DATA / "calc.json").read_text()
    assert text.startswith('{\n  "version": 2,')
    path = tmp_path / "v7.json"
    path.write_text(text.replace('"version": 2,', '"version": 7,', 1))
    result = import_traces(path)
    assert len(result.cases) == 4 and result.errors == []
    assert any("log version 7 is not one this reader knows (1, 2, 3)" in n for n in result.notes)
    # When its samples do not read as those versions' samples, the error says so.
    members = _members(CALC)
    header = json.loads(members["header.json"])
    header["version"] = 7
    members["header.json"] = json.dumps(header).encode()
    for name in [n for n in members if n.startswith("samples/")]:
        members[name] = json.dumps({"sample_id": 1, "turns": []}).encode()
    result = import_traces(_write_eval(tmp_path / "v7.eval", members))
    assert result.cases == []
    assert any(
        "log version 7 is unknown; 4 of 4 sample(s) did not read" in str(e)
        and "versions tried (1, 2, 3)" in str(e)
        for e in result.errors
    )
    assert any(e.field == "samples/add_epoch_1.json:id" for e in result.errors)


def test_a_log_without_samples_is_an_error(tmp_path: Path) -> None:
    members = _members(CALC)
    header = {k: v for k, v in members.items() if not k.startswith("samples/")}
    result = import_traces(_write_eval(tmp_path / "empty.eval", header))
    [error] = result.errors
    assert result.cases == [] and error.field == "samples" and error.file.endswith("empty.eval")
    assert "holds no samples" in error.reason and "--no-log-samples" in str(error)
    data = json.loads((DATA / "calc.json").read_text())
    data["samples"] = []
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(data, indent=2))
    [error] = import_traces(path).errors
    assert "holds no samples" in error.reason


def test_bad_samples_and_messages_are_named_and_the_rest_kept(tmp_path: Path) -> None:
    members = _members(CALC)
    first = json.loads(members["samples/add_epoch_1.json"])
    first["messages"] = []
    members["samples/add_epoch_1.json"] = json.dumps(first).encode()
    second = json.loads(members["samples/2_epoch_1.json"])
    second["messages"][2]["tool_calls"][0]["function"] = 42
    members["samples/2_epoch_1.json"] = json.dumps(second).encode()
    members["samples/add_epoch_2.json"] = b"{not json"
    path = _write_eval(tmp_path / "bad.eval", members)
    result = import_traces(path)
    by_field = {e.field: e for e in result.errors}
    assert set(by_field) == {
        "samples/add_epoch_1.json:messages",
        "samples/2_epoch_1.json:messages[2].tool_calls[0].function",
        "samples/add_epoch_2.json",
    }
    assert (
        "sample 'add' epoch 1 has no messages"
        in by_field["samples/add_epoch_1.json:messages"].reason
    )
    assert by_field["samples/2_epoch_1.json:messages[2].tool_calls[0].function"].reason.startswith(
        "sample 2 epoch 1: Input should be a valid string"
    )
    assert "not valid JSON" in by_field["samples/add_epoch_2.json"].reason
    # Sample 2 epoch 1 lost only its bad message; 2 epoch 2 is whole.
    assert sorted(c.slices["trial"] for c in result.cases) == [1, 2]
    partial = next(c for c in result.cases if c.slices["trial"] == 1)
    assert "tool_call" not in [t.kind for t in partial.trace]


def test_a_truncated_json_log_keeps_the_samples_before_the_cut(tmp_path: Path) -> None:
    text = (DATA / "calc.json").read_text()
    third = json.loads(text)["samples"][2]["uuid"]
    path = tmp_path / "cut.json"
    path.write_text(text[: text.index(third)])  # the file ends inside the third sample
    result = import_traces(path)
    assert len(result.cases) == 2
    [error] = result.errors
    assert error.field == "samples[2]" and error.line is not None and error.line > 100
    assert "cut short" in error.reason and "the samples before it are read" in error.reason


def test_a_json_sample_error_names_its_line(tmp_path: Path) -> None:
    data = json.loads((DATA / "calc.json").read_text())
    data["samples"][1]["epoch"] = "second"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, indent=2))
    result = import_traces(path)
    [error] = result.errors
    assert error.field == "samples[1].epoch" and error.line is not None
    assert path.read_text().splitlines()[error.line - 1].strip() == "{"
    assert len(result.cases) == 3


# --- memory -------------------------------------------------------------------------------------


def _padded_sample(sample: dict[str, Any], index: int, pad: int) -> dict[str, Any]:
    """A copy of ``sample`` as sample ``index``, with ``pad`` characters of events (events are
    most of a real log, and are never read)."""
    copy = json.loads(json.dumps(sample))
    copy["id"], copy["uuid"] = f"s{index}", f"uuid{index:06d}"
    copy["events"] = [{"event": "info", "data": f"{index}:" + "x" * pad}]
    return copy


def _peak(path: Path) -> tuple[int, int]:
    """(cases, peak bytes allocated) while importing ``path``."""
    tracemalloc.start()
    try:
        result = import_traces(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.errors == []
    return len(result.cases), peak


def test_memory_stays_at_one_sample_whatever_the_size_of_the_log(tmp_path: Path) -> None:
    members = _members(CALC)
    sample = json.loads(members["samples/add_epoch_1.json"])
    header = json.loads(members["header.json"])
    n, pad = 150, 200_000  # a 30 MB log of 200 KB samples
    samples = [_padded_sample(sample, i, pad) for i in range(n)]
    eval_members: dict[str, Any] = {"header.json": header}
    eval_members |= {f"samples/s{i}_epoch_1.json": s for i, s in enumerate(samples)}
    big_eval = _write_eval(tmp_path / "big.eval", eval_members)
    big_json = tmp_path / "big.json"
    with big_json.open("w") as out:
        out.write(json.dumps({**header, "samples": samples}, indent=2))
    del samples, eval_members
    assert big_json.stat().st_size > n * pad
    for path in (big_eval, big_json):
        cases, peak = _peak(path)
        assert cases == n
        # One sample (200 KB of text, a few times that once parsed) plus the cases, never
        # the 30 MB log.
        assert peak < 8 * 2**20, f"{path.name}: peak {peak / 2**20:.1f} MiB"


# --- judge import, judge runset, judge score -----------------------------------------------------


def test_a_folder_stands_for_its_inspect_logs(tmp_path: Path) -> None:
    for name in ("calc.eval", "calc_error.eval", "patch.eval"):
        (tmp_path / "logs" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "logs" / name).write_bytes((DATA / name).read_bytes())
    (tmp_path / "logs" / "notes.txt").write_text("not a log")
    out = tmp_path / "cases.jsonl"
    result = CliRunner().invoke(cli, ["import", str(tmp_path / "logs"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "calc.eval: 4 cases" in result.output and "patch.eval: 2 cases" in result.output
    assert len(out.read_text().splitlines()) == 7
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["import", str(empty)])
    assert result.exit_code == 2 and "no inspect log in this folder" in result.output


def test_pass_at_k_of_an_inspect_eval_from_its_own_scores(tmp_path: Path) -> None:
    """judge import x.eval && judge runset && judge score --gold-labels: the eval's pass@k."""
    runner = CliRunner()
    cases, runs = tmp_path / "cases.jsonl", tmp_path / "runs.jsonl"
    done = runner.invoke(
        cli, ["import", str(CALC), str(DATA / "calc_error.eval"), "--out", str(cases)]
    )
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in cases.read_text().splitlines()]
    assert sorted(r.get("gold") for r in records if "gold" in r) == ["fail"] * 2 + ["pass"] * 2
    done = runner.invoke(cli, ["runset", str(cases), "--out", str(runs)])
    assert done.exit_code == 0, done.output
    assert "5 runs of 3 tasks" in done.output
    written = [json.loads(line) for line in runs.read_text().splitlines()]
    crash = next(r for r in written if r["task_id"] == "crash")
    assert crash["status"] == "infra_error" and "official" not in crash
    assert {(r["task_id"], r["repetition"], r.get("official")) for r in written} >= {
        ("add", 1, "pass"),
        ("add", 2, "pass"),
        ("2", 1, "fail"),
        ("2", 2, "fail"),
    }
    done = runner.invoke(
        cli,
        [
            "score",
            str(runs),
            "--gold-labels",
            "--no-charts",
            "--n-boot",
            "200",
            "--out-dir",
            str(tmp_path),
        ],
    )
    assert done.exit_code == 0, done.output
    assert "| mockllm/model | all | 5 / 4 / 1 | 2 | 0.500" in done.output
    report = json.loads((tmp_path / "report.json").read_text())
    macro = report["per_treatment"]["mockllm/model"]["macro"]
    assert [(m["metric"], m["value"]) for m in macro["pass@k"]] == [
        ("pass@1", 0.5),
        ("pass@2", 0.5),
    ]
    assert [(m["metric"], m["value"]) for m in macro["pass^k"]] == [
        ("pass^1", 0.5),
        ("pass^2", 0.5),
    ]
    assert report["overall"]["excluded_infra_error"] == 1


# --- inspect_ai's own reader ---------------------------------------------------------------------


def _comparable(case: Case) -> tuple[Any, ...]:
    return (case.task, case.diff, _turns(case), case.agent_model, case.slices)


@pytest.mark.slow
def test_both_readers_give_the_same_cases_on_every_log_both_read() -> None:
    require_inspect_ai()
    compared = 0
    for path in LOGS:
        ours = import_traces(path, "inspect")
        theirs = import_traces(path, "inspect-ai")
        if path.name == "calc_chunked.eval":  # inspect_ai 0.3.285 cannot read it back
            assert theirs.cases == [] and "chunked" in str(theirs.errors[0])
            continue
        assert theirs.errors == [], (path.name, [str(e) for e in theirs.errors])
        mine = {(c.slices["task_id"], c.slices["trial"]): c for c in ours.cases}
        other = {(c.slices["task_id"], c.slices["trial"]): c for c in theirs.cases}
        assert sorted(mine) == sorted(other), path.name
        for key, case in mine.items():
            assert _comparable(case) == _comparable(other[key]), (path.name, key)
            if case.meta.get("uuid"):  # inspect_ai invents a uuid for logs without one
                assert case.id == other[key].id
                assert ours.gold.get(case.id) == theirs.gold.get(case.id)
        compared += 1
    assert compared == len(LOGS) - 1
