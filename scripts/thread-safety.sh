#!/usr/bin/env bash
# Builds core/ (base, disk, node, master), node/, daemon/ (with daemon/ha/), thrift/'s client library, net/,
# fuse/ and the Python module with clang-14's thread-safety analysis as errors (-Wthread-safety
# -Werror=thread-safety) into ${TSA_BUILD_DIR:-build-tsa}: every MC_GUARDED_BY / MC_REQUIRES
# there (core/base/thread_annotations.h, core/base/mutex.h) is checked, and a violation fails the build,
# so this script exits non-zero.
# Only thread-safety diagnostics are errors: Thrift's generated code and third-party headers
# may warn otherwise without failing it. First scripts/check-locks.sh, since a plain std::mutex
# would slip past the analysis unchecked. Nothing is run; it is a compile-time stage of
# scripts/test.sh. JOBS overrides the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/check-locks.sh
build_dir=${TSA_BUILD_DIR:-build-tsa}
source scripts/compiler-cache.sh
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug \
  -DMOONCAKE_BUILD_FAULT_DAEMON=OFF \
  -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror=thread-safety" >/dev/null
# mooncake_node_runtime is node/'s code, mooncaked_lib daemon/'s, mooncake_ha daemon/ha/'s,
# mooncake_client thrift/'s; mooncake_tierfs_lib and mooncake-tierfs are fuse/,
# mooncake_tier_store python/src/.
cmake --build "$build_dir" -j"${JOBS:-2}" --target mooncake_base mooncake_disk mooncake_node \
  mooncake_master mooncake_node_runtime mooncake_ha mooncake_client mooncaked_lib mooncake_net \
  mooncake_tierfs_lib mooncake-tierfs mooncake_tier_store
echo "thread-safety: core (base, disk, node, master), node runtime, ha, client, mooncaked_lib," \
  "net, tierfs and the Python module build clean under -Wthread-safety -Werror=thread-safety"
