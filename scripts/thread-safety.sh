#!/usr/bin/env bash
# Builds core/ with clang-14's thread-safety analysis as errors (-Wthread-safety
# -Werror=thread-safety) into ${TSA_BUILD_DIR:-build-tsa}: every MC_GUARDED_BY / MC_REQUIRES
# in core (core/base/thread_annotations.h, core/base/mutex.h) is checked, and a violation fails the
# build, so this script exits non-zero. Nothing is run; it is a compile-time stage of
# scripts/test.sh. JOBS overrides the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSA_BUILD_DIR:-build-tsa}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug \
  -DMOONCAKE_BUILD_FAULT_DAEMON=OFF "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror=thread-safety" >/dev/null
cmake --build "$build_dir" -j"${JOBS:-2}" --target mooncake_base mooncake_disk mooncake_node mooncake_master
echo "thread-safety: core builds clean under -Wthread-safety -Werror=thread-safety"
