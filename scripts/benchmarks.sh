#!/usr/bin/env bash
# Runs the Google Benchmark targets, the peak-memory measurement, the service
# load test and the PyTorch runtime's overhead, and regenerates
# docs/benchmarks.md from their medians.
# Usage: bash scripts/benchmarks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
out=build/benchmarks
mkdir -p "$out"
# The simulator on one core; the planner on two, as the anytime search
# replays on two threads (PlannerOptions::search_threads).
taskset -c 0 build/tests/event_model_benchmark --benchmark_repetitions=7 \
  --benchmark_min_time=0.3 --benchmark_format=json >"$out/event_model.json"
taskset -c 0,1 build/tests/planner_benchmark --benchmark_repetitions=7 \
  --benchmark_min_time=0.3 --benchmark_format=json >"$out/planner.json"

# The service: Plan RPCs for the GPT-2 XL trace at 50% against a real server
# on loopback, beside the in-process rate measured in the same run.
cli=build/client/slackswap
"$cli" generate --preset gpt2-xl --hardware a100 --out "$out/gpt2-xl.pb" >/dev/null
log="$out/server.log"
build/server/slackswap-server --listen 127.0.0.1:0 --metrics "" \
  --max_concurrent_requests 64 >"$log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on port" "$log" && break; sleep 0.1; done
port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$log")
: >"$out/service.jsonl"
run_load() {
  "$cli" bench-server --trace "$out/gpt2-xl.pb" --hardware a100 --budget 0.5 --json \
    --warmup 1s --duration 5s "$@" >>"$out/service.jsonl"
}
# Rounds interleave the rows so that background load on this shared machine
# falls on all of them alike; the report takes medians over the rounds.
for _ in 1 2 3 4 5; do
  for c in 1 2 16; do
    run_load --local --concurrency "$c"
  done
  for c in 1 4 16 64; do
    run_load --server "127.0.0.1:$port" --server_pid "$server" --concurrency "$c"
  done
done

kill -TERM $server 2>/dev/null || true

# The PyTorch runtime against a plain step, on one core.
taskset -c 0 /usr/bin/python3 tests/benchmarks/runtime_benchmark.py \
  --server build/server/slackswap-server --repo . --out "$out/runtime.json" >/dev/null

/usr/bin/python3 scripts/benchmarks_report.py "$out" >docs/benchmarks.md
echo "wrote docs/benchmarks.md"
