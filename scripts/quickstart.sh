#!/usr/bin/env bash
# The main job on the built-in default workload: set up, build, then generate
# the GPT-2 XL (batch 8 x 1024, BF16) trace for an A100 on PCIe 4.0 and print
# its summary, its ideal replay and the all-swap replay at 50% of peak memory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
cli=build/client/slackswap
echo "== GPT-2 XL on an A100: the trace"
"$cli" generate --preset gpt2-xl --hardware a100
echo
echo "== Ideal: all keep, memory unlimited"
"$cli" simulate --preset gpt2-xl --hardware a100 --policy ideal
echo
echo "== All-swap at 50% of the all-keep peak"
"$cli" simulate --preset gpt2-xl --hardware a100 --policy all-swap --budget 0.5
