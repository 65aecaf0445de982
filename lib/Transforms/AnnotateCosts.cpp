//===- AnnotateCosts.cpp - Attach analytic costs for a target -------------===//

#include "strata/Analysis/CostModel.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/Passes.h"
#include "strata/Transforms/TargetResolution.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::strata {
#define GEN_PASS_DEF_ANNOTATECOSTSPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {
struct AnnotateCostsPass
    : public strata::impl::AnnotateCostsPassBase<AnnotateCostsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (targetName.empty()) {
      // Reported at the module's location without printing the module.
      emitError(module.getLoc()) << "--strata-annotate-costs needs a target "
                                    "(target=NAME or target=FILE.json)";
      return signalPassFailure();
    }
    FailureOr<TargetDescription> target =
        loadTarget(targetName, [&] { return emitError(module.getLoc()); });
    if (failed(target))
      return signalPassFailure();

    MLIRContext *context = &getContext();
    module->setAttr(StrataDialect::getTargetAttrName(),
                    StringAttr::get(context, target->name));
    module.walk([&](FunctionOpInterface func) {
      if (func.isExternal())
        return;
      CostModel model(func, *target);
      for (Operation *op : model.getCostedOps()) {
        const OpCost &cost = model.getOpCost(op);
        op->setAttr(StrataDialect::getCostAttrName(),
                    CostAttr::get(context, cost.flops, cost.bytesRead,
                                  cost.bytesWritten,
                                  llvm::APFloat(cost.seconds)));
      }
      SmallVector<Attribute> layers;
      for (const LayerCost &layer : model.getLayerCosts())
        layers.push_back(layer.toAttr(context));
      func->setAttr(StrataDialect::getLayerCostsAttrName(),
                    ArrayAttr::get(context, layers));
    });
  }
};
} // namespace
