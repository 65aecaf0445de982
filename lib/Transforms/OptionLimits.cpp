//===- OptionLimits.cpp - Documented bounds of pass options ---------------===//

#include "strata/Transforms/OptionLimits.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

LogicalResult mlir::strata::checkOptionRange(Location loc, StringRef pass,
                                             StringRef option, int64_t value,
                                             int64_t min, int64_t max) {
  if (value < min)
    return emitError(loc) << "--" << pass << " needs " << option
                          << " >= " << min << ", got " << value;
  if (value > max)
    return emitError(loc) << "--" << pass << " needs " << option
                          << " <= " << max << " (its documented bound), got "
                          << value;
  return success();
}
