//===- PartitionPipeline.cpp - Layers to pipeline stages x replicas -------===//
//
// Builds the layer graph of a training step (costs by phase from the cost
// interface, or a measured profile), runs the partitioner of
// strata/Analysis/PipelinePartition.h and records the result on the step as
// `strata.pipeline` (Passes.td has the contract).
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PipelinePartition.h"
#include "strata/Analysis/PipelineProfile.h"
#include "strata/Analysis/SavedValues.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/OptionLimits.h"
#include "strata/Transforms/Passes.h"
#include "strata/Transforms/TargetResolution.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

namespace mlir::strata {
#define GEN_PASS_DEF_PARTITIONPIPELINEPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The phase of an op; forward when it carries none.
static Phase phaseOf(Operation *op) {
  if (auto attr =
          op->getAttrOfType<PhaseAttr>(StrataDialect::getPhaseAttrName()))
    return attr.getValue();
  return Phase::forward;
}

/// The layer graph of `func`, costs from the cost interface on `target`.
static FailureOr<LayerGraph> buildLayerGraph(func::FuncOp func,
                                             const TargetDescription &target) {
  std::map<int64_t, PartitionLayer> layers;
  // Every op with a layer defines one; costed ops must have one.
  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    std::optional<int64_t> layer = getLayer(op);
    auto costOp = dyn_cast<CostOpInterface>(op);
    if (!layer) {
      if (costOp)
        return op->emitOpError()
               << "has a cost but no strata.layer, so no stage can hold it";
      return WalkResult::advance();
    }
    PartitionLayer &entry = layers[*layer];
    entry.id = *layer;
    if (!costOp)
      return WalkResult::advance();
    double seconds = costOp.estimateSeconds(target);
    switch (phaseOf(op)) {
    case Phase::forward:
      entry.forwardSeconds += seconds;
      break;
    case Phase::backward:
    case Phase::recompute: // Recomputation runs in the backward pass.
      entry.backwardSeconds += seconds;
      break;
    case Phase::update:
      entry.updateSeconds += seconds;
      break;
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // Parameters and their optimizer state.
  llvm::StringMap<int64_t> paramLayer;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto param = func.getArgAttrOfType<ParamAttr>(
            i, StrataDialect::getParamAttrName())) {
      PartitionLayer &entry = layers[param.getLayer()];
      entry.id = param.getLayer();
      entry.paramBytes +=
          static_cast<double>(getTensorBytes(func.getArgumentTypes()[i]));
      paramLayer[param.getName()] = param.getLayer();
    }
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto state = func.getArgAttrOfType<StateAttr>(
            i, StrataDialect::getStateAttrName())) {
      auto it = paramLayer.find(state.getParam());
      if (it == paramLayer.end())
        continue;
      layers[it->second].optimizerBytes +=
          static_cast<double>(getTensorBytes(func.getArgumentTypes()[i]));
    }

