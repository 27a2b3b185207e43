"""The review page as a reviewer meets it, /docs, and the reports, in headless Chromium.

A real Claude Code run (tests/data/traces/claude-code/fix_slugify.jsonl) is judged through the
loopback server with the three prompt variants of agent-run-success@2 and routed to review. At
1280x800 the task, the first evidence the judge cited and the Pass/Fail buttons are on screen
without scrolling, and stay so; tool-call arguments read as text; the verdicts are labelled by
prompt variant with their confidence; the pages carry no inline script or style. At 390x844 (a
phone) the queue is a list of cards no wider than the screen, and on the item page the task, the
diff and the verdicts are each seen, never under the label buttons, which are a strip at the
bottom of the screen. Diff line numbers of five digits stay on one line at both sizes.

Screenshots go to a temporary folder, or with ``JUDGE_DOCS_SCREENSHOTS=docs/screenshots`` to the
ones the README shows (``JUDGE_DOCS_SCREENSHOTS=docs/screenshots pytest
tests/judge/api/test_page_screenshots.py``).
"""

from __future__ import annotations

import json
import os
import re
import time
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


def _wait_until(page: Any, expression: str, timeout_s: float = 10.0) -> None:
    """Poll ``expression`` from the test until it is true. Playwright's wait_for_function
    polls inside the page with a function built from the string, which the page's security
    policy (script-src 'self', no eval) refuses whenever the first check is false."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout_s} s: {expression}")
        time.sleep(0.05)


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


def _no_horizontal_overflow(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))


#: What of the viewport the fixed and sticky elements cover, as a fraction (their boxes
#: clipped to the viewport; overlaps counted twice, which can only make it larger).
_COVERED = """() => {
  const w = window.innerWidth, h = window.innerHeight;
  let area = 0;
  for (const el of document.querySelectorAll("body *")) {
    const pos = getComputedStyle(el).position;
    if (pos !== "fixed" && pos !== "sticky") continue;
    const r = el.getBoundingClientRect();
    const x = Math.max(0, Math.min(w, r.right) - Math.max(0, r.left));
    const y = Math.max(0, Math.min(h, r.bottom) - Math.max(0, r.top));
    if (getComputedStyle(el).display !== "none") area += x * y;
  }
  return area / (w * h);
}"""

#: Whether the element's centre is really seen (the topmost element there is inside it).
_SEEN = """(sel) => {
  const el = document.querySelector(sel);
  const r = el.getBoundingClientRect();
  const x = r.left + Math.min(r.width, window.innerWidth) / 2;
  const y = r.top + Math.min(r.height, 20) / 2;
  const top = document.elementFromPoint(x, y);
  return top !== null && el.contains(top);
}"""


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
    # Three verdicts, one per prompt variant, each with its confidence (one answer order:
    # no order column).
    assert page.locator("#verdicts thead th").all_inner_texts() == [
        "PROMPT",
        "VERDICT",
        "CONFIDENCE",
    ]
    rows = page.locator("#verdicts tr.head")
    assert rows.count() == 3
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(3)]
    assert [c[0] for c in cells] == ["1/3", "2/3", "3/3"]
    assert [c[1] for c in cells] == ["pass", "fail", "pass"]
    # The confidence is P(the verdict's label): 0.81 * 0.98 = 0.79 for pass, and
    # (1 - 0.46) * 0.98 = 0.53 for fail.
    assert [float(c[2]) for c in cells] == pytest.approx([0.79, 0.53, 0.79], abs=0.006)
    assert "strict reviewer" in page.locator("#verdicts").inner_text()
    # The judge cited evidence: no warning that it did not.
    assert page.locator("#uncited").count() == 0
    # On a laptop the compact bar of a phone is not shown; the decision card sits in the right
    # column, beside the case, not over it.
    assert not page.locator("#quickbar").is_visible()
    decision = _on_screen(page, "#decision")
    assert decision["x"] > task["x"] + task["width"]
    assert _no_horizontal_overflow(page)

    # The diff, coloured with line numbers, or side by side.
    assert page.locator("#diff tr.add").count() >= 1 and page.locator("#diff tr.del").count() >= 1
    page.click("#diff-toggle")
    assert page.locator("#diff-split").is_visible() and not page.locator("#diff").is_visible()

    # Scrolled to the bottom, the decision is still on screen.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    _wait_until(page, "window.scrollY > 0")
    _on_screen(page, "button[value=pass]")
    page.keyboard.press("f")
    page.wait_for_url("**/review?done=*")
    assert "labelled Fail" in page.inner_text("#flash")
    page.close()


PHONE = {"width": 390, "height": 844}


def _in_view(page: Any, selector: str, viewport: dict[str, int] = PHONE) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not displayed"
    assert box["y"] >= 0 and box["y"] + min(box["height"], 40) <= viewport["height"], (
        f"{selector} is off screen: {box}"
    )
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"] + 0.5, box
    return dict(box)


def test_review_item_on_a_phone(service: RunningService, browser: Any, shots: Path) -> None:
    """At 390x844 the case, the diff and the judge's verdicts are all readable: the decision
    is a strip of buttons at the bottom (with the note in the flow after the verdicts), never
    a panel over the case."""
    page = browser.new_page(viewport=PHONE, device_scale_factor=2)
    _login(page, service)
    # The queue: each item a card, nothing wider than the screen.
    assert _no_horizontal_overflow(page)
    assert not page.locator("#queue thead").is_visible()
    row = _in_view(page, "#queue tbody tr")
    assert row["width"] <= PHONE["width"]
    assert "variants disagreed" in page.locator("#queue tbody tr").inner_text()
    # So is the table of calibration cards below it.
    card = page.locator("#cards tbody tr").first.bounding_box()
    assert card is not None and card["x"] >= 0 and card["x"] + card["width"] <= PHONE["width"]
    page.screenshot(path=str(shots / "review-queue-phone.png"))
    page.click("#start")
    page.wait_for_url("**/review/items/*")
    _no_inline_code(page.content())
    page.screenshot(path=str(shots / "review-item-phone.png"))

    # At the top: the task is seen, the label buttons are on screen, and what is fixed covers
    # a strip of the screen (the old panel covered all of it).
    assert page.evaluate("window.scrollY") == 0 and _no_horizontal_overflow(page)
    _in_view(page, "#task")
    assert page.evaluate(_SEEN, "#task")
    bar = _in_view(page, "#quickbar")
    assert bar["y"] + bar["height"] == pytest.approx(PHONE["height"], abs=1)
    assert bar["height"] <= 0.1 * PHONE["height"]
    assert page.evaluate(_COVERED) <= 0.1
    for button in ("#quickbar button[value=pass]", "#quickbar button[value=fail]"):
        _in_view(page, button)
    assert page.locator("#quickbar").inner_text().split() == [
        "Pass",
        "Fail",
        "Can't",
        "tell",
        "Note",
    ]
    assert page.evaluate("getComputedStyle(document.getElementById('decision')).position") in (
        "static",
        "relative",
    )
    assert not page.locator(".hints").is_visible()  # keyboard shortcuts: not on a phone

    # Scrolled to each part, it is seen, not hidden under the bar; the bar stays a strip.
    for part in ("#diff", "#verdicts", "#verdicts tr.head", "#why", "#decision"):
        page.locator(part).first.scroll_into_view_if_needed()
        box = _in_view(page, part)
        assert box["y"] + min(box["height"], 40) <= bar["y"] + 1 or page.evaluate(_SEEN, part), part
        assert page.evaluate(_SEEN, part), f"{part} is covered"
        assert page.evaluate(_COVERED) <= 0.1, part
    # The links under the title reach each part.
    page.evaluate("window.scrollTo(0, 0)")
    page.click(".jump a[href='#verdicts']")
    _wait_until(page, "window.scrollY > 0")
    assert page.evaluate(_SEEN, "#verdicts h2")
    # The judge's verdicts read on a phone: three rows, each verdict and its reason.
    assert page.locator("#verdicts tr.head").count() == 3
    assert "The edit strips the hyphens" in page.locator("#verdicts").inner_text()
    page.locator("#verdicts").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "review-verdicts-phone.png"))

    # The note (in the decision card, after the verdicts), then Fail from the bar.
    page.click("#quickbar a")
    _wait_until(page, "document.activeElement && document.activeElement.id === 'note'")
    page.keyboard.type("edge case -- untested")
    page.click("#quickbar button[value=fail]")
    page.wait_for_url("**/review?done=*")
    assert "labelled Fail" in page.inner_text("#flash")
    assert _no_horizontal_overflow(page)
    page.close()
    with judge.open_store(service.db) as store:
        (given,) = store.review_labels()
    assert (given.label, given.note, given.reviewer) == ("fail", "edge case -- untested", "ann")


def _numbers_on_one_line(page: Any) -> list[str]:
    """Line-number cells of the diff whose number wraps or is cut (should be none)."""
    return list(
        page.evaluate(
            """() => [...document.querySelectorAll("#diff td.no")].filter(td => {
              if (!td.textContent.trim()) return false;
              const range = document.createRange();
              range.selectNodeContents(td);
              const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
              return lines.size !== 1 || td.scrollWidth > td.clientWidth;
            }).map(td => td.textContent)"""
        )
    )


def test_long_files_keep_diff_line_numbers_on_one_line(
    tmp_path: Path, browser: Any, shots: Path
) -> None:
    from judge.review import route
    from tests.review_fixtures import make_case, make_judgment, running_service, seed_store

    lines = "".join(
        f" line {n} of a long module, with words enough to wrap on a phone\n" for n in range(3)
    )
    diff = (
        "--- a/big.py\n+++ b/big.py\n@@ -9998,4 +9998,5 @@\n"
        + lines
        + "-    return old_value_of_something_rather_long\n"
        + "+    return new_value_of_something_rather_long\n+    # and one line more\n"
    )
    db = tmp_path / "long.db"
    with judge.open_store(db) as store:
        case = make_case(7).model_copy(update={"diff": diff})
        seed_store(store, [case], [make_judgment(case.id, 0.6)])
        route(store, make_card(), audit_fraction=0.0)
    with running_service(db) as svc:
        for viewport in (VIEWPORT, PHONE):
            page = browser.new_page(viewport=viewport)
            _login(page, svc)
            page.click("#start")
            page.wait_for_url("**/review/items/*")
            numbers = page.locator("#diff td.no").all_inner_texts()
            assert "10001" in numbers and "10002" in numbers
            assert _numbers_on_one_line(page) == [], viewport
            assert _no_horizontal_overflow(page), viewport
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
