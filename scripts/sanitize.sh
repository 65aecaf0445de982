#!/usr/bin/env bash
# The sanitizer and fuzzing check (scripts/test.sh, the test command CI runs, ends with it):
#   1. configures and builds build-san/: every Strata target with AddressSanitizer
#      and UndefinedBehaviorSanitizer (-DSTRATA_SANITIZE=address,undefined) plus
#      the libFuzzer targets of fuzz/ (-DSTRATA_BUILD_FUZZERS=ON), CUDA off;
#   2. runs the whole test suite (ctest) there;
#   3. runs each fuzz target for FUZZ_SECONDS over its seed corpus
#      (fuzz/corpus/NAME; new inputs go to build-san/fuzz/corpus/NAME, crashes
#      to build-san/fuzz/crashes/NAME/). Fails when any step finds anything.
#
#   scripts/sanitize.sh                      build + tests + 60 s per fuzz target
#   FUZZ_SECONDS=600 scripts/sanitize.sh     longer fuzzing (0: none)
#   FUZZ_TARGETS="plan ir" scripts/sanitize.sh
#   SANITIZE_TESTS=0 scripts/sanitize.sh     build and fuzz only
#   SAN_BUILD_DIR=out scripts/sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SAN_BUILD_DIR=${SAN_BUILD_DIR:-build-san}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
# onnx joins the default targets where the importer is built (libonnx-dev).
FUZZ_TARGETS_SET=${FUZZ_TARGETS+set}
FUZZ_TARGETS=${FUZZ_TARGETS:-ir plan safetensors profile tuning-db cost-table}
SANITIZE_TESTS=${SANITIZE_TESTS:-1}

# The sanitizer runtimes and libFuzzer come with compiler-rt.
if ! dpkg-query -W -f='${Status}' libclang-rt-22-dev 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends libclang-rt-22-dev
fi

start=$(date +%s)
BUILD_DIR=$SAN_BUILD_DIR \
STRATA_CMAKE_ARGS="-DSTRATA_ENABLE_CUDA=OFF -DSTRATA_SANITIZE=address,undefined -DSTRATA_BUILD_FUZZERS=ON ${STRATA_CMAKE_ARGS:-}" \
  scripts/setup.sh
echo "sanitize: build took $(($(date +%s) - start)) s"
if [ -z "$FUZZ_TARGETS_SET" ] && [ -x "$SAN_BUILD_DIR/bin/strata-fuzz-onnx" ]; then
  FUZZ_TARGETS="$FUZZ_TARGETS onnx"
fi

# OpenMPI's own allocations outlive MPI_Finalize (most in plugins it has
# unloaded, which no suppression can name); LeakSanitizer would report them at
# the exit of every process that started MPI.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}

status=0
if [ "$SANITIZE_TESTS" != 0 ]; then
  start=$(date +%s)
  # LeakSanitizer stays on for the compiler's suites and the fuzz seeds; the
  # runtime's suites start MPI (see above).
  mpi_suites='^lit-(Integration|Comm|Unit)$'
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$SAN_BUILD_DIR" --output-on-failure \
    -E "$mpi_suites" || status=1
  ctest --test-dir "$SAN_BUILD_DIR" --output-on-failure -R "$mpi_suites" || status=1
  echo "sanitize: tests took $(($(date +%s) - start)) s"
fi

if [ "$FUZZ_SECONDS" != 0 ]; then
  # Leaks are checked while fuzzing (the targets are single-process).
  export ASAN_OPTIONS=detect_leaks=1
  for target in $FUZZ_TARGETS; do
    corpus=$SAN_BUILD_DIR/fuzz/corpus/$target
    crashes=$SAN_BUILD_DIR/fuzz/crashes/$target
    mkdir -p "$corpus" "$crashes"
    dict=()
    if [ -f "fuzz/$target.dict" ]; then dict=(-dict="fuzz/$target.dict"); fi
    echo "sanitize: fuzzing $target for $FUZZ_SECONDS s"
    if ! "$SAN_BUILD_DIR/bin/strata-fuzz-$target" "${dict[@]}" \
        -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" \
        "$corpus" "fuzz/corpus/$target" 2> "$SAN_BUILD_DIR/fuzz/$target.log"; then
      echo "sanitize: strata-fuzz-$target found a problem (inputs in $crashes/):"
      tail -n 60 "$SAN_BUILD_DIR/fuzz/$target.log"
      status=1
    else
      grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$SAN_BUILD_DIR/fuzz/$target.log" |
        sed "s/^/  $target: /"
    fi
  done
fi
exit $status
