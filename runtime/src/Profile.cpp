//===- Profile.cpp - Per-layer profiles of real steps ---------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace strata::rt {

using json = nlohmann::json;

void ProfileRecorder::record(const std::vector<InstructionTime> &times) {
  std::vector<double> us;
  us.reserve(times.size());
  for (const InstructionTime &t : times)
    us.push_back(t.durationUs);
  steps.push_back(std::move(us));
}

namespace {

struct LayerEntry {
  double forward = 0, backward = 0, update = 0;
  int64_t activation = 0, stash = 0, params = 0, optimizer = 0;
  bool seen = false;
};

/// Transfers, collectives and host copies of swapped activations: waiting,
/// not the layer's compute (the partitioner prices communication itself).
/// Recomputed forward instructions count as the layer's backward time.
bool isCommunication(const Instruction &inst) {
  return inst.has(kCollective) || inst.has(kPointToPoint) ||
         inst.has(kCopyStart) || inst.has(kCopyWait);
}

} // namespace

std::string kernelSignature(const Plan &plan, const Instruction &inst) {
  std::string text = inst.name();
  auto shapes = [&](const std::vector<int64_t> &ids) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const TensorDesc &desc = plan.buffers[ids[i]].desc;
      text += i ? "," : "";
      text += dtypeName(desc.dtype);
      text += "[";
      for (size_t d = 0; d < desc.shape.size(); ++d)
        text += (d ? "x" : "") + std::to_string(desc.shape[d]);
      text += "]";
    }
  };
  text += "(";
  shapes(inst.in);
  text += ")->(";
  shapes(inst.out);
  text += ")";
  bool product = inst.op == OpCode::Matmul || inst.op == OpCode::FusedMatmul;
  if (product)
    text += inst.attrs.transposeA ? " ta" : "";
  if (product)
    text += inst.attrs.transposeB ? " tb" : "";
  // The heads layouts read and write with other strides than a plain
  // product of the same stored shapes.
  if (inst.op == OpCode::Matmul) {
    text += inst.attrs.headsA ? " ha" : "";
    text += inst.attrs.headsB ? " hb" : "";
    text += inst.attrs.headsC ? " hc" : "";
  }
  if (inst.op == OpCode::FusedMatmul)
    text += std::string(" ") + strata_plan::epilogueName(inst.attrs.epilogue);
  // A reshape into its input's bytes takes no time; a copying one does.
  if (inst.has(kView) && plan.buffers[inst.out[0]].viewOf >= 0)
    text += " view";
  return text;
}

/// The "kernels" list of a profile of `steps` (per step, per instruction,
/// microseconds), from step `first` on.
static json kernelTimes(const Plan &plan,
                        const std::vector<Instruction> &program,
                        const std::vector<std::vector<double>> &steps,
                        size_t first) {
  // Per signature: the instructions' median times over the steps, averaged.
  std::map<std::string, std::pair<double, int64_t>> bySignature;
  for (size_t i = 0; i < program.size(); ++i) {
    if (isCommunication(program[i]))
      continue;
    std::vector<double> times;
    for (size_t s = first; s < steps.size(); ++s)
      if (i < steps[s].size())
        times.push_back(steps[s][i] * 1e-6);
    auto &entry = bySignature[kernelSignature(plan, program[i])];
    entry.first += median(times);
    entry.second += 1;
  }
  json list = json::array();
  for (auto &[signature, entry] : bySignature)
    list.push_back(
        {{"kernel", signature},
         {"seconds", entry.first / static_cast<double>(entry.second)},
         {"count", entry.second}});
  return list;
}

