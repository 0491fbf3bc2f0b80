#!/usr/bin/env bash
# Installs every Debian package weft needs, then the PyPI packages the tests
# need into .venv (a venv over Debian's Python, --system-site-packages, so it
# sees Debian's torch and onnx), then builds the pinned ONNX C++ library
# (scripts/build-onnx.sh: Debian 12's libonnx knows opsets up to 17 only);
# idempotent: what is present is skipped.
# Usage: scripts/install-deps.sh [--fuzz]   (root, or sudo available)
#   --fuzz: also clang-22 and its runtime libraries (libFuzzer, ASan, UBSan)
#           for scripts/fuzz.sh; the build and the tests do not need them.
set -euo pipefail

packages=(
  # build
  cmake ninja-build ccache g++ pkg-config curl ca-certificates
  # compiler
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libprotobuf-dev protobuf-compiler nlohmann-json3-dev libmimalloc-dev
  # tests
  libgtest-dev libonnx-testdata
  # runtime
  openmpi-bin libopenmpi-dev libopenblas-dev libopenblas0-pthread libssl-dev
  # python: example models, references, tests
  python3 python3-torch python3-torchvision python3-onnx python3-numpy
  python3-pytest python3-pytest-xdist python3-matplotlib python3-jsonschema
  python3-venv
)
# PyPI, pinned: Hugging Face transformers for the GPT-2 tensor-parallel test
# (4.30.2: the last release that runs on Debian's torch 1.13 without
# complaint). cuDNN's frontend: header-only C++ for the CUDA backend's fused
# attention; the build uses the wheel's include/ alone, so without its
# Python dependencies (CUTLASS's DSL, some 700 MB).
pypi=("transformers==4.30.2")
headers=("nvidia-cudnn-frontend==1.32.0")
venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
install_pypi() {
  if [ ! -x "$venv/bin/python3" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$venv"
  fi
  if "$venv/bin/python3" -c "import transformers" 2>/dev/null &&
     compgen -G "$venv/lib/python3*/site-packages/include/cudnn_frontend.h" \
       >/dev/null; then
    echo "install-deps: .venv has ${pypi[*]} ${headers[*]}"
  else
    echo "install-deps: installing ${pypi[*]} ${headers[*]} into .venv"
    "$venv/bin/pip" install -q "${pypi[@]}"
    "$venv/bin/pip" install -q --no-deps "${headers[@]}"
  fi
}
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang-22 libclang-rt-22-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_pypi
  "$(dirname "$0")/build-onnx.sh"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
install_pypi
"$(dirname "$0")/build-onnx.sh"
