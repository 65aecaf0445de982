//===- StrataCost.cpp - CostOpInterface defaults --------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Target/TargetDescription.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::strata;

#include "strata/Dialect/Strata/StrataInterfaces.cpp.inc"

int64_t mlir::strata::detail::getOperandBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getOperandTypes())
    bytes += getTensorBytes(type);
  return bytes;
}

int64_t mlir::strata::detail::getResultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getResultTypes())
    bytes += getTensorBytes(type);
  return bytes;
}

/// The element type an op computes in: its first floating-point result or
/// operand (losses return f32 whatever their inputs, so operands count too),
/// or bf16 for an op computing in bf16 (MixedPrecisionOpInterface).
static std::string getComputeDType(Operation *op) {
  // A bf16 matmul or convolution computes in bf16 whatever its f32 tensors.
  if (auto mixed = dyn_cast<MixedPrecisionOpInterface>(op);
      mixed && mixed.computesInBf16())
    return "bf16";
  if (auto fused = dyn_cast<FusedMatmulOp>(op); fused && fused.getBf16())
    return "bf16";
  auto isFloatTensor = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && isa<FloatType>(tensor.getElementType());
  };
  Type chosen;
  for (Type type : op->getOperandTypes())
    if (isFloatTensor(type)) {
      chosen = type;
      break;
    }
  if (!chosen)
    for (Type type : op->getResultTypes())
      if (isFloatTensor(type)) {
        chosen = type;
        break;
      }
  if (!chosen)
    return "f32";
  std::string name;
  llvm::raw_string_ostream os(name);
  os << cast<RankedTensorType>(chosen).getElementType();
  return name;
}

double
mlir::strata::detail::getRooflineSeconds(Operation *op,
                                         const TargetDescription &target) {
  auto cost = cast<CostOpInterface>(op);
  double flopSeconds = static_cast<double>(cost.getFlops()) /
                       target.peakFlops(getComputeDType(op));
  double bytes =
      static_cast<double>(cost.getBytesRead() + cost.getBytesWritten());
  double memorySeconds = bytes / target.memoryBandwidth();
  return std::max(flopSeconds, memorySeconds);
}
