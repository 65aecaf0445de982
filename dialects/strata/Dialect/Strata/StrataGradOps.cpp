//===- StrataGradOps.cpp - Backward, optimizer and utility ops ------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Target/TargetDescription.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::strata;

static int64_t numElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Checks `a` and `b` have the same element type.
static LogicalResult verifySameElementType(Operation *op, Value a, Value b,
                                           StringRef aName, StringRef bName) {
  if (tensorType(a).getElementType() == tensorType(b).getElementType())
    return success();
  return op->emitOpError() << aName << " and " << bName
                           << " must have the same element type";
}

/// Forward output size of a sliding window.
static int64_t windowOutput(int64_t size, int64_t window, int64_t stride,
                            int64_t pad) {
  return (size + 2 * pad - window) / stride + 1;
}

/// Checks window attributes and that `out` is the forward output of a window
/// `window` over `in` (spatial dims 2 and 3 of NCHW shapes).
static LogicalResult verifyWindowShapes(Operation *op, ArrayRef<int64_t> in,
                                        ArrayRef<int64_t> out,
                                        ArrayRef<int64_t> window,
                                        ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> padding) {
  for (int i = 0; i < 2; ++i) {
    if (window[i] <= 0 || strides[i] <= 0 || padding[i] < 0)
      return op->emitOpError("window sizes and strides must be positive and "
                             "padding non-negative");
    if (in[2 + i] + 2 * padding[i] < window[i] ||
        windowOutput(in[2 + i], window[i], strides[i], padding[i]) !=
            out[2 + i])
      return op->emitOpError("spatial size ")
             << out[2 + i] << " of the gradient does not match the forward "
             << "output size "
             << (in[2 + i] + 2 * padding[i] < window[i]
                     ? 0
                     : windowOutput(in[2 + i], window[i], strides[i],
                                    padding[i]))
             << " (dimension " << 2 + i << ")";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// FillOp
//===----------------------------------------------------------------------===//

int64_t FillOp::getFlops() { return 0; }
int64_t FillOp::getBytesRead() { return 0; }

int64_t ScaleOp::getFlops() { return numElements(getResult()); }

LogicalResult MicroBatchOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  auto input = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!input || !input.hasStaticShape() || input.getRank() == 0)
    return emitOptionalError(loc,
                             "expects a statically shaped input of rank "
                             ">= 1, got ",
                             adaptor.getInput().getType());
  int64_t count = adaptor.getCount(), index = adaptor.getIndex();
  int64_t rows = input.getDimSize(0);
  if (count < 1 || rows % count != 0)
    return emitOptionalError(loc, "cannot split dimension 0 of size ", rows,
                             " into ", count, " equal micro-batches");
  if (index < 0 || index >= count)
    return emitOptionalError(loc, "micro-batch index ", index,
                             " is outside [0, ", count, ")");
  SmallVector<int64_t> shape(input.getShape());
  shape[0] = rows / count;
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

int64_t MicroBatchOp::getFlops() { return 0; }
int64_t MicroBatchOp::getBytesRead() {
  return getTensorBytes(getResult().getType());
}

//===----------------------------------------------------------------------===//
// Element-wise gradients
//===----------------------------------------------------------------------===//

int64_t ReluGradOp::getFlops() { return numElements(getResult()); }
int64_t GeluGradOp::getFlops() { return 12 * numElements(getResult()); }
int64_t SoftmaxGradOp::getFlops() { return 4 * numElements(getResult()); }

LogicalResult
LayerNormGradOp::inferReturnTypes(MLIRContext *context,
                                  std::optional<Location> loc, Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  auto grad = dyn_cast<RankedTensorType>(adaptor.getGrad().getType());
  auto input = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  auto gamma = dyn_cast<RankedTensorType>(adaptor.getGamma().getType());
  if (!grad || !input || !gamma)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (grad != input)
    return emitOptionalError(loc,
                             "grad and input must have the same type, got ",
                             grad, " and ", input);
  if (input.getRank() < 1 || gamma.getRank() != 1 ||
      gamma.getDimSize(0) != input.getShape().back() ||
      gamma.getElementType() != input.getElementType())
    return emitOptionalError(loc,
                             "gamma must be 1-D of the input's last "
                             "dimension and element type, got ",
                             gamma);
  results.append({input, gamma, gamma});
  return success();
}

int64_t LayerNormGradOp::getFlops() { return 12 * numElements(getInput()); }

LogicalResult
BatchNormGradOp::inferReturnTypes(MLIRContext *context,
                                  std::optional<Location> loc, Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  auto grad = dyn_cast<RankedTensorType>(adaptor.getGrad().getType());
  auto input = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!grad || !input)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (grad != input)
    return emitOptionalError(loc,
                             "grad and input must have the same type, got ",
                             grad, " and ", input);
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2 ([N, C, ...])");
  int64_t channels = input.getDimSize(1);
  for (auto [value, name] : {std::pair(adaptor.getGamma(), "gamma"),
                             std::pair(adaptor.getMean(), "mean"),
                             std::pair(adaptor.getInvStd(), "inv_std")}) {
    auto vector = dyn_cast<RankedTensorType>(value.getType());
    if (!vector || vector.getRank() != 1 || vector.getDimSize(0) != channels ||
        vector.getElementType() != input.getElementType())
      return emitOptionalError(loc, name,
                               " must be 1-D of the input's channels and "
                               "element type, got ",
                               value.getType());
  }
  auto gamma = cast<RankedTensorType>(adaptor.getGamma().getType());
  results.append({input, gamma, gamma});
  return success();
}

