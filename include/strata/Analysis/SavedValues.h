//===- SavedValues.h - Activations kept for the backward pass ---*- C++ -*-===//
//
// The forward values a training step must keep alive until its backward pass:
// exactly the values the forward ops' AutodiffOpInterface names in
// getSavedForBackward. Checkpointing, swapping, recomputation and compression
// act on these.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_SAVEDVALUES_H
#define STRATA_ANALYSIS_SAVEDVALUES_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::strata {

class SavedValues {
public:
  /// Analyses the forward ops (those without `strata.phase`) of `func`.
  explicit SavedValues(Operation *func);

  /// Saved op results (activations), in program order.
  ArrayRef<Value> getActivations() const { return activations.getArrayRef(); }
  /// Saved function arguments (parameters and inputs the backward reads),
  /// and results that update them in place (a pipeline's newer weight
  /// versions).
  ArrayRef<Value> getArguments() const { return arguments.getArrayRef(); }
  bool isSaved(Value value) const {
    return activations.contains(value) || arguments.contains(value);
  }
  /// Total bytes of the saved activations.
  int64_t getActivationBytes() const { return activationBytes; }

private:
  llvm::SetVector<Value> activations;
  llvm::SetVector<Value> arguments;
  int64_t activationBytes = 0;
};

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_SAVEDVALUES_H
