"""Benchmark 9: importing a 10,000-sample Inspect AI ``.eval`` log, judge's reader vs inspect_ai's.

    .venv/bin/python bench/inspect_import.py [--n 10000] [--cap-samples 600] [--cap-seconds 120]

Needs the calibrated-judge[inspect] extra (inspect-ai 0.3.285). The log is built from the real
samples of tests/data/traces/inspect/calc.eval (4 samples of a mockllm run, ~13 KB of JSON each,
most of it events), replicated to ``--n`` samples with new ids and uuids (epoch 1), and written
with zstd members (zip method 93, as inspect_ai writes them) by the small zip writer below; the
header is the real one with the dataset's sample ids, the epochs and the totals set to match.
inspect_ai reads the result like its own logs.

Each reader runs in a fresh process (so its peak RSS is its own: ``VmHWM`` of
/proc/self/status, Linux; and its RSS after its imports, the difference being what reading
costs): ``judge.import_traces(log,
"inspect")`` (every sample to a case), judge's zip reader alone (every sample as a dict), and
``inspect_ai.log.read_eval_log_samples(log)``. inspect_ai's reader reopens the zip and parses
its whole central directory for every sample (quadratic in the number of samples: the
per-sample cost grows with the log, not with the position in it), so it is stopped after
``--cap-samples`` samples or ``--cap-seconds`` and its full read is extrapolated linearly
from that rate *within this log*, which is exact for a cost that depends only on the log's size.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_text, write_json  # noqa: E402

from judge.traces.inspect_eval import read_header, read_sample, sample_members  # noqa: E402
from judge.traces.inspect_zip import ZipReader  # noqa: E402

SOURCE = REPO / "tests" / "data" / "traces" / "inspect" / "calc.eval"
ZSTD = 93

#: name -> (imports, loop): each prints nothing; the runner times them and reads ``n``.
READERS: dict[str, tuple[str, str]] = {
    "judge import (inspect format, cases)": (
        "from judge.traces import import_traces",
        "result = import_traces(LOG, 'inspect')\nn = len(result.cases)\n"
        "assert not result.errors, result.errors[:3]",
    ),
    "judge zip reader (samples as dicts)": (
        "from judge.traces.inspect_eval import read_sample, sample_members\n"
        "from judge.traces.inspect_zip import ZipReader",
        "n = 0\nwith ZipReader(Path(LOG)) as log:\n"
        "    for name in sample_members(log.names()):\n"
        "        sample = read_sample(log, name); n += 1",
    ),
    "inspect_ai read_eval_log_samples": (
        "from inspect_ai.log import read_eval_log_samples",
        "n = 0\nfor sample in read_eval_log_samples(LOG):\n"
        "    n += 1\n"
        "    if n >= CAP or time.perf_counter() - t1 > CAP_S: break",
    ),
}

RUNNER = """
import json, sys, time
from pathlib import Path

def memory(key):
    # This process's own figures (KiB): VmHWM is the peak RSS of its address space, reset at
    # exec (ru_maxrss is not: it would count the parent that built the log).
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])

LOG, CAP, CAP_S = {log!r}, {cap}, {cap_s}
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
rss_imported = memory("VmRSS")
{loop}
t2 = time.perf_counter()
print(json.dumps({{"n": n, "import_s": t1 - t0, "read_s": t2 - t1,
                  "rss_imported_kib": rss_imported, "peak_kib": memory("VmHWM")}}))
