#!/usr/bin/env bash
# Regenerates docs/results.md and docs/results/*.svg: the paper's evaluation,
# reproduced with the generator and every policy. Usage: bash scripts/report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
build/client/slackswap report --out_dir docs
