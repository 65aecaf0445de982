//===- CostModel.h - Per-op and per-layer costs -----------------*- C++ -*-===//
//
// A plain analysis over one function: the cost of every op implementing
// CostOpInterface on a target, aggregated per model layer.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_COSTMODEL_H
#define STRATA_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
class FunctionOpInterface;
namespace strata {
struct TargetDescription;
class LayerCostAttr;

/// Cost of one execution of one op.
struct OpCost {
  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  double seconds = 0;
};

/// Costs of one model layer. `layer` is -1 for ops that carry no layer.
struct LayerCost {
  int64_t layer = -1;
  int64_t ops = 0;
  int64_t flops = 0;
  int64_t bytes = 0;
  double seconds = 0;
  int64_t paramBytes = 0;
  int64_t activationBytes = 0;

  LayerCostAttr toAttr(MLIRContext *context) const;
  static LayerCost fromAttr(LayerCostAttr attr);
};

/// Costs of a function's ops on a target, grouped by layer.
class CostModel {
public:
  CostModel(Operation *func, const TargetDescription &target);

  /// Cost of `op`, which must implement CostOpInterface and lie in the
  /// function.
  const OpCost &getOpCost(Operation *op) const { return opCosts.at(op); }
  /// Ops with a cost, in program order.
  ArrayRef<Operation *> getCostedOps() const { return costedOps; }
  /// Layers in ascending order (the unassigned layer -1 first if present).
  ArrayRef<LayerCost> getLayerCosts() const { return layers; }

private:
  SmallVector<Operation *> costedOps;
  llvm::DenseMap<Operation *, OpCost> opCosts;
  SmallVector<LayerCost> layers;
};

} // namespace strata
} // namespace mlir

#endif // STRATA_ANALYSIS_COSTMODEL_H
