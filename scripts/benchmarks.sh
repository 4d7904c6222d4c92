#!/usr/bin/env bash
# Runs the Google Benchmark targets and regenerates docs/benchmarks.md from
# their medians. Usage: bash scripts/benchmarks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
out=build/benchmarks
mkdir -p "$out"
taskset -c 0 build/tests/event_model_benchmark --benchmark_repetitions=7 \
  --benchmark_min_time=0.3 --benchmark_format=json >"$out/event_model.json"
/usr/bin/python3 scripts/benchmarks_report.py "$out/event_model.json" >docs/benchmarks.md
echo "wrote docs/benchmarks.md"
