//===- Autodiff.cpp - Forward graph + loss -> training step ---------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::strata {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Records the ops a builder creates so their layer and phase can be set.
struct CreatedOps : public OpBuilder::Listener {
  SmallVector<Operation *> ops;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
  /// Tags every op created since the last call and forgets them.
  void tag(std::optional<int64_t> layer, Phase phase) {
    for (Operation *op : ops) {
      if (layer)
        setLayer(op, *layer);
      op->setAttr(StrataDialect::getPhaseAttrName(),
                  PhaseAttr::get(op->getContext(), phase));
    }
    ops.clear();
  }
};

struct OptimizerConfig {
  OptimizerKind kind;
  double lr, momentum, beta1, beta2, epsilon, weightDecay;
};

/// Differentiates `func` in place into a training step.
class TrainStepBuilder {
public:
  TrainStepBuilder(func::FuncOp func, const OptimizerConfig &config)
      : func(func), config(config), builder(func.getContext()) {
    builder.setListener(&created);
  }

  LogicalResult run();

private:
  LogicalResult differentiate(Value loss);
  void addGradient(Value value, Value grad, std::optional<int64_t> layer);
  Value addArgument(Type type, NamedAttribute attr, Location loc);
  /// Gives the function its final type and argument attributes.
  void finishSignature(TypeRange results);

  func::FuncOp func;
  /// Attributes of the arguments addArgument appended, set at the end in
  /// one update (one by one, each insertion rebuilt the function type and
  /// the array of every argument's attributes: quadratic).
  SmallVector<DictionaryAttr> appendedArgAttrs;
  OptimizerConfig config;
  OpBuilder builder;
  CreatedOps created;
  DenseMap<Value, Value> grads;
};

} // namespace

void TrainStepBuilder::addGradient(Value value, Value grad,
                                   std::optional<int64_t> layer) {
  auto [it, inserted] = grads.try_emplace(value, grad);
  if (inserted)
    return;
  it->second = AddOp::create(builder, grad.getLoc(), it->second, grad);
  created.tag(layer, Phase::backward);
}

LogicalResult TrainStepBuilder::differentiate(Value loss) {
  Block &body = func.getBody().front();
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);

  std::optional<int64_t> lossLayer =
      loss.getDefiningOp() ? getLayer(loss.getDefiningOp()) : std::nullopt;
  grads[loss] = FillOp::create(builder, loss.getLoc(), loss.getType(),
                               builder.getF64FloatAttr(1.0));
  created.tag(lossLayer, Phase::backward);

  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value result : op->getResults()) {
      resultGrads.push_back(grads.lookup(result));
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any)
      continue;
    auto diff = dyn_cast<AutodiffOpInterface>(op);
    if (!diff)
      return op->emitOpError()
             << "cannot be differentiated: it does not implement "
                "AutodiffOpInterface";
    SmallVector<Value> operandGrads;
    if (failed(diff.buildGradients(builder, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError()
             << "backward rule returned " << operandGrads.size()
             << " gradients for " << op->getNumOperands() << " operands";
    std::optional<int64_t> layer = getLayer(op);
    created.tag(layer, Phase::backward);
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad)
        addGradient(operand, grad, layer);
  }
  return success();
}

Value TrainStepBuilder::addArgument(Type type, NamedAttribute attr,
                                    Location loc) {
  appendedArgAttrs.push_back(DictionaryAttr::get(func.getContext(), {attr}));
  return func.getBody().front().addArgument(type, loc);
}

void TrainStepBuilder::finishSignature(TypeRange results) {
  MLIRContext *context = func.getContext();
  Block &body = func.getBody().front();
  unsigned original = body.getNumArguments() - appendedArgAttrs.size();
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < original; ++i) {
    DictionaryAttr attrs = func.getArgAttrDict(i);
    argAttrs.push_back(attrs ? attrs : DictionaryAttr::get(context));
  }
  argAttrs.append(appendedArgAttrs);
  func.setType(FunctionType::get(context, body.getArgumentTypes(), results));
  func.setAllArgAttrs(argAttrs);
  appendedArgAttrs.clear();
}

