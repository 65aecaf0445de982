//===- StrataDialect.cpp - Strata dialect ---------------------------------===//

#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Dialect/Strata/StrataOps.h"

#include "strata-rt/ActivationFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::strata;

#include "strata/Dialect/Strata/StrataDialect.cpp.inc"
#include "strata/Dialect/Strata/StrataEnums.cpp.inc"

/// The optional tail of #strata.pipeline_schedule: `, window = N` (when not
/// 0), `, predicted_step_seconds = F`, `, predicted_bubble = F`, in any
/// order when parsed.
static ParseResult parseScheduleExtras(AsmParser &parser, int64_t &window,
                                       FloatAttr &stepSeconds,
                                       FloatAttr &bubble) {
  window = 0;
  stepSeconds = FloatAttr();
  bubble = FloatAttr();
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return failure();
    if (key == "window") {
      int64_t value = 0;
      if (parser.parseInteger(value))
        return failure();
      window = value;
      continue;
    }
    FloatAttr value;
    if (key != "predicted_step_seconds" && key != "predicted_bubble")
      return parser.emitError(loc)
             << "expected window, predicted_step_seconds or "
                "predicted_bubble, got '"
             << key << "'";
    if (parser.parseAttribute(value))
      return failure();
    (key == "predicted_bubble" ? bubble : stepSeconds) = value;
  }
  return success();
}

static void printScheduleExtras(AsmPrinter &printer, int64_t window,
                                FloatAttr stepSeconds, FloatAttr bubble) {
  if (window != 0)
    printer << ", window = " << window;
  if (stepSeconds) {
    printer << ", predicted_step_seconds = ";
    printer.printAttribute(stepSeconds);
  }
  if (bubble) {
    printer << ", predicted_bubble = ";
    printer.printAttribute(bubble);
  }
}

#define GET_ATTRDEF_CLASSES
#include "strata/Dialect/Strata/StrataAttrs.cpp.inc"

void StrataDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "strata/Dialect/Strata/StrataOps.cpp.inc"
      >();
  registerAttributes();
}

void StrataDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "strata/Dialect/Strata/StrataAttrs.cpp.inc"
      >();
}

void mlir::strata::detail::printDouble(AsmPrinter &printer,
                                       const llvm::APFloat &value) {
  printer.printFloat(value);
}

LogicalResult ParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef name, int64_t layer, InitKind init,
                                llvm::APFloat scale) {
  if (name.empty())
    return emitError() << "parameter name must not be empty";
  if (layer < 0)
    return emitError() << "parameter layer must be non-negative, got " << layer;
  if (scale.isNegative() || !scale.isFinite())
    return emitError() << "parameter init scale must be a non-negative "
                          "number, got "
                       << scale.convertToDouble();
  return success();
}

LogicalResult
RunningStatAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        StringRef name, int64_t layer, InitKind init) {
  if (name.empty())
    return emitError() << "running statistic name must not be empty";
  if (layer < 0)
    return emitError() << "running statistic layer must be non-negative, got "
                       << layer;
  if (init != InitKind::zeros && init != InitKind::ones)
    return emitError() << "running statistic init must be zeros or ones, got "
                       << stringifyInitKind(init);
  return success();
}

strata_plan::ActFormat ActFormatAttr::getFormat() const {
  strata_plan::ActFormat format;
  (void)strata_plan::parseActFormat(getName().str(), format);
  return format;
}

int64_t ActFormatAttr::getCode() const {
  return strata_plan::encodeActFormat(getFormat());
}

int64_t ActFormatAttr::getPackedBytes(int64_t numel) const {
  return strata_plan::actPackedBytes(getFormat(), numel);
}

LogicalResult
ActFormatAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef name) {
  strata_plan::ActFormat format;
  std::string error = strata_plan::parseActFormat(name.str(), format);
  if (!error.empty())
    return emitError() << error;
  std::string canonical = strata_plan::actFormatName(format);
  if (canonical != name)
    return emitError() << "activation format '" << name
                       << "' must be spelled canonically: '" << canonical
                       << "'";
  return success();
}

LogicalResult
GemmTilingAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t mc,
                       int64_t nc, int64_t kc, int64_t mr, int64_t nr) {
  if (mc <= 0 || nc <= 0 || kc <= 0 || mr <= 0 || nr <= 0)
    return emitError() << "gemm tiling sizes must be positive";
  if (mc % mr != 0)
    return emitError() << "gemm tiling mc = " << mc
                       << " must be a multiple of mr = " << mr;
  if (nc % nr != 0)
    return emitError() << "gemm tiling nc = " << nc
                       << " must be a multiple of nr = " << nr;
  return success();
}

