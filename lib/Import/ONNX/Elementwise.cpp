//===- Elementwise.cpp - Decomposed element-wise functions ----------------===//
//
// Exporters write GELU as Mul/Add/Pow/Tanh (or Div/Erf) nodes and attention
// as `scores * scale`, masked by Where (or an Add of -inf) before Softmax.
// Strata has no general element-wise ops: the importer keeps such chains as
// an expression of one tensor and turns it into a Strata op where it is used
// (strata.gelu, strata.scale for a constant multiple; the scale and causal
// mask of strata.softmax), recognising the function by evaluating it at
// sample points. Add and Sub of two tensors become strata.add (Sub adds the
// second scaled by -1).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::strata;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;

double Expr::eval(double x) const {
  switch (kind) {
  case Var:
    return x;
  case Const:
    return value;
  case Add:
    return lhs->eval(x) + rhs->eval(x);
  case Sub:
    return lhs->eval(x) - rhs->eval(x);
  case Mul:
    return lhs->eval(x) * rhs->eval(x);
  case Div:
    return lhs->eval(x) / rhs->eval(x);
  case Pow:
    return std::pow(lhs->eval(x), rhs->eval(x));
  case Tanh:
    return std::tanh(lhs->eval(x));
  case Erf:
    return std::erf(lhs->eval(x));
  case Sqrt:
    return std::sqrt(lhs->eval(x));
  case Neg:
    return -lhs->eval(x);
  }
  return 0;
}

bool onnx_import::isElementwise(StringRef opType) {
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Add", "Sub", "Mul", "Div", "Pow", "Tanh", "Erf", "Sqrt", "Neg",
              "Where"},
             true)
      .Default(false);
}

/// Element-wise chains longer than this (as trees) are not followed: GELU's
/// is about 20 nodes, and evaluating a deep chain of shared operands would
/// cost exponential time.
static constexpr int64_t kMaxExprSize = 256;

static const double kSamples[] = {-4.0, -2.5, -1.0, -0.3, 0.0,
                                  0.2,  0.7,  1.5,  3.0};

/// Whether `expr` equals `f` at every sample point (relative 1e-5).
static bool matches(const Expr &expr, double (*f)(double)) {
  for (double x : kSamples) {
    double a = expr.eval(x), b = f(x);
    if (!(std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b))))
      return false;
  }
  return true;
}

static double identity(double x) { return x; }
static double geluTanh(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double geluErf(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

std::optional<double> onnx_import::getLinearScale(const Expr &expr) {
  double scale = expr.eval(1.0);
  for (double x : kSamples)
    if (!(std::abs(expr.eval(x) - scale * x) <=
          1e-6 * std::max(1.0, std::abs(scale * x))))
      return std::nullopt;
  return scale;
}

FailureOr<Value> onnx_import::materializeExpr(Importer &im, Slot &slot,
                                              StringRef name) {
  if (slot.causal)
    return im.fail("the causally masked tensor '" + name +
                   "' must feed a Softmax over its last axis");
  if (matches(*slot.expr, identity))
    return slot.base;
  // A constant multiple (Mul by a scalar, Neg): strata.scale.
  if (std::optional<double> scale = getLinearScale(*slot.expr))
    return im
        .create<ScaleOp>(slot.base, im.getBuilder().getF64FloatAttr(*scale))
        .getResult();
  bool exact = matches(*slot.expr, geluTanh);
  if (!exact && !matches(*slot.expr, geluErf))
    return im.fail("the element-wise function computing '" + name +
                   "' has no Strata op (supported: GELU, and a constant "
                   "multiple of a tensor)");
  if (!exact)
    emitWarning(im.getLoc())
        << "GELU in erf form computing '" << name
        << "' becomes strata.gelu, the tanh approximation (they differ by up "
           "to 4.8e-4)";
  return im.create<GeluOp>(slot.base).getResult();
}

static ExprRef makeConst(double v) {
  auto e = std::make_shared<Expr>();
  e->kind = Expr::Const;
  e->value = v;
  return e;
}

/// Operand `index` as an expression over `base` (set by the first tensor
/// operand); null when it is neither a scalar constant nor a function of the
/// same tensor.
static ExprRef getOperandExpr(Importer &im, unsigned index, Value &base) {
  const HostTensor *c = im.getConstant(index);
  if (c && !im.isParameter(index))
    return c->numel() == 1 && c->isFloat ? makeConst(c->data[0]) : nullptr;
  Slot &slot = im.getSlot(index);
  if (slot.causal || !slot.transposeOf.empty() || slot.isInitializer)
    return nullptr;
  Value v = slot.expr ? slot.base : slot.value;
  if (!v || (base && base != v))
    return nullptr;
  base = v;
  return slot.expr ? slot.expr : std::make_shared<Expr>();
}

/// The node as a pending expression; false when its operands do not form
/// one (two different tensors, or non-scalar constants).
static bool tryExpression(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  Expr::Kind kind = llvm::StringSwitch<Expr::Kind>(n.op_type())
                        .Case("Add", Expr::Add)
                        .Case("Sub", Expr::Sub)
                        .Case("Mul", Expr::Mul)
                        .Case("Div", Expr::Div)
                        .Case("Pow", Expr::Pow)
                        .Case("Tanh", Expr::Tanh)
                        .Case("Erf", Expr::Erf)
                        .Case("Sqrt", Expr::Sqrt)
                        .Default(Expr::Neg);
  bool unary = kind >= Expr::Tanh;
  Value base;
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->lhs = getOperandExpr(im, 0, base);
  if (!unary)
    e->rhs = n.input_size() > 1 ? getOperandExpr(im, 1, base) : nullptr;
  if (!base || !e->lhs || (!unary && !e->rhs))
    return false;
  e->size = 1 + e->lhs->size + (e->rhs ? e->rhs->size : 0);
  if (e->size > kMaxExprSize)
    return false; // reported as unsupported, never evaluated
  Slot slot;
  slot.base = base;
  slot.expr = e;
  im.setSlot(0, std::move(slot));
  return true;
}

/// Whether `mask` (broadcast to [..., S, S], leading dimensions 1) marks
/// exactly the entries (i, j) with j > i, the future of a causal decoder;
/// `masked(v)` says whether a mask value masks its entry.
static bool isCausalMask(const HostTensor &mask, int64_t s,
                         function_ref<bool(double)> masked) {
  ArrayRef<int64_t> shape = mask.shape;
  if (shape.size() < 2 || shape[shape.size() - 1] != s ||
      shape[shape.size() - 2] != s || mask.numel() != s * s)
    return false;
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j)
      if (masked(mask.data[i * s + j]) != (j > i))
        return false;
  return true;
}

/// `scores` with the causal mask applied (a Where or an Add of -inf): the
/// slot that Softmax turns into `strata.softmax causal`.
static LogicalResult setCausal(Importer &im, unsigned scoresIndex) {
  Slot slot = im.getSlot(scoresIndex);
  if (!slot.expr) {
    FailureOr<Value> v = im.getValue(scoresIndex);
    if (failed(v))
      return failure();
    slot = Slot();
    slot.base = *v;
    slot.expr = std::make_shared<Expr>();
  }
  slot.value = Value();
  slot.causal = true;
  im.setSlot(0, std::move(slot));
  return success();
}

static int64_t getLastDim(Importer &im, unsigned index) {
  Slot &slot = im.getSlot(index);
  Value v = slot.expr ? slot.base : slot.value;
  if (!v)
    return -1;
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 2) != type.getDimSize(rank - 1))
    return -1;
  return type.getDimSize(rank - 1);
}

