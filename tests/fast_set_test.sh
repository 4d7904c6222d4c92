#!/bin/bash
# scripts/fast_set.sh on a part of its set: set 201's small traces (16
# cells, each with the exact optimum in the frozen table, so no loss below
# zero) at a 20 ms limit; and a clear failure without the binary.
# Usage: fast_set_test.sh SLACKSWAP_BINARY
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
out=$(SLACKSWAP="$1" SETS=201 KINDS=small "$ROOT/scripts/fast_set.sh" 20) || {
  echo "FAIL: fast_set.sh exited $?"; exit 1; }
echo "$out"
line=$(echo "$out" | grep '^20 ms: ') || { echo "FAIL: no line for 20 ms"; exit 1; }
echo "$line" | grep -q 'cells 16 ' || { echo "FAIL: not 16 cells"; exit 1; }
echo "$line" | grep -q 'no plan 0$' || { echo "FAIL: a known plan missed"; exit 1; }
sum=$(echo "$line" | sed -E 's/.*sum (-?[0-9.]+) .*/\1/')
python3 -c "import sys; sys.exit(0 if float('$sum') >= 0 else 1)" ||
  { echo "FAIL: a loss below the exact optimum ($sum)"; exit 1; }
echo "$out" | grep -q '^mean of the sums: ' || { echo "FAIL: no mean"; exit 1; }
if SLACKSWAP=/nonexistent SETS=201 KINDS=small "$ROOT/scripts/fast_set.sh" 20 \
    >/dev/null 2>&1; then
  echo "FAIL: ran without its binary"; exit 1
fi
echo PASS