"""


def _zip(path: Path, members: list[tuple[str, bytes]]) -> None:
    """Write ``members`` as a zip of zstd members (APPNOTE.TXT 4.3: local headers, central
    directory, end record; fewer than 65,535 members and 4 GiB, so no ZIP64)."""
    compressor = zstandard.ZstdCompressor(level=3)
    central = bytearray()
    with path.open("wb") as out:
        for name, data in members:
            packed = compressor.compress(data)
            crc, raw = zlib.crc32(data), name.encode("utf-8")
            offset = out.tell()
            fixed = (63, 0x800, ZSTD, 0, 0x21, crc, len(packed), len(data), len(raw))
            out.write(b"PK\x03\x04" + struct.pack("<HHHHHIIIHH", *fixed, 0) + raw + packed)
            central += b"PK\x01\x02" + struct.pack(
                "<HHHHHHIIIHHHHHII",
                (3 << 8) | 63,
                *fixed,
                0,
                0,
                0,
                0,
                0o644 << 16,
                offset,
            )
            central += raw
        start = out.tell()
        out.write(central)
        count = len(members)
        out.write(
            b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, count, count, len(central), start, 0)
        )


def build_log(path: Path, n: int) -> float:
    """Write an ``n``-sample .eval from the samples of calc.eval; its size in MB."""
    with ZipReader(SOURCE) as source:
        header, _ = read_header(source)
        samples = [read_sample(source, name) for name in sample_members(source.names())]
    ids = [f"s{i:05d}" for i in range(n)]
    header["eval"]["dataset"].update({"samples": n, "sample_ids": ids})
    header["eval"]["config"]["epochs"] = 1
    header["results"].update({"total_samples": n, "completed_samples": n})
    start = {k: header[k] for k in ("version", "eval", "plan")}
    members = [("_journal/start.json", json.dumps(start).encode())]
    for i, sample_id in enumerate(ids):
        sample = dict(samples[i % len(samples)], id=sample_id, epoch=1, uuid=f"u{i:021d}")
        members.append((f"samples/{sample_id}_epoch_1.json", json.dumps(sample).encode()))
    members.append(("header.json", json.dumps(header).encode()))
    _zip(path, members)
    return path.stat().st_size / 1e6


def run_reader(name: str, log: Path, cap: int, cap_s: float) -> dict[str, Any]:
    """One reader in a fresh process: its figures."""
    imports, loop = READERS[name]
    code = RUNNER.format(log=str(log), cap=cap, cap_s=cap_s, imports=imports, loop=loop)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Build the log, run each reader, print the figures and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--cap-samples", type=int, default=600)
    parser.add_argument("--cap-seconds", type=float, default=120.0)
    parser.add_argument("--keep", help="Keep the generated log at this path.")
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(args.keep) if args.keep else Path(tmp) / "big.eval"
        started = time.perf_counter()
        size = build_log(log, args.n)
        print(
            f"log: {args.n} samples, {size:.1f} MB, zstd members, built in "
            f"{time.perf_counter() - started:.1f} s; {load_text()}"
        )
        results: dict[str, dict[str, Any]] = {}
        for name in READERS:
            figures = run_reader(name, log, args.cap_samples, args.cap_seconds)
            rate = figures["n"] / figures["read_s"] if figures["read_s"] else float("inf")
            figures["rate_per_s"] = rate
            figures["full_read_s"] = args.n / rate
            figures["extrapolated"] = figures["n"] < args.n
            results[name] = figures
            note = (
                f" (stopped at {figures['n']}: full read extrapolated "
                f"{figures['full_read_s']:.0f} s)"
                if figures["extrapolated"]
                else ""
            )
            print(
                f"{name:40s} samples={figures['n']:6d} import={figures['import_s']:5.1f}s "
                f"read={figures['read_s']:7.1f}s rate={rate:7.0f}/s "
                f"peak={figures['peak_kib'] / 1024:6.0f} MiB "
                f"(+{(figures['peak_kib'] - figures['rss_imported_kib']) / 1024:.0f} MiB "
                f"reading){note}"
            )
    ours = results["judge import (inspect format, cases)"]
    reader = results["judge zip reader (samples as dicts)"]
    theirs = results["inspect_ai read_eval_log_samples"]
    ratio = theirs["full_read_s"] / ours["read_s"]

    def grew(figures: dict[str, Any]) -> str:
        return f"{(figures['peak_kib'] - figures['rss_imported_kib']) / 1024:.0f} MiB"

    print(
        f"ratio: inspect_ai's read_eval_log_samples takes {ratio:.0f}x as long as judge's import "
        f"of the whole log ({theirs['full_read_s']:.0f} s"
        + (" extrapolated" if theirs["extrapolated"] else "")
        + f" vs {ours['read_s']:.1f} s; {theirs['full_read_s'] / reader['read_s']:.0f}x judge's "
        f"reader alone). Memory while reading: inspect_ai +{grew(theirs)}, judge's reader "
        f"+{grew(reader)}, judge import +{grew(ours)} (the {ours['n']} cases it returns)"
    )
    write_json(
        args.json,
        {"n": args.n, "size_mb": size, "readers": results, "ratio": ratio, "load": load_text()},
    )


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    main()
