#!/usr/bin/env bash
# Sets up, builds, and runs every test (ctest). This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${JOBS:-2}" --timeout 600