int64_t BatchNormGradOp::getFlops() { return 10 * numElements(getInput()); }

LogicalResult SliceGradOp::verify() {
  RankedTensorType grad = tensorType(getGrad()), result = getType();
  int64_t axis = static_cast<int64_t>(getAxis());
  if (grad.getRank() != result.getRank() || axis >= grad.getRank())
    return emitOpError("axis ") << axis << " must be a dimension of both "
                                << grad << " and " << result;
  for (int64_t d = 0; d < grad.getRank(); ++d)
    if (d != axis && grad.getDimSize(d) != result.getDimSize(d))
      return emitOpError("result ") << result << " must equal the gradient "
                                    << grad << " outside dimension " << axis;
  if (static_cast<int64_t>(getOffset()) >
      result.getDimSize(axis) - grad.getDimSize(axis))
    return emitOpError("range [")
           << getOffset() << ", " << getOffset() << " + "
           << grad.getDimSize(axis) << ") does not fit dimension " << axis
           << " of " << result;
  return verifySameElementType(*this, getGrad(), getResult(), "grad", "result");
}

int64_t SliceGradOp::getFlops() { return 0; }

LogicalResult BiasAddGradOp::verify() {
  RankedTensorType grad = tensorType(getGrad());
  int64_t rank = grad.getRank();
  int64_t axis = getAxis();
  if (axis < -rank || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  RankedTensorType result = getType();
  if (result.getRank() != 1 || result.getDimSize(0) != grad.getDimSize(axis))
    return emitOpError("result must be 1-D of size ")
           << grad.getDimSize(axis) << ", got " << result;
  return verifySameElementType(*this, getGrad(), getResult(), "grad", "result");
}

int64_t BiasAddGradOp::getFlops() { return numElements(getGrad()); }

//===----------------------------------------------------------------------===//
// Embedding gradients
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType result = getType();
  if (result.getRank() != 2)
    return emitOpError("result must be a 2-D table [V, H], got ") << result;
  SmallVector<int64_t> expected(tensorType(getIndices()).getShape());
  expected.push_back(result.getDimSize(1));
  if (tensorType(getGrad()).getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("grad must have the indices' shape followed by ")
           << result.getDimSize(1) << ", got " << getGrad().getType();
  return verifySameElementType(*this, getGrad(), getResult(), "grad", "result");
}

int64_t EmbeddingGradOp::getFlops() { return numElements(getGrad()); }

LogicalResult PositionEmbeddingGradOp::verify() {
  RankedTensorType grad = tensorType(getGrad());
  RankedTensorType result = getType();
  if (grad.getRank() != 3 || result.getRank() != 2 ||
      result.getDimSize(1) != grad.getDimSize(2) ||
      result.getDimSize(0) < grad.getDimSize(1))
    return emitOpError("expects grad [B, S, H] and result [P, H] with P >= S, "
                       "got ")
           << grad << " and " << result;
  return verifySameElementType(*this, getGrad(), getResult(), "grad", "result");
}

int64_t PositionEmbeddingGradOp::getFlops() { return numElements(getGrad()); }

//===----------------------------------------------------------------------===//
// Convolution gradients
//===----------------------------------------------------------------------===//

/// Checks (input, filter, output) form a valid conv2d.
static LogicalResult verifyConvShapes(Operation *op, RankedTensorType input,
                                      RankedTensorType filter,
                                      RankedTensorType output,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> padding) {
  if (input.getRank() != 4 || filter.getRank() != 4 || output.getRank() != 4)
    return op->emitOpError("expects 4-D input, filter and output gradient");
  if (input.getDimSize(0) != output.getDimSize(0) ||
      input.getDimSize(1) != filter.getDimSize(1) ||
      filter.getDimSize(0) != output.getDimSize(1))
    return op->emitOpError("batch or channel sizes do not match: input ")
           << input << ", filter " << filter << ", output gradient " << output;
  if (input.getElementType() != filter.getElementType() ||
      input.getElementType() != output.getElementType())
    return op->emitOpError("operands and result must share the element type");
  return verifyWindowShapes(op, input.getShape(), output.getShape(),
                            filter.getShape().drop_front(2), strides, padding);
}

static int64_t convFlops(RankedTensorType output, RankedTensorType filter) {
  return 2 * output.getNumElements() * filter.getDimSize(1) *
         filter.getDimSize(2) * filter.getDimSize(3);
}

LogicalResult Conv2DGradInputOp::verify() {
  return verifyConvShapes(*this, getType(), tensorType(getFilter()),
                          tensorType(getGrad()), getStrides(), getPadding());
}

int64_t Conv2DGradInputOp::getFlops() {
  return convFlops(tensorType(getGrad()), tensorType(getFilter()));
}

LogicalResult Conv2DGradFilterOp::verify() {
  return verifyConvShapes(*this, tensorType(getInput()), getType(),
                          tensorType(getGrad()), getStrides(), getPadding());
}

int64_t Conv2DGradFilterOp::getFlops() {
  return convFlops(tensorType(getGrad()), getType());
}

LogicalResult MaxPool2DGradOp::verify() {
  RankedTensorType input = tensorType(getInput());
  RankedTensorType grad = tensorType(getGrad());
  if (input.getRank() != 4 || grad.getRank() != 4 ||
      input.getDimSize(0) != grad.getDimSize(0) ||
      input.getDimSize(1) != grad.getDimSize(1))
    return emitOpError("expects NCHW input and gradient with equal N and C");
  return verifyWindowShapes(*this, input.getShape(), grad.getShape(),
                            getKernel(), getStrides(), getPadding());
}

int64_t MaxPool2DGradOp::getFlops() {
  ArrayRef<int64_t> kernel = getKernel();
  return numElements(getGrad()) * kernel[0] * kernel[1];
}

LogicalResult GlobalAvgPoolGradOp::verify() {
  RankedTensorType grad = tensorType(getGrad());
  RankedTensorType result = getType();
  if (grad.getRank() != 2 || result.getRank() != 4 ||
      result.getDimSize(0) != grad.getDimSize(0) ||
      result.getDimSize(1) != grad.getDimSize(1))
    return emitOpError("expects grad [N, C] and result [N, C, H, W], got ")
           << grad << " and " << result;
  return verifySameElementType(*this, getGrad(), getResult(), "grad", "result");
}

int64_t GlobalAvgPoolGradOp::getFlops() { return numElements(getResult()); }

//===----------------------------------------------------------------------===//
// Loss gradients
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  RankedTensorType logits = tensorType(getLogits());
  if (logits.getRank() < 2 ||
      tensorType(getLabels()).getShape() != logits.getShape().drop_back())
    return emitOpError("labels must have the logits' shape without the class "
                       "dimension");
  return success();
}

