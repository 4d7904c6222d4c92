#!/usr/bin/env bash
# Fails when the project's C++ drifts from .clang-format (Google style):
# prints the files clang-format would change. Usage: format_test.sh ROOT
set -euo pipefail
cd "$1"
mapfile -t files < <(find base simulator planner service server client tests \
  -name '*.h' -o -name '*.cc' | sort)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if clang-format-14 --dry-run --Werror "${files[@]}" 2>"$out"; then
  echo "${#files[@]} files formatted"
  exit 0
fi
grep -o '^[^:]*:[0-9]*:[0-9]*: error' "$out" | cut -d: -f1 | sort | uniq -c
echo "run: clang-format-14 -i on the files above" >&2
exit 1
