"""``judge calibrate``, ``judge card verify|show`` and ``judge gold validate`` end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from judge.cli import cli
from judge.errors import CardError, InputError
from tests.conftest import REPO, shared_path


def _recorded_binary(path: Path, *, bad_top: bool = False) -> Path:
    # 120 items at P(pass) 0.97 (1 fail), 120 at 0.03 (1 pass), 40 at 0.5; slice repo a/b.
    lines = []
    for i in range(280):
        if i < 120:
            p, g = 0.97, ("fail" if i == 0 or (bad_top and i < 30) else "pass")
        elif i < 240:
            p, g = 0.03, ("pass" if i == 120 else "fail")
        else:
            p, g = 0.5, ("pass" if i % 2 else "fail")
        lines.append(
            json.dumps(
                {
                    "item_id": f"run-{i}",
                    "source": "test",
                    "judge": "judge-x",
                    "order": None,
                    "sample": 0,
                    "verdict": "pass" if p > 0.5 else "fail",
                    "verdict_pos": None,
                    "prob": p,
                    "gold": g,
                    "slices": {"repo": "a" if i % 2 else "b"},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(args: list[str]) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output, result.exception


def test_calibrate_help_imports_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from judge.cli import cli\n"
        "r = CliRunner().invoke(cli, ['calibrate', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "assert '--alpha-accept' in r.output\n"
        "heavy = [m for m in ('numpy', 'scipy', 'sklearn', 'matplotlib', 'litellm') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == ""


def test_calibrate_binary_writes_card_and_self_contained_report(tmp_path: Path) -> None:
    src = _recorded_binary(tmp_path / "v.jsonl")
    card_path, report_path = tmp_path / "c.yaml", tmp_path / "r.html"
    code, out, exc = _run(
        [
            "calibrate", "--recorded", str(src), "--judge", "judge-x", "--alpha-accept", "0.1",
            "--alpha-reject", "0.1", "--delta", "0.1", "--grid", "items", "--out", str(card_path),
            "--report", str(report_path), "--n-boot", "50",
        ]
    )  # fmt: skip
    assert code == 0, (out, exc)
    # Accept: 120 items, 1 error, U(1, 120) at 0.05 = 0.0389 <= 0.1; reject likewise.
    assert "accept: P(pass) >= 0.97: 120 of 280 items (42.9%), 1 errors" in out
    assert "reject: P(pass) <= 0.03: 120 of 280 items (42.9%), 1 errors" in out
    assert "coverage 85.7% decided without review" in out
    card = yaml.safe_load(card_path.read_text())
    assert (
        card["judge"]["source"] == "recorded verdicts" and card["judge"]["rubric"]["digest"] is None
    )
    assert card["policy"]["auto_accept_threshold"] == pytest.approx(0.97)
    assert card["policy"]["guarantee"]["method"] == "ltt-fixed-sequence"
    assert card["calibration"]["gold"]["n"] == 280
    assert card["calibration"]["metrics"]  # summarize() output is embedded
    page = report_path.read_text()
    assert page.count("<svg") == 3
    # Self-contained: no external script, stylesheet, image or font.
    assert not re.search(r"<(script|link|img|iframe)\b", page)
    assert not re.search(r"(src|href)=['\"]?https?:", page)
    assert "Calibration card" in page and "auto-accept when P(pass) &gt;= 0.97" in page


def test_nothing_certifies_is_said_plainly_and_card_has_null_thresholds(tmp_path: Path) -> None:
    src = _recorded_binary(tmp_path / "v.jsonl", bad_top=True)
    card_path = tmp_path / "c.yaml"
    code, out, exc = _run(
        [
            "calibrate", "--recorded", str(src), "--alpha-accept", "0.05", "--alpha-reject",
            "0.05", "--delta", "0.05", "--grid", "items", "--out", str(card_path),
            "--n-boot", "20",
        ]
    )  # fmt: skip
    assert code == 0, (out, exc)
    assert "accept: no band (the first threshold fails" in out
    card = yaml.safe_load(card_path.read_text())
    assert card["policy"]["auto_accept_threshold"] is None


def test_slices_and_calibrator_options(tmp_path: Path) -> None:
    src = _recorded_binary(tmp_path / "v.jsonl")
    code, out, exc = _run(
        [
            "calibrate", "--recorded", str(src), "--alpha-accept", "0.1", "--grid", "items",
            "--slice", "repo", "--out", str(tmp_path / "s.yaml"), "--n-boot", "20",
        ]
    )  # fmt: skip
    assert code == 0, (out, exc)
    assert "per slice of 'repo' (holm)" in out and "[repo=a] accept" in out
    card = yaml.safe_load((tmp_path / "s.yaml").read_text())
    assert set(card["policy"]["per_slice"]) == {"a", "b"}
    assert card["policy"]["auto_accept_threshold"] is None  # per slice only
    code, out, exc = _run(
        [
            "calibrate", "--recorded", str(src), "--calibrator", "isotonic", "--grid", "items",
            "--out", str(tmp_path / "i.yaml"), "--n-boot", "20",
        ]
    )  # fmt: skip
    assert code == 0, (out, exc)
    assert "isotonic fitted on 50% of the task clusters" in out
    conf = yaml.safe_load((tmp_path / "i.yaml").read_text())["calibration"]["confidence"]
    assert conf["calibrator"] == "isotonic" and conf["calibrator_params"]["x"]


def test_input_errors_name_the_problem(tmp_path: Path) -> None:
    src = _recorded_binary(tmp_path / "v.jsonl")
    _, _, exc = _run(["calibrate", "--recorded", str(src), "--judge", "nobody"])
    assert isinstance(exc, InputError) and "no verdicts of judge 'nobody'" in str(exc)
    _, _, exc = _run(["calibrate", "--recorded", str(src), "--judgments", str(src)])
    assert isinstance(exc, InputError) and "exactly one of" in str(exc)
    _, _, exc = _run(["calibrate", "--recorded", str(src), "--grid", "bogus"])
    assert isinstance(exc, InputError) and "unknown grid" in str(exc)


def test_card_verify_and_show(tmp_path: Path) -> None:
    src = _recorded_binary(tmp_path / "v.jsonl")
    card_path = tmp_path / "c.yaml"
    code, out, exc = _run(
        [
            "calibrate",
            "--recorded",
            str(src),
            "--out",
            str(card_path),
            "--grid",
            "items",
            "--n-boot",
            "20",
        ]
    )
    assert code == 0, (out, exc)
    code, out, exc = _run(["card", "verify", str(card_path), "--model", "judge-x", "--recorded"])
    assert code == 0 and "ok:" in out and "matches the given model" in out
    _, _, exc = _run(["card", "verify", str(card_path), "--model", "judge-y"])
    assert isinstance(exc, CardError) and "judge model is 'judge-y'" in str(exc)
    _, _, exc = _run(["card", "verify", str(card_path), "--rubric", "sha256:abc"])
    assert isinstance(exc, CardError) and "rubric digest is sha256:abc" in str(exc)
    code, out, _ = _run(["card", "show", str(card_path)])
    assert code == 0 and "judge     judge-x  [recorded verdicts]" in out and "coverage" in out
    # --as-of: valid on its creation day, expired the day it expires.
    card_dict = yaml.safe_load(card_path.read_text())
    created, expires = str(card_dict["created_at"])[:10], str(card_dict["expires_at"])[:10]
    code, out, _ = _run(["card", "verify", str(card_path), "--recorded", "--as-of", created])
    assert code == 0 and f"(checked as of {created})" in out
    _, _, exc = _run(
        ["card", "verify", str(card_path), "--recorded", "--as-of", expires + "T23:59:59"]
    )
    assert isinstance(exc, CardError) and "the card expired at" in str(exc)
    _, _, exc = _run(["card", "verify", str(card_path), "--recorded", "--as-of", "2000-01-01"])
    assert isinstance(exc, CardError) and "after --as-of 2000-01-01" in str(exc)
    # A hand edit is caught by the digest.
    text = card_path.read_text().replace(
        "auto_accept_threshold: 0.97", "auto_accept_threshold: 0.6"
    )
    card_path.write_text(text)
    _, _, exc = _run(["card", "verify", str(card_path)])
    assert isinstance(exc, CardError) and "edited after it was written" in str(exc)


def test_main_prints_card_errors_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("card_version: 1\n")
    out = subprocess.run(
        [sys.executable, "-m", "judge", "card", "verify", str(bad)],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 2
    assert "bad.yaml: field 'judge': Field required" in out.stderr


def test_calibrate_from_judgments_binds_rubric_and_selector(tmp_path: Path) -> None:
    from judge.rubrics import load_rubric
    from judge.types import Judgment, Provenance, Verdict

    rubric = load_rubric("agent-run-success@1")
    gold_lines, judgment_lines = [], []
    for i in range(80):
        gold = "pass" if i < 60 else "fail"
        p = 0.98 if i < 60 else 0.02
        gold_lines.append(
            json.dumps(
                {"id": f"c{i}", "source": "t", "license": "MIT", "kind": "agent_run", "task": "t",
                 "gold": gold, "gold_source": "harness"}
            )
        )  # fmt: skip
        j = Judgment(
            id=f"j{i}",
            case_id=f"c{i}",
            cache_key=f"k{i}",
            status="ok",
            verdict=Verdict(label=gold, label_probs={"pass": p, "fail": 1 - p}),
            provenance=Provenance(
                rubric_id=rubric.id, rubric_version=rubric.version, rubric_digest=rubric.digest,
                # Each rendered prompt holds its case, so every judgment has its own digest.
                model="prov/m-1", prompt_digest=f"sha256:p{i}", evidence_digest="sha256:e",
                selector_version="sel-7", token_budget=4000, judge_version="0.1",
            ),
        )  # fmt: skip
        judgment_lines.append(j.model_dump_json())
    gold_path, jpath = tmp_path / "g.jsonl", tmp_path / "j.jsonl"
    gold_path.write_text("\n".join(gold_lines) + "\n")
    jpath.write_text("\n".join(judgment_lines) + "\n")
    card_path = tmp_path / "c.yaml"
    code, out, exc = _run(
        [
            "calibrate", "--gold", str(gold_path), "--judgments", str(jpath), "--judge", "prov/m-1",
            "--alpha-accept", "0.1", "--delta", "0.2", "--grid", "items", "--out", str(card_path),
            "--n-boot", "20",
        ]
    )  # fmt: skip
    assert code == 0, (out, exc)
    card = yaml.safe_load(card_path.read_text())
    assert card["judge"]["rubric"] == {
        "id": rubric.id,
        "version": rubric.version,
        "digest": rubric.digest,
    }
    assert card["judge"]["evidence_selector"] == {"version": "sel-7", "token_budget": 4000}
    import hashlib

    system = hashlib.sha256(rubric.system_prompt.encode()).hexdigest()
    assert card["judge"]["prompt_digest"] == "sha256:" + system
    assert card["judge"]["evidence_visible"] == list(rubric.spec.evidence_visible)
    assert card["calibration"]["gold"]["name"] and card["calibration"]["gold"]["n"] == 80
    # 60 clean accepts: U(0, 60) at 0.1 = 1 - 0.1^(1/60) = 0.0377; 20 clean rejects are < 30.
    assert card["policy"]["bands"]["accept"]["n"] == 60
    assert card["policy"]["auto_reject_threshold"] is None
    code, out, exc = _run(
        ["card", "verify", str(card_path), "--model", "prov/m-1", "--rubric", "agent-run-success@1",
         "--selector", "sel-7", "--gold", str(gold_path)]
    )  # fmt: skip
    assert code == 0, (out, exc)
    _, _, exc = _run(["card", "verify", str(card_path), "--selector", "sel-8"])
    assert isinstance(exc, CardError) and "evidence selector version is 'sel-8'" in str(exc)


def test_gold_validate(tmp_path: Path) -> None:
    good = tmp_path / "g.jsonl"
    good.write_text(
        json.dumps({"id": "x", "source": "s", "license": "MIT", "kind": "agent_run", "task": "t",
                    "gold": "pass", "gold_source": "h"}) + "\n"
    )  # fmt: skip
    code, out, _ = _run(["gold", "validate", str(good)])
    assert code == 0 and "1 records" in out and "sha256:" in out
    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps({"id": "x"}) + "\n")
    code, out, _ = _run(["gold", "validate", str(bad)])
    assert code == 1 and "b.jsonl:1" in out


def test_gold_validate_warns_of_a_diff_that_does_not_parse(tmp_path: Path) -> None:
    # A hand-made diff whose hunk header counts 3 old lines where it has 2: the record is
    # valid, but every diff check would answer unknown, so validate says so by line and field.
    diff = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
        "@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 3\n"
    )
    record = {"id": "c1", "kind": "agent_run", "task": "t", "diff": diff}
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(record) + "\n")
    code, out, _ = _run(["gold", "validate", str(path)])
    assert code == 0 and "ok: " in out
    assert "warning: " + str(path) + ":1 field 'diff': the diff does not parse" in out
    assert "shorter than its header" in out
    record["diff"] = diff.replace("@@ -1,3 +1,3 @@", "@@ -1,2 +1,2 @@")
    path.write_text(json.dumps(record) + "\n")
    code, out, _ = _run(["gold", "validate", str(path)])
    assert code == 0 and "warning" not in out


@pytest.mark.shared
@pytest.mark.parametrize(
    ("judge", "expected"),
    [
        ("gpt-4-turbo-2024-04-09", "decide: confidence >= 0.992999: 137 of 246 items (55.7%)"),
        ("gpt-3.5-turbo", "nothing certifies"),
        ("mistral-7b-instruct", "nothing certifies"),
    ],
)
def test_trust_or_escalate_judges(tmp_path: Path, judge: str, expected: str) -> None:
    src = shared_path("judgments/trust_or_escalate.jsonl")
    code, out, exc = _run(
        ["calibrate", "--judgments", str(src), "--judge", judge, "--out", str(tmp_path / "c.yaml"),
         "--n-boot", "20"]
    )  # fmt: skip
    assert code == 0, (out, exc)
    assert "alpha 0.15, delta 0.1" in out
    assert expected in out


@pytest.mark.shared
def test_trust_or_escalate_cascade(tmp_path: Path) -> None:
    src = shared_path("judgments/trust_or_escalate.jsonl")
    code, out, exc = _run(
        ["calibrate", "--recorded", str(src), "--cascade", "--cascade-mode", "shared",
         "--judge", "mistral-7b-instruct", "--judge", "gpt-3.5-turbo",
         "--judge", "gpt-4-turbo-2024-04-09", "--out", str(tmp_path / "c.yaml"), "--n-boot", "20"]
    )  # fmt: skip
    assert code == 0, (out, exc)
    assert "coverage 49.2% (121 of 246)" in out and "APPROXIMATE" in out
    card = yaml.safe_load((tmp_path / "c.yaml").read_text())
    assert [s["model"] for s in card["policy"]["cascade"]] == [
        "mistral-7b-instruct", "gpt-3.5-turbo", "gpt-4-turbo-2024-04-09"
    ]  # fmt: skip


def test_compare_ranks_judges_and_writes_html(tmp_path: Path) -> None:
    # Judge "good" is right on 90 of 100 items, "bad" on 60: good ranks first.
    lines = []
    for i in range(100):
        for judge, right in (("good", i < 90), ("bad", i < 60)):
            lines.append(
                json.dumps(
                    {"item_id": f"i{i}", "judge": judge, "verdict": "A" if right else "B",
                     "gold": "A", "order": None, "sample": 0}
                )
            )  # fmt: skip
    src = tmp_path / "v.jsonl"
    src.write_text("\n".join(lines) + "\n")
    html_path = tmp_path / "c.html"
    code, out, exc = _run(
        ["compare", "--recorded", str(src), "--n-boot", "200", "--html", str(html_path)]
    )
    assert code == 0, (out, exc)
    table = [
        line for line in out.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")
    ]
    assert "good" in table[0] and "90.0%" in table[0] and "bad" in table[1]
    assert "<svg" in html_path.read_text()
    _, _, exc = _run(["compare", "--recorded", str(src), "--judge", "nobody"])
    assert isinstance(exc, InputError) and "nobody" in str(exc)


@pytest.mark.shared
def test_compare_llmbar_ranks_65_judges() -> None:
    # Its speed (issue: under a minute) is measured in bench/, not asserted here.
    src = shared_path("judgments/llmbar_evaluators.jsonl")
    code, out, exc = _run(["compare", "--recorded", str(src)])
    assert code == 0, (out, exc)
    ranked = [line for line in out.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(ranked) == 65


def test_store_with_two_selector_versions_is_calibrated_one_binding_at_a_time(
    tmp_path: Path,
) -> None:
    from judge.rubrics import load_rubric
    from judge.types import Judgment, Provenance, Verdict

    rubric = load_rubric("agent-run-success@1")
    gold_lines, judgment_lines = [], []
    for i in range(40):
        gold = "pass" if i < 30 else "fail"
        gold_lines.append(
            json.dumps(
                {
                    "id": f"c{i}",
                    "source": "t",
                    "license": "MIT",
                    "kind": "agent_run",
                    "task": "t",
                    "gold": gold,
                    "gold_source": "harness",
                }
            )
        )
        # The first 10 cases were judged again after a selector change: two bindings.
        for selector in ("sel-1", "sel-2") if i < 10 else ("sel-1",):
            j = Judgment(
                id=f"j{i}{selector}",
                case_id=f"c{i}",
                cache_key=f"k{i}{selector}",
                status="ok",
                verdict=Verdict(
                    label=gold,
                    label_probs={"pass": 0.9 if i < 30 else 0.1, "fail": 0.1 if i < 30 else 0.9},
                ),
                provenance=Provenance(
                    rubric_id=rubric.id,
                    rubric_version=rubric.version,
                    rubric_digest=rubric.digest,
                    model="m",
                    prompt_digest=f"sha256:p{i}",
                    evidence_digest="sha256:e",
                    selector_version=selector,
                    token_budget=900,
                    judge_version="0.1",
                ),
            )
            judgment_lines.append(j.model_dump_json())
    gold_path, jpath = tmp_path / "g.jsonl", tmp_path / "j.jsonl"
    gold_path.write_text("\n".join(gold_lines) + "\n")
    jpath.write_text("\n".join(judgment_lines) + "\n")
    base = [
        "calibrate",
        "--gold",
        str(gold_path),
        "--judgments",
        str(jpath),
        "--judge",
        "m",
        "--n-boot",
        "20",
        "--out",
        str(tmp_path / "c.yaml"),
    ]
    _, _, exc = _run(base)
    assert isinstance(exc, InputError) and "2 different" in str(exc) and "--selector" in str(exc)
    code, out, exc = _run([*base, "--selector", "sel-1"])
    assert code == 0, (out, exc)
    card = yaml.safe_load((tmp_path / "c.yaml").read_text())
    assert card["judge"]["evidence_selector"]["version"] == "sel-1"
    assert card["calibration"]["gold"]["n"] == 40


def test_cascade_card_from_judgments_binds_the_rubric_and_routes(tmp_path: Path) -> None:
    from calibration.card import load_card
    from judge.routing import route_judgments
    from judge.rubrics import load_rubric
    from judge.types import Judgment, Provenance, Verdict

    rubric = load_rubric("agent-run-success@1")
    gold_lines, judgments = [], []
    for i in range(400):
        gold = "pass" if i % 2 else "fail"
        gold_lines.append(
            json.dumps(
                {
                    "id": f"c{i}",
                    "source": "t",
                    "license": "MIT",
                    "kind": "agent_run",
                    "task": "t",
                    "gold": gold,
                    "gold_source": "harness",
                    "slices": {"task_id": f"t{i}"},
                }
            )
        )
        # "cheap" is sure (and right) on half of the cases, "strong" on every case.
        sure = (i // 2) % 2 == 0
        p_cheap = (0.98 if gold == "pass" else 0.02) if sure else 0.5
        p_strong = 0.97 if gold == "pass" else 0.03
        for model, p in (("cheap", p_cheap), ("strong", p_strong)):
            judgments.append(Judgment(
                id=f"j{i}{model}", case_id=f"c{i}", cache_key=f"k{i}{model}", status="ok",
                verdict=Verdict(label="pass" if p >= 0.5 else "fail",
                                label_probs={"pass": p, "fail": 1 - p}, cited=["E1"]),
                provenance=Provenance(
                    rubric_id=rubric.id, rubric_version=rubric.version,
                    rubric_digest=rubric.digest, model=model, prompt_digest="sha256:p",
                    evidence_digest=f"sha256:e{i}", selector_version="sel-1", token_budget=900,
                    judge_version="0.1"),
            ))  # fmt: skip
    gold_path, jpath = tmp_path / "g.jsonl", tmp_path / "j.jsonl"
    gold_path.write_text("\n".join(gold_lines) + "\n")
    jpath.write_text("\n".join(j.model_dump_json() for j in judgments) + "\n")
    out_card = tmp_path / "c.yaml"
    code, out, exc = _run(
        [
            "calibrate",
            "--gold",
            str(gold_path),
            "--judgments",
            str(jpath),
            "--cascade",
            "--judge",
            "cheap",
            "--judge",
            "strong",
            "--alpha-accept",
            "0.1",
            "--n-boot",
            "20",
            "--out",
            str(out_card),
        ]
    )
    assert code == 0, (out, exc)
    card = load_card(out_card)
    assert card.judge.model == "cascade(cheap > strong)"
    assert card.judge.rubric.digest == rubric.digest
    assert card.judge.evidence_selector.version == "sel-1"
    decisions = route_judgments(card, judgments)
    assert len(decisions) == 400
    by_model = {m: [d for d in decisions if d.model == m] for m in ("cheap", "strong")}
    assert by_model["cheap"] and all(d.decision != "review" for d in by_model["cheap"])
    assert {d.case_id for d in by_model["cheap"]} <= {
        f"c{i}" for i in range(400) if (i // 2) % 2 == 0
    }
    assert any(d.decision != "review" for d in by_model["strong"])
    # Stages that do not share one binding cannot make one card.
    mixed = [
        j.model_copy(
            update={"provenance": j.provenance.model_copy(update={"selector_version": "sel-2"})}
        )
        if j.provenance.model == "strong"
        else j
        for j in judgments
    ]
    jpath.write_text("\n".join(j.model_dump_json() for j in mixed) + "\n")
    _, _, exc = _run(
        [
            "calibrate",
            "--gold",
            str(gold_path),
            "--judgments",
            str(jpath),
            "--cascade",
            "--judge",
            "cheap",
            "--judge",
            "strong",
            "--n-boot",
            "20",
            "--out",
            str(out_card),
        ]
    )
    assert isinstance(exc, InputError) and "do not share one rubric" in str(exc)
