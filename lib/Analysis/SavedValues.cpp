//===- SavedValues.cpp - Activations kept for the backward pass -----------===//

#include "strata/Analysis/SavedValues.h"
#include "strata/Dialect/Strata/StrataOps.h"

using namespace mlir;
using namespace mlir::strata;

SavedValues::SavedValues(Operation *func) {
  // Collect per op first, then order activations by their definition, so the
  // result does not depend on the order ops name their values.
  llvm::DenseSet<Value> saved;
  func->walk([&](AutodiffOpInterface op) {
    if (op->hasAttr(StrataDialect::getPhaseAttrName()))
      return; // Backward or update op created by autodiff.
    for (Value value : op.getSavedForBackward())
      saved.insert(value);
  });
  func->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (saved.contains(arg))
            arguments.insert(arg);
    // A result that updates a persistent buffer in place (a newer weight
    // version after a pipeline's update, a kept version) is no activation:
    // it is saved like the argument it updates.
    auto stateful = dyn_cast<StatefulOpInterface>(op);
    for (OpResult result : op->getResults()) {
      if (!saved.contains(result))
        continue;
      if (isa<InPlaceOpInterface>(op) ||
          (stateful && stateful.getUpdatedOperand(result.getResultNumber()))) {
        arguments.insert(result);
        continue;
      }
      if (activations.insert(result))
        activationBytes += getTensorBytes(result.getType());
    }
  });
}