int64_t SoftmaxCrossEntropyGradOp::getFlops() {
  return 5 * numElements(getLogits());
}

LogicalResult MseLossGradOp::verify() { return success(); }
int64_t MseLossGradOp::getFlops() { return 3 * numElements(getInput()); }

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

LogicalResult SgdUpdateOp::verify() {
  double lr = getLr().convertToDouble();
  double momentum = getMomentum().convertToDouble();
  double decay = getWeightDecay().convertToDouble();
  if (!(lr >= 0.0) || !(momentum >= 0.0 && momentum < 1.0) || !(decay >= 0.0))
    return emitOpError("expects lr >= 0, 0 <= momentum < 1 and "
                       "weight_decay >= 0");
  return success();
}

Value SgdUpdateOp::getUpdatedOperand(unsigned index) {
  return index == 0 ? getParam() : getVelocity();
}

int64_t SgdUpdateOp::getFlops() { return 5 * numElements(getParam()); }

LogicalResult AdamUpdateOp::verify() {
  double lr = getLr().convertToDouble();
  double beta1 = getBeta1().convertToDouble();
  double beta2 = getBeta2().convertToDouble();
  double epsilon = getEpsilon().convertToDouble();
  double decay = getWeightDecay().convertToDouble();
  if (!(lr >= 0.0) || !(beta1 >= 0.0 && beta1 < 1.0) ||
      !(beta2 >= 0.0 && beta2 < 1.0) || !(epsilon > 0.0) || !(decay >= 0.0))
    return emitOpError("expects lr >= 0, 0 <= beta1, beta2 < 1, epsilon > 0 "
                       "and weight_decay >= 0");
  std::optional<int64_t> update = getUpdate(), updates = getUpdates();
  if (update.has_value() != updates.has_value())
    return emitOpError("expects 'update' and 'updates' together");
  // A negative update is one of the previous step's, run at the start of
  // this one (a pipeline that does not drain between steps).
  if (update && !(*updates >= 1 && *update >= -*updates && *update < *updates))
    return emitOpError() << "expects -updates <= update < updates, got update "
                         << *update << " of " << *updates;
  return success();
}

