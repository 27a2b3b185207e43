"""Helpers shared by the benchmarks: the loopback server in its own process, case sets, load.

The loopback server runs in a separate process so that its CPU never counts in the measured
process (``time.process_time`` there is the client's CPU only). Every request it answers is
counted in shared memory, so a benchmark can prove that a run made no model call.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.cases import load_cases
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from judge.testing.processes import descendants

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGE_SHARED_DIR", REPO.parent / "shared"))
SWEBENCH = SHARED / "gold" / "swebench_verified_dev.jsonl"
DEMO = REPO / "gold" / "demo.jsonl"

#: The answer the loopback judge gives: a valid agent-run-success verdict.
ANSWER = '{"verdict": "pass", "evidence": ["E1", "E3"], "rationale": "E3 shows the tests pass."}'
ANSWER_PROBS = {"pass": 0.8, "fail": 0.15, "cannot_determine": 0.05}


def load_text() -> str:
    """The 1/5/15-minute load averages, for printing beside a figure."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cpus)"


def _serve(delay_s: float, counter: Any, cpu: Any, ready: Any, stop: Any) -> None:
    """The server process: answer every request with ANSWER after ``delay_s``; keep the
    process's CPU seconds in ``cpu`` (so a benchmark can show the server is not its limit)."""

    logprobs = logprobs_for(ANSWER, ANSWER_PROBS)

    def responder(request: dict[str, Any]) -> Reply:
        with counter.get_lock():
            counter.value += 1
        cpu.value = time.process_time()
        return Reply(content=ANSWER, logprobs=logprobs, delay_s=delay_s)

    with LoopbackServer(responder) as server:
        # LoopbackServer.requests keeps every request; here they are counted, not kept.
        server.requests = _Discard()
        ready.put(server.api_base)
        stop.wait()


class _Discard(list[Any]):
    """A list that keeps nothing (the server process would otherwise grow by every request)."""

    def append(self, item: Any) -> None:
        return None


@dataclass
class RemoteServer:
    """A loopback server running in another process."""

    api_base: str
    _counter: Any
    _cpu: Any
    pid: int

    @property
    def requests(self) -> int:
        """Requests answered so far."""
        return int(self._counter.value)

    @property
    def cpu_s(self) -> float:
        """CPU seconds the server process had used at its latest request."""
        return float(self._cpu.value)


@contextmanager
def remote_loopback(delay_s: float) -> Iterator[RemoteServer]:
    """Start the loopback server in a spawned process; stop it on exit."""
    ctx = mp.get_context("spawn")
    counter = ctx.Value("q", 0)
    cpu = ctx.Value("d", 0.0, lock=False)
    ready = ctx.Queue()
    stop = ctx.Event()
    process = ctx.Process(target=_serve, args=(delay_s, counter, cpu, ready, stop), daemon=True)
    process.start()
    try:
        api_base = ready.get(timeout=60)
        assert process.pid is not None
        yield RemoteServer(api_base, counter, cpu, process.pid)
    finally:
        stop.set()
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds of this process and its descendants over a block, sampled every
    ``period_s`` so that processes ending inside the block (Ray's actors) still count up to
    their last sample; ``exclude`` (e.g. the model server) is left out."""

    def __init__(self, exclude: Sequence[int] = (), period_s: float = 0.2) -> None:
        self.exclude = set(exclude)
        self.period_s = period_s
        self.seen: dict[int, float] = {}
        self.start: dict[int, float] = {}
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _others(self) -> list[int]:
        skip = set(self.exclude)
        for pid in self.exclude:
            skip.update(descendants(pid))
        return [p for p in descendants(os.getpid()) if p not in skip]

    def _sample(self) -> None:
        for pid in self._others():
            value = process_cpu_s(pid)
            if value:
                self.seen[pid] = max(value, self.seen.get(pid, 0.0))

    def _poll(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    def so_far(self) -> float:
        """CPU seconds since the block began, sampled now."""
        self._sample()
        children = sum(v - self.start.get(pid, 0.0) for pid, v in self.seen.items())
        return time.process_time() - self._own + children

    def __enter__(self) -> CpuMeter:
        self._sample()
        self.start = dict(self.seen)
        self._own = time.process_time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        children = sum(v - self.start.get(pid, 0.0) for pid, v in self.seen.items())
        self.cpu_s = time.process_time() - self._own + children


def unique_cases(n: int, source: Path | None = None) -> list[Any]:
    """``n`` distinct cases: the real cases of ``source`` (SWE-bench dev when present, else the
    demo set) cycled, each with a distinct task suffix so that no two share a cache key."""

    path = source or (SWEBENCH if SWEBENCH.exists() else DEMO)
    base = load_cases(path).cases
    out = []
    for i in range(n):
        case = base[i % len(base)]
        out.append(case.model_copy(update={"id": f"{case.id}#{i}", "task": f"{case.task}\n(#{i})"}))
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear interpolation (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: Sequence[float]) -> float:
    """The median."""
    return float(statistics.median(values))


def write_json(path: str | None, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON when ``path`` is given (for BENCHMARKS.md updates)."""
    if path:
        Path(path).write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