LogicalResult
PipelineStageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t firstLayer, int64_t lastLayer,
                          int64_t replicas) {
  if (firstLayer < 0 || lastLayer < firstLayer)
    return emitError() << "pipeline stage must hold at least one layer, got "
                       << firstLayer << ".." << lastLayer;
  if (replicas < 1)
    return emitError() << "pipeline stage must have at least one replica, got "
                       << replicas;
  return success();
}

LogicalResult PipelinePartitionAttr::verify(
    function_ref<InFlightDiagnostic()> emitError,
    ArrayRef<PipelineStageAttr> stages, int64_t devices, int64_t microBatches,
    StringRef schedule, StringRef objective, DenseI64ArrayAttr firstDevices,
    DenseF64ArrayAttr stageSeconds, FloatAttr stepSeconds,
    FloatAttr bubbleFraction, FloatAttr speedup,
    DenseI64ArrayAttr memoryBytes) {
  if (stages.empty())
    return emitError() << "pipeline partition must have at least one stage";
  int64_t previous = -1;
  for (auto [i, stage] : llvm::enumerate(stages)) {
    if (stage.getFirstLayer() <= previous)
      return emitError() << "pipeline partition stage " << i
                         << " must follow the previous stage";
    previous = stage.getLastLayer();
  }
  if (devices < 0 || microBatches < 0)
    return emitError()
           << "pipeline partition devices and micro_batches must be "
              "non-negative";
  int64_t numStages = static_cast<int64_t>(stages.size());
  for (auto [array, name] :
       {std::pair<DenseI64ArrayAttr, StringRef>(firstDevices, "first_devices"),
        {memoryBytes, "memory_bytes_per_device"}})
    if (array && array.size() != numStages)
      return emitError() << "pipeline partition " << name
                         << " must have one entry per stage";
  if (stageSeconds && stageSeconds.size() != numStages)
    return emitError() << "pipeline partition predicted_stage_seconds must "
                          "have one entry per stage";
  return success();
}

LogicalResult PipelineScheduleAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef schedule,
    int64_t devices, int64_t virtualStages, int64_t microBatches,
    int64_t replicas, int64_t window, FloatAttr stepSeconds, FloatAttr bubble) {
  if (devices < 1 || virtualStages < 1 || microBatches < 1 || replicas < 1)
    return emitError() << "pipeline schedule devices, virtual, micro_batches "
                          "and replicas must be positive";
  if (window < 0 || (window > 0 && microBatches % window != 0))
    return emitError() << "pipeline schedule window must divide micro_batches ("
                       << microBatches << "), got " << window;
  return success();
}

//===----------------------------------------------------------------------===//
// Attribute verification
//===----------------------------------------------------------------------===//

