#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz) with clang-22, ASan and UBSan in
# build-fuzz/, then runs each for SECONDS (default 60) from the committed
# seeds and crashers (test/fuzz/corpus/TARGET) into a growing corpus
# (build-fuzz/corpus/TARGET). A finding leaves its input in
# build-fuzz/crashes/TARGET/ and fails the script; once fixed, copy the input
# into test/fuzz/corpus/TARGET/, where the fuzz-replay-TARGET test keeps it.
# Usage: scripts/fuzz.sh [SECONDS] [plan-loader] [import]
#   WEFT_FUZZ_SEED=N   libFuzzer's -seed (CI fixes it, so a run is repeatable)
#   WEFT_FUZZ_FRESH=1  start from the committed corpus only (as CI does)
#   WEFT_FUZZ_BUILD_ONLY=1  install and build the targets, run nothing
#                      (scripts/test.sh builds them beside the suites)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(plan-loader import)

scripts/install-deps.sh --fuzz
WEFT_BUILD_DIR=build-fuzz \
  WEFT_CMAKE_ARGS="-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 -DWEFT_FUZZ=ON" \
  scripts/build.sh "${targets[@]/#/weft-fuzz-}"
[ -z "${WEFT_FUZZ_BUILD_ONLY:-}" ] || exit 0

status=0
seed=()
[ -z "${WEFT_FUZZ_SEED:-}" ] || seed=(-seed="$WEFT_FUZZ_SEED")
for target in "${targets[@]}"; do
  [ -z "${WEFT_FUZZ_FRESH:-}" ] || rm -rf "build-fuzz/corpus/$target"
  mkdir -p "build-fuzz/corpus/$target" "build-fuzz/crashes/$target"
  echo "fuzz: $target for ${seconds} s"
  # -rss_limit_mb: models may legitimately ask for tens of MB; a leak or a
  # size check that comes too late shows as an out-of-memory finding.
  if ! "build-fuzz/bin/weft-fuzz-$target" \
      "build-fuzz/corpus/$target" "test/fuzz/corpus/$target" \
      -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 "${seed[@]}" \
      -artifact_prefix="build-fuzz/crashes/$target/" -print_final_stats=1 \
      > "build-fuzz/$target.log" 2>&1; then
    status=1
    echo "fuzz: $target found an input that fails (build-fuzz/$target.log):"
    grep -E "ERROR|SUMMARY|Test unit written" "build-fuzz/$target.log" | head -5
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" \
    "build-fuzz/$target.log" | sed "s/^/fuzz: $target: /"
done
exit $status
