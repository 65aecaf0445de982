//===- ExportPlan.cpp - Write a training step as a runtime plan -----------===//
//
// Writes docs/plan-format.md version 1 from a training step whose values
// carry buffers (--strata-lower-to-plan). Instructions are the strata ops in
// program order: the plan op is the op's mnemonic and its attributes are the
// op's inherent attributes, serialised generically (booleans and units as
// 0/1, integers, floats, integer arrays). A step of bf16 tensors is widened
// first (Bf16Tensors.h): the runtime keeps f32 tensors.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/BufferLiveness.h"
#include "strata/Conversion/Bf16Tensors.h"
#include "strata/Conversion/Plan.h"
#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Fan-in and fan-out of a parameter shape (docs/plan-format.md).
std::pair<int64_t, int64_t> getFans(ArrayRef<int64_t> shape) {
  if (shape.size() == 4) {
    int64_t receptive = shape[2] * shape[3];
    return {shape[1] * receptive, shape[0] * receptive};
  }
  if (shape.size() == 2)
    return {shape[0], shape[1]};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return {n, n};
}

const char *getDType(Type type) {
  Type element = cast<RankedTensorType>(type).getElementType();
  if (element.isF32())
    return "f32";
  if (element.isBF16())
    return "bf16";
  if (element.isInteger(32))
    return "i32";
  if (element.isInteger(64))
    return "i64";
  if (element.isInteger(8))
    return "i8";
  return "unknown";
}

class PlanWriter {
public:
  PlanWriter(func::FuncOp func, StringRef device)
      : func(func), device(device.str()) {}
  FailureOr<llvm::json::Object> build(StringRef model);

private:
  LogicalResult collect();
  llvm::json::Array buildBuffers();
  llvm::json::Array buildParameters();
  llvm::json::Array buildStates();
  llvm::json::Array buildInputs();
  /// The instructions of pipeline device `device` (every op when the step
  /// is not a pipeline, device < 0).
  FailureOr<llvm::json::Array> buildProgram(int64_t device = -1);
  FailureOr<llvm::json::Object> buildAttrs(Operation *op);
  /// A compress or decompress instruction's `site` (the compress op's number
  /// in the step) and, for decompress, its compress's format attributes.
  LogicalResult addCompressionAttrs(Operation *op, llvm::json::Object &attrs);
  std::string getName(Value value);

  func::FuncOp func;
  /// The device every rank asks for ("cpu" or "cuda").
  std::string device;
  /// Buffer id -> (value, kind), in id order.
  std::map<int64_t, std::pair<Value, const char *>> buffers;
  /// Devices of one pipeline (1 when the step is not a pipeline).
  int64_t devices = 1;
  /// The ops of each rank program (getRankPrograms).
  SmallVector<SmallVector<Operation *>> rankPrograms;
  /// Data-parallel replicas of the step (strata.replicas, default 1).
  int64_t replicas = 1;
  /// The site number of each compress op, in program order.
  DenseMap<Operation *, int64_t> compressSites;
  /// Parameter argument -> the gradient operand of its update.
  DenseMap<Value, Value> gradOf;
  /// The ops of the previous step's micro-batches (collectPreviousStep).
  DenseSet<Operation *> previousStep;
  /// The ops that work on micro-batches of the previous step (marked
  /// `strata.previous_step`); fails where one shares an activation with an
  /// op of the step (a later pass made an op without copying the mark).
  LogicalResult collectPreviousStep();
  Operation *firstUpdate = nullptr;
};

