#!/usr/bin/env bash
# The one test command: installs dependencies, builds, runs every suite
# (lit, GoogleTest, the fuzz corpora's replay, pytest on two workers)
# through ctest, prints the sweep figures, then fuzzes the plan loader for
# 60 s (scripts/fuzz.sh). CI took 47.5 min on its 2 cores; measured here
# since: a fresh build 21 -> 19 min (precompiled headers), pytest 16.6 ->
# 12.7 min, the fuzz build (5 min) done beside pytest: about 37 min.
#   scripts/test.sh              the build in build/ (what CI runs)
#   scripts/test.sh --sanitize   a build with ASan and UBSan in
#                                build-sanitize/: lit, GoogleTest and the
#                                fuzz replays (not pytest)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  WEFT_BUILD_DIR=build-sanitize WEFT_CMAKE_ARGS="-DWEFT_SANITIZE=ON" \
    scripts/build.sh
  cd build-sanitize
  # Leaks of the one-shot tools (MLIR contexts at exit) are not findings.
  # allow_user_poisoning=0: LLVM's headers poison allocator memory when they
  # see ASan, which Debian's uninstrumented MLIR libraries then touch.
  ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0 \
    UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -E pytest
  exit
fi
scripts/build.sh
# The fuzz target's clang build (about 8 CPU-minutes, build-fuzz/) runs
# beside the suites at the lowest priority: pytest alone keeps the two
# cores 86% busy (its workers wait on MPI ranks and on the last modules),
# and the build takes the rest. In its own process group (setsid), so
# that a failing suite stops the whole build.
setsid -w nice -n 19 env WEFT_FUZZ_BUILD_ONLY=1 \
  scripts/fuzz.sh 0 plan-loader > build-fuzz.log 2>&1 &
fuzz_build=$!
trap 'kill -- -$fuzz_build 2>/dev/null || true' EXIT
cd build
ctest --output-on-failure
# The libonnx-testdata sweeps print their counts; show them on success too.
grep -h -A0 -E "^(libonnx-testdata import sweep|ONNX node tests through weft-run):" \
  Testing/Temporary/LastTest.log || true
cd ..
if ! wait $fuzz_build; then
  echo "test: the fuzz target's build failed (build-fuzz.log):"
  tail -40 build-fuzz.log
  exit 1
fi
trap - EXIT
# The plan loader's libFuzzer target for 60 s from the committed corpus,
# with a fixed libFuzzer seed so a run repeats (built above, beside the
# suites: the script's own build finds nothing to do). The importer's
# target needs the whole dialect built with ASan and UBSan by clang (over
# 20 min on CI's 2 cores): CI
# replays its corpus (ctest's fuzz-replay-import) and `scripts/fuzz.sh`
# fuzzes it by hand.
WEFT_FUZZ_SEED=1 WEFT_FUZZ_FRESH=1 scripts/fuzz.sh 60 plan-loader
