#!/usr/bin/env bash
# The one test command (README quick start and .ci/run): install, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"${JOBS:-2}" --timeout 600
