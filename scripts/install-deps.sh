#!/usr/bin/env bash
# Installs the Debian bookworm packages the build, tests and demo need (as root).
# Skips apt entirely when everything is already there, so reruns are fast.
set -euo pipefail
packages=(
  cmake g++ make pkg-config
  libspdlog-dev libfmt-dev libcli11-dev
  libthrift-dev thrift-compiler libboost-dev libevent-dev
  libfuse3-dev fuse3 libaio-dev zlib1g-dev libxxhash-dev libcpp-httplib-dev
  nlohmann-json3-dev etcd-server etcd-client
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  bats jq fio mandoc attr iproute2 psmisc procps curl prometheus gnuplot-nox
  clang-14 libclang-rt-14-dev
  pybind11-dev python3-dev python3-pytest
  python3-torch python3-numpy python3-requests python3-zmq  # the engine-shaped Python tests
  ccache
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
