#!/usr/bin/env bash
# The main job on the built-in default workload: set up, build, then generate
# the GPT-2 XL (batch 8 x 1024, BF16) trace for an A100 on PCIe 4.0, print its
# summary, and plan it with SlackSwap at 50% of its peak activation memory
# (decisions, predicted metrics, lower bound and gap, planning time).
set -euo pipefail
cd "$(dirname "$0")/.."
# The build's progress, one line per step (the first build takes minutes on
# two cores): shown, not hidden.
echo "== Building (scripts/build.sh; the first build takes a while)"
bash scripts/build.sh
cli=build/client/slackswap
echo "== GPT-2 XL on an A100: the trace"
"$cli" generate --preset gpt2-xl --hardware a100
echo
echo "== SlackSwap at 50% of the all-keep peak"
"$cli" plan --preset gpt2-xl --hardware a100 --budget 0.5
