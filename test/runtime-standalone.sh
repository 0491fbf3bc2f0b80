#!/usr/bin/env bash
# The runtime is its own CMake project: it configures and builds without
# MLIR or LLVM (as on a GPU node), and its weft-run has the same kernel
# specification table as the full build's. It compiles with the main
# build's compiler, build type and flags (the top level adds the runtime
# before LLVM's flags), so with ccache it recompiles nothing the main build
# compiled; without ccache, a full runtime build (about 9 min on 2 cores).
# Usage: test/runtime-standalone.sh SOURCE_DIR BUILD_DIR MAIN_WEFT_RUN
#        [CMAKE] [C++ COMPILER] [MAKE PROGRAM] [BUILD TYPE]
set -euo pipefail
src="$1" out="$2" main="$3"
cmake="${4:-cmake}" cxx="${5:-g++}" make="${6:-ninja}"
type="${7:-Release}"
"$cmake" -G Ninja -S "$src/runtime" -B "$out" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_MAKE_PROGRAM="$make" -DCMAKE_BUILD_TYPE="$type" > "$out.log"
# Nothing of MLIR or LLVM on any compile line.
if grep -q -E "llvm|mlir" "$out/compile_commands.json" 2>/dev/null ||
   grep -q -E "llvm-[0-9]+|mlir" "$out/build.ninja"; then
  echo "runtime-standalone: the runtime's build names LLVM or MLIR" >&2
  exit 1
fi
"$make" -C "$out" -j2 weft-run >> "$out.log"
cmp <("$out/bin/weft-run" --kernels) <("$main" --kernels)
echo "runtime-standalone: weft-run built without MLIR/LLVM, same kernels"
