"""Provider faults at scale: N judgments (default 1,000) through the Runner to a fault-injecting
loopback server (default 30% of requests faulted, split evenly over 429 + Retry-After, 500,
connection reset, hang past the timeout, malformed JSON, truncated answer, schema-invalid answer).

    .venv/bin/python bench/reliability_faults.py [--n 1000] [--rate 0.3] [--seed 0]

Checks, against the server's request log: every planned judgment stored exactly once with one
status; none lost or duplicated; requests per judgment within max_attempts x (1 + max_reasks);
ok/abstain only from a valid answer (with its label); parse_error / infra_error never carry a
verdict; infra_error only after exactly max_attempts provider faults. Exit code 1 on any
violation. The 200-judgment version runs in tests/judge/judging/test_faults.py.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-not-a-real-key")

from judge.testing.faults import run_campaign  # noqa: E402


def main() -> int:
    """Run the campaign and print the figures; 1 when any property is broken."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    # instructor logs every failed attempt at ERROR; here failures are the point.
    logging.getLogger("instructor").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as tmp:
        report = run_campaign(
            os.path.join(tmp, "faults.db"),
            n=args.n,
            fault_rate=args.rate,
            seed=args.seed,
            concurrency=args.concurrency,
        )
    print(report.summary())
    for violation in report.violations:
        print("VIOLATION:", violation)
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
