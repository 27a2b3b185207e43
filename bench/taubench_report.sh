#!/usr/bin/env sh
# The issue-4 "Done when" check: the tau-bench airline dev runs (25 tasks x 4 trials, one
# treatment) as a run set, scored from their gold labels (the environment reward), with the
# report's headline table printed. tests/test_report.py checks the same pass^k figures against
# a hand computation from the file (test_taubench_macro_pass_hat_k_equals_hand_computation).
# Usage: bench/taubench_report.sh [OUT_DIR]   (needs ../shared beside the clone)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
gold="${JUDGE_SHARED_DIR:-$here/../shared}/gold/taubench_airline_dev.jsonl"
out="${1:-${TMPDIR:-/tmp}/judge-taubench}"
mkdir -p "$out"
judge=${JUDGE:-"$here/.venv/bin/judge"}
"$judge" runset "$gold" --out "$out/runs.jsonl" --benchmark tau-bench-airline
"$judge" score "$out/runs.jsonl" --gold-labels --out-dir "$out" \
  --title "tau-bench airline dev (gpt-4o agent), scored from gold labels"
