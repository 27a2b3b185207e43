"""The review page as a reviewer meets it, /docs, and the reports, in headless Chromium.

A real Claude Code run (tests/data/traces/claude-code/fix_slugify.jsonl) is judged through the
loopback server with the three prompt variants of agent-run-success@2 and routed to review. At
1280x800 the task, the first evidence the judge cited and the Pass/Fail buttons are on screen
without scrolling, and stay so; tool-call arguments read as text; the verdicts are labelled by
prompt variant with their confidence; the pages carry no inline script or style.

Screenshots go to a temporary folder, or with ``JUDGE_DOCS_SCREENSHOTS=docs/screenshots`` to the
ones the README shows (``JUDGE_DOCS_SCREENSHOTS=docs/screenshots pytest
tests/judge/api/test_page_screenshots.py``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

import judge
from judge.cli import cli
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from tests.conftest import CHROMIUM, REPO, shared_path
from tests.review_fixtures import MODEL, RunningService, make_card, running_service

RUN = REPO / "tests" / "data" / "traces" / "claude-code" / "fix_slugify.jsonl"
VIEWPORT = {"width": 1280, "height": 800}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="/usr/bin/chromium is absent: apt-get install -y chromium"
    ),
]


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    configured = os.environ.get("JUDGE_DOCS_SCREENSHOTS")
    where = Path(configured) if configured else tmp_path / "shots"
    where.mkdir(parents=True, exist_ok=True)
    return where


def _evidence_id(prompt: str, kind: str, starts: str = "") -> str:
    found = re.findall(rf'<evidence id="(E\d+)" kind="{kind}"[^>]*>\n{re.escape(starts)}', prompt)
    assert found, f"no {kind} evidence starting {starts!r} in the prompt"
    return str(found[-1])


def _responder(request: dict[str, Any]) -> Reply:
    """A judge that cites the edit and the last test run, and is less sure under the strict
    wording (prompt variant 2 of agent-run-success@2)."""
    prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
    cited = [_evidence_id(prompt, "tool_call", "[Edit]"), _evidence_id(prompt, "test_run")]
    strict = "strict reviewer" in prompt
    p_pass = 0.46 if strict else 0.81
    label = "pass" if p_pass >= 0.5 else "fail"
    why = (
        "The edit strips the hyphens and the last test run passes."
        if label == "pass"
        else "Passing tests, but the edge case '--' is not tested."
    )
    text = json.dumps({"verdict": label, "evidence": cited, "rationale": why})
    dist = {"pass": p_pass * 0.98, "fail": (1 - p_pass) * 0.98, "cannot_determine": 0.02}
    return Reply(content=text, logprobs=logprobs_for(text, dist))


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningService]:
    """A store holding the Claude Code run judged with 3 prompt variants and routed to review
    by a card with bands at 0.1 and 0.9 (the variants disagree)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the loopback server needs no key
    db = tmp_path / "page.db"
    case = judge.import_traces(RUN).cases[0]
    with LoopbackServer(_responder) as loopback, judge.open_store(db) as store:
        summary = judge.judge_cases(
            store,
            [case],
            rubric="agent-run-success@2",
            models=[MODEL],
            options=judge.JudgeOptions(api_base=loopback.api_base),
        )
        assert dict(summary.statuses) == {"ok": 3}
        routed = judge.route(store, make_card(version=2), audit_fraction=0.0)
        assert [d.decision for d in routed.decisions] == ["review"]
    with running_service(db) as svc:
        yield svc


def _login(page: Any, svc: RunningService) -> None:
    page.goto(svc.url + "/review")
    page.fill("#key", svc.keys["ann"])
    page.click("button[type=submit]")
    page.wait_for_url(svc.url + "/review")