/// Where(cond, fill, scores) or Where(cond, scores, fill) with a constant
/// causal `cond` and a fill of -inf (or below -1e4).
static LogicalResult convertWhere(Importer &im) {
  const HostTensor *cond = im.getConstant(0);
  const HostTensor *a = im.getConstant(1), *b = im.getConstant(2);
  bool fillFirst = a && !im.isParameter(1);
  const HostTensor *fill = fillFirst ? a : b;
  unsigned scores = fillFirst ? 2 : 1;
  if (!cond || !fill || fill->numel() != 1 || !(fill->data[0] <= -1e4))
    return im.fail("only a causal mask (a constant condition and a fill of "
                   "-inf) is supported");
  int64_t s = getLastDim(im, scores);
  auto masked = [&](double v) { return (v != 0) == fillFirst; };
  if (s < 0 || !isCausalMask(*cond, s, masked))
    return im.fail("the condition is not a causal (lower-triangular) mask "
                   "over the last two dimensions");
  return setCausal(im, scores);
}

/// Add of a constant 0 / -inf upper-triangular mask.
static std::optional<LogicalResult> tryMaskAdd(Importer &im) {
  for (unsigned i = 0; i < 2; ++i) {
    const HostTensor *mask = im.getConstant(i);
    if (!mask || im.isParameter(i) || mask->numel() <= 1)
      continue;
    int64_t s = getLastDim(im, 1 - i);
    auto masked = [](double v) { return v <= -1e4; };
    if (s < 0 || !isCausalMask(*mask, s, masked))
      return im.fail("adding a constant tensor is supported only for a "
                     "causal mask (0 on and below the diagonal, -inf above)");
    return setCausal(im, 1 - i);
  }
  return std::nullopt;
}

LogicalResult onnx_import::convertElementwise(Importer &im) {
  StringRef op = im.getNode().op_type();
  if (std::optional<LogicalResult> r = tryLayerNormStep(im))
    return *r;
  if (op == "Where")
    return convertWhere(im);
  if (op == "Add")
    if (std::optional<LogicalResult> r = tryMaskAdd(im))
      return *r;
  if (tryExpression(im))
    return success();
  if (op == "Add")
    return convertTensorAdd(im);
  if (op == "Sub")
    return convertTensorSub(im);
  if (op == "Mul" || op == "Div")
    return im.fail(
        op + " of two tensors ('" + im.getNode().input(0) + "' and '" +
        (im.getNode().input_size() > 1 ? im.getNode().input(1) : "") +
        "') has no Strata op: element-wise, Strata adds and subtracts "
        "tensors and multiplies a tensor by a constant (products of tensors "
        "are matmuls)");
  return im.fail("only element-wise functions of one tensor with scalar "
                 "constants are supported (GELU, scaling)");
}
