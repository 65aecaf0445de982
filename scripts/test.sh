#!/usr/bin/env bash
# The test command (the README's; .ci/run is exactly this): installs, builds
# and runs every test (lit suites, gtest units through lit, generated-docs
# freshness) through ctest, then the sanitizer check (scripts/sanitize.sh:
# an ASan + UBSan build, every test under it, FUZZ_SECONDS of each fuzz
# target). SANITIZE=0 stops after the plain tests (a quicker local run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure
if [ "${SANITIZE:-1}" != 0 ]; then
  # 30 s per fuzz target keeps CI well inside its budget (bench/fuzz.md has
  # the long runs).
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} scripts/sanitize.sh
fi
