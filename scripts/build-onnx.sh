#!/usr/bin/env bash
# Builds the ONNX C++ library weft links (checker, shape inference, version
# converter, the operator schemas of every opset up to 28) from the `onnx`
# source distribution on PyPI, pinned by version and SHA-256, into
# .deps/onnx-$version; idempotent. Debian 12's libonnx 1.12 knows opsets up
# to 17 and the current exporters write 18 to 23.
#
# Static libraries over Debian's shared protobuf (3.21): the runtime and the
# compiler share one protobuf. ONNX 1.23 asks for CMake 3.26 (Debian 12 has
# 3.25): the `cmake` wheel, pinned, in .venv. About 2.5 min on 2 cores.
# Usage: scripts/build-onnx.sh   (after install-deps.sh's apt packages)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

version=1.23.2
sha256=008cb0467b2bbee41448acc7da8b6f4e704624cb0d327a2d5adafc7ce19bc5b8
url=https://files.pythonhosted.org/packages/3f/62/bc2dfadb63ecf04cb2d65a6b17751863039d36c65de51d6a3128ab35f1e7/onnx-$version.tar.gz
cmake_wheel="cmake==4.4.5"

prefix="$root/.deps/onnx-$version"
if [ -f "$prefix/lib/cmake/ONNX/ONNXConfig.cmake" ]; then
  echo "build-onnx: onnx $version in ${prefix#"$root"/}"
  exit 0
fi

venv="$root/.venv"
[ -x "$venv/bin/python3" ] ||
  /usr/bin/python3 -m venv --system-site-packages "$venv"
[ -x "$venv/bin/cmake" ] || "$venv/bin/pip" install -q "$cmake_wheel"

work="$root/.deps/build-onnx-$version"
rm -rf "$work"
mkdir -p "$work"
echo "build-onnx: fetching onnx $version from PyPI"
curl -fsSL --retry 3 -o "$work/onnx.tar.gz" "$url"
echo "$sha256  $work/onnx.tar.gz" | sha256sum --check --quiet
tar -xzf "$work/onnx.tar.gz" -C "$work"

echo "build-onnx: building onnx $version (about 2.5 min)"
"$venv/bin/cmake" -G Ninja -S "$work/onnx-$version" -B "$work/build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DBUILD_SHARED_LIBS=OFF \
  -DONNX_USE_PROTOBUF_SHARED_LIBS=ON \
  -DONNX_BUILD_TESTS=OFF \
  -DONNX_ML=ON -DONNX_GEN_PB_TYPE_STUBS=OFF >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
ninja -C "$work/build" -j2 install >"$work/build.log" ||
  { tail -40 "$work/build.log"; exit 1; }
rm -rf "$work"
echo "build-onnx: onnx $version in ${prefix#"$root"/}"