LogicalResult TrainStepBuilder::run() {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  MLIRContext *context = func.getContext();
  auto lossType = RankedTensorType::get({}, Float32Type::get(context));
  if (ret.getNumOperands() != 1 || ret.getOperand(0).getType() != lossType)
    return func.emitOpError()
           << "must return exactly one scalar f32 loss to be differentiated";

  // Parameters, in argument order.
  SmallVector<std::pair<BlockArgument, ParamAttr>> params;
  for (BlockArgument arg : func.getArguments())
    if (auto param = func.getArgAttrOfType<ParamAttr>(
            arg.getArgNumber(), StrataDialect::getParamAttrName()))
      params.push_back({arg, param});
  if (params.empty())
    return func.emitOpError() << "has no parameters (strata.param) to train";

  builder.setInsertionPoint(ret);
  Value loss = ret.getOperand(0);
  if (failed(differentiate(loss)))
    return failure();

  // Optimizer state and the step counter become arguments.
  Location loc = func.getLoc();
  Value step;
  if (config.kind != OptimizerKind::sgd)
    step = addArgument(
        RankedTensorType::get({}, builder.getI32Type()),
        builder.getNamedAttr(StrataDialect::getInputAttrName(),
                             InputAttr::get(context, "step", InputRole::step)),
        loc);
  auto stateArg = [&](ParamAttr param, Type type, StringRef suffix) {
    std::string name = (param.getName() + "." + suffix).str();
    return addArgument(
        type,
        builder.getNamedAttr(StrataDialect::getStateAttrName(),
                             StateAttr::get(context, name, param.getName())),
        NameLoc::get(builder.getStringAttr(name)));
  };

  SmallVector<Value> newParams, newStates;
  for (auto [arg, param] : params) {
    Type type = arg.getType();
    Value grad = grads.lookup(arg);
    if (!grad) {
      // The loss does not depend on this parameter: its gradient is zero.
      grad = FillOp::create(builder, arg.getLoc(), type,
                            builder.getF64FloatAttr(0.0));
      created.tag(param.getLayer(), Phase::backward);
    }
    if (config.kind == OptimizerKind::sgd) {
      Value velocity = stateArg(param, type, "velocity");
      auto update =
          SgdUpdateOp::create(builder, arg.getLoc(), type, type, arg, grad,
                              velocity, builder.getF64FloatAttr(config.lr),
                              builder.getF64FloatAttr(config.momentum),
                              builder.getF64FloatAttr(config.weightDecay),
                              /*multi_tensor=*/IntegerAttr());
      newParams.push_back(update.getNewParam());
      newStates.push_back(update.getNewVelocity());
    } else {
      Value m = stateArg(param, type, "m");
      Value v = stateArg(param, type, "v");
      auto update = AdamUpdateOp::create(
          builder, arg.getLoc(), type, type, type, arg, grad, m, v, step,
          builder.getF64FloatAttr(config.lr),
          builder.getF64FloatAttr(config.beta1),
          builder.getF64FloatAttr(config.beta2),
          builder.getF64FloatAttr(config.epsilon),
          builder.getF64FloatAttr(config.weightDecay),
          config.kind == OptimizerKind::adamw ? builder.getUnitAttr()
                                              : UnitAttr(),
          /*update=*/IntegerAttr(), /*updates=*/IntegerAttr(),
          /*multi_tensor=*/IntegerAttr());
      newParams.push_back(update.getNewParam());
      newStates.append({update.getNewM(), update.getNewV()});
    }
    created.tag(param.getLayer(), Phase::update);
  }

  SmallVector<Value> results(newParams);
  results.append(newStates);
  results.push_back(loss);
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  finishSignature(ValueRange(results).getTypes());
  func->setAttr(StrataDialect::getTrainStepAttrName(), UnitAttr::get(context));

  // Backward rules compute every operand's gradient; drop the ones nothing
  // uses (gradients of data inputs, say).
  Block &body = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (op.hasAttr(StrataDialect::getPhaseAttrName()) && op.use_empty() &&
        isMemoryEffectFree(&op))
      op.erase();
  return success();
}

namespace {
struct AutodiffPass : public strata::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    OptimizerConfig config{optimizer, lr,      momentum,   beta1,
                           beta2,     epsilon, weightDecay};
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() &&
          !func->hasAttr(StrataDialect::getTrainStepAttrName()))
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(TrainStepBuilder(func, config).run()))
        return signalPassFailure();
  }
};
} // namespace
