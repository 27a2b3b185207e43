"""The calibration report (``judge calibrate --report``) and its figures.

Each fix has a test that failed on the report before it: metrics shown as tables with their
intervals (not a flat dump of dotted keys and Python list reprs), and a reliability diagram
whose points at the edges (a bin observed at 0 or 1, a mean probability near 1) are drawn
whole instead of clipped by the axes.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from click.testing import CliRunner

from calibration.plots import reliability_svg
from judge.cli import cli

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}href"


def _recorded(path: Path, judge: str = "judge-x") -> Path:
    # 120 items at P(pass) 0.97 (1 fail), 120 at 0.03 (1 pass), 40 at 0.5 (half pass).
    lines = []
    for i in range(280):
        if i < 120:
            p, g = 0.97, ("fail" if i == 0 else "pass")
        elif i < 240:
            p, g = 0.03, ("pass" if i == 120 else "fail")
        else:
            p, g = 0.5, ("pass" if i % 2 else "fail")
        lines.append(json.dumps({
            "item_id": f"run-{i}", "source": "test", "judge": judge, "order": None, "sample": 0,
            "verdict": "pass" if p > 0.5 else "fail", "verdict_pos": None, "prob": p, "gold": g,
            "slices": {"repo": "a" if i % 2 else "b"},
        }))  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


class _Rows(HTMLParser):
    """The text of every table row, cell by cell."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _calibrate(tmp_path: Path, src: Path, *extra: str) -> tuple[str, dict[str, Any]]:
    card, report = tmp_path / "c.yaml", tmp_path / "r.html"
    result = CliRunner().invoke(cli, [
        "calibrate", "--recorded", str(src), "--grid", "items", "--n-boot", "50",
        "--alpha-accept", "0.1", "--out", str(card), "--report", str(report), *extra,
    ])  # fmt: skip
    assert result.exit_code == 0, (result.output, result.exception)
    return report.read_text(encoding="utf-8"), yaml.safe_load(card.read_text())


def _g(x: float) -> str:
    return f"{x:.4g}"


def test_report_shows_metrics_as_tables_with_intervals(tmp_path: Path) -> None:
    page, card = _calibrate(tmp_path, _recorded(tmp_path / "v.jsonl"))
    metrics = card["calibration"]["metrics"]
    parser = _Rows()
    parser.feed(page)
    by_key = {row[-1]: row for row in parser.rows if row}
    # The false accept rate: 1 of the 140 gold-fail items (1 + 119 + 20) judged pass (the P 0.5
    # items are judged fail), its value, its 95% interval and the Wilson interval in one row,
    # with the counts behind it.
    far = metrics["metrics"]["false_accept_rate"]
    row = by_key["false_accept_rate"]
    assert (far["k"], far["n"]) == (1, 140)
    assert _g(far["value"]) in row and "1 / 140" in row
    assert f"[{_g(far['ci95'][0])}, {_g(far['ci95'][1])}]" in row
    assert f"[{_g(far['wilson95'][0])}, {_g(far['wilson95'][1])}]" in row
    kappa = metrics["metrics"]["kappa"]
    assert f"[{_g(kappa['ci95'][0])}, {_g(kappa['ci95'][1])}]" in by_key["kappa"]
    # The confusion matrix as a table, gold down, verdict across: gold pass judged pass 119,
    # judged fail 1 + 20; gold fail judged pass 1, judged fail 139.
    cm = metrics["confusion_matrix"]
    assert (cm["tp"], cm["fn"], cm["fp"], cm["tn"]) == (119, 21, 1, 139)
    assert ["pass", str(cm["tp"]), str(cm["fn"])] in parser.rows
    assert ["fail", str(cm["fp"]), str(cm["tn"])] in parser.rows
    # Not a flat dump: no dotted keys, no Python list repr, outside the card's YAML.
    body = page.split("<h2>Calibration card</h2>")[0]
    assert "metrics.false_accept_rate" not in body and "ci95" not in body
    assert not re.search(r"\['|\[\d+\]", body), "a Python list repr in the report"


def test_report_escapes_names_from_the_verdicts(tmp_path: Path) -> None:
    page, _ = _calibrate(tmp_path, _recorded(tmp_path / "v.jsonl", judge="<b>judge</b>"))
    assert "<b>judge</b>" not in page
    assert "Calibration of &lt;b&gt;judge&lt;/b&gt;" in page


def _markers_inside_axes(svg: str) -> list[tuple[float, float, float]]:
    """(centre x, centre y, distance to the clip box edge minus radius) of every marker that a
    clip path cuts; negative means part of the marker is cut off."""
    root = ET.fromstring(svg)
    radius = {}
    for path in root.iter(f"{SVG}path"):
        d = path.get("d", "")
        if path.get("id") and d.startswith("M 0 "):  # a circle marker centred on 0
            numbers = re.findall(r"-?\d+\.?\d*", d)
            radius["#" + path.get("id", "")] = max(abs(float(v)) for v in numbers)
    boxes = {}
    for clip in root.iter(f"{SVG}clipPath"):
        rect = clip.find(f"{SVG}rect")
        assert rect is not None
        x, y = float(rect.get("x", 0)), float(rect.get("y", 0))
        width, height = float(rect.get("width", 0)), float(rect.get("height", 0))
        boxes[clip.get("id")] = (x, y, x + width, y + height)
    out = []
    for group in root.iter(f"{SVG}g"):
        clip_ref = group.get("clip-path")
        if not clip_ref:
            continue
        x0, y0, x1, y1 = boxes[clip_ref[len("url(#") : -1]]
        for use in group.findall(f"{SVG}use"):
            r = radius.get(use.get(XLINK, ""))
            if r is None:
                continue
            cx, cy = float(use.get("x", 0)), float(use.get("y", 0))
            out.append((cx, cy, min(cx - x0, x1 - cx, cy - y0, y1 - cy) - r))
    return out


def test_reliability_points_at_the_edges_are_drawn_whole() -> None:
    # Bins observed at 0 (P 0.0-0.1: both fail) and at 1 (P 0.5-0.6, 0.9-1.0: all pass), and a
    # top bin whose mean probability is 0.9975: the points sit on the axes' edges.
    prob = np.array([0.02, 0.05, 0.55, 0.55, 0.995, 1.0, 1.0, 0.995])
    outcome = np.array([0, 0, 1, 1, 1, 1, 1, 1], dtype=bool)
    markers = _markers_inside_axes(reliability_svg(prob, outcome, label="P(pass)"))
    assert len(markers) == 3
    rightmost = max(markers)
    assert rightmost[2] >= 0, f"the rightmost point is cut by {-rightmost[2]:.1f} pt"
    assert all(m[2] >= 0 for m in markers), markers
