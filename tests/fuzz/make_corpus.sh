#!/usr/bin/env bash
# Writes the trace fuzzer's seed corpus: generated traces of every model
# family, each behind a few control bytes (tests/fuzz/trace_fuzzer.cc).
# Usage: make_corpus.sh SLACKSWAP_CLI OUT_DIR
set -euo pipefail
cli=$1
out=$2
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" generate --preset gpt2-xl --layers 1 --out "$tmp/gpt2.pb" >/dev/null
"$cli" generate --preset bert-large --layers 1 --seq 128 --out "$tmp/bert.pb" >/dev/null
"$cli" generate --preset llama-7b --layers 2 --out "$tmp/llama.pb" >/dev/null
"$cli" generate --preset vgg16 --batch 2 --hardware titan-x --out "$tmp/vgg16.pb" >/dev/null
# The job's own host traffic (fixed transfers): FSDP CPU offload and ZeRO.
"$cli" generate --preset gpt2-xl --layers 2 --offload fsdp-cpu --out "$tmp/fsdp.pb" >/dev/null
"$cli" generate --preset llama-7b --layers 1 --offload zero --out "$tmp/zero.pb" >/dev/null
# Control bytes: budget 30% or 50% on PCIe, 20% on a slow link, 60% with
# latency and a pinned-memory cap, 40% with barriers.
for trace in gpt2 bert llama vgg16 fsdp zero; do
  for control in 04 07 12 39 76 86; do
    printf "\\x$control" | cat - "$tmp/$trace.pb" >"$out/$trace-$control"
  done
done
