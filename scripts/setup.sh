#!/usr/bin/env bash
# Installs the Debian packages Strata needs (only when one is missing), then
# configures and builds it in ./build. Idempotent; safe to run repeatedly.
#
#   scripts/setup.sh            install + configure + build
#   BUILD_DIR=out scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
LLVM_PREFIX=/usr/lib/llvm-22
JOBS=${JOBS:-$(nproc)}

PACKAGES=(
  cmake ninja-build ccache lld clang-22
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev libbenchmark-dev nlohmann-json3-dev libopenblas-dev
  libopenmpi-dev openmpi-bin
  python3-sklearn python3-numpy
  coinor-libcbc-dev pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    ${STRATA_CMAKE_ARGS:-}
fi
ninja -C "$BUILD_DIR" -j "$JOBS"
