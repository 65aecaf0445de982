//===- StrataAutodiff.cpp - Reverse-mode rules of the forward ops ---------===//
//
// AutodiffOpInterface for every forward op: the backward rule (which ops
// compute the operand gradients) and the forward values that rule reads.
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::strata;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Swaps the last two dimensions of `value`.
static Value transposeLastTwo(OpBuilder &b, Location loc, Value value) {
  int64_t rank = tensorType(value).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, value, perm);
}

/// Collapses every dimension but the last: [b..., M, K] -> [b... * M, K].
static Value collapseBatch(OpBuilder &b, Location loc, Value value) {
  RankedTensorType type = tensorType(value);
  int64_t last = type.getShape().back();
  auto collapsed = RankedTensorType::get({type.getNumElements() / last, last},
                                         type.getElementType());
  return ReshapeOp::create(b, loc, collapsed, value);
}

//===----------------------------------------------------------------------===//
// MatmulOp: C = op(A) op(B)
//===----------------------------------------------------------------------===//

SmallVector<Value> MatmulOp::getSavedForBackward() {
  return {getLhs(), getRhs()};
}

LogicalResult MatmulOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (hasHeadsLayout())
    return emitOpError("has a heads layout, which --strata-fuse sets after "
                       "autodiff; it has no gradient rule");
  Value dc = resultGrads[0], a = getLhs(), bm = getRhs();
  bool ta = getTransposeA(), tb = getTransposeB();
  bool broadcast = tensorType(bm).getRank() == 2 && tensorType(a).getRank() > 2;
  // The gradient products compute in the forward product's precision.
  auto matmul = [&, bf16 = getBf16()](Value lhs, Value rhs, bool transA,
                                      bool transB) -> Value {
    auto product = MatmulOp::create(b, loc, lhs, rhs, transA, transB);
    product.setBf16(bf16);
    return product.getResult();
  };

  // dA: op(A) gradient is dC op(B)^T, transposed back when A was transposed.
  Value da;
  if (!ta) {
    da = matmul(dc, bm, /*transpose_a=*/false,
                /*transpose_b=*/!tb);
  } else if (!broadcast) {
    // A^T gradient is dC op(B)^T, so A's is op(B) dC^T.
    da = matmul(bm, dc, /*transpose_a=*/tb,
                /*transpose_b=*/true);
  } else {
    // A rank-2 B cannot stand on the left of a batched product: transpose
    // dC op(B)^T instead.
    da = transposeLastTwo(b, loc,
                          matmul(dc, bm,
                                 /*transpose_a=*/false,
                                 /*transpose_b=*/!tb));
  }

  // dB: op(B) gradient is op(A)^T dC.
  Value db;
  if (!broadcast) {
    db = tb ? matmul(dc, a, /*transpose_a=*/true,
                     /*transpose_b=*/ta)
            : matmul(a, dc, /*transpose_a=*/!ta,
                     /*transpose_b=*/false);
  } else {
    // The same B multiplies every batch element: sum over the batch by
    // collapsing it into the rows of one product.
    Value opA = ta ? transposeLastTwo(b, loc, a) : a;
    Value a2 = collapseBatch(b, loc, opA);
    Value dc2 = collapseBatch(b, loc, dc);
    db = tb ? matmul(dc2, a2, /*transpose_a=*/true,
                     /*transpose_b=*/false)
            : matmul(a2, dc2, /*transpose_a=*/true,
                     /*transpose_b=*/false);
  }
  operandGrads.append({da, db});
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise and normalisation ops
//===----------------------------------------------------------------------===//

SmallVector<Value> BiasAddOp::getSavedForBackward() { return {}; }

LogicalResult BiasAddOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Value db = BiasAddGradOp::create(b, getLoc(), getBias().getType(), dy,
                                   getAxisAttr());
  operandGrads.append({dy, db});
  return success();
}

SmallVector<Value> ScaleOp::getSavedForBackward() { return {}; }

LogicalResult ScaleOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ScaleOp::create(b, getLoc(), resultGrads[0], getFactorAttr()));
  return success();
}

SmallVector<Value> AddOp::getSavedForBackward() { return {}; }

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append({resultGrads[0], resultGrads[0]});
  return success();
}

SmallVector<Value> ReluOp::getSavedForBackward() { return {getInput()}; }

LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReluGradOp::create(b, getLoc(), resultGrads[0], getInput()));
  return success();
}

SmallVector<Value> GeluOp::getSavedForBackward() { return {getInput()}; }

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      GeluGradOp::create(b, getLoc(), resultGrads[0], getInput()));
  return success();
}

SmallVector<Value> SoftmaxOp::getSavedForBackward() { return {getResult()}; }

bool SoftmaxOp::amplifiesSavedError(Value saved) {
  return saved == getResult();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SoftmaxGradOp::create(b, getLoc(), resultGrads[0],
                                               getResult(), getScaleAttr()));
  return success();
}

SmallVector<Value> LayerNormOp::getSavedForBackward() {
  return {getInput(), getGamma()};
}

