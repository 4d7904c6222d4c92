#!/usr/bin/env bash
# Configures and builds everything with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer into build-asan/ (with the libFuzzer targets).
# scripts/test.sh runs the whole test suite in it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only" -DSLACKSWAP_SANITIZE=ON >/dev/null
cmake --build build-asan -j "${JOBS:-2}"
