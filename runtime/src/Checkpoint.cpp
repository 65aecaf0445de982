//===- Checkpoint.cpp - Saving and restoring training state ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Checkpoint.h"

#include "strata-rt/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

namespace strata::rt {

static const char *kCheckpointFormat = "strata-checkpoint";
/// A pipeline's in-flight parameters and states (saveCheckpoint).
static const std::string kInFlightPrefix = "pipeline.in_flight.";

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
  // A pipeline that carries micro-batches over between steps is drained
  // before a checkpoint (Train.cpp): the parameters and states are whole,
  // as a pipeline draining every step would have them. What it had in
  // flight (kept before the drain, Executor::keepInFlight), the carried
  // values and `pipeline.in_flight.NAME` for each parameter and state, lets
  // a resumed run go on exactly.
  const std::map<int64_t, std::vector<char>> &flight = executor.getInFlight();
  // Replicated stages carry each replica's own micro-batches: every rank's
  // carried values, as `STATE@rankR` (gathered by rank 0).
  bool perRank = !executor.getRankCarries().empty();
  for (const State &state : plan.states)
    if (!state.carry || (!flight.empty() && !perRank))
      tensors.push_back({state.name, executor.getTensor(state.buffer)});
  std::map<std::string, int64_t> carryBuffer;
  for (const State &state : plan.states)
    if (state.carry)
      carryBuffer[state.name] = state.buffer;
  for (const auto &[name, bytes] : executor.getRankCarries()) {
    Tensor view =
        executor.getTensor(carryBuffer.at(name.substr(0, name.rfind('@'))));
    view.data = const_cast<char *>(bytes.data());
    tensors.push_back({name, view});
  }
  auto addInFlight = [&](const std::string &name, int64_t buffer) {
    auto it = flight.find(buffer);
    if (it == flight.end())
      return;
    Tensor view = executor.getTensor(buffer);
    view.data = const_cast<char *>(it->second.data());
    tensors.push_back({kInFlightPrefix + name, view});
  };
  for (const Parameter &param : plan.parameters)
    addInFlight(param.name, param.buffer);
  for (const State &state : plan.states)
    if (!state.carry)
      addInFlight(state.name, state.buffer);
  std::map<std::string, std::string> metadata = {
      {"format", kCheckpointFormat},  {"plan_format", planFormatName()},
      {"model", plan.model},          {"step", std::to_string(step)},
      {"seed", std::to_string(seed)},
  };
  if (!flight.empty())
    metadata["pipeline_in_flight"] = "kept";

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
  /// Optimizer state, which `--init` skips (running statistics are weights).
  bool isState;
};
} // namespace