LogicalResult StrataDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == getLayerAttrName()) {
    auto layer = dyn_cast<IntegerAttr>(value);
    if (!layer || !layer.getType().isSignlessInteger(64))
      return op->emitOpError() << "'" << name << "' must be an i64 integer";
    if (layer.getInt() < 0)
      return op->emitOpError()
             << "'" << name << "' must be non-negative, got " << layer.getInt();
    return success();
  }
  if (name == getLayerNamesAttrName()) {
    auto names = dyn_cast<ArrayAttr>(value);
    if (!isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << name << "' is only valid on functions";
    if (!names || !llvm::all_of(names, llvm::IsaPred<StringAttr>))
      return op->emitOpError()
             << "'" << name << "' must be an array of strings";
    return success();
  }
  if (name == getCostAttrName()) {
    if (!isa<CostAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a #strata.cost";
    return success();
  }
  if (name == getLayerCostsAttrName()) {
    auto costs = dyn_cast<ArrayAttr>(value);
    if (!costs || !llvm::all_of(costs, llvm::IsaPred<LayerCostAttr>))
      return op->emitOpError()
             << "'" << name << "' must be an array of #strata.layer_cost";
    return success();
  }
  if (name == getPhaseAttrName()) {
    if (!isa<PhaseAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a #strata.phase";
    return success();
  }
  if (name == getTrainStepAttrName()) {
    if (!isa<UnitAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'" << name << "' must be a unit attribute on a function";
    return success();
  }
  if (name == getBuffersAttrName()) {
    auto buffers = dyn_cast<ArrayAttr>(value);
    if (!buffers || !llvm::all_of(buffers, llvm::IsaPred<BufferAttr>) ||
        buffers.size() != op->getNumResults())
      return op->emitOpError()
             << "'" << name << "' must hold one #strata.buffer per result";
    return success();
  }
  if (name == getPipelineAttrName()) {
    if (!isa<PipelinePartitionAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << name
                               << "' must be a #strata.pipeline_partition on "
                                  "a function";
    return success();
  }
  if (name == getReplicasAttrName()) {
    auto replicas = dyn_cast<IntegerAttr>(value);
    if (!replicas || replicas.getInt() < 1 || !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'" << name << "' must be a positive integer on a function";
    return success();
  }
  if (name == getMemoryPlanAttrName()) {
    auto plan = dyn_cast<MemoryPlanAttr>(value);
    if (!plan || plan.getArenaBytes() < 0 || plan.getLowerBound() < 0 ||
        plan.getLowerBound() > plan.getArenaBytes())
      return op->emitOpError()
             << "'" << name
             << "' must be a #strata.memory_plan whose lower bound is "
                "between 0 and its arena bytes";
    return success();
  }
  if (name == getRematPlanAttrName()) {
    auto plan = dyn_cast<RematPlanAttr>(value);
    if (!plan || plan.getBudget() < 0 || plan.getPeakBefore() < 0 ||
        plan.getPeakAfter() < 0 || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << name
                               << "' must be a #strata.remat_plan with "
                                  "non-negative byte counts on a function";
    return success();
  }
  if (name == getArenaBytesAttrName()) {
    auto bytes = dyn_cast<IntegerAttr>(value);
    if (!bytes || bytes.getInt() < 0)
      return op->emitOpError()
             << "'" << name << "' must be a non-negative integer";
    return success();
  }
  if (name == getTargetAttrName()) {
    if (!isa<StringAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a string";
    return success();
  }
  if (name == getGemmTilingAttrName()) {
    if (!isa<GemmTilingAttr>(value) || !isa<MatmulOp, FusedMatmulOp>(op))
      return op->emitOpError()
             << "'" << name << "' must be a #strata.gemm_tiling on a matmul";
    return success();
  }
  if (name == getStageAttrName() || name == getMicroBatchAttrName()) {
    auto index = dyn_cast<IntegerAttr>(value);
    if (!index || index.getInt() < 0)
      return op->emitOpError()
             << "'" << name << "' must be a non-negative integer";
    return success();
  }
  if (name == getPreviousStepAttrName()) {
    if (!isa<UnitAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  if (name == getPipelineScheduleAttrName()) {
    if (!isa<PipelineScheduleAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << name
                               << "' must be a #strata.pipeline_schedule on "
                                  "a function";
    return success();
  }
  return op->emitOpError() << "unknown strata attribute '" << name << "'";
}

/// The first argument of `func` that carries attribute `name`. The verifier
/// asks once per argument, so the answer is remembered for the function's
/// (immutable, uniqued) array of argument attributes: scanning from 0 every
/// time made verifying a function of N parameters quadratic.
static unsigned firstArgWith(FunctionOpInterface func, StringRef name) {
  struct Entry {
    const void *context = nullptr, *argAttrs = nullptr;
    size_t size = 0;
    std::string name;
    unsigned first = 0;
  };
  static thread_local Entry cache[3];
  ArrayAttr argAttrs = func.getArgAttrsAttr();
  const void *context = func->getContext();
  const void *key = argAttrs ? argAttrs.getAsOpaquePointer() : nullptr;
  size_t size = argAttrs ? argAttrs.size() : 0;
  Entry &entry = cache[name == StrataDialect::getParamAttrName()   ? 0
                       : name == StrataDialect::getStateAttrName() ? 1
                                                                   : 2];
  if (key && entry.argAttrs == key && entry.context == context &&
      entry.size == size && entry.name == name)
    return entry.first;
  unsigned first = func.getNumArguments();
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, name)) {
      first = i;
      break;
    }
  entry = {context, key, size, name.str(), first};
  return first;
}

/// Checks that parameter names are unique in `func`; run once per function,
/// from its first parameter.
static LogicalResult verifyUniqueParamNames(FunctionOpInterface func,
                                            unsigned argIndex) {
  StringRef paramName = StrataDialect::getParamAttrName();
  if (argIndex != firstArgWith(func, paramName))
    return success(); // Not the first parameter: already checked.
  llvm::StringSet<> seen;
  for (unsigned i = argIndex, e = func.getNumArguments(); i < e; ++i) {
    auto param = func.getArgAttrOfType<ParamAttr>(i, paramName);
    if (param && !seen.insert(param.getName()).second)
      return func->emitOpError()
             << "parameter name '" << param.getName() << "' is used twice";
  }
  return success();
}

/// Checks the optimizer states of `func` once, from its first state: state
/// names are unique among parameters and states, and a state's `param` names
/// a parameter of the function (the plan's checkpoint keys and the runtime
/// rely on both).
static LogicalResult verifyStates(FunctionOpInterface func, unsigned argIndex) {
  StringRef stateName = StrataDialect::getStateAttrName();
  if (argIndex != firstArgWith(func, stateName))
    return success(); // Not the first state: already checked.
  llvm::StringSet<> params, names;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto param = func.getArgAttrOfType<ParamAttr>(
            i, StrataDialect::getParamAttrName()))
      params.insert(param.getName());
  for (unsigned i = argIndex, e = func.getNumArguments(); i < e; ++i) {
    auto state = func.getArgAttrOfType<StateAttr>(i, stateName);
    if (!state)
      continue;
    if (params.contains(state.getName()) ||
        !names.insert(state.getName()).second)
      return func->emitOpError()
             << "state name '" << state.getName()
             << "' is used twice (parameter and state names are unique)";
    if (!state.getParam().empty() && !params.contains(state.getParam()))
      return func->emitOpError()
             << "state '" << state.getName() << "' belongs to '"
             << state.getParam() << "', which is not a parameter";
    if (state.getInit() == StateInit::param && state.getParam().empty())
      return func->emitOpError()
             << "state '" << state.getName()
             << "' starts as a copy of its parameter (init = param) but "
                "names none";
  }
  return success();
}

/// Checks the running statistics of `func` once, from the first: each is a
/// statically shaped float tensor and not also a parameter or an input, and
/// their names are unique among parameters, states and running statistics.
static LogicalResult verifyRunningStats(FunctionOpInterface func,
                                        unsigned argIndex) {
  StringRef statName = StrataDialect::getRunningStatAttrName();
  if (argIndex != firstArgWith(func, statName))
    return success(); // Not the first running statistic: already checked.
  llvm::StringSet<> others, names;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (auto param = func.getArgAttrOfType<ParamAttr>(
            i, StrataDialect::getParamAttrName()))
      others.insert(param.getName());
    if (auto state = func.getArgAttrOfType<StateAttr>(
            i, StrataDialect::getStateAttrName()))
      others.insert(state.getName());
  }
  for (unsigned i = argIndex, e = func.getNumArguments(); i < e; ++i) {
    auto stat = func.getArgAttrOfType<RunningStatAttr>(i, statName);
    if (!stat)
      continue;
    auto tensor = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (!tensor || !tensor.hasStaticShape() ||
        !isa<FloatType>(tensor.getElementType()))
      return func->emitOpError()
             << "running statistic #" << i
             << " must be a statically shaped float tensor, got "
             << func.getArgumentTypes()[i];
    if (func.getArgAttr(i, StrataDialect::getParamAttrName()) ||
        func.getArgAttr(i, StrataDialect::getInputAttrName()) ||
        func.getArgAttr(i, StrataDialect::getStateAttrName()))
      return func->emitOpError()
             << "argument #" << i
             << " cannot be both a running statistic and a parameter, "
                "state or input";
    if (others.contains(stat.getName()) || !names.insert(stat.getName()).second)
      return func->emitOpError()
             << "running statistic name '" << stat.getName()
             << "' is used twice (parameter, state and running statistic "
                "names are unique)";
  }
  return success();
}

LogicalResult StrataDialect::verifyRegionArgAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (name == getStateAttrName()) {
    if (!isa<StateAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a #strata.state";
    return func ? verifyStates(func, argIndex) : success();
  }
  if (name == getRunningStatAttrName()) {
    if (!isa<RunningStatAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' must be a #strata.running_stat";
    if (!func)
      return op->emitOpError()
             << "'" << name << "' is only valid on function arguments";
    return verifyRunningStats(func, argIndex);
  }
  if (name == getBufferAttrName()) {
    if (!isa<BufferAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a #strata.buffer";
    return success();
  }
  if (name != getParamAttrName() && name != getInputAttrName())
    return op->emitOpError()
           << "unknown strata argument attribute '" << name << "'";
  if (!func)
    return op->emitOpError()
           << "'" << name << "' is only valid on function arguments";
  Type argType = func.getArgumentTypes()[argIndex];
  if (name == getParamAttrName()) {
    if (!isa<ParamAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a #strata.param";
    auto tensor = dyn_cast<RankedTensorType>(argType);
    if (!tensor || !tensor.hasStaticShape() ||
        !isa<FloatType>(tensor.getElementType()))
      return op->emitOpError()
             << "parameter #" << argIndex
             << " must be a statically shaped float tensor, got " << argType;
    if (func.getArgAttr(argIndex, getInputAttrName()))
      return op->emitOpError() << "argument #" << argIndex
                               << " cannot be both a parameter and an input";
    return verifyUniqueParamNames(func, argIndex);
  }
  if (!isa<InputAttr>(attr.getValue()))
    return op->emitOpError() << "'" << name << "' must be a #strata.input";
  auto tensor = dyn_cast<RankedTensorType>(argType);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitOpError()
           << "input #" << argIndex
           << " must be a statically shaped tensor, got " << argType;
  if (cast<InputAttr>(attr.getValue()).getRole() == InputRole::step &&
      (tensor.getRank() != 0 || !tensor.getElementType().isInteger(32)))
    return op->emitOpError() << "input #" << argIndex
                             << " is the step counter and must be "
                                "tensor<i32>, got "
                             << argType;
  return success();
}
