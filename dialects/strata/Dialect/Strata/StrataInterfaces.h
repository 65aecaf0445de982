//===- StrataInterfaces.h - Strata op interfaces ----------------*- C++ -*-===//

#ifndef STRATA_DIALECT_STRATA_STRATAINTERFACES_H
#define STRATA_DIALECT_STRATA_STRATAINTERFACES_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::strata {
struct TargetDescription;

namespace detail {
/// Bytes of all ranked-tensor operands of `op`.
int64_t getOperandBytes(Operation *op);
/// Bytes of all ranked-tensor results of `op`.
int64_t getResultBytes(Operation *op);
/// Roofline time of `op` (which must implement CostOpInterface) on `target`.
double getRooflineSeconds(Operation *op, const TargetDescription &target);
} // namespace detail
} // namespace mlir::strata

#include "strata/Dialect/Strata/StrataInterfaces.h.inc"

#endif // STRATA_DIALECT_STRATA_STRATAINTERFACES_H