bool LayerNormOp::amplifiesSavedError(Value saved) {
  return saved == getInput();
}

LogicalResult
LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  auto grads = LayerNormGradOp::create(b, getLoc(), resultGrads[0], getInput(),
                                       getGamma(), getEpsilonAttr());
  operandGrads.append(
      {grads.getInputGrad(), grads.getGammaGrad(), grads.getBetaGrad()});
  return success();
}

SmallVector<Value> BatchNormOp::getSavedForBackward() {
  return {getInput(), getGamma(), getSavedMean(), getSavedInvStd()};
}

bool BatchNormOp::amplifiesSavedError(Value saved) {
  return saved == getInput();
}

LogicalResult
BatchNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  // Only the normalised output carries a gradient: the batch statistics and
  // the running statistics are not differentiated (as in PyTorch).
  if (!resultGrads[0]) {
    operandGrads.append(getNumOperands(), Value());
    return success();
  }
  auto grads =
      BatchNormGradOp::create(b, getLoc(), resultGrads[0], getInput(),
                              getGamma(), getSavedMean(), getSavedInvStd());
  operandGrads.append({grads.getInputGrad(), grads.getGammaGrad(),
                       grads.getBetaGrad(), Value(), Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

SmallVector<Value> EmbeddingOp::getSavedForBackward() { return {getIndices()}; }

LogicalResult
EmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dt = EmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                     resultGrads[0], getIndices());
  operandGrads.append({dt, Value()});
  return success();
}

SmallVector<Value> PositionEmbeddingOp::getSavedForBackward() { return {}; }

LogicalResult
PositionEmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Value dt =
      PositionEmbeddingGradOp::create(b, getLoc(), getTable().getType(), dy);
  operandGrads.append({dy, dt});
  return success();
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

SmallVector<Value> ReshapeOp::getSavedForBackward() { return {}; }

LogicalResult ReshapeOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

SmallVector<Value> FlattenOp::getSavedForBackward() { return {}; }

LogicalResult FlattenOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

SmallVector<Value> TransposeOp::getSavedForBackward() { return {}; }

LogicalResult
TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads.push_back(
      TransposeOp::create(b, getLoc(), resultGrads[0], inverse));
  return success();
}

SmallVector<Value> SliceOp::getSavedForBackward() { return {}; }

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SliceGradOp::create(b, getLoc(), getInput().getType(),
                                             resultGrads[0], getAxisAttr(),
                                             getOffsetAttr()));
  return success();
}

SmallVector<Value> ConcatOp::getSavedForBackward() { return {}; }

LogicalResult ConcatOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  // Each input's gradient is its range of the result's.
  int64_t axis = getAxis(), offset = 0;
  for (Value input : getInputs()) {
    int64_t size = tensorType(input).getDimSize(axis);
    operandGrads.push_back(
        SliceOp::create(b, getLoc(), resultGrads[0], axis, offset, size));
    offset += size;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutional ops
//===----------------------------------------------------------------------===//

SmallVector<Value> Conv2DOp::getSavedForBackward() {
  return {getInput(), getFilter()};
}

LogicalResult Conv2DOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  // The gradient products compute in the forward product's precision.
  auto dx = Conv2DGradInputOp::create(b, getLoc(), getInput().getType(), dy,
                                      getFilter(), getStridesAttr(),
                                      getPaddingAttr());
  auto dw = Conv2DGradFilterOp::create(b, getLoc(), getFilter().getType(), dy,
                                       getInput(), getStridesAttr(),
                                       getPaddingAttr());
  dx.setBf16(getBf16());
  dw.setBf16(getBf16());
  operandGrads.append({dx.getResult(), dw.getResult()});
  return success();
}

SmallVector<Value> MaxPool2DOp::getSavedForBackward() { return {getInput()}; }

LogicalResult
MaxPool2DOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MaxPool2DGradOp::create(
      b, getLoc(), getInput().getType(), resultGrads[0], getInput(),
      getKernelAttr(), getStridesAttr(), getPaddingAttr()));
  return success();
}

SmallVector<Value> GlobalAvgPoolOp::getSavedForBackward() { return {}; }

LogicalResult
GlobalAvgPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GlobalAvgPoolGradOp::create(
      b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

SmallVector<Value> SoftmaxCrossEntropyOp::getSavedForBackward() {
  return {getLogits(), getLabels()};
}

LogicalResult
SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dl = SoftmaxCrossEntropyGradOp::create(
      b, getLoc(), getLogits().getType(), getLogits(), getLabels(),
      resultGrads[0]);
  operandGrads.append({dl, Value()});
  return success();
}

SmallVector<Value> MseLossOp::getSavedForBackward() {
  return {getInput(), getTarget()};
}

LogicalResult MseLossOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dx = MseLossGradOp::create(b, getLoc(), getInput().getType(),
                                   getInput(), getTarget(), resultGrads[0]);
  // The target is data: no gradient flows into it.
  operandGrads.append({dx, Value()});
  return success();
}
