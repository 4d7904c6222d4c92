#!/bin/bash
# The held-out study's fast set (docs/planner.md, "The anytime search"):
# SlackSwap alone (`slackswap study --references=false`) on the seed sets
# 201, 301, ..., 1401 (13 sets, 1,248 cells) at each search limit given,
# its losses against a frozen table of the best plans known
# (scripts/data/fast_set_best.tsv: the fastest iteration any run had
# recorded when the table was made; a plan faster than its entry counts
# as a negative loss, so sums compare across changes). Prints per limit the
# sum of losses, p95, p99, cells over 1% and 5%, the worst, cells without a
# plan where one is known; then the mean of the sums.
#
# Usage: scripts/fast_set.sh [MS ...]   (default: 140 150 160)
# Env: SLACKSWAP (the binary; build/client/slackswap), JOBS (2), SETS and
# KINDS (a part of the set, as `study --first_seed` and `--kinds` take them;
# its sums do not compare with the whole set's).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SLACKSWAP:-build/client/slackswap}
JOBS=${JOBS:-2}
SETS=${SETS:-201 301 401 501 601 701 801 901 1001 1101 1201 1301 1401}
KINDS=${KINDS:-chain,branches,dag,preset,small,uplink}
LIMITS=("$@")
[ ${#LIMITS[@]} -gt 0 ] || LIMITS=(140 150 160)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for ms in "${LIMITS[@]}"; do
  mkdir -p "$OUT/$ms"
  for s in $SETS; do echo "$s"; done | xargs -P "$JOBS" -I{} sh -c \
    "'$BIN' study --first_seed {} --kinds $KINDS --search_ms $ms --references=false --json > '$OUT/$ms/{}.json'"
done
python3 - scripts/data/fast_set_best.tsv "$OUT" "${LIMITS[@]}" <<'PY'
import glob, json, sys

best = {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    c = line.rstrip("\n").split("\t")
    best[tuple(c[:4])] = None if c[4] == "None" else int(c[4])
sums = []
for ms in sys.argv[3:]:
    losses, no_plan, worst = [], 0, (float("-inf"), "none")
    for f in sorted(glob.glob(f"{sys.argv[2]}/{ms}/*.json")):
        s = f.rsplit("/", 1)[1][:-5]
        for c in json.load(open(f))["cells"]:
            key = (s, c["kind"], c["trace"], c["level"])
            ref = best.get(key)
            if c["outcome"] != "planned":
                no_plan += ref is not None
                continue
            if ref is None:
                continue
            loss = (c["iteration_ns"] / ref - 1) * 100
            losses.append(loss)
            worst = max(worst, (loss, " ".join(key)))
    losses.sort()
    q = lambda p: losses[int(p * len(losses))] if losses else 0.0
    sums.append(sum(losses))
    print(f"{ms} ms: cells {len(losses)}  sum {sums[-1]:.1f}  p95 {q(.95):.2f}%  p99 {q(.99):.2f}%  "
          f"over 1% {sum(x > 1 for x in losses)}  over 5% {sum(x > 5 for x in losses)}  "
          f"worst {worst[0]:.2f}% ({worst[1]})  no plan {no_plan}")
print(f"mean of the sums: {sum(sums) / len(sums):.1f}")
PY
