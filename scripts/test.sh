#!/usr/bin/env bash
# The one test command: installs dependencies, builds, runs every suite
# (lit, GoogleTest, pytest) through ctest, then prints the sweep figures.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure
# The libonnx-testdata sweeps print their counts; show them on success too.
grep -h -A0 -E "^(libonnx-testdata import sweep|ONNX node tests through weft-run):" \
  Testing/Temporary/LastTest.log || true