def _on_screen(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not displayed"
    assert box["y"] >= 0 and box["y"] + min(box["height"], 40) <= VIEWPORT["height"], (
        f"{selector} is off screen: {box}"
    )
    assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"], box
    return dict(box)


def _no_inline_code(html: str) -> None:
    assert "<style" not in html and " style=" not in html
    for tag in re.findall(r"<script[^>]*>", html):
        assert "src=" in tag, tag
    assert not re.search(r"\son[a-z]+=", html), "an inline event handler"


def test_review_item_fits_a_laptop_screen(
    service: RunningService, browser: Any, shots: Path
) -> None:
    page = browser.new_page(viewport=VIEWPORT)
    _login(page, service)
    queue_html = page.content()
    _no_inline_code(queue_html)
    # The prompt variants disagreed (pass, fail, pass): a person first, priority 0.95.
    assert page.locator("#queue tbody tr td").nth(4).inner_text() == "0.95"
    assert "variants disagreed" in page.locator("#queue tbody tr td").nth(3).inner_text()
    page.click("#start")
    page.wait_for_url("**/review/items/*")
    _no_inline_code(page.content())
    page.screenshot(path=str(shots / "review-item.png"))

    # Without scrolling: the task, the first evidence the judge cited, the decision buttons.
    assert page.evaluate("window.scrollY") == 0
    task = _on_screen(page, "#task")
    assert page.locator("#task").inner_text().startswith("slugify() keeps leading")
    first = _on_screen(page, "#cited-evidence .evidence")
    assert first["y"] > task["y"]
    for button in ("button[value=pass]", "button[value=fail]"):
        _on_screen(page, button)
    assert "P" in page.locator("button[value=pass] kbd").inner_text()
    assert page.locator(".hints").is_visible()

    # The task once: the user turn that repeats it is a one-line note, the task card says E1.
    assert page.locator("#task-card .badge.eid").inner_text() == "E1"
    assert page.locator("pre", has_text="slugify() keeps leading").count() == 1
    # The edit the judge cited, its arguments as text: real quotes, real line breaks.
    edit = page.locator("#cited-evidence .evidence").first
    assert "Edit" in edit.locator(".head").inner_text()
    args = edit.locator("dl.args").inner_text()
    assert 'return text.strip("-")' in args and '\\"' not in args
    # The rest of the evidence is folded away, there to open.
    more = page.locator("details#more-evidence")
    assert more.count() == 1 and more.get_attribute("open") is None
    # Three verdicts, one per prompt variant, each with its confidence.
    rows = page.locator("#verdicts tr.head")
    assert rows.count() == 3
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(3)]
    assert [c[0] for c in cells] == ["1/3", "2/3", "3/3"]
    assert [c[2] for c in cells] == ["pass", "fail", "pass"]
    # The confidence is P(the verdict's label): 0.81 * 0.98 = 0.79 for pass, and
    # (1 - 0.46) * 0.98 = 0.53 for fail.
    assert [float(c[3]) for c in cells] == pytest.approx([0.79, 0.53, 0.79], abs=0.006)
    assert "strict reviewer" in page.locator("#verdicts").inner_text()

    # The diff, coloured with line numbers, or side by side.
    assert page.locator("#diff tr.add").count() >= 1 and page.locator("#diff tr.del").count() >= 1
    page.click("#diff-toggle")
    assert page.locator("#diff-split").is_visible() and not page.locator("#diff").is_visible()

    # Scrolled to the bottom, the decision is still on screen.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_function("window.scrollY > 0")
    _on_screen(page, "button[value=pass]")
    page.keyboard.press("f")
    page.wait_for_url("**/review?done=*")
    assert "labelled Fail" in page.inner_text("#flash")
    page.close()


def test_docs_are_served_locally_behind_the_gate(
    service: RunningService, browser: Any, shots: Path
) -> None:
    key = {"X-API-Key": service.keys["ann"]}
    assert httpx.get(service.url + "/openapi.json").status_code == 401
    assert httpx.get(service.url + "/docs/openapi.json").status_code in (303, 401)
    refused = httpx.get(service.url + "/docs", follow_redirects=False)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/login")
    page_html = httpx.get(service.url + "/docs", headers=key)
    assert page_html.status_code == 200 and "/docs/assets/swagger-ui-bundle.js" in page_html.text
    _no_inline_code(page_html.text)
    bundle = httpx.get(service.url + "/docs/assets/swagger-ui-bundle.js", headers=key)
    assert bundle.status_code == 200 and "javascript" in bundle.headers["content-type"]
    assert httpx.get(service.url + "/docs/assets/index.html", headers=key).status_code == 404
    # In the browser, after logging in: Swagger UI renders the schema; nothing leaves the host.
    page = browser.new_page(viewport=VIEWPORT)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    _login(page, service)
    page.goto(service.url + "/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "judge" in page.locator(".swagger-ui .info .title").inner_text()
    page.wait_for_selector('.opblock-summary-path[data-path="/v1/jobs"]')
    page.screenshot(path=str(shots / "api-docs.png"))
    assert asked and all(u.startswith(service.url) for u in asked), [
        u for u in asked if not u.startswith(service.url)
    ]
    page.close()


def test_report_screenshots(
    browser: Any, shots: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    shots = shots.resolve()
    monkeypatch.chdir(REPO)  # the report names the run set by the path it was given
    runs = Path("tests") / "data" / "runsets" / "small.jsonl"
    scored = runner.invoke(
        cli,
        [
            "score",
            str(runs),
            "--gold-labels",
            "--out-dir",
            str(tmp_path / "runset"),
            "--n-boot",
            "200",
        ],
    )
    assert scored.exit_code == 0, scored.output
    pages = {"runset-report.png": tmp_path / "runset" / "report.html"}
    recorded = shared_path("judgments/trust_or_escalate.jsonl")
    calibrated = runner.invoke(
        cli,
        [
            "calibrate",
            "--judgments",
            str(recorded),
            "--judge",
            "gpt-4-turbo-2024-04-09",
            "--alpha-accept",
            "0.15",
            "--delta",
            "0.1",
            "--out",
            str(tmp_path / "card.yaml"),
            "--report",
            str(tmp_path / "calibration.html"),
        ],
    )
    assert calibrated.exit_code == 0, calibrated.output
    pages["calibration-report.png"] = tmp_path / "calibration.html"
    for name, html in pages.items():
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        asked: list[str] = []
        page.on("request", lambda r, asked=asked: asked.append(r.url))
        page.goto(html.as_uri())
        assert page.locator("svg").count() >= 1
        assert all(u.startswith("file://") or u.startswith("data:") for u in asked), asked
        page.screenshot(path=str(shots / name))
        page.close()