/// "a parameter" or "a running statistic": what weight `name` of `plan` is.
static const char *describeWeight(const Plan &plan, const std::string &name) {
  for (const State &state : plan.states)
    if (state.name == name && state.running)
      return "a running statistic";
  return "a parameter";
}

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
  // A resumed run goes on with the pipeline in flight where the checkpoint
  // kept it and the plan carries micro-batches over too.
  auto kept = file.metadata.find("pipeline_in_flight");
  bool resumeInFlight = everything && executor.carriesOver() &&
                        kept != file.metadata.end() && kept->second == "kept";
  std::map<std::string, Slot> slots;
  for (const Parameter &param : plan.parameters)
    slots[param.name] = {param.buffer, false};
  for (const State &state : plan.states)
    slots[state.name] = {state.buffer, !state.running};
  // Carried values matter only to a pipeline resumed in flight; with
  // replicated stages each rank reads its own (`STATE@rankR`).
  std::set<std::string> optional;
  bool perRank = resumeInFlight && plan.replicas > 1;
  std::set<int64_t> own;
  if (perRank)
    for (int64_t buffer : executor.ownCarries())
      own.insert(buffer);
  for (const State &state : plan.states) {
    if (!state.carry)
      continue;
    if (!resumeInFlight || (perRank && !own.count(state.buffer)))
      optional.insert(state.name);
    if (perRank) {
      slots.erase(state.name);
      if (own.count(state.buffer))
        slots[state.name + "@rank" + std::to_string(executor.getRank())] = {
            state.buffer, true};
    }
  }
  // In flight: the parameters and states as they were before the drain.
  std::map<std::string, int64_t> inFlight;
  if (resumeInFlight) {
    for (const Parameter &param : plan.parameters)
      inFlight[kInFlightPrefix + param.name] = param.buffer;
    for (const State &state : plan.states)
      if (!state.carry)
        inFlight[kInFlightPrefix + state.name] = state.buffer;
  }

  // Validate everything before touching the executor. The in-flight
  // copies come after the whole values they replace.
  std::vector<std::pair<const StoredTensor *, int64_t>> copies, flightCopies;
  for (const StoredTensor &tensor : file.tensors) {
    if (auto f = inFlight.find(tensor.name); f != inFlight.end()) {
      const TensorDesc &want = plan.buffers[f->second].desc;
      if (tensor.desc.dtype != want.dtype || tensor.desc.shape != want.shape)
        return Status::invalid(path + ": tensor \"" + tensor.name +
                               "\" does not fit its plan buffer");
      flightCopies.push_back({&tensor, f->second});
      inFlight.erase(f);
      continue;
    }
    auto it = slots.find(tensor.name);
    // Another pipeline's in-flight state (pipeline.*), of no use here: the
    // whole values are.
    if (it == slots.end() && tensor.name.rfind("pipeline.", 0) == 0)
      continue;
    // --init from a training checkpoint into a plan without that state
    // (an inference plan): PARAM.<state> of a known parameter is skipped.
    size_t dot = tensor.name.rfind('.');
    if (it == slots.end() && !everything && dot != std::string::npos) {
      auto owner = slots.find(tensor.name.substr(0, dot));
      if (owner != slots.end() && !owner->second.isState)
        continue;
    }
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
    if ((slot.isState && !everything) || file.find(name) ||
        optional.count(name))
      continue;
    return Status::invalid(
        path + ": missing tensor \"" + name + "\" (" +
        (slot.isState ? "a state" : describeWeight(plan, name)) + " of " +
        plan.path + ")");
  }
  copies.insert(copies.end(), flightCopies.begin(), flightCopies.end());
  for (const auto &[tensor, buffer] : copies)
    if (!tensor->bytes.empty())
      std::memcpy(executor.getTensor(buffer).data, tensor->bytes.data(),
                  tensor->bytes.size());
  // Kept weight versions start as copies of the loaded parameters.
  if (!everything)
    executor.copyParameterStates();
  executor.setPipelineInFlight(resumeInFlight);
  info.refills =
      everything && executor.carriesOver() && !resumeInFlight && info.step > 0;
  executor.markHostModified();
  return Status::success();
}

namespace {

/// Periodic checkpoints of `base` in its directory: (step, path).
std::vector<std::pair<int64_t, std::string>>
listPeriodic(const std::string &base) {
  namespace fs = std::filesystem;
  fs::path basePath(base);
  fs::path dir = basePath.has_parent_path() ? basePath.parent_path() : ".";
  std::string prefix = basePath.filename().string() + ".step";
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix))
      continue;
    std::string digits = name.substr(prefix.size());
    if (digits.size() > 15 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    found.push_back({std::stoll(digits), (dir / name).string()});
  }
  std::sort(found.begin(), found.end());
  return found;
}

} // namespace

std::string periodicCheckpointPath(const std::string &base, int64_t step) {
  return base + ".step" + std::to_string(step);
}

Status prunePeriodicCheckpoints(const std::string &base, int64_t keep) {
  std::vector<std::pair<int64_t, std::string>> found = listPeriodic(base);
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
    std::error_code error;
    if (!std::filesystem::remove(found[i].second, error) && error)
      return Status::failure("cannot remove " + found[i].second + ": " +
                             error.message());
  }
  return Status::success();
}

Status findLatestCheckpoint(const std::string &base, std::string &path) {
  std::vector<std::pair<int64_t, std::string>> found = listPeriodic(base);
  int64_t bestStep = -1;
  if (!found.empty()) {
    bestStep = found.back().first;
    path = found.back().second;
  }
  std::error_code error;
  if (std::filesystem::exists(base, error)) {
    SafetensorsFile file;
    if (Status status = readSafetensors(base, file); !status.ok())
      return status;
    auto step = file.metadata.find("step");
    int64_t value = -1;
    if (step != file.metadata.end() && !step->second.empty() &&
        step->second.size() < 16 &&
        step->second.find_first_not_of("0123456789") == std::string::npos)
      value = std::stoll(step->second);
    if (value >= bestStep) {
      bestStep = value;
      path = base;
    }
  }
  if (bestStep < 0 && path.empty())
    return Status::failure("--resume-latest: neither " + base + " nor " + base +
                           ".step<N> exists");
  return Status::success();
}

} // namespace strata::rt
