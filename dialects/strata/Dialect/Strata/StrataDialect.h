//===- StrataDialect.h - Strata dialect -------------------------*- C++ -*-===//

#ifndef STRATA_DIALECT_STRATA_STRATADIALECT_H
#define STRATA_DIALECT_STRATA_STRATADIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "strata/Dialect/Strata/StrataDialect.h.inc"

#endif // STRATA_DIALECT_STRATA_STRATADIALECT_H