/// Prints `value` as JSON, on one line when that line is short, else with
/// one member or element per line, so plans stay readable and diffable.
void printPretty(raw_ostream &os, const llvm::json::Value &value,
                 unsigned indent) {
  std::string compact;
  llvm::raw_string_ostream(compact) << value;
  const llvm::json::Object *object = value.getAsObject();
  const llvm::json::Array *array = value.getAsArray();
  if (compact.size() + indent <= 150 || (!object && !array)) {
    os << compact;
    return;
  }
  std::string pad(indent + 1, ' ');
  if (array) {
    os << "[\n";
    for (auto [i, element] : llvm::enumerate(*array)) {
      os << pad;
      printPretty(os, element, indent + 1);
      os << (i + 1 < array->size() ? ",\n" : "\n");
    }
    os << std::string(indent, ' ') << "]";
    return;
  }
  // Objects keep the order of `keys` (json::Object itself is unordered).
  os << "{\n";
  SmallVector<StringRef> keys;
  for (const auto &member : *object)
    keys.push_back(member.first);
  llvm::sort(keys);
  for (auto [i, key] : llvm::enumerate(keys)) {
    os << pad << '"' << key << "\": ";
    printPretty(os, *object->get(key), indent + 1);
    os << (i + 1 < keys.size() ? ",\n" : "\n");
  }
  os << std::string(indent, ' ') << "}";
}

} // namespace

std::string PlanWriter::getName(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return {};
  unsigned i = arg.getArgNumber();
  if (auto p = func.getArgAttrOfType<ParamAttr>(
          i, StrataDialect::getParamAttrName()))
    return p.getName().str();
  if (auto s = func.getArgAttrOfType<StateAttr>(
          i, StrataDialect::getStateAttrName()))
    return s.getName().str();
  if (auto r = func.getArgAttrOfType<RunningStatAttr>(
          i, StrataDialect::getRunningStatAttrName()))
    return r.getName().str();
  if (auto in = func.getArgAttrOfType<InputAttr>(
          i, StrataDialect::getInputAttrName()))
    return in.getName().str();
  return {};
}

LogicalResult PlanWriter::collect() {
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    const char *kind = "input";
    if (func.getArgAttr(i, StrataDialect::getParamAttrName()))
      kind = "param";
    else if (func.getArgAttr(i, StrataDialect::getStateAttrName()) ||
             func.getArgAttr(i, StrataDialect::getRunningStatAttrName()))
      kind = "state";
    else if (!func.getArgAttr(i, StrataDialect::getInputAttrName()))
      return func.emitOpError() << "argument #" << i
                                << " is neither a parameter, a state, a "
                                   "running statistic nor an input";
    buffers[getBuffer(arg).getId()] = {arg, kind};
  }
  WalkResult walk = func.walk([&](Operation *op) {
    if (isa<func::ReturnOp>(op) || op == func)
      return WalkResult::advance();
    if (!isa<StrataDialect>(op->getDialect())) {
      op->emitOpError() << "cannot be exported to a plan";
      return WalkResult::interrupt();
    }
    if (auto update = dyn_cast<InPlaceOpInterface>(op)) {
      if (!firstUpdate)
        firstUpdate = op;
      gradOf[update.getParameter()] = update.getGradient();
    }
    for (OpResult result : op->getResults()) {
      BufferAttr buffer = getBuffer(result);
      if (!buffer) {
        op->emitOpError() << "result #" << result.getResultNumber()
                          << " has no buffer";
        return WalkResult::interrupt();
      }
      buffers.try_emplace(buffer.getId(), result, "activation");
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (auto &[param, grad] : gradOf)
    if (BufferAttr buffer = getBuffer(grad))
      buffers[buffer.getId()].second = "grad";
  return success();
}

llvm::json::Array PlanWriter::buildBuffers() {
  llvm::json::Array array;
  DenseMap<Value, Value> views = getBufferViews(func);
  for (auto &[id, entry] : buffers) {
    auto [value, kind] = entry;
    BufferAttr buffer = getBuffer(value);
    auto type = cast<RankedTensorType>(value.getType());
    llvm::json::Object object{{"id", id},
                              {"kind", kind},
                              {"dtype", getDType(type)},
                              {"shape", llvm::json::Array(type.getShape())},
                              {"offset", buffer.getOffset()},
                              {"bytes", buffer.getBytes()}};
    // A reshape placed in its source's bytes (--strata-lower-to-plan).
    if (Value start = views.lookup(value))
      object["view_of"] = getBuffer(start).getId();
    // Arguments are named after their parameter, state or input; computed
    // values after the op that defines them and their buffer id.
    std::string name = getName(value);
    if (name.empty())
      name = (value.getDefiningOp()->getName().stripDialect() + "." + Twine(id))
                 .str();
    object["name"] = name;
    array.push_back(std::move(object));
  }
  return array;
}

llvm::json::Array PlanWriter::buildParameters() {
  llvm::json::Array array;
  for (BlockArgument arg : func.getArguments()) {
    auto param = func.getArgAttrOfType<ParamAttr>(
        arg.getArgNumber(), StrataDialect::getParamAttrName());
    if (!param)
      continue;
    auto [fanIn, fanOut] =
        getFans(cast<RankedTensorType>(arg.getType()).getShape());
    llvm::json::Object object{{"name", param.getName()},
                              {"buffer", getBuffer(arg).getId()},
                              {"layer", param.getLayer()},
                              {"init", stringifyInitKind(param.getInit())},
                              {"scale", param.getScale().convertToDouble()},
                              {"fan_in", fanIn},
                              {"fan_out", fanOut}};
    if (Value grad = gradOf.lookup(arg))
      object["grad"] = getBuffer(grad).getId();
    array.push_back(std::move(object));
  }
  return array;
}

llvm::json::Array PlanWriter::buildStates() {
  llvm::json::Array array;
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto state = func.getArgAttrOfType<StateAttr>(
            i, StrataDialect::getStateAttrName())) {
      llvm::json::Object entry{{"name", state.getName()},
                               {"buffer", getBuffer(arg).getId()},
                               {"param", state.getParam()},
                               {"init", stringifyStateInit(state.getInit())}};
      // The values the pipeline scheduler carries over to the next step
      // (drain=run): states of no parameter it names pipeline.carry*.
      if (state.getParam().empty() &&
          state.getName().starts_with("pipeline.carry"))
        entry["kind"] = "carry";
      array.push_back(std::move(entry));
    }
    // Running statistics are states the forward pass updates: weights
    // files carry them (strata-run --init loads them with the parameters).
    if (auto stat = func.getArgAttrOfType<RunningStatAttr>(
            i, StrataDialect::getRunningStatAttrName()))
      array.push_back(
          llvm::json::Object{{"name", stat.getName()},
                             {"buffer", getBuffer(arg).getId()},
                             {"kind", "running"},
                             {"layer", stat.getLayer()},
                             {"init", stringifyInitKind(stat.getInit())}});
  }
  return array;
}

