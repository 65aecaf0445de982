//===- ModelBuilder.h - Shared helper of the model generators ---*- C++ -*-===//

#ifndef STRATA_LIB_MODELS_MODELBUILDER_H
#define STRATA_LIB_MODELS_MODELBUILDER_H

#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::strata {

/// Builds one model function. Arguments are added as they are needed, ops are
/// created inside the current layer (`beginLayer`), and `finish` fixes the
/// function type, argument attributes and layer names.
class ModelBuilder {
public:
  ModelBuilder(MLIRContext *context, StringRef funcName, bool bf16);

  /// Starts layer `name`; later ops and parameters belong to it.
  void beginLayer(StringRef name);
  int64_t currentLayer() const { return layer; }

  /// A trainable parameter of the current layer.
  Value param(StringRef name, ArrayRef<int64_t> shape, InitKind init,
              double scale = 1.0);
  /// A running statistic (batch norm's running mean or variance) of the
  /// current layer, starting at `init` (zeros or ones).
  Value runningStat(StringRef name, ArrayRef<int64_t> shape, InitKind init);
  /// A data input (features or labels).
  Value input(StringRef name, ArrayRef<int64_t> shape, Type elementType,
              InputRole role);

  /// Creates an op in the current layer, at a location naming it.
  template <typename OpTy, typename... Args>
  OpTy create(StringRef what, Args &&...args) {
    OpTy op = OpTy::create(builder, loc(what), std::forward<Args>(args)...);
    setLayer(op, layer);
    return op;
  }

  /// Returns the loss and the module.
  OwningOpRef<ModuleOp> finish(Value loss);

  Type floatType() const { return elementType; }
  OpBuilder &getBuilder() { return builder; }
  Location loc(StringRef what);

private:
  MLIRContext *context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  Block *body;
  Type elementType;
  int64_t layer = -1;
  SmallVector<std::string> layerNames;
  SmallVector<NamedAttribute> argAttrs;
};

/// `prefix.suffix`, or whichever of the two is not empty.
std::string joinName(StringRef prefix, StringRef suffix);

// Common layer pieces.
/// `x · W + b` (with W of shape [in, out]), the linear layer; its parameters
/// are `name.weight` and `name.bias` within the current layer.
Value linear(ModelBuilder &b, StringRef name, Value x, int64_t out,
             InitKind init, double scale);

} // namespace mlir::strata

#endif // STRATA_LIB_MODELS_MODELBUILDER_H
