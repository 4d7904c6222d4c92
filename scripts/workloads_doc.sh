#!/usr/bin/env bash
# Regenerates the tables of docs/workloads.md (between the "generated" markers)
# from `slackswap presets`. Usage: bash scripts/workloads_doc.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
tables=$(build/client/slackswap presets)
/usr/bin/python3 - docs/workloads.md "$tables" <<'PY'
import sys
path, tables = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = "<!-- generated: begin -->", "<!-- generated: end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(path, "w").write(f"{head}{begin}\n{tables}\n{end}{tail}")
PY
echo "wrote docs/workloads.md"
