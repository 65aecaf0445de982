//===- StrataFusedOps.cpp - Ops that --strata-fuse creates ----------------===//
//
// Verifier and cost of strata.fused_matmul.
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"

using namespace mlir;
using namespace mlir::strata;

//===----------------------------------------------------------------------===//
// FusedMatmulOp
//===----------------------------------------------------------------------===//

bool FusedMatmulOp::hasBias() {
  EpilogueKind kind = getEpilogue();
  return kind == EpilogueKind::bias || kind == EpilogueKind::bias_relu ||
         kind == EpilogueKind::bias_gelu || kind == EpilogueKind::bias_residual;
}

bool FusedMatmulOp::hasResidual() {
  return getEpilogue() == EpilogueKind::residual ||
         getEpilogue() == EpilogueKind::bias_residual;
}

LogicalResult FusedMatmulOp::verify() {
  FailureOr<RankedTensorType> product =
      inferMatmulType(getLoc(), getLhs().getType(), getRhs().getType(),
                      getTransposeA(), getTransposeB());
  if (failed(product))
    return failure();
  RankedTensorType type = getResult().getType();
  if (type != *product)
    return emitOpError("result must be the product's type ")
           << *product << ", got " << type;
  StringRef name = stringifyEpilogueKind(getEpilogue());
  size_t expected = getEpilogue() == EpilogueKind::bias_residual ? 2 : 1;
  if (getEpilogueOperands().size() != expected)
    return emitOpError("epilogue ")
           << name << " takes " << expected << " epilogue operand"
           << (expected == 1 ? "" : "s") << ", got "
           << getEpilogueOperands().size();
  auto operand = cast<RankedTensorType>(getEpilogueOperands()[0].getType());
  if (hasResidual() && getEpilogueOperands().back().getType() != Type(type))
    return emitOpError("epilogue ")
           << name << " needs an addend of the result's type " << type
           << ", got " << getEpilogueOperands().back().getType();
  if (hasBias()) {
    if (operand.getRank() != 1 ||
        operand.getDimSize(0) != type.getShape().back() ||
        operand.getElementType() != type.getElementType())
      return emitOpError("epilogue ")
             << name << " needs a 1-D bias of " << type.getShape().back() << " "
             << type.getElementType() << ", got " << operand;
  } else if (operand != type) {
    return emitOpError("epilogue ")
           << name << " needs an input of the result's type " << type
           << ", got " << operand;
  }
  if (Value pre = getPreActivation()) {
    if (getEpilogue() != EpilogueKind::bias_relu &&
        getEpilogue() != EpilogueKind::bias_gelu)
      return emitOpError("epilogue ")
             << name << " has no pre-activation result";
    if (pre.getType() != type)
      return emitOpError("pre_activation must have the result's type ")
             << type << ", got " << pre.getType();
  }
  return success();
}

std::array<int64_t, 4> FusedMatmulOp::getProblemSize() {
  return getMatmulProblemSize(cast<RankedTensorType>(getLhs().getType()),
                              getResult().getType(), getTransposeA());
}

int64_t FusedMatmulOp::getFlops() {
  auto [batch, m, n, k] = getProblemSize();
  int64_t perElement = 0;
  switch (getEpilogue()) {
  case EpilogueKind::bias:
  case EpilogueKind::relu_grad:
  case EpilogueKind::residual:
    perElement = 1;
    break;
  case EpilogueKind::bias_relu:
  case EpilogueKind::bias_residual:
    perElement = 2;
    break;
  case EpilogueKind::bias_gelu:
    perElement = 9;
    break;
  case EpilogueKind::gelu_grad:
    perElement = 12;
    break;
  }
  return 2 * batch * m * n * k + perElement * batch * m * n;
}
