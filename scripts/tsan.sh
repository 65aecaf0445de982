#!/usr/bin/env bash
# ThreadSanitizer run of the runtime's threads (not part of CI: see
# bench/fuzz.md for the last result and its time):
#   - the kernels' thread pool (runtime/src/cpu/ThreadPool.cpp): its unit
#     tests, the kernel and driver tests, and training runs with --threads 2;
#   - the MPI communicator's progress thread (runtime/src/comm): its unit
#     tests and strata-comm-check on 1, 2 and 4 ranks;
#   - the lagging-gradient aggregator (runtime/src/Lagging.cpp):
#     staleness.test, with grad-sync, data-parallel, pipeline and train tests.
# Builds build-tsan/ (-DSTRATA_SANITIZE=thread, CUDA off). Any report fails the
# run (a reported process exits 66); reports inside OpenMPI, which is not
# instrumented, are suppressed in scripts/tsan.supp.
#
#   scripts/tsan.sh
#   TSAN_BUILD_DIR=out scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TSAN_BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}
BUILD_DIR=$TSAN_BUILD_DIR \
STRATA_CMAKE_ARGS="-DSTRATA_ENABLE_CUDA=OFF -DSTRATA_SANITIZE=thread ${STRATA_CMAKE_ARGS:-}" \
  scripts/setup.sh

export TSAN_OPTIONS="second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unit=$TSAN_BUILD_DIR/test/Unit
bin=$TSAN_BUILD_DIR/bin
status=0
run() {
  echo "tsan: $*"
  "$@" > "$TSAN_BUILD_DIR/tsan-step.log" 2>&1 || {
    status=1
    tail -n 80 "$TSAN_BUILD_DIR/tsan-step.log"
  }
}

start=$(date +%s)
run "$unit/StrataCpuSupportTests"
run "$unit/StrataKernelsTests"
run "$unit/StrataDriverTests"
run "$unit/StrataCommTests"
run mpirun --oversubscribe -np 2 "$unit/StrataCommTests"
run "$bin/strata-comm-check" --no-timing
run mpirun --oversubscribe -np 2 "$bin/strata-comm-check" --no-timing
run mpirun --oversubscribe -np 4 "$bin/strata-comm-check" --no-timing
run /usr/lib/llvm-22/bin/lit -v "$TSAN_BUILD_DIR/test/Integration/staleness.test" \
  "$TSAN_BUILD_DIR/test/Integration/grad-sync.test" \
  "$TSAN_BUILD_DIR/test/Integration/data-parallel.test" \
  "$TSAN_BUILD_DIR/test/Integration/pipeline.test" \
  "$TSAN_BUILD_DIR/test/Integration/train.test" \
  "$TSAN_BUILD_DIR/test/Integration/profile.test"
echo "tsan: $([ $status = 0 ] && echo clean || echo FAILED) in $(($(date +%s) - start)) s"
exit $status