llvm::json::Array PlanWriter::buildInputs() {
  llvm::json::Array array;
  for (BlockArgument arg : func.getArguments())
    if (auto input = func.getArgAttrOfType<InputAttr>(
            arg.getArgNumber(), StrataDialect::getInputAttrName()))
      array.push_back(
          llvm::json::Object{{"name", input.getName()},
                             {"role", stringifyInputRole(input.getRole())},
                             {"buffer", getBuffer(arg).getId()}});
  return array;
}

FailureOr<llvm::json::Object> PlanWriter::buildAttrs(Operation *op) {
  llvm::json::Object attrs;
  for (NamedAttribute attr : op->getAttrs()) {
    StringRef name = attr.getName().getValue();
    Attribute value = attr.getValue();
    // The GEMM tiling becomes the matmul instruction's mc/nc/kc/mr/nr.
    if (auto tiling = dyn_cast<GemmTilingAttr>(value)) {
      attrs["mc"] = tiling.getMc();
      attrs["nc"] = tiling.getNc();
      attrs["kc"] = tiling.getKc();
      attrs["mr"] = tiling.getMr();
      attrs["nr"] = tiling.getNr();
      continue;
    }
    if (name.starts_with("strata."))
      continue; // Discardable annotations, not semantics.
    // Activation formats become their plan codes (ActivationFormat.h).
    if (auto format = dyn_cast<ActFormatAttr>(value)) {
      attrs[name] = format.getCode();
      continue;
    }
    if (auto formats = dyn_cast<ArrayAttr>(value);
        formats && llvm::all_of(formats, llvm::IsaPred<ActFormatAttr>)) {
      llvm::json::Array codes;
      for (Attribute format : formats)
        codes.push_back(cast<ActFormatAttr>(format).getCode());
      attrs[name] = std::move(codes);
      continue;
    }
    if (isa<UnitAttr>(value))
      attrs[name] = 1;
    else if (auto b = dyn_cast<BoolAttr>(value))
      attrs[name] = b.getValue() ? 1 : 0;
    else if (auto i = dyn_cast<IntegerAttr>(value))
      attrs[name] = i.getInt();
    else if (auto f = dyn_cast<FloatAttr>(value)) {
      // JSON has no infinities or NaNs.
      if (!std::isfinite(f.getValueAsDouble()))
        return op->emitOpError()
               << "attribute '" << name << "' is " << f.getValueAsDouble()
               << ", which a plan cannot hold";
      attrs[name] = f.getValueAsDouble();
    } else if (auto list = dyn_cast<DenseI64ArrayAttr>(value))
      attrs[name] = llvm::json::Array(list.asArrayRef());
    else
      return op->emitOpError()
             << "attribute '" << name << "' cannot be written to a plan";
  }
  return attrs;
}

