#!/usr/bin/env bash
# Installs, builds and runs every test (lit suites, gtest units through lit,
# generated-docs freshness) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure
