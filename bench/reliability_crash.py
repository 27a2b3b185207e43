"""Crash and resume at scale: `judge run` (a real process) on N cases, killed with SIGKILL at K
points, then run to the end; and two `judge run` processes writing one new database at once.

    .venv/bin/python bench/reliability_crash.py [--n 300] [--kills 5] [--seed 0]

The model is a loopback server in this process (a short delay per answer keeps the batch in
flight). Checked from its request log: the final run pays only for judgments not stored before
it; every judgment ever paid for was stored (a request whose answer was lost in a kill is paid
again, never more than once per kill); the store holds N judgments, one per case, and
`SQLite integrity check` is ok after every kill. Exit code 1 when a check fails. The small
versions run in tests/judge/judging/test_crash.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import judge  # noqa: E402
from judge.digests import digest  # noqa: E402
from judge.testing.loopback import LoopbackServer, Reply  # noqa: E402

ANSWER = '{"verdict": "pass", "evidence": ["E1"], "rationale": "E1 shows it done."}'


def _cases(path: Path, n: int, prefix: str) -> Path:
    with path.open("w") as handle:
        for i in range(n):
            handle.write(
                json.dumps(
                    {
                        "id": f"{prefix}-{i:04d}",
                        "kind": "agent_run",
                        "task": f"Task {prefix}{i}: make parse() return [] on empty input.",
                        "trace": [
                            {"id": "t0", "role": "agent", "content": "pytest -q"},
                            {"id": "t1", "role": "observation", "content": f"{i} passed"},
                        ],
                    }
                )
                + "\n"
            )
    return path


def _start(server: LoopbackServer, db: Path, cases: Path, concurrency: int) -> Any:
    return subprocess.Popen(
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
            str(db),
            "--concurrency",
            str(concurrency),
            "--quiet",
            str(cases),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "OPENAI_API_KEY": "sk-loopback"},
    )


def _stored(db: Path) -> dict[str, str]:
    if not db.exists():
        return {}
    with judge.open_store(db) as store:
        return {j.provenance.prompt_digest: j.status for j in store.judgments()}


def _integrity(db: Path) -> str:
    with judge.open_store(db) as store:
        return store.integrity()


def _keys(requests: list[dict[str, Any]]) -> list[str]:
    return [digest(r["messages"][:2]) for r in requests]


def kill_and_resume(tmp: Path, n: int, kills: int, seed: int) -> list[str]:
    """Kill the batch ``kills`` times at random fractions, then finish; return failures."""
    failures: list[str] = []
    rng = random.Random(seed)
    cases = _cases(tmp / "cases.jsonl", n, "c")
    db = tmp / "kill.db"
    points = sorted(rng.uniform(0.05, 0.95) for _ in range(kills))
    with LoopbackServer(lambda r: Reply(content=ANSWER, delay_s=0.02)) as server:
        for fraction in points:
            target = max(1, int(n * fraction))
            if len(_stored(db)) >= target:
                continue
            proc = _start(server, db, cases, concurrency=4)
            while len(_stored(db)) < target and proc.poll() is None:
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            check = _integrity(db)
            n_stored = len(_stored(db))
            print(
                f"  killed at {n_stored}/{n} stored ({len(server.requests)} requests so far); "
                f"integrity_check {check}"
            )
            if check != "ok":
                failures.append(f"integrity_check after a kill: {check}")
        before = set(_stored(db))
        start = len(server.requests)
        proc = _start(server, db, cases, concurrency=4)
        _, err = proc.communicate(timeout=600)
        resumed = _keys(server.requests[start:])
        all_keys = _keys(server.requests)
    stored = _stored(db)
    paid_twice = sum(1 for _, count in Counter(all_keys).items() if count > 1)
    print(
        f"  final run: {len(resumed)} requests for {n - len(before)} missing judgments; "
        f"{len(stored)}/{n} stored; {len(all_keys)} requests in all, {paid_twice} judgment(s) "
        f"paid twice (answers lost in a kill); integrity_check {_integrity(db)}"
    )
    if proc.returncode != 0:
        failures.append(f"final run exited {proc.returncode}: {err[-500:]}")
    if set(resumed) & before:
        failures.append(f"{len(set(resumed) & before)} stored judgment(s) paid again")
    if len(resumed) != len(set(resumed)) or len(resumed) != n - len(before):
        failures.append(f"final run made {len(resumed)} requests for {n - len(before)} missing")
    if len(stored) != n or set(stored.values()) != {"ok"}:
        failures.append(f"{len(stored)} stored of {n}: {Counter(stored.values())}")
    if set(all_keys) != set(stored):
        failures.append("a paid-for judgment is not in the store")
    if max(Counter(all_keys).values()) > 1 + kills:
        failures.append("a judgment was paid for more than once per kill")
    if _integrity(db) != "ok":
        failures.append("integrity_check failed at the end")
    return failures


def two_writers(tmp: Path, n: int) -> list[str]:
    """Two `judge run` on one new database, half their cases shared; return failures."""
    shared = [json.loads(line) for line in _cases(tmp / "s.jsonl", n // 4, "s").open()]
    a = [json.loads(line) for line in _cases(tmp / "a0.jsonl", n // 2, "a").open()]
    b = [json.loads(line) for line in _cases(tmp / "b0.jsonl", n // 2, "b").open()]
    for name, records in (("a.jsonl", a + shared), ("b.jsonl", shared + b)):
        (tmp / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    db = tmp / "two.db"
    with LoopbackServer(lambda r: Reply(content=ANSWER, delay_s=0.005)) as server:
        started = time.perf_counter()
        procs = [_start(server, db, tmp / name, concurrency=8) for name in ("a.jsonl", "b.jsonl")]
        outs = [p.communicate(timeout=600) for p in procs]
        seconds = time.perf_counter() - started
        keys = _keys(server.requests)
    with judge.open_store(db) as store:
        rows = store.count("judgments")
        distinct = len({j.case_id for j in store.judgments()})
    expected = len(a) + len(b) + len(shared)
    print(
        f"  two writers: {rows} rows, {distinct} distinct cases of {expected}; "
        f"{len(keys)} requests ({len(keys) - len(set(keys))} shared cases paid by both); "
        f"integrity_check {_integrity(db)}; {seconds:.1f}s"
    )
    failures = [
        f"writer {i} exited {p.returncode}: {o[1][-300:]}"
        for i, (p, o) in enumerate(zip(procs, outs, strict=True))
        if p.returncode
    ]
    if rows != expected or distinct != expected:
        failures.append(f"{rows} rows / {distinct} cases, expected {expected}")
    if _integrity(db) != "ok":
        failures.append("integrity_check failed")
    return failures


def main() -> int:
    """Run both experiments; print the figures; 1 on any failure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"kill -9 and resume: {args.n} cases, {args.kills} kills (seed {args.seed})")
        failures = kill_and_resume(Path(tmp), args.n, args.kills, args.seed)
        print(f"two processes, one new database: {args.n} cases")
        failures += two_writers(Path(tmp), args.n)
    for failure in failures:
        print("FAILED:", failure)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
