#!/usr/bin/env bash
# Configures and builds everything into ${BUILD_DIR:-build}; binaries land in build/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compiler-cache.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} >/dev/null
cmake --build "$build_dir" -j"${JOBS:-2}"
