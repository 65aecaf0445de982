//===- StrataAttrs.h - Strata attributes ------------------------*- C++ -*-===//

#ifndef STRATA_DIALECT_STRATA_STRATAATTRS_H
#define STRATA_DIALECT_STRATA_STRATAATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "strata-rt/ActivationFormat.h"

#include "strata/Dialect/Strata/StrataEnums.h.inc"

namespace mlir::strata::detail {
/// Prints a double so that it parses back to the same value.
void printDouble(AsmPrinter &printer, const llvm::APFloat &value);
} // namespace mlir::strata::detail

#define GET_ATTRDEF_CLASSES
#include "strata/Dialect/Strata/StrataAttrs.h.inc"

#endif // STRATA_DIALECT_STRATA_STRATAATTRS_H