  // Activations saved for backward stay on the stage of their producer; a
  // saved data input on the stage of its first forward reader.
  SavedValues saved(func);
  for (Value value : saved.getActivations())
    if (std::optional<int64_t> layer = getLayer(value.getDefiningOp()))
      layers[*layer].stashBytes +=
          static_cast<double>(getTensorBytes(value.getType()));
  for (Value value : saved.getArguments()) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg ||
        !func.getArgAttr(arg.getArgNumber(), StrataDialect::getInputAttrName()))
      continue;
    std::optional<int64_t> first;
    for (Operation *user : value.getUsers())
      if (phaseOf(user) == Phase::forward)
        if (std::optional<int64_t> layer = getLayer(user))
          first = first ? std::min(*first, *layer) : *layer;
    if (first)
      layers[*first].stashBytes +=
          static_cast<double>(getTensorBytes(value.getType()));
  }

  LayerGraph graph;
  std::map<int64_t, unsigned> position;
  for (auto &[id, layer] : layers) {
    position[id] = graph.layers.size();
    graph.layers.push_back(layer);
  }
  // A forward value read by later layers is one tensor with an edge to each
  // of its forward readers' layers: it crosses every cut up to its last one
  // (its gradient comes back the same way).
  int64_t tensors = 0;
  walk = func.walk([&](Operation *op) -> WalkResult {
    if (phaseOf(op) != Phase::forward)
      return WalkResult::advance();
    std::optional<int64_t> layer = getLayer(op);
    if (!layer)
      return WalkResult::advance();
    for (Value result : op->getResults()) {
      std::set<int64_t> readers;
      for (Operation *user : result.getUsers()) {
        if (phaseOf(user) != Phase::forward)
          continue;
        std::optional<int64_t> userLayer = getLayer(user);
        if (!userLayer)
          continue;
        if (*userLayer < *layer)
          return user->emitOpError()
                 << "in layer " << *userLayer << " reads a value of layer "
                 << *layer << ", so layers are not in pipeline order";
        if (*userLayer > *layer)
          readers.insert(*userLayer);
      }
      double bytes = static_cast<double>(getTensorBytes(result.getType()));
      for (int64_t reader : readers)
        graph.edges.push_back(
            {position[*layer], position[reader], bytes, tensors});
      tensors += !readers.empty();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return graph;
}

/// Replaces the times (and the sizes it has) of `graph` by a profile's.
static LogicalResult applyProfile(func::FuncOp func, LayerGraph &graph,
                                  const LayerProfileSet &profile,
                                  StringRef path) {
  std::map<int64_t, unsigned> position;
  for (auto [i, layer] : llvm::enumerate(graph.layers))
    position[layer.id] = i;
  std::map<int64_t, const LayerProfile *> byId;
  for (const LayerProfile &p : profile.layers) {
    if (!position.count(p.layer))
      return emitError(func.getLoc())
             << "training step @" << func.getName() << " has no layer "
             << p.layer << ", but profile '" << path << "' describes it";
    byId[p.layer] = &p;
  }
  for (PartitionLayer &layer : graph.layers) {
    auto it = byId.find(layer.id);
    if (it == byId.end())
      return emitError(func.getLoc())
             << "training step @" << func.getName() << " has layer " << layer.id
             << ", but profile '" << path << "' does not describe it";
    const LayerProfile &p = *it->second;
    if (!p.name.empty())
      layer.name = p.name;
    layer.forwardSeconds = p.forwardSeconds;
    layer.backwardSeconds = p.backwardSeconds;
    layer.updateSeconds = p.updateSeconds.value_or(layer.updateSeconds);
    layer.paramBytes = p.paramBytes.value_or(layer.paramBytes);
    layer.optimizerBytes = p.optimizerBytes.value_or(layer.optimizerBytes);
    layer.stashBytes = p.stashBytes.value_or(layer.stashBytes);
  }
  if (profile.edges) {
    graph.edges.clear();
    for (const ProfileEdge &e : *profile.edges) {
      if (!position.count(e.from) || !position.count(e.to))
        return emitError(func.getLoc())
               << "training step @" << func.getName() << " has no layer "
               << e.from << " or " << e.to << " of a profile edge";
      graph.edges.push_back({position[e.from], position[e.to], e.bytes});
    }
  }
  return success();
}

struct PartitionPipelinePass
    : public strata::impl::PartitionPipelinePassBase<PartitionPipelinePass> {
  using Base::Base;

  void runOnOperation() override;
  LogicalResult runOnStep(func::FuncOp func, const TargetDescription &target,
                          const PartitionOptions &options,
                          const std::optional<LayerProfileSet> &profileSet);
  LogicalResult writeReport(func::FuncOp func, const LayerGraph &graph,
                            const PartitionResult &result);
};

} // namespace

void PartitionPipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fail = [&](const Twine &message) {
    emitError(module.getLoc()) << "--strata-partition-pipeline: " << message;
    signalPassFailure();
  };
  PartitionOptions options;
  // The stage attributes are layer ranges of the IR's order.
  options.cuts = CutSpace::Prefixes;
  options.objective = objective;
  options.schedule = schedule;
  if (stages != "auto") {
    int64_t n;
    if (StringRef(stages).getAsInteger(10, n) || n < 1)
      return fail("stages must be auto or a positive number, got '" + stages +
                  "'");
    if (n > kMaxStages)
      return fail("stages must be at most " + Twine(kMaxStages) +
                  " (its documented bound), got " + Twine(n));
    options.stages = n;
  }
  if (devices < 0)
    return fail("devices must be positive, got " + Twine(devices));
  if (replicas < 0)
    return fail("replicas must be positive, got " + Twine(replicas));
  if (microBatches < 0)
    return fail("micro-batches must be positive, got " + Twine(microBatches));
  if (memoryBytes < 0)
    return fail("memory-bytes must be positive, got " + Twine(memoryBytes));
  for (auto [option, value, max] :
       {std::tuple<StringRef, int64_t, int64_t>("devices", devices,
                                                kMaxReplicas),
        {"replicas", replicas, kMaxReplicas},
        {"micro-batches", microBatches, kMaxMicroBatches}})
    if (value > max)
      return fail(option + " must be at most " + Twine(max) +
                  " (its documented bound), got " + Twine(value));
  options.devices = devices;
  options.replicas = replicas;
  options.straight = straight;
  options.recompute = recompute;
  options.microBatches = microBatches;
  options.memoryBytes = static_cast<double>(memoryBytes);

  std::string name = getTargetName(targetName, module);
  if (name.empty())
    return fail("needs a target (target=NAME or target=FILE.json)");
  FailureOr<TargetDescription> target =
      loadTarget(name, [&] { return emitError(module.getLoc()); });
  if (failed(target))
    return signalPassFailure();
  if (options.devices > target->numDevices())
    return fail("devices=" + Twine(devices) + " but target '" + target->name +
                "' has " + Twine(target->numDevices()));

  std::optional<LayerProfileSet> profileSet;
  if (!profile.empty()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(profile);
    if (!buffer)
      return fail("cannot read profile '" + profile +
                  "': " + buffer.getError().message());
    llvm::Expected<LayerProfileSet> parsed =
        parseLayerProfile((*buffer)->getBuffer(), profile);
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    profileSet = std::move(*parsed);
  }

  if (failed(forEachTrainStep(
          module,
          "--strata-partition-pipeline: no training step to partition (run "
          "--strata-autodiff first)",
          [&](func::FuncOp func) {
            return runOnStep(func, *target, options, profileSet);
          })))
    signalPassFailure();
}