Value AdamUpdateOp::getUpdatedOperand(unsigned index) {
  Value updated[] = {getParam(), getM(), getV()};
  return updated[index];
}

int64_t AdamUpdateOp::getFlops() { return 12 * numElements(getParam()); }

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

/// Bytes one rank sends (and receives) in a ring all-reduce.
static double ringBytes(AllReduceOp op) {
  double p = static_cast<double>(op.getReplicas());
  return 2.0 * (p - 1.0) / p *
         static_cast<double>(getTensorBytes(op.getInput().getType()));
}

int64_t AllReduceOp::getFlops() {
  int64_t p = getReplicas();
  return numElements(getInput()) * (p - 1) / std::max<int64_t>(p, 1);
}
int64_t AllReduceOp::getBytesRead() {
  return static_cast<int64_t>(ringBytes(*this));
}
int64_t AllReduceOp::getBytesWritten() {
  return static_cast<int64_t>(ringBytes(*this));
}

double AllReduceOp::estimateSeconds(const TargetDescription &target) {
  int64_t p = getReplicas();
  if (p <= 1)
    return 0.0;
  const LinkDescription &link =
      p <= target.devicesPerNode ? target.intraNode : target.interNode;
  return ringBytes(*this) / link.bandwidth() +
         2.0 * static_cast<double>(p - 1) * link.latency();
}
