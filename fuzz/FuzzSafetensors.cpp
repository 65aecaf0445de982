//===- FuzzSafetensors.cpp - Fuzz the safetensors and checkpoint readers --===//
//
// libFuzzer target `strata-fuzz-safetensors`: the input is a .safetensors
// image for `parseSafetensors`. A file it accepts must survive a round trip
// (serialise, parse again, same metadata, names, dtypes, shapes and bytes),
// and is then restored as a checkpoint (`restoreCheckpoint`, parameters only
// and everything) into the executor of a small MLP plan (TinyPlan.inc), which
// validates it against the plan before copying anything.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Checkpoint.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Safetensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using namespace strata::rt;

#include "TinyPlan.inc" // kTinyPlan: an MLP plan (strata-model mlp, tiny sizes)

static constexpr size_t kMaxInputBytes = 1 << 20;

static void check(bool ok, const char *what) {
  if (ok)
    return;
  std::fprintf(stderr, "strata-fuzz-safetensors: %s\n", what);
  std::abort();
}

static Executor &tinyExecutor() {
  static std::unique_ptr<Executor> executor = [] {
    Plan plan;
    Status status = parsePlan(kTinyPlan, "tiny.plan.json", plan);
    check(status.ok(), "the embedded plan does not load");
    ExecutorOptions options;
    options.threads = 1;
    std::unique_ptr<Executor> result;
    check(Executor::create(std::move(plan), options, result).ok(),
          "cannot create the executor of the embedded plan");
    return result;
  }();
  return *executor;
}

static void roundTrip(SafetensorsFile &file) {
  std::vector<NamedTensor> tensors;
  for (StoredTensor &tensor : file.tensors)
    tensors.push_back({tensor.name, tensor.view()});
  std::string bytes;
  check(serializeSafetensors(tensors, file.metadata, bytes).ok(),
        "an accepted file does not serialise");
  SafetensorsFile again;
  check(parseSafetensors(bytes, "again.safetensors", again).ok(),
        "a serialised file does not parse");
  check(again.metadata == file.metadata, "metadata changed in a round trip");
  check(again.tensors.size() == file.tensors.size(),
        "tensor count changed in a round trip");
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const StoredTensor &a = file.tensors[i], &b = again.tensors[i];
    check(a.name == b.name && a.desc.dtype == b.desc.dtype &&
              a.desc.shape == b.desc.shape && a.bytes == b.bytes,
          "a tensor changed in a round trip");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return -1;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  SafetensorsFile file;
  if (!parseSafetensors(bytes, "fuzz.safetensors", file).ok())
    return 0;
  roundTrip(file);
  CheckpointInfo info;
  (void)restoreCheckpoint(tinyExecutor(), file, "fuzz.safetensors",
                          CheckpointContents::Parameters, info);
  (void)restoreCheckpoint(tinyExecutor(), file, "fuzz.safetensors",
                          CheckpointContents::Everything, info);
  return 0;
}
