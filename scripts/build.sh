#!/usr/bin/env bash
# Configures (once) and builds weft with ccache and -j2.
# Usage: scripts/build.sh [ninja targets...]
#   WEFT_BUILD_DIR  the build folder (default build)
#   WEFT_CMAKE_ARGS extra configure arguments, e.g. the compilers and
#                   -DWEFT_FUZZ=ON (scripts/fuzz.sh) or -DWEFT_SANITIZE=ON
#                   (scripts/test.sh --sanitize); later -D values win
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${WEFT_BUILD_DIR:-build}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
if [ ! -f "$dir/build.ninja" ]; then
  # shellcheck disable=SC2086 # WEFT_CMAKE_ARGS is a list of arguments
  cmake -G Ninja -S . -B "$dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    ${WEFT_CMAKE_ARGS:-}
fi
ninja -C "$dir" -j2 "$@"
