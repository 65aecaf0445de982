//===- FuzzPlan.cpp - Fuzz the runtime's plan loader ----------------------===//
//
// libFuzzer target `strata-fuzz-plan`: the input is plan JSON
// (docs/plan-format.md) for `parsePlan`. The loader promises that a plan it
// accepts is fully validated, so that executing it cannot index out of
// bounds; the target holds it to that: a one-rank plan it accepts whose
// arena is small and whose step is cheap gets the synthetic data of its task
// and runs one training step on one thread, under the sanitizers.
//
// "Cheap": no output element of an instruction depends on more than all of
// its input elements, so (input elements) x (output elements), summed over
// the program, bounds a step's work for every kernel (a convolution with a
// huge padded output of a tiny input included) without knowing the kernels.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Data.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Plan.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

using namespace strata::rt;

/// Plans larger than this are only loaded, not run.
static constexpr int64_t kMaxRunArenaBytes = 256 * 1024;
static constexpr int64_t kMaxRunWork = int64_t(1) << 26;
static constexpr size_t kMaxInputBytes = 256 * 1024;

/// Sum over the program of (input elements) x (output elements), saturated
/// at kMaxRunWork + 1.
static int64_t stepWork(const Plan &plan) {
  auto elements = [&](const std::vector<int64_t> &ids) {
    int64_t n = 0;
    for (int64_t id : ids)
      n += numElements(plan.buffers[id].desc.shape);
    return n;
  };
  int64_t work = 0;
  for (const Instruction &inst : plan.programOf(0)) {
    int64_t in = std::max<int64_t>(elements(inst.in), 1);
    int64_t out = std::max<int64_t>(elements(inst.out), 1);
    if (in > kMaxRunWork / out || (work += in * out) > kMaxRunWork)
      return kMaxRunWork + 1;
  }
  return work;
}

static void runOneStep(Plan plan) {
  std::unique_ptr<DataSource> data;
  if (!DataSource::create(plan, DataOptions(), data).ok())
    return;
  ExecutorOptions options;
  options.threads = 1;
  std::unique_ptr<Executor> executor;
  if (!Executor::create(std::move(plan), options, executor).ok())
    return;
  executor->initialize(/*seed=*/1);
  data->fill(/*step=*/1, executor->getTensors(), &executor->getPool());
  float loss = 0;
  (void)executor->runStep(/*step=*/1, loss);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return -1;
  std::string text(reinterpret_cast<const char *>(data), size);
  Plan plan;
  if (!parsePlan(text, "fuzz.plan.json", plan).ok())
    return 0;
  if (plan.worldSize() != 1 || plan.ranks[0].arenaBytes > kMaxRunArenaBytes ||
      stepWork(plan) > kMaxRunWork)
    return 0;
  runOneStep(std::move(plan));
  return 0;
}
