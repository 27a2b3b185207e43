"""Secrets: the per-kind table of the planted corpus, redactions on the real traces, and the
cost of redaction per case.

    python bench/reliability_secrets.py corpus     # judge the corpus through a loopback server
    python bench/reliability_secrets.py corpus --split outside6
        # the outside set (tests/data/secrets/outside6_*.jsonl), measured once: which planted
        # values reach the provider, the store or an output, and which look-alikes survive
    python bench/reliability_secrets.py corpus --split issue36
        # the set of issue 36 (bench/data/secrets, written before its rules), the same way
    python bench/reliability_secrets.py corpus --split fresh
        # the set of 5 Dec (bench/data/secrets/fresh, written by an outside author apart from
        # the rules), the same way
    python bench/reliability_secrets.py corpus --split fresh2
        # the second set of 5 Dec (bench/data/secrets/fresh2, another outside author), the same way
    python bench/reliability_secrets.py corpus --split fresh3
        # the set of 6 Dec (bench/data/secrets/fresh3, a third outside author), the same way
    python bench/reliability_secrets.py corpus --split fresh4
        # the second set of 6 Dec (bench/data/secrets/fresh4, a fourth outside author), the same way
    python bench/reliability_secrets.py lookalikes # gitleaks' false-positive fixtures kept?
    python bench/reliability_secrets.py gold       # redactions on ../shared/gold, with samples
    python bench/reliability_secrets.py timing     # ms per case on the SWE-bench dev traces
    python bench/reliability_secrets.py reuse --baseline DIR --cases FILE
        # judge FILE with the checkout DIR, then with this one on the same store: new calls?

``timing`` imports only ``judge.safety.redact.redact``, so the same command measures an older
checkout (``PYTHONPATH=<old checkout> python bench/reliability_secrets.py timing``) for a
before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from judge.cli import cli
from judge.evidence import select_evidence
from judge.safety.redact import redact
from judge.testing.loopback import LoopbackServer, Reply
from judge.types import Case

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reliability_injection import wilson  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))
DATA = REPO / "tests" / "data" / "secrets"
#: The issue-36 set (written before its rules) and the outside look-alikes.
HELD_OUT = REPO / "bench" / "data" / "secrets"
JOIN = "\u00ab\u00bb"
MARKER = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")


def _load(name: str, data: Path = DATA) -> list[dict[str, Any]]:
    lines = (data / name).read_text("utf-8").replace(JOIN, "").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _kind(p: dict[str, Any]) -> str:
    """The kind of a planted row (the first corpus part names it by its marker)."""
    return str(p.get("kind") or p["marker"] or "benign:control")


def _leaked(secret: str, text: str, size: int = 12) -> bool:
    """Whether any ``size``-character piece of ``secret`` is in ``text``."""
    if len(secret) <= size:
        return secret in text
    return any(secret[i : i + size] in text for i in range(len(secret) - size + 1))


def corpus() -> None:
    """Judge both corpus parts with `judge run` through a loopback server; print per kind how
    many values were planted, are redacted in the evidence, and reached the provider."""

    cases = _load("cases.jsonl") + _load("more_cases.jsonl") + _load("shapes_cases.jsonl")
    planted = _load("planted.jsonl") + _load("more_planted.jsonl") + _load("shapes_planted.jsonl")
    answer = '{"verdict": "fail", "evidence": ["E1"], "rationale": "E1 shows it."}'
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases), "utf-8")
        os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key")
        with LoopbackServer(lambda r: Reply(content=answer)) as server:
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
                    str(Path(tmp) / "j.db"),
                    "--quiet",
                    str(path),
                ],
            )
        assert result.exit_code == 0, result.output
    sent: dict[str, str] = {}
    for request in server.requests:
        user = request["messages"][1]["content"]
        case_id = next(c["id"] for c in cases if c["task"][:25] in user)
        sent[case_id] = json.dumps(request, ensure_ascii=False) + "\n" + user
    evidence = {c["id"]: "\n".join(i.text for i in select_evidence(Case(**c)).items) for c in cases}
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for p in planted:
        kind = _kind(p)
        row = rows[kind]
        row["planted"] += 1
        if p["marker"] is None or p.get("false_positive"):
            row["left alone"] += p["secret"] in sent[p["case"]]
            continue
        row["redacted"] += (
            not _leaked(p["secret"], evidence[p["case"]])
            and f"[REDACTED:{p['marker']}]" in evidence[p["case"]]
        )
        row["reached provider"] += _leaked(p["secret"], sent[p["case"]])
    print("| kind | planted | redacted in evidence | reached provider | marker |")
    print("|---|---|---|---|---|")
    markers: dict[str, set[str]] = defaultdict(set)
    for p in planted:
        markers[_kind(p)].add(p["marker"])
    totals: Counter[str] = Counter()
    for kind, row in rows.items():
        if kind.startswith("benign:"):
            continue
        totals.update(row)
        print(
            f"| {kind} | {row['planted']} | {row['redacted']} | {row['reached provider']} "
            f"| {', '.join(sorted(markers[kind]))} |"
        )
    print(
        f"| **all secrets** | {totals['planted']} | {totals['redacted']} | "
        f"{totals['reached provider']} | |"
    )
    benign = {k: r for k, r in rows.items() if k.startswith("benign:")}
    left = sum(r["left alone"] for r in benign.values())
    wrong = [k for k, r in benign.items() if not r["left alone"]]
    print(f"\nbenign look-alikes: {len(benign)}, left alone {left}, redacted: {wrong}")
    print(f"{len(server.requests)} provider requests, {len(cases)} cases")


def _is_benign(p: dict[str, Any]) -> bool:
    """A look-alike: marked benign (the outside set), or with no marker, or a known false
    redaction (development corpora)."""
    return bool(p.get("benign")) or p.get("marker", "") is None or bool(p.get("false_positive"))


def outside6(
    cases_file: str = "outside6_cases.jsonl",
    planted_file: str = "outside6_planted.jsonl",
    data: Path = DATA,
) -> None:
    """Judge the outside set end to end (``judge run`` through a loopback server, then ``judge
    show`` and ``judge export``) and print, per kind, the planted values of which any
    12-character piece reached the provider, the store (its tables and the raw bytes of its
    files) or an output, and the look-alikes that reached the judge unchanged."""
    cases = _load(cases_file, data)
    planted = _load(planted_file, data)
    answer = '{"verdict": "fail", "evidence": ["E1"], "rationale": "E1 shows it."}'
    with tempfile.TemporaryDirectory() as tmp:
        path, db = Path(tmp) / "cases.jsonl", Path(tmp) / "j.db"
        out, otel = Path(tmp) / "out.jsonl", Path(tmp) / "otel.json"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases), "utf-8")
        os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key")
        runner = CliRunner()
        with LoopbackServer(lambda r: Reply(content=answer)) as server:
            result = runner.invoke(
                cli,
                ["run", "--rubric", "agent-run-success@1", "--model", "openai/loopback"]
                + ["--api-base", server.api_base, "--db", str(db), "--out", str(out)]
                + ["--quiet", str(path)],
            )
        shown = runner.invoke(cli, ["show", "--db", str(db), "--limit", "100000"]).output
        shown += runner.invoke(
            cli, ["show", "--db", str(db), "--limit", "100000", "--format", "jsonl"]
        ).output
        runner.invoke(cli, ["export", "--db", str(db), "--out", str(otel)])
        stored = b"".join(p.read_bytes() for p in Path(tmp).glob("j.db*")).decode(
            "utf-8", "replace"
        )
        outputs = {
            "provider": json.dumps(server.requests, ensure_ascii=False)
            + "\n".join(m["content"] for r in server.requests for m in r["messages"]),
            "store": stored,
            "outputs": result.output
            + shown
            + (out.read_text("utf-8") if out.exists() else "")
            + (otel.read_text("utf-8") if otel.exists() else ""),
        }
    print(
        f"judge run exit {result.exit_code}; {len(server.requests)} provider requests, "
        f"{len(cases)} cases, {len(planted)} planted rows"
    )
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    leaks: list[str] = []
    lost: list[str] = []
    for p in planted:
        kind = str(p.get("kind") or p.get("category") or p.get("marker") or "unnamed")
        secret = str(p.get("secret") or p.get("value") or "")
        row = rows[("look-alike: " if _is_benign(p) else "") + kind]
        row["planted"] += 1
        if _is_benign(p):
            kept = secret in outputs["provider"]
            row["kept"] += kept
            if not kept:
                lost.append(f"{p.get('case')}: {kind}")
            continue
        forms = [secret] + ([str(p["plain"])] if p.get("plain") else [])
        for where, text in outputs.items():
            if any(_leaked(form, text) for form in forms if form):
                row[where] += 1
                leaks.append(f"{p.get('case')}: {kind} -> {where}")
    secrets = [k for k in rows if not k.startswith("look-alike: ")]
    print("\n| kind | planted | reached provider | reached store | reached an output |")
    print("|---|---|---|---|---|")
    for kind in sorted(secrets):
        r = rows[kind]
        print(f"| {kind} | {r['planted']} | {r['provider']} | {r['store']} | {r['outputs']} |")
    total = sum(rows[k]["planted"] for k in secrets)
    reached = len({leak.rsplit(" -> ", 1)[0] for leak in leaks})
    print(
        f"\nplanted secrets {total}: {reached} reached the provider, the store or an output "
        "(target: 0)"
    )
    benign = [k for k in rows if k.startswith("look-alike: ")]
    n_benign = sum(rows[k]["planted"] for k in benign)
    n_kept = sum(rows[k]["kept"] for k in benign)
    if n_benign:
        lo, hi = wilson(n_kept, n_benign)
        print(
            f"look-alikes kept {n_kept}/{n_benign} = {n_kept / n_benign:.1%} "
            f"[{lo:.1%}, {hi:.1%}] "
            "(target >= 95%)"
        )
    families: dict[str, Counter[str]] = defaultdict(Counter)
    for p in planted:
        if "family" not in p:
            continue
        row = families[("look-alike: " if _is_benign(p) else "") + p["family"]]
        row["planted"] += 1
        name = f"{p.get('case')}: {p['kind']}"
        row["missed"] += any(line.startswith(name + " -> ") for line in leaks) or name in lost
    if families:
        print("\n| family | planted | leaked (secrets) or redacted (look-alikes) |")
        print("|---|---|---|")
        for family, row in sorted(families.items()):
            print(f"| {family} | {row['planted']} | {row['missed']} |")
    for line in leaks:
        print("  leaked:", line)
    for line in lost:
        print("  look-alike redacted:", line)


def lookalikes() -> None:
    """The outside look-alikes (gitleaks' false-positive fixtures): the share ``redact`` returns
    unchanged, and the ones it changes, by the gitleaks rule file they come from."""
    rows = _load("gitleaks_fps.jsonl", HELD_OUT / "outside")
    lost: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        redacted, _ = redact(row["text"])
        if redacted != row["text"]:
            lost[row["source"].split("#")[0]].append(
                " ".join(MARKER.findall(redacted)) + " in " + row["text"][:70].replace("\n", " ")
            )
    kept = len(rows) - sum(map(len, lost.values()))
    lo, hi = wilson(kept, len(rows))
    print(
        f"outside look-alikes kept {kept}/{len(rows)} = {kept / len(rows):.1%} [{lo:.1%}, {hi:.1%}]"
    )
    for source, texts in sorted(lost.items()):
        for text in texts:
            print(f"  {source}: {text}")


def _texts(record: dict[str, Any]) -> Iterator[str]:
    yield record.get("task") or ""
    if record.get("diff"):
        yield record["diff"]
    yield from (record.get("candidates") or {}).values()
    for turn in record.get("trace") or []:
        yield turn["content"]


def gold(samples: int) -> None:
    """Redactions on the real traces: counts by marker per file, and samples to inspect."""

    shown = 0
    for path in sorted((SHARED / "gold").glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        by_marker: Counter[str] = Counter()
        cases_with = 0
        for record in records:
            found = 0
            for text in _texts(record):
                out, n = redact(text)
                if not n:
                    continue
                found += n
                by_marker.update(MARKER.findall(out))
                for m in MARKER.finditer(out):
                    if shown < samples:
                        shown += 1
                        line_start = out.rfind("\n", 0, m.start()) + 1
                        line_end = out.find("\n", m.end())
                        line = out[line_start : line_end if line_end >= 0 else None]
                        print(f"  sample {record['id'][-40:]}: {line.strip()[:150]}")
            cases_with += found > 0
        total = sum(by_marker.values())
        print(
            f"{path.name}: {len(records)} cases, {cases_with} with redactions, {total} "
            f"redactions {dict(by_marker.most_common())}"
        )


def timing(repeats: int) -> None:
    """Milliseconds to redact every text of a SWE-bench dev case (task, diff, turns)."""

    path = SHARED / "gold" / "swebench_verified_dev.jsonl"
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    redact("warm up: load and compile the rules once")
    best = [float("inf")] * len(records)
    for _ in range(repeats):
        for i, record in enumerate(records):
            started = time.perf_counter()
            for text in _texts(record):
                redact(text)
            best[i] = min(best[i], time.perf_counter() - started)
    ms = sorted(1000 * b for b in best)
    one, five, _ = os.getloadavg()
    print(
        f"{path.name}: {len(ms)} cases, {sum(len(t) for r in records for t in _texts(r)):,} "
        f"chars; ms per case (best of {repeats}): mean {statistics.mean(ms):.2f}, median "
        f"{statistics.median(ms):.2f}, p95 {ms[int(0.95 * len(ms))]:.2f}, max {ms[-1]:.2f}; "
        f"total {sum(ms) / 1000:.2f} s (load {one:.2f} {five:.2f}, {os.cpu_count()} cpus)"
    )


def reuse(baseline: str, cases: str) -> None:
    """Judge ``cases`` with the code in ``baseline`` (a checkout of an earlier commit), then with
    this checkout on the same store, through one loopback server; print the requests of each."""

    answer = '{"verdict": "pass", "evidence": ["E1"], "rationale": "E1 shows it."}'
    with (
        tempfile.TemporaryDirectory() as tmp,
        LoopbackServer(lambda r: Reply(content=answer)) as server,
    ):
        db = str(Path(tmp) / "j.db")
        for label, path in (("baseline", baseline), ("this checkout", str(REPO))):
            before = len(server.requests)
            env = {**os.environ, "PYTHONPATH": path, "OPENAI_API_KEY": "sk-test-not-a-real-key"}
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "judge",
                    "run",
                    "--rubric",
                    "agent-run-success@1",
                    "--model",
                    "openai/loopback",
                    "--api-base",
                    server.api_base,
                    "--db",
                    db,
                    "--quiet",
                    str(Path(cases).resolve()),
                ],
                env=env,
                capture_output=True,
                text=True,
                cwd=path,
                check=False,
            )
            print(f"{label}: exit {done.returncode}, {len(server.requests) - before} model calls")


def main() -> None:
    """Parse the arguments and run one part."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["corpus", "gold", "timing", "reuse", "lookalikes"])
    parser.add_argument("--baseline", help="reuse: a checkout of the earlier code")
    parser.add_argument("--cases", help="reuse: the cases to judge (JSONL)")
    parser.add_argument("--samples", type=int, default=40, help="gold: samples to print")
    parser.add_argument("--repeats", type=int, default=3, help="timing: best of N")
    parser.add_argument(
        "--split",
        choices=["development", "outside6", "issue36", "fresh", "fresh2", "fresh3", "fresh4"],
        default="development",
        help="corpus: the project's corpora, the outside set (measured once), or the set of "
        "issue 36 (bench/data/secrets, written before its rules), or the fresh set of 5 Dec "
        "(bench/data/secrets/fresh, written apart from the rules), or the second fresh set "
        "(bench/data/secrets/fresh2, written apart from the rules), or the third (fresh3, 6 Dec), "
        "or the fourth (fresh4, 6 Dec)",
    )
    args = parser.parse_args()
    if args.part == "corpus" and args.split == "outside6":
        outside6()
    elif args.part == "corpus" and args.split == "issue36":
        outside6("cases.jsonl", "planted.jsonl", HELD_OUT)
    elif args.part == "corpus" and args.split in ("fresh", "fresh2", "fresh3", "fresh4"):
        outside6("cases.jsonl", "planted.jsonl", HELD_OUT / args.split)
    elif args.part == "lookalikes":
        lookalikes()
    elif args.part == "corpus":
        corpus()
    elif args.part == "reuse":
        reuse(args.baseline, args.cases)
    elif args.part == "gold":
        gold(args.samples)
    else:
        timing(args.repeats)


if __name__ == "__main__":
    main()
