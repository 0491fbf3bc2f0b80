#!/usr/bin/env bash
# The one test command: installs dependencies, builds, runs every suite
# (lit, GoogleTest, pytest) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure
