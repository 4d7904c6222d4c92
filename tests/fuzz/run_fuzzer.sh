#!/usr/bin/env bash
# Runs a libFuzzer target from a seed corpus for SECONDS, with a per-input
# time limit (a slow input is a finding: one request must never stall the
# server) and a memory limit. New inputs go to WORK_DIR (a fresh temporary
# folder when not given), never into the committed seeds. A finding is kept
# in WORK_DIR as crash-*, timeout-* or oom-* and fails the run.
# Usage: run_fuzzer.sh FUZZER SEED_DIR SECONDS [WORK_DIR]
set -euo pipefail
fuzzer=$1
seeds=$2
seconds=$3
work=${4:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
cd "$work"
# -seed fixed for a repeatable smoke run; the long run takes a random one.
seed_flag=()
[ "$seconds" -le 300 ] && seed_flag=(-seed=20261201)
"$fuzzer" "${seed_flag[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 "$work" "$seeds"
