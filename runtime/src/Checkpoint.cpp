//===- Checkpoint.cpp - Saving and restoring training state ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Checkpoint.h"

#include "strata-rt/Safetensors.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

namespace strata::rt {

static const char *kCheckpointFormat = "strata-checkpoint";

static std::string planFormatName() {
  return "strata-plan " + std::to_string(kPlanFormatVersion);
}

Status saveCheckpoint(const Executor &executor, const std::string &path,
                      int64_t step, uint64_t seed) {
  const Plan &plan = executor.getPlan();
  // A device executor's parameters live on the device.
  if (Status status = executor.syncToHost(); !status.ok())
    return Status::failure(path + ": " + status.message());
  std::vector<NamedTensor> tensors;
  for (const Parameter &param : plan.parameters)
    tensors.push_back({param.name, executor.getTensor(param.buffer)});
  for (const State &state : plan.states)
    tensors.push_back({state.name, executor.getTensor(state.buffer)});
  std::map<std::string, std::string> metadata = {
      {"format", kCheckpointFormat},  {"plan_format", planFormatName()},
      {"model", plan.model},          {"step", std::to_string(step)},
      {"seed", std::to_string(seed)},
  };
  return writeSafetensors(path, tensors, metadata);
}

/// Parses a decimal unsigned integer that fills all of `text`.
static bool parseUnsigned(const std::string &text, uint64_t &value) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  value = v;
  return true;
}

static Status readStepAndSeed(const SafetensorsFile &file,
                              const std::string &path, CheckpointInfo &info) {
  auto metadata = [&](const char *key) -> const std::string * {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? nullptr : &it->second;
  };
  const std::string *format = metadata("format");
  if (format && *format != kCheckpointFormat)
    return Status::invalid(path + ": metadata format is \"" + *format +
                           "\", expected \"" + kCheckpointFormat + "\"");
  const std::string *planFormat = metadata("plan_format");
  // Checkpoints hold tensors by name; every plan version names them alike.
  bool known = false;
  for (int64_t v = 1; v <= kPlanFormatVersion; ++v)
    known |= planFormat && *planFormat == "strata-plan " + std::to_string(v);
  if (planFormat && !known)
    return Status::invalid(path + ": saved from plan format \"" + *planFormat +
                           "\", this runtime reads \"strata-plan 1\" to \"" +
                           planFormatName() + "\"");
  const std::string *step = metadata("step");
  const std::string *seed = metadata("seed");
  if (!step || !seed)
    return Status::invalid(path + ": not a resumable checkpoint (metadata "
                                  "'step' and 'seed' are required)");
  uint64_t stepValue = 0;
  if (!parseUnsigned(*step, stepValue) || stepValue > (uint64_t(1) << 31))
    return Status::invalid(path + ": metadata step \"" + *step +
                           "\" is not a step number");
  if (!parseUnsigned(*seed, info.seed))
    return Status::invalid(path + ": metadata seed \"" + *seed +
                           "\" is not a seed");
  info.step = static_cast<int64_t>(stepValue);
  info.hasStepAndSeed = true;
  return Status::success();
}

namespace {
/// A plan buffer that a checkpoint tensor fills.
struct Slot {
  int64_t buffer;
  bool isState;
};
} // namespace

Status loadCheckpoint(Executor &executor, const std::string &path,
                      CheckpointContents contents, CheckpointInfo &info) {
  info = CheckpointInfo();
  SafetensorsFile file;
  Status status = readSafetensors(path, file);
  if (!status.ok())
    return status;
  return restoreCheckpoint(executor, file, path, contents, info);
}

Status restoreCheckpoint(Executor &executor, const SafetensorsFile &file,
                         const std::string &path, CheckpointContents contents,
                         CheckpointInfo &info) {
  info = CheckpointInfo();
  bool everything = contents == CheckpointContents::Everything;
  if (everything) {
    Status status = readStepAndSeed(file, path, info);
    if (!status.ok())
      return status;
  }

  const Plan &plan = executor.getPlan();
  std::map<std::string, Slot> slots;
  for (const Parameter &param : plan.parameters)
    slots[param.name] = {param.buffer, false};
  for (const State &state : plan.states)
    slots[state.name] = {state.buffer, true};

  // Validate everything before touching the executor.
  std::vector<std::pair<const StoredTensor *, int64_t>> copies;
  for (const StoredTensor &tensor : file.tensors) {
    auto it = slots.find(tensor.name);
    if (it == slots.end())
      return Status::invalid(path + ": tensor \"" + tensor.name +
                             "\" is neither a parameter nor a state of " +
                             plan.path);
    if (it->second.isState && !everything)
      continue;
    const TensorDesc &want = plan.buffers[it->second.buffer].desc;
    if (tensor.desc.dtype != want.dtype || tensor.desc.shape != want.shape)
      return Status::invalid(path + ": tensor \"" + tensor.name + "\" is " +
                             dtypeName(tensor.desc.dtype) + " " +
                             formatShape(tensor.desc.shape) +
                             ", the plan needs " + dtypeName(want.dtype) + " " +
                             formatShape(want.shape));
    copies.push_back({&tensor, it->second.buffer});
  }
  for (const auto &[name, slot] : slots) {
    if ((slot.isState && !everything) || file.find(name))
      continue;
    return Status::invalid(path + ": missing tensor \"" + name + "\" (" +
                           (slot.isState ? "a state" : "a parameter") + " of " +
                           plan.path + ")");
  }
  for (const auto &[tensor, buffer] : copies)
    if (!tensor->bytes.empty())
      std::memcpy(executor.getTensor(buffer).data, tensor->bytes.data(),
                  tensor->bytes.size());
  executor.markHostModified();
  return Status::success();
}

} // namespace strata::rt
