#!/usr/bin/env bash
# Sets up, builds, and runs every test (ctest) twice: in the Release build
# (build/), then in the sanitizer build (build-asan/: clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, every report fatal, and a one-minute run of
# the libFuzzer target from its seed corpus). This is what CI runs.
# SLACKSWAP_SKIP_SANITIZERS=1 runs the Release build's tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
(cd build && ctest --output-on-failure -j "${JOBS:-2}" --timeout 600)
[ "${SLACKSWAP_SKIP_SANITIZERS:-0}" = 1 ] && exit 0
bash scripts/build_sanitized.sh
# Leaks of third-party libraries only are suppressed (tests/sanitizers/);
# tests that measure memory skip themselves (SLACKSWAP_SANITIZED).
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export SLACKSWAP_SANITIZED=1
(cd build-asan && ctest --output-on-failure -j "${JOBS:-2}" --timeout 600)