LogicalResult PartitionPipelinePass::runOnStep(
    func::FuncOp func, const TargetDescription &target,
    const PartitionOptions &options,
    const std::optional<LayerProfileSet> &profileSet) {
  FailureOr<LayerGraph> graph = buildLayerGraph(func, target);
  if (failed(graph))
    return failure();
  if (graph->layers.empty())
    return emitError(func.getLoc()) << "training step @" << func.getName()
                                    << " has no ops with a strata.layer";
  if (profileSet && failed(applyProfile(func, *graph, *profileSet, profile)))
    return failure();
  if (auto names = func->getAttrOfType<ArrayAttr>(
          StrataDialect::getLayerNamesAttrName()))
    for (PartitionLayer &layer : graph->layers)
      if (layer.name.empty() && layer.id >= 0 &&
          layer.id < static_cast<int64_t>(names.size()))
        if (auto name = dyn_cast<StringAttr>(names[layer.id]))
          layer.name = name.getValue().str();

  PartitionResult result =
      partitionPipeline(*graph, PartitionTopology::fromTarget(target), options);
  if (!result.ok())
    return emitError(func.getLoc())
           << "training step @" << func.getName()
           << " cannot be partitioned: " << result.error;

  Builder b(func.getContext());
  const PartitionEvaluation &best = result.best;
  // Stages are layer ranges: the options search prefixes of the layer order.
  assert(best.order.empty() && "the pass partitions at prefixes only");
  SmallVector<PipelineStageAttr> stageAttrs;
  SmallVector<int64_t> firstDevices, memory;
  SmallVector<double> stageSeconds;
  for (const StagePlan &stage : best.stages) {
    stageAttrs.push_back(PipelineStageAttr::get(
        b.getContext(), graph->layers[stage.firstLayer].id,
        graph->layers[stage.lastLayer].id, stage.replicas));
    firstDevices.push_back(stage.firstDevice);
    memory.push_back(static_cast<int64_t>(stage.memoryBytes));
    stageSeconds.push_back(stage.seconds);
  }
  const PartitionOptions &o = result.options;
  func->setAttr(
      StrataDialect::getPipelineAttrName(),
      PipelinePartitionAttr::get(
          b.getContext(), stageAttrs, o.devices, o.microBatches,
          stringifySchedule(o.schedule), stringifyObjective(o.objective),
          b.getDenseI64ArrayAttr(firstDevices),
          b.getDenseF64ArrayAttr(stageSeconds),
          b.getF64FloatAttr(best.stepSeconds),
          b.getF64FloatAttr(best.bubbleFraction),
          b.getF64FloatAttr(result.speedup), b.getDenseI64ArrayAttr(memory)));
  numStages += best.stages.size();
  return writeReport(func, *graph, result);
}

LogicalResult
PartitionPipelinePass::writeReport(func::FuncOp func, const LayerGraph &graph,
                                   const PartitionResult &result) {
  if (report.empty())
    return success();
  bool json = StringRef(report).ends_with(".json");
  // writeToOutput writes a temporary file and renames it into place.
  llvm::Error error =
      llvm::writeToOutput(report, [&](llvm::raw_ostream &os) -> llvm::Error {
        if (json)
          os << llvm::formatv("{0:2}", partitionReportToJSON(graph, result))
             << "\n";
        else
          printPartitionReport(os, graph, result);
        return llvm::Error::success();
      });
  if (error)
    return emitError(func.getLoc())
           << "cannot write report '" << report
           << "': " << llvm::toString(std::move(error));
  return success();
}