LogicalResult PlanWriter::addCompressionAttrs(Operation *op,
                                              llvm::json::Object &attrs) {
  auto decompress = dyn_cast<DecompressOp>(op);
  Operation *compress = decompress ? decompress.getCompress() : op;
  if (!isa<CompressOp>(compress))
    return success();
  auto site = compressSites.try_emplace(compress, compressSites.size());
  attrs["site"] = site.first->second;
  if (!decompress)
    return success();
  FailureOr<llvm::json::Object> source = buildAttrs(compress);
  if (failed(source))
    return failure();
  for (auto &[key, value] : *source)
    attrs[key] = value;
  return success();
}

LogicalResult PlanWriter::collectPreviousStep() {
  auto isActivation = [&](Value value) {
    auto kind = buffers.find(getBuffer(value).getId());
    return kind != buffers.end() &&
           (StringRef(kind->second.second) == "activation" ||
            StringRef(kind->second.second) == "grad");
  };
  WalkResult walk =
      func.walk([&](Operation *op) {
        if (isa<func::ReturnOp>(op) || op == func)
          return WalkResult::advance();
        bool previous = op->hasAttr(StrataDialect::getPreviousStepAttrName());
        if (previous)
          previousStep.insert(op);
        // The step's ops and the previous step's share no activation: what
        // crosses the boundary lives in states (parameters, carried values).
        for (Value operand : op->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (!def || def == func || !isActivation(operand) ||
              def->hasAttr(StrataDialect::getPreviousStepAttrName()) ==
                  previous)
            continue;
          op->emitOpError()
              << (previous ? "works on the previous step's micro-batch "
                             "(strata.previous_step) but reads a value of this "
                             "step's"
                           : "reads a value of the previous step's micro-batch "
                             "(strata.previous_step) but is not marked so")
              << "; a pass after --strata-schedule-pipeline lost the mark";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
  return failure(walk.wasInterrupted());
}

FailureOr<llvm::json::Array> PlanWriter::buildProgram(int64_t device) {
  llvm::json::Array program;
  for (Operation *opPtr : rankPrograms[std::max<int64_t>(device, 0)]) {
    Operation &op = *opPtr;
    llvm::json::Array in, out;
    for (Value operand : op.getOperands())
      in.push_back(getBuffer(operand).getId());
    for (Value result : op.getResults())
      out.push_back(getBuffer(result).getId());
    FailureOr<llvm::json::Object> attrs = buildAttrs(&op);
    if (failed(attrs))
      return failure();
    // Collectives reduce over the plan's only group, every replica (in a
    // pipeline, the group of the device's replicas); a bucket's wait finds
    // its group through the start with the same bucket.
    if (isa<AllReduceOp, AllReduceStartOp>(op)) {
      // The group has one rank per replica of the step.
      int64_t opReplicas = isa<AllReduceOp>(op)
                               ? cast<AllReduceOp>(op).getReplicas()
                               : cast<AllReduceStartOp>(op).getReplicas();
      if (opReplicas != replicas)
        return op.emitOpError()
               << "reduces over " << opReplicas << " replicas, but the step "
               << "runs on " << replicas << " (strata.replicas)";
      (*attrs)["group"] = std::max<int64_t>(device, 0);
    }
    if (failed(addCompressionAttrs(&op, *attrs)))
      return failure();
    auto phase = op.getAttrOfType<PhaseAttr>(StrataDialect::getPhaseAttrName());
    llvm::json::Object inst{
        {"op", op.getName().stripDialect()},
        {"in", std::move(in)},
        {"out", std::move(out)},
        {"attrs", std::move(*attrs)},
        {"layer", getLayer(&op).value_or(-1)},
        {"phase", stringifyPhase(phase ? phase.getValue() : Phase::forward)}};
    if (previousStep.contains(&op))
      inst["previous_step"] = true;
    program.push_back(std::move(inst));
  }
  return program;
}

FailureOr<llvm::json::Object> PlanWriter::build(StringRef model) {
  if (failed(collect()) || failed(collectPreviousStep()))
    return failure();
  // The attribute's verifier guarantees at least one device.
  auto pipeline = func->getAttrOfType<PipelineScheduleAttr>(
      StrataDialect::getPipelineScheduleAttrName());
  if (pipeline)
    devices = pipeline.getDevices();
  FailureOr<SmallVector<SmallVector<Operation *>>> programs =
      getRankPrograms(func);
  if (failed(programs))
    return failure();
  rankPrograms = std::move(*programs);
  if (auto attr = func->getAttrOfType<IntegerAttr>(
          StrataDialect::getReplicasAttrName()))
    replicas = attr.getInt();
  FailureOr<llvm::json::Array> program = buildProgram(pipeline ? 0 : -1);
  if (failed(program))
    return failure();
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // The runtime reports the last result as the step's loss.
  if (ret.getNumOperands() == 0) {
    ret.emitOpError() << "returns nothing, but a plan's loss (the step's last "
                         "result) must be a scalar f32";
    return failure();
  }
  auto lossType = dyn_cast<ShapedType>(ret.getOperands().back().getType());
  if (!lossType || lossType.getRank() != 0 ||
      !lossType.getElementType().isF32()) {
    ret.emitOpError() << "returns " << ret.getOperands().back().getType()
                      << " last, but a plan's loss (the step's last result) "
                         "must be a scalar f32";
    return failure();
  }
  Value loss = ret.getOperands().back();
  llvm::json::Object plan{{"format", "strata-plan"},
                          {"version", kPlanFormatVersion},
                          {"model", model},
                          {"producer", "strata-translate --export-plan"},
                          {"buffers", buildBuffers()},
                          {"parameters", buildParameters()},
                          {"states", buildStates()},
                          {"inputs", buildInputs()},
                          {"loss", getBuffer(loss).getId()}};
  if (firstUpdate) {
    auto adam = dyn_cast<AdamUpdateOp>(firstUpdate);
    llvm::json::Object optimizer{{"kind", !adam                 ? "sgd"
                                          : adam.getDecoupled() ? "adamw"
                                                                : "adam"}};
    for (NamedAttribute attr : firstUpdate->getAttrs())
      if (auto f = dyn_cast<FloatAttr>(attr.getValue()))
        optimizer[attr.getName().getValue()] = f.getValueAsDouble();
    plan["optimizer"] = std::move(optimizer);
  }
  int64_t arenaBytes =
      func->getAttrOfType<IntegerAttr>(StrataDialect::getArenaBytesAttrName())
          .getInt();
  // Data-parallel steps run the same program on every replica, each on its
  // shard of the global batch: rank 0 carries the program, the other ranks
  // share it, and the collectives reduce over the group of every replica.
  // Pipelines: rank d * replicas + r runs device d of replica r; the
  // replicas of a device share its program and reduce in its group.
  llvm::json::Array ranks, groups;
  for (int64_t d = 0; d < devices; ++d) {
    std::optional<llvm::json::Array> own;
    if (d == 0) {
      own = std::move(*program);
    } else {
      FailureOr<llvm::json::Array> other = buildProgram(d);
      if (failed(other))
        return failure();
      own = std::move(*other);
    }
    llvm::json::Array members;
    for (int64_t r = 0; r < replicas; ++r) {
      int64_t rank = d * replicas + r;
      members.push_back(rank);
      llvm::json::Object entry{{"rank", rank},
                               {"device", device},
                               {"replica", r},
                               {"arena_bytes", arenaBytes}};
      if (pipeline)
        entry["stage"] = d;
      if (r == 0)
        entry["program"] = std::move(*own);
      else
        entry["program_of"] = d * replicas;
      ranks.push_back(std::move(entry));
    }
    groups.push_back(llvm::json::Object{
        {"name", pipeline ? "stage" + std::to_string(d) : "replicas"},
        {"ranks", std::move(members)}});
  }
  if (auto memory = func->getAttrOfType<MemoryPlanAttr>(
          StrataDialect::getMemoryPlanAttrName()))
    plan["memory_plan"] =
        llvm::json::Object{{"strategy", memory.getStrategy()},
                           {"arena_bytes", memory.getArenaBytes()},
                           {"lower_bound", memory.getLowerBound()},
                           {"unplanned_bytes", memory.getUnplannedBytes()},
                           {"optimal", memory.getOptimal()}};
  // The asynchronous pipeline schedules update the weights once per window.
  if (pipeline && pipeline.getWindow() > 0)
    plan["updates_per_step"] =
        pipeline.getMicroBatches() / pipeline.getWindow();
  plan["replicas"] = replicas;
  plan["groups"] = std::move(groups);
  plan["ranks"] = std::move(ranks);
  return plan;
}

LogicalResult mlir::strata::exportPlan(ModuleOp module, raw_ostream &os,
                                       StringRef device, bool forwardOnly) {
  if (device != "cpu" && device != "cuda")
    return emitError(module.getLoc())
           << "--plan-device must be cpu or cuda, got '" << device << "'";
  SmallVector<func::FuncOp> steps;
  for (auto func : module.getOps<func::FuncOp>())
    if (forwardOnly != func->hasAttr(StrataDialect::getTrainStepAttrName()))
      steps.push_back(func);
  if (steps.size() != 1 && forwardOnly)
    return emitError(module.getLoc())
           << "--forward-only: expected exactly one model (a function that "
              "is not a training step, as strata-model writes it), found "
           << steps.size();
  if (steps.size() != 1)
    return emitError(module.getLoc())
           << "expected exactly one training step (strata.train_step), found "
           << steps.size() << "; run --strata-autodiff first";
  func::FuncOp func = steps.front();
  if (hasBf16Tensors(module)) {
    // The runtime keeps f32 tensors: a bf16 model trains in mixed precision.
    if (func->hasAttr(StrataDialect::getArenaBytesAttrName()))
      return emitError(func.getLoc())
             << "the step has bf16 tensors and buffers planned for them, "
                "but the runtime keeps f32 tensors (bf16 only in matmul and "
                "convolution arithmetic): run --strata-mixed-precision before "
                "--strata-plan-buffers (or use --strata-train-pipeline)";
    widenBf16Tensors(module);
  }
  if (!func->hasAttr(StrataDialect::getArenaBytesAttrName())) {
    if (failed(assignBuffers(func)))
      return failure();
  } else if (failed(verifyBuffers(func))) {
    return failure();
  }
  // Build the whole plan first so a failure leaves no partial output.
  FailureOr<llvm::json::Object> plan =
      PlanWriter(func, device).build(func.getSymName());
  if (failed(plan))
    return failure();
  printPretty(os, llvm::json::Value(std::move(*plan)), 0);
  os << "\n";
  return success();
}

void mlir::strata::registerExportPlanTranslation() {
  static llvm::cl::opt<std::string> planDevice(
      "plan-device",
      llvm::cl::desc("--export-plan: the device every rank of the plan asks "
                     "for, cpu or cuda (strata-run --device overrides it)"),
      llvm::cl::init("cpu"));
  static llvm::cl::opt<bool> forwardOnly(
      "forward-only",
      llvm::cl::desc("--export-plan: write the model's forward function (as "
                     "strata-model emits it, before --strata-autodiff) as an "
                     "inference plan: no backward, no optimizer state"),
      llvm::cl::init(false));
  TranslateFromMLIRRegistration registration(
      "export-plan", "write the training step as a runtime plan (JSON)",
      [](Operation *op, raw_ostream &os) {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return LogicalResult(op->emitError("expected a module"));
        return exportPlan(module, os, planDevice, forwardOnly);
      },
      [](DialectRegistry &registry) {
        registry.insert<StrataDialect, func::FuncDialect>();
      });
}
