//===- LayerNormPattern.cpp - Layer norm decomposed by older opsets -------===//
//
// Before opset 17 exporters write nn.LayerNorm as
//   mean = ReduceMean(x, axes = [-1]); d = Sub(x, mean); v = ReduceMean(
//   Pow(d, 2)); n = Div(d, Sqrt(Add(v, eps))); y = Add(Mul(n, gamma), beta)
// The importer follows the chain step by step in the slots (Slot::norm) and
// emits strata.layer_norm at its last Add; a chain used anywhere else, or
// broken off, is an error naming the node.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "strata/Dialect/Strata/StrataOps.h"

using namespace mlir;
using namespace mlir::strata;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;

static LogicalResult setStep(Importer &im, const Slot &from, NormStep step) {
  Slot slot;
  slot.base = from.base;
  slot.norm = step;
  slot.epsilon = from.epsilon;
  slot.gamma = from.gamma;
  im.setSlot(0, std::move(slot));
  return success();
}

LogicalResult onnx_import::convertReduceMean(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  SmallVector<int64_t> axes = getIntsAttr(n, "axes");
  if (const HostTensor *a = im.getConstant(1)) // opset 18: an input
    for (double v : a->data)
      axes.push_back(toInt(v));
  Slot &in = im.getSlot(0);
  Value x = in.norm == NormStep::Squared ? in.base : in.value;
  if (!x)
    return im.fail("only the mean over the last axis in a layer norm is "
                   "supported");
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  bool lastAxis = axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
  if (!lastAxis || getIntAttr(n, "keepdims", 1) != 1)
    return im.fail("only the mean over the last axis (keepdims) of a layer "
                   "norm is supported");
  if (in.norm == NormStep::Squared)
    return setStep(im, in, NormStep::Variance);
  if (in.norm != NormStep::None)
    return im.fail("unexpected mean in a layer norm");
  Slot start;
  start.base = x;
  return setStep(im, start, NormStep::Mean);
}

/// The scalar constant input `index`, if it is one.
static std::optional<double> getScalar(Importer &im, unsigned index) {
  const HostTensor *c = im.getConstant(index);
  if (!c || im.isParameter(index) || c->numel() != 1)
    return std::nullopt;
  return c->data[0];
}

/// Mul(normalized, gamma) then Add(scaled, beta): 1-D parameters of the
/// last dimension's size.
static std::optional<Value> getAffine(Importer &im, unsigned index,
                                      const Slot &norm) {
  if (!im.isParameter(index))
    return std::nullopt;
  FailureOr<Value> v = im.getValue(index);
  int64_t h = cast<RankedTensorType>(norm.base.getType()).getShape().back();
  if (failed(v) ||
      cast<RankedTensorType>(v->getType()).getShape() != ArrayRef<int64_t>{h})
    return std::nullopt;
  return *v;
}

/// The step the current node takes from `in` (operand `index`); failure
/// when it is not the next one.
static LogicalResult takeStep(Importer &im, Slot in, unsigned index) {
  StringRef op = im.getNode().op_type();
  unsigned other = 1 - index;
  const onnx::NodeProto &n = im.getNode();
  auto sameX = [&]() {
    return n.input_size() == 2 && im.getSlot(other).value == in.base &&
           im.getSlot(other).norm == NormStep::None;
  };
  switch (in.norm) {
  case NormStep::Mean:
    if (op == "Sub" && index == 1 && sameX())
      return setStep(im, in, NormStep::Centered);
    break;
  case NormStep::Centered:
    if (op == "Pow" && index == 0 && getScalar(im, 1) == 2.0)
      return setStep(im, in, NormStep::Squared);
    if (op == "Mul" && im.getSlot(other).norm == NormStep::Centered &&
        im.getSlot(other).base == in.base)
      return setStep(im, in, NormStep::Squared);
    if (op == "Div" && index == 0 &&
        im.getSlot(1).norm == NormStep::Deviation &&
        im.getSlot(1).base == in.base) {
      in.epsilon = im.getSlot(1).epsilon;
      return setStep(im, in, NormStep::Normalized);
    }
    break;
  case NormStep::Variance:
    if (std::optional<double> eps = getScalar(im, other);
        op == "Add" && eps && *eps > 0) {
      in.epsilon = *eps;
      return setStep(im, in, NormStep::VarianceEps);
    }
    break;
  case NormStep::VarianceEps:
    if (op == "Sqrt")
      return setStep(im, in, NormStep::Deviation);
    break;
  case NormStep::Deviation:
    return success(); // consumed by the Div of the centered input
  case NormStep::Normalized:
    if (std::optional<Value> gamma = getAffine(im, other, in);
        op == "Mul" && gamma) {
      in.gamma = *gamma;
      return setStep(im, in, NormStep::Scaled);
    }
    break;
  case NormStep::Scaled:
    if (std::optional<Value> beta = getAffine(im, other, in);
        op == "Add" && beta) {
      im.setResult(0, im.create<LayerNormOp>(in.base, in.gamma, *beta,
                                             llvm::APFloat(in.epsilon))
                          .getResult());
      return success();
    }
    break;
  case NormStep::Squared:
  case NormStep::None:
    break;
  }
  return im.fail("does not continue a layer norm decomposition (mean, "
                 "subtract, square, mean, add epsilon, square root, divide, "
                 "scale, shift over the last axis)");
}

std::optional<LogicalResult> onnx_import::tryLayerNormStep(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  // The Div takes the centered input and the deviation: the centered one
  // leads.
  for (unsigned i = 0, e = std::min(n.input_size(), 2); i < e; ++i) {
    if (n.input(i).empty())
      continue;
    Slot &slot = im.getSlot(i);
    if (slot.norm == NormStep::None || slot.norm == NormStep::Deviation)
      continue;
    return takeStep(im, slot, i);
  }
  for (unsigned i = 0, e = std::min(n.input_size(), 2); i < e; ++i)
    if (!n.input(i).empty() && im.getSlot(i).norm != NormStep::None)
      return takeStep(im, im.getSlot(i), i);
  return std::nullopt;
}
