//===- CostModel.cpp - Per-op and per-layer costs -------------------------===//

#include "strata/Analysis/CostModel.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Target/TargetDescription.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

using namespace mlir;
using namespace mlir::strata;

LayerCostAttr LayerCost::toAttr(MLIRContext *context) const {
  return LayerCostAttr::get(context, layer, ops, flops, bytes,
                            llvm::APFloat(seconds), paramBytes,
                            activationBytes);
}

LayerCost LayerCost::fromAttr(LayerCostAttr attr) {
  LayerCost cost;
  cost.layer = attr.getLayer();
  cost.ops = attr.getOps();
  cost.flops = attr.getFlops();
  cost.bytes = attr.getBytes();
  cost.seconds = attr.getSeconds().convertToDouble();
  cost.paramBytes = attr.getParamBytes();
  cost.activationBytes = attr.getActivationBytes();
  return cost;
}

CostModel::CostModel(Operation *op, const TargetDescription &target) {
  auto func = cast<FunctionOpInterface>(op);
  // std::map keeps layers sorted, so the output order is deterministic.
  std::map<int64_t, LayerCost> byLayer;
  auto layerOf = [&](Operation *user) { return getLayer(user).value_or(-1); };

  func.walk([&](CostOpInterface costOp) {
    Operation *costed = costOp.getOperation();
    OpCost cost;
    cost.flops = costOp.getFlops();
    cost.bytesRead = costOp.getBytesRead();
    cost.bytesWritten = costOp.getBytesWritten();
    cost.seconds = costOp.estimateSeconds(target);
    costedOps.push_back(costed);
    opCosts[costed] = cost;

    int64_t layer = layerOf(costed);
    LayerCost &entry = byLayer[layer];
    entry.layer = layer;
    entry.ops += 1;
    entry.flops += cost.flops;
    entry.bytes += cost.bytesRead + cost.bytesWritten;
    entry.seconds += cost.seconds;
    // An activation crosses a boundary placed after this layer when a later
    // layer consumes it.
    for (Value result : costed->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return getLayer(user) && *getLayer(user) > layer;
          }))
        entry.activationBytes += getTensorBytes(result.getType());
  });

  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    auto param =
        func.getArgAttrOfType<ParamAttr>(i, StrataDialect::getParamAttrName());
    if (!param)
      continue;
    LayerCost &entry = byLayer[param.getLayer()];
    entry.layer = param.getLayer();
    entry.paramBytes += getTensorBytes(func.getArgumentTypes()[i]);
  }

  for (auto &[layer, cost] : byLayer)
    layers.push_back(cost);
}
