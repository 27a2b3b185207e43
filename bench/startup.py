"""Benchmark 6: start-up of ``judge --help`` and ``judge calibrate --help`` vs ``python -c pass``.

    .venv/bin/python bench/startup.py [--repeats 15]

Each command is run as a fresh process ``--repeats`` times (median and min wall time). Then each
help path is run once more under ``python -X importtime`` and the modules it imported are
checked: none of litellm, numpy, scipy, sklearn, pandas, matplotlib, llama_cpp or ray may load on a
path that neither calls a model nor computes nor draws. Exit status 1 when one does.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_text, write_json  # noqa: E402

HEAVY = ("litellm", "numpy", "scipy", "sklearn", "pandas", "matplotlib", "llama_cpp", "ray")
PY = sys.executable
#: The console script's entry point, callable under ``python -X importtime``.
ENTRY = "import sys; from judge.cli import main; sys.argv = ['judge', *sys.argv[1:]]; main()"
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [PY, "-c", "pass"],
    "judge --help": [PY, "-c", ENTRY, "--help"],
    "judge calibrate --help": [PY, "-c", ENTRY, "calibrate", "--help"],
}


def _wall(command: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, cwd=REPO, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return times


def _heavy_imports(command: list[str]) -> list[str]:
    """Top-level packages among HEAVY that ``command`` imported (python -X importtime)."""
    done = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    found = set()
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") < 2:
            continue
        module = line.rsplit("|", 1)[1].strip().split(".")[0]
        if module in HEAVY:
            found.add(module)
    return sorted(found)


def main() -> None:
    """Time the commands and check their imports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", help="Also write the figures as JSON here.")
    args = parser.parse_args()
    # Also through the installed console script, as a user types it.
    script = str(Path(PY).with_name("judge"))
    commands = dict(COMMANDS)
    commands["judge --help (console script)"] = [script, "--help"]
    commands["judge calibrate --help (console script)"] = [script, "calibrate", "--help"]
    for command in commands.values():
        subprocess.run(command, cwd=REPO, capture_output=True, check=True)  # warm the disk
    times = {label: _wall(command, args.repeats) for label, command in commands.items()}
    medians = {label: statistics.median(t) for label, t in times.items()}
    base = medians["python -c pass"]
    checked = {
        label: _heavy_imports(command)
        for label, command in commands.items()
        if label.startswith("judge") and "console" not in label
    }
    print(f"start-up, median and min of {args.repeats} fresh processes; {load_text()}")
    for label in commands:
        note = ""
        if label in checked:
            heavy = checked[label]
            note = f"  heavy imports: {', '.join(heavy)}" if heavy else "  no heavy import"
        print(
            f"{label:42s} {1000 * medians[label]:7.0f} ms (min {1000 * min(times[label]):5.0f}"
            f", +{1000 * (medians[label] - base):5.0f} ms over python){note}"
        )
    failed = any(checked.values())
    print("heavy imports on a help path: " + ("FOUND" if failed else f"none of {', '.join(HEAVY)}"))
    figures = {
        label: {
            "median_s": medians[label],
            "min_s": min(times[label]),
            "heavy_imports": checked.get(label),
        }
        for label in commands
    }
    write_json(args.json, {"repeats": args.repeats, "commands": figures, "load": load_text()})
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