Status ProfileRecorder::write(const Plan &plan,
                              const std::vector<Instruction> &program,
                              const std::string &path) const {
  if (steps.empty())
    return Status::failure(path + ": no step ran, so there is no profile");
  // Per layer and phase, the per-step sums; then their median.
  // The warm-up steps, or the first one, or none: whatever leaves a step.
  size_t warmup = static_cast<size_t>(std::max<int64_t>(warmupSteps, 0));
  size_t first = steps.size() > warmup ? warmup : steps.size() > 1 ? 1 : 0;
  std::map<int64_t, LayerEntry> layers;
  std::map<int64_t, std::vector<double>> forward, backward, update;
  for (size_t s = first; s < steps.size(); ++s) {
    std::map<int64_t, double> f, b, u;
    for (size_t i = 0; i < program.size() && i < steps[s].size(); ++i) {
      const Instruction &inst = program[i];
      if (inst.layer < 0 || isCommunication(inst))
        continue;
      double seconds = steps[s][i] * 1e-6;
      if (isBackwardPhase(inst.phase))
        b[inst.layer] += seconds;
      else if (inst.phase == Phase::Update)
        u[inst.layer] += seconds;
      else
        f[inst.layer] += seconds;
      layers[inst.layer].seen = true;
    }
    for (auto &[layer, entry] : layers) {
      forward[layer].push_back(f[layer]);
      backward[layer].push_back(b[layer]);
      update[layer].push_back(u[layer]);
    }
  }
  for (auto &[layer, entry] : layers) {
    entry.forward = median(forward[layer]);
    entry.backward = median(backward[layer]);
    entry.update = median(update[layer]);
  }
  // Tensors: who writes each buffer in forward, who reads it. A view
  // counts as the buffer whose bytes it is (the bytes are stashed once).
  std::map<int64_t, int64_t> forwardWriter;
  for (const Instruction &inst : program)
    if (inst.layer >= 0 && !isBackwardPhase(inst.phase) &&
        inst.phase != Phase::Update)
      for (int64_t out : inst.out)
        forwardWriter.try_emplace(plan.bytesOf(out), inst.layer);
  std::map<std::pair<int64_t, int64_t>, int64_t> edges;
  std::set<std::pair<int64_t, int64_t>> counted; // (buffer, consumer layer)
  std::set<int64_t> stashed;
  for (const Instruction &inst : program) {
    if (inst.layer < 0 || isCommunication(inst))
      continue;
    for (int64_t id : inst.in) {
      int64_t in = plan.bytesOf(id);
      auto it = forwardWriter.find(in);
      if (it == forwardWriter.end())
        continue;
      int64_t from = it->second, bytes = plan.buffers[in].bytes;
      if (!layers.count(from))
        continue;
      if (isBackwardPhase(inst.phase)) {
        if (stashed.insert(in).second)
          layers[from].stash += bytes;
      } else if (inst.phase != Phase::Update && inst.layer != from &&
                 counted.insert({in, inst.layer}).second) {
        edges[{from, inst.layer}] += bytes;
      }
    }
  }
  for (auto &[key, bytes] : edges)
    if (layers.count(key.first))
      layers[key.first].activation += bytes;
  std::map<std::string, int64_t> layerOfParam;
  for (const Parameter &param : plan.parameters) {
    layerOfParam[param.name] = param.layer;
    // Only the layers this rank's program computes (a pipeline stage's).
    if (layers.count(param.layer))
      layers[param.layer].params += plan.buffers[param.buffer].bytes;
  }
  for (const State &state : plan.states) {
    auto it = layerOfParam.find(state.param);
    if (it != layerOfParam.end() && layers.count(it->second))
      layers[it->second].optimizer += plan.buffers[state.buffer].bytes;
  }
  json list = json::array();
  for (auto &[layer, e] : layers)
    list.push_back({{"layer", layer},
                    {"forward_seconds", e.forward},
                    {"backward_seconds", e.backward},
                    {"update_seconds", e.update},
                    {"activation_bytes", e.activation},
                    {"stash_bytes", e.stash},
                    {"parameter_bytes", e.params},
                    {"optimizer_bytes", e.optimizer}});
  json edgeList = json::array();
  for (auto &[key, bytes] : edges)
    edgeList.push_back(
        {{"from", key.first}, {"to", key.second}, {"bytes", bytes}});
  json root = {{"format", "strata-profile"},
               {"version", 1},
               {"producer", "strata-run --profile"},
               {"model", plan.model},
               {"steps", steps.size() - first},
               {"layers", std::move(list)},
               {"edges", std::move(edgeList)},
               {"kernels", kernelTimes(plan, program, steps, first)}};
  return writeFileAtomically(path, root.dump(1) + "\n");
}

} // namespace strata::rt
