#!/usr/bin/env bash
# Runs the Google Benchmark targets and the peak-memory measurement, and
# regenerates docs/benchmarks.md from their medians.
# Usage: bash scripts/benchmarks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
out=build/benchmarks
mkdir -p "$out"
for bench in event_model planner; do
  taskset -c 0 "build/tests/${bench}_benchmark" --benchmark_repetitions=7 \
    --benchmark_min_time=0.3 --benchmark_format=json >"$out/$bench.json"
done
/usr/bin/python3 scripts/benchmarks_report.py "$out" >docs/benchmarks.md
echo "wrote docs/benchmarks.md"
