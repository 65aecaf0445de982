//===- Operators.cpp - One converter per ONNX operator --------------------===//
//
// Each converter maps one ONNX node onto Strata ops, or fails with a message
// naming what it does not support. Attributes that would change the result
// and that Strata has no equivalent for are refused, never ignored.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "strata/Dialect/Strata/StrataOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;
using namespace mlir::strata;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static std::string formatShape(ArrayRef<int64_t> shape) {
  return "[" +
         llvm::join(llvm::map_range(
                        shape, [](int64_t d) { return std::to_string(d); }),
                    ", ") +
         "]";
}

/// Passes input 0 through (Identity, Dropout in inference mode).
static LogicalResult convertIdentity(Importer &im) {
  if (const HostTensor *c = im.getConstant(0); c && !im.isParameter(0)) {
    im.setConstant(0, *c);
    return success();
  }
  // torch.onnx.export keeps one copy of initializers with equal values and
  // names the others through Identity: each is a parameter of its own.
  if (im.isParameter(0) && !im.getSlot(0).value) {
    Slot copy;
    copy.constant = im.getConstant(0);
    copy.isInitializer = true;
    im.setSlot(0, std::move(copy));
    return success();
  }
  FailureOr<Value> x = im.getAnyValue(0);
  if (failed(x))
    return failure();
  im.setResult(0, *x);
  return success();
}

static LogicalResult convertShape(Importer &im) {
  FailureOr<Value> x = im.getAnyValue(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  int64_t rank = shape.size();
  int64_t start = getIntAttr(im.getNode(), "start", 0);
  int64_t end = getIntAttr(im.getNode(), "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  HostTensor t;
  t.isFloat = false;
  for (int64_t i = start; i < end; ++i)
    t.data.push_back(static_cast<double>(shape[i]));
  t.shape = {t.numel()};
  im.setConstant(0, std::move(t));
  return success();
}

static LogicalResult convertGemm(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  if (getIntAttr(n, "transA", 0) != 0)
    return im.fail("transA = 1 is not supported");
  if (getFloatAttr(n, "alpha", 1.0f) != 1.0f ||
      getFloatAttr(n, "beta", 1.0f) != 1.0f)
    return im.fail("alpha and beta other than 1 are not supported");
  FailureOr<Value> a = im.getValue(0), b = im.getValue(1);
  if (failed(a) || failed(b))
    return failure();
  if (shapeOf(*a).size() != 2 || shapeOf(*b).size() != 2)
    return im.fail("operands must be rank 2, got " + formatShape(shapeOf(*a)) +
                   " and " + formatShape(shapeOf(*b)));
  bool transB = getIntAttr(n, "transB", 0) != 0;
  int64_t k = shapeOf(*a)[1], kb = shapeOf(*b)[transB ? 1 : 0];
  if (k != kb)
    return im.fail("inner dimensions differ: " + formatShape(shapeOf(*a)) +
                   " and " + formatShape(shapeOf(*b)));
  Value y =
      im.create<MatmulOp>(*a, *b, /*transpose_a=*/false, transB).getResult();
  if (n.input_size() > 2 && !n.input(2).empty()) {
    FailureOr<Value> c = im.getValue(2);
    if (failed(c))
      return failure();
    if (shapeOf(*c).size() != 1 || shapeOf(*c)[0] != shapeOf(y)[1])
      return im.fail("bias C must be 1-D of size " +
                     std::to_string(shapeOf(y)[1]) + ", got " +
                     formatShape(shapeOf(*c)));
    y = im.create<BiasAddOp>(y, *c).getResult();
  }
  im.setResult(0, y);
  return success();
}

static LogicalResult convertMatMul(Importer &im) {
  // x · Wᵀ with W an initializer (nn.Linear): W stays a parameter in its
  // state_dict layout and the product transposes it.
  bool transposeB = !im.getSlot(1).transposeOf.empty() && !im.getSlot(1).value;
  FailureOr<Value> a = im.getValue(0);
  FailureOr<Value> b =
      transposeB ? im.getParameter(im.getSlot(1).transposeOf) : im.getValue(1);
  if (failed(a) || failed(b))
    return failure();
  if (transposeB) {
    ArrayRef<int64_t> sa = shapeOf(*a), sw = shapeOf(*b);
    if (sa.size() < 2 || sa.back() != sw[1])
      return im.fail("operand shapes " + formatShape(sa) + " and transposed " +
                     formatShape(sw) + " do not match");
    im.setResult(0, im.create<MatmulOp>(*a, *b, /*transpose_a=*/false,
                                        /*transpose_b=*/true)
                        .getResult());
    return success();
  }
  ArrayRef<int64_t> sa = shapeOf(*a), sb = shapeOf(*b);
  bool shared = sb.size() == 2 && sa.size() >= 2;
  bool batched = sa.size() == sb.size() && sa.size() >= 2 &&
                 sa.drop_back(2) == sb.drop_back(2);
  if ((!shared && !batched) || sa.back() != sb[sb.size() - 2])
    return im.fail("operand shapes " + formatShape(sa) + " and " +
                   formatShape(sb) +
                   " are not supported (a rank-2 right operand, or equal "
                   "batch dimensions)");
  im.setResult(0, im.create<MatmulOp>(*a, *b).getResult());
  return success();
}

/// Where `small` broadcasts against `big` along a single axis (every other
/// dimension of `small` is 1): that axis of `big`, else -1.
static int64_t getBroadcastAxis(ArrayRef<int64_t> big,
                                ArrayRef<int64_t> small) {
  if (small.size() > big.size())
    return -1;
  int64_t skip = big.size() - small.size(), axis = -1;
  for (size_t i = 0; i < small.size(); ++i) {
    if (small[i] == 1 && big[skip + i] != 1)
      continue;
    if (small[i] != big[skip + i] || axis >= 0)
      return -1;
    axis = skip + i;
  }
  // All ones: the last axis when it has size 1, else not a bias.
  if (axis < 0 && !big.empty() && big.back() == 1)
    axis = big.size() - 1;
  return axis;
}

/// x + table[:S] for x [B, S, H] and a table [P, H] (P >= S).
static std::optional<LogicalResult> tryPositionAdd(Importer &im) {
  for (unsigned i = 0; i < 2; ++i) {
    Slot rows = im.getSlot(i);
    if (rows.rowsOf.empty())
      continue;
    FailureOr<Value> x = im.getValue(1 - i);
    FailureOr<Value> table = im.getParameter(rows.rowsOf);
    if (failed(x) || failed(table))
      return failure();
    ArrayRef<int64_t> sx = shapeOf(*x), st = shapeOf(*table);
    if (sx.size() != 3 || sx[1] != rows.rows || sx[2] != st[1])
      return im.fail("learned positions " + formatShape({rows.rows, st[1]}) +
                     " do not fit " + formatShape(sx));
    im.setResult(0, im.create<PositionEmbeddingOp>(*x, *table).getResult());
    return success();
  }
  return std::nullopt;
}

/// a + b: equal shapes, learned positions ([B, S, H] + [S, H]) or a bias
/// along one axis; sets the node's result.
static LogicalResult addValues(Importer &im, Value a, Value b) {
  ArrayRef<int64_t> sa = shapeOf(a), sb = shapeOf(b);
  if (sa == sb) {
    im.setResult(0, im.create<AddOp>(a, b).getResult());
    return success();
  }
  Value big = a, small = b;
  if (sb.size() > sa.size() ||
      (sb.size() == sa.size() && checkedNumel(sb) > checkedNumel(sa)))
    std::swap(big, small);
  // Learned positions: [B, S, H] + [S, H].
  if (shapeOf(big).size() == 3 && shapeOf(small).size() == 2 &&
      shapeOf(big).drop_front() == shapeOf(small)) {
    im.setResult(0, im.create<PositionEmbeddingOp>(big, small).getResult());
    return success();
  }
  int64_t axis = getBroadcastAxis(shapeOf(big), shapeOf(small));
  if (axis < 0)
    return im.fail("broadcasting shapes " + formatShape(sa) + " and " +
                   formatShape(sb) +
                   " is not supported (equal shapes, or a bias along one "
                   "axis)");
  int64_t size = shapeOf(big)[axis];
  if (shapeOf(small).size() != 1) {
    auto type = RankedTensorType::get({size}, im.getF32());
    small = im.create<ReshapeOp>(type, small).getResult();
  }
  int64_t rank = shapeOf(big).size();
  int64_t axisAttr = axis == rank - 1 ? -1 : axis;
  im.setResult(0, im.create<BiasAddOp>(big, small, axisAttr).getResult());
  return success();
}

LogicalResult onnx_import::convertTensorAdd(Importer &im) {
  if (std::optional<LogicalResult> r = tryPositionAdd(im))
    return *r;
  FailureOr<Value> a = im.getValue(0), b = im.getValue(1);
  if (failed(a) || failed(b))
    return failure();
  return addValues(im, *a, *b);
}

LogicalResult onnx_import::convertTensorSub(Importer &im) {
  FailureOr<Value> a = im.getValue(0), b = im.getValue(1);
  if (failed(a) || failed(b))
    return failure();
  // a - b = a + (-1 · b), exactly (negation is exact in floating point).
  Value negated =
      im.create<ScaleOp>(*b, im.getBuilder().getF64FloatAttr(-1.0)).getResult();
  return addValues(im, *a, negated);
}

static LogicalResult convertRelu(Importer &im) {
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  im.setResult(0, im.create<ReluOp>(*x).getResult());
  return success();
}

static LogicalResult convertGelu(Importer &im) {
  const onnx::AttributeProto *approx = findAttr(im.getNode(), "approximate");
  if (!approx || approx->s() != "tanh")
    return im.fail("only approximate = \"tanh\" maps to strata.gelu (the "
                   "erf form differs by up to 1e-3; export with "
                   "nn.GELU(approximate='tanh'))");
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  im.setResult(0, im.create<GeluOp>(*x).getResult());
  return success();
}

/// Softmax over the last axis; a pending `scale · x` (and causal mask) of
/// its input becomes the op's `scale` (and `causal`).
static LogicalResult convertSoftmax(Importer &im) {
  Slot &slot = im.getSlot(0);
  std::optional<double> scale = 1.0;
  bool causal = slot.causal;
  Value x = slot.expr ? slot.base : Value();
  if (slot.expr)
    scale = getLinearScale(*slot.expr);
  if (!scale && causal)
    return im.fail("the masked scores must be a scaled tensor");
  if (!x || !scale) {
    FailureOr<Value> v = im.getValue(0);
    if (failed(v))
      return failure();
    x = *v;
    scale = 1.0;
  }
  int64_t rank = shapeOf(x).size();
  int64_t axis = getIntAttr(im.getNode(), "axis", -1);
  if (axis != -1 && axis != rank - 1)
    return im.fail("only the last axis is supported, got axis " +
                   std::to_string(axis));
  im.setResult(
      0, im.create<SoftmaxOp>(x, causal, llvm::APFloat(*scale)).getResult());
  return success();
}

/// Reshape of `x` to `shape` (a view).
static Value reshapeTo(Importer &im, Value x, ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  auto type = RankedTensorType::get(shape, im.getF32());
  return im.create<ReshapeOp>(type, x).getResult();
}

static LogicalResult convertFlatten(Importer &im) {
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> s = shapeOf(*x);
  int64_t rank = s.size();
  int64_t axis = getIntAttr(im.getNode(), "axis", 1);
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis > rank)
    return im.fail("axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= s[i];
  if (axis == 1 && rank > 2) {
    im.setResult(0, im.create<FlattenOp>(*x).getResult());
    return success();
  }
  im.setResult(0, reshapeTo(im, *x, {outer, inner}));
  return success();
}

static LogicalResult convertReshape(Importer &im) {
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  const HostTensor *target = im.getConstant(1);
  if (!target)
    return im.fail("the target shape must be known at import time (a "
                   "constant or a foldable shape computation)");
  ArrayRef<int64_t> in = shapeOf(*x);
  int64_t total = checkedNumel(in), known = 1, inferred = -1;
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < target->data.size(); ++i) {
    int64_t d = toInt(target->data[i]);
    if (d == 0 && getIntAttr(im.getNode(), "allowzero", 0) == 0 &&
        i < in.size())
      d = in[i];
    if (d == -1 && inferred < 0)
      inferred = i;
    else if (d <= 0 || d > total || known > total / d)
      return im.fail("invalid target shape for " + formatShape(in));
    else
      known *= d;
    shape.push_back(d);
  }
  if (inferred >= 0)
    shape[inferred] = known > 0 ? total / known : 0;
  if (checkedNumel(shape) != total)
    return im.fail("cannot reshape " + formatShape(in) + " to " +
                   formatShape(shape));
  im.setResult(0, reshapeTo(im, *x, shape));
  return success();
}

static LogicalResult convertTranspose(Importer &im) {
  SmallVector<int64_t> attr = getIntsAttr(im.getNode(), "perm");
  const HostTensor *init = im.getConstant(0);
  // The transpose of a rank-2 parameter stays pending, also when another op
  // already uses the parameter (a head tied to the token embedding).
  if (im.isParameter(0) && init->shape.size() == 2 &&
      (attr.empty() || attr == ArrayRef<int64_t>{1, 0})) {
    Slot slot;
    slot.transposeOf = im.getNode().input(0);
    im.setSlot(0, std::move(slot));
    return success();
  }
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  int64_t rank = shapeOf(*x).size();
  SmallVector<int64_t> perm = getIntsAttr(im.getNode(), "perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  for (int64_t i = 0; i < rank; ++i)
    if (static_cast<int64_t>(sorted.size()) != rank || sorted[i] != i)
      return im.fail("perm is not a permutation of [0, " +
                     std::to_string(rank) + ")");
  im.setResult(0, im.create<TransposeOp>(*x, perm).getResult());
  return success();
}

/// Symmetric 2-D padding from ONNX pads [top, left, bottom, right].
static FailureOr<SmallVector<int64_t>> getPadding(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  if (const onnx::AttributeProto *autoPad = findAttr(n, "auto_pad"))
    if (autoPad->s() != "NOTSET" && autoPad->s() != "VALID")
      return im.fail("auto_pad " + autoPad->s() + " is not supported");
  SmallVector<int64_t> pads = getIntsAttr(n, "pads");
  if (pads.empty())
    return SmallVector<int64_t>{0, 0};
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
    return im.fail("only symmetric 2-D pads are supported");
  return SmallVector<int64_t>{pads[0], pads[1]};
}

/// `name` as a pair of 2-D sizes, `fallback` when absent.
static FailureOr<SmallVector<int64_t>> getPair(Importer &im, StringRef name,
                                               int64_t fallback) {
  SmallVector<int64_t> v = getIntsAttr(im.getNode(), name);
  if (v.empty())
    return SmallVector<int64_t>{fallback, fallback};
  if (v.size() != 2 || v[0] <= 0 || v[1] <= 0)
    return im.fail("'" + name + "' must hold two positive sizes");
  return v;
}

/// Whether `window` with `padding` (non-negative) fits the spatial
/// dimensions of the NCHW `input`.
static LogicalResult checkWindow(Importer &im, Value input,
                                 ArrayRef<int64_t> window,
                                 ArrayRef<int64_t> padding) {
  ArrayRef<int64_t> s = shapeOf(input);
  for (int i = 0; i < 2; ++i) {
    if (padding[i] < 0 || window[i] <= 0 ||
        s[2 + i] + 2 * padding[i] < window[i])
      return im.fail("window " + formatShape(window) + " with padding " +
                     formatShape(padding) + " does not fit the input " +
                     formatShape(s));
  }
  return success();
}

static LogicalResult convertConv(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  if (getIntAttr(n, "group", 1) != 1)
    return im.fail("grouped convolutions are not supported");
  FailureOr<SmallVector<int64_t>> dilations = getPair(im, "dilations", 1);
  FailureOr<SmallVector<int64_t>> strides = getPair(im, "strides", 1);
  FailureOr<SmallVector<int64_t>> padding = getPadding(im);
  if (failed(dilations) || failed(strides) || failed(padding))
    return failure();
  if ((*dilations)[0] != 1 || (*dilations)[1] != 1)
    return im.fail("dilated convolutions are not supported");
  FailureOr<Value> x = im.getValue(0), w = im.getValue(1);
  if (failed(x) || failed(w))
    return failure();
  if (shapeOf(*x).size() != 4 || shapeOf(*w).size() != 4 ||
      shapeOf(*x)[1] != shapeOf(*w)[1])
    return im.fail("expected an NCHW input and an OIHW filter, got " +
                   formatShape(shapeOf(*x)) + " and " +
                   formatShape(shapeOf(*w)));
  if (failed(checkWindow(im, *x, shapeOf(*w).drop_front(2), *padding)))
    return failure();
  Value y = im.create<Conv2DOp>(*x, *w, *strides, *padding).getResult();
  if (n.input_size() > 2 && !n.input(2).empty()) {
    FailureOr<Value> b = im.getValue(2);
    if (failed(b))
      return failure();
    if (shapeOf(*b) != ArrayRef<int64_t>{shapeOf(*w)[0]})
      return im.fail("bias must be 1-D of the filter count");
    y = im.create<BiasAddOp>(y, *b, /*axis=*/1).getResult();
  }
  im.setResult(0, y);
  return success();
}

static LogicalResult convertMaxPool(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  if (getIntAttr(n, "ceil_mode", 0) != 0)
    return im.fail("ceil_mode = 1 is not supported");
  if (n.output_size() > 1 && !n.output(1).empty())
    return im.fail("the Indices output is not supported");
  FailureOr<SmallVector<int64_t>> kernel = getPair(im, "kernel_shape", 0);
  FailureOr<SmallVector<int64_t>> strides = getPair(im, "strides", 1);
  FailureOr<SmallVector<int64_t>> dilations = getPair(im, "dilations", 1);
  FailureOr<SmallVector<int64_t>> padding = getPadding(im);
  if (failed(kernel) || failed(strides) || failed(dilations) || failed(padding))
    return failure();
  if ((*dilations)[0] != 1 || (*dilations)[1] != 1 || (*kernel)[0] <= 0)
    return im.fail("needs kernel_shape and no dilation");
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  if (shapeOf(*x).size() != 4)
    return im.fail("expected an NCHW input");
  if (failed(checkWindow(im, *x, *kernel, *padding)))
    return failure();
  if ((*padding)[0] >= (*kernel)[0] || (*padding)[1] >= (*kernel)[1])
    return im.fail("padding must be smaller than the kernel");
  im.setResult(
      0, im.create<MaxPool2DOp>(*x, *kernel, *strides, *padding).getResult());
  return success();
}

/// GlobalAveragePool, or an AveragePool whose window is the whole image (or
/// 1x1, the identity).
static LogicalResult convertAveragePool(Importer &im) {
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> s = shapeOf(*x);
  if (s.size() != 4)
    return im.fail("expected an NCHW input");
  if (im.getNode().op_type() == "AveragePool") {
    SmallVector<int64_t> kernel = getIntsAttr(im.getNode(), "kernel_shape");
    SmallVector<int64_t> pads = getIntsAttr(im.getNode(), "pads");
    SmallVector<int64_t> strides = getIntsAttr(im.getNode(), "strides");
    bool unpadded = llvm::all_of(pads, [](int64_t p) { return p == 0; });
    // A 1x1 window moving by 1: the identity (VGG's AdaptiveAvgPool2d((7,
    // 7)) on a 7x7 feature map).
    if (kernel == ArrayRef<int64_t>{1, 1} && unpadded &&
        (strides.empty() || strides == ArrayRef<int64_t>{1, 1})) {
      im.setResult(0, *x);
      return success();
    }
    if (kernel != ArrayRef<int64_t>{s[2], s[3]} ||
        llvm::any_of(pads, [](int64_t p) { return p != 0; }))
      return im.fail("only a window over the whole image (a global average) "
                     "is supported");
  }
  Value y = im.create<GlobalAvgPoolOp>(*x).getResult();
  im.setResult(0, reshapeTo(im, y, {s[0], s[1], 1, 1}));
  return success();
}

/// Rows 0 .. rows - 1 of the rank-2 initializer input 0, pending (the
/// learned positions of a sequence).
static LogicalResult setRows(Importer &im, int64_t rows) {
  const HostTensor *table = im.getConstant(0);
  if (table->shape.size() != 2 || rows <= 0 || rows > table->shape[0])
    return im.fail("expected the first rows of a rank-2 table");
  Slot slot;
  slot.rowsOf = im.getNode().input(0);
  slot.rows = rows;
  im.setSlot(0, std::move(slot));
  return success();
}

/// Gather(table, arange(S)) with a constant index vector 0 .. S - 1.
static std::optional<LogicalResult> tryPositionGather(Importer &im) {
  const HostTensor *indices = im.getConstant(1);
  if (!im.isParameter(0) || !indices || im.isParameter(1))
    return std::nullopt;
  for (int64_t i = 0; i < indices->numel(); ++i)
    if (indices->data[i] != static_cast<double>(i))
      return im.fail("constant indices other than 0, 1, ... (learned "
                     "positions) are not supported");
  return setRows(im, indices->numel());
}

/// `axis` of a tensor of rank `rank` in [0, rank), or -1.
static int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return -1;
  return axis < 0 ? axis + rank : axis;
}

/// `x[..., begin:end, ...]` along `axis` as strata.slice (`x` itself for
/// the whole range); fails for an empty range.
static FailureOr<Value> sliceValue(Importer &im, Value x, int64_t axis,
                                   int64_t begin, int64_t end) {
  int64_t dim = shapeOf(x)[axis];
  if (begin == 0 && end == dim)
    return x;
  if (begin < 0 || end > dim || end <= begin)
    return im.fail("the range [" + std::to_string(begin) + ", " +
                   std::to_string(end) + ") of dimension " +
                   std::to_string(axis) + " of " + formatShape(shapeOf(x)) +
                   " is empty or out of bounds");
  return im.create<SliceOp>(x, axis, begin, end - begin).getResult();
}

/// A Slice index clamped as ONNX does: negative counts from the end, then
/// into [0, dim].
static int64_t clampSliceIndex(double v, int64_t dim) {
  int64_t i = std::clamp<int64_t>(toInt(v), -dim - 1, dim + 1);
  return std::clamp<int64_t>(i < 0 ? i + dim : i, 0, dim);
}

/// Slice of a computed tensor (or a parameter) with constant starts, ends
/// and axes and unit steps: one strata.slice per sliced axis.
static LogicalResult sliceTensor(Importer &im) {
  const HostTensor *starts = im.getConstant(1), *ends = im.getConstant(2);
  const HostTensor *axes = im.getConstant(3), *steps = im.getConstant(4);
  if (!starts || !ends || starts->numel() != ends->numel() ||
      (axes && axes->numel() != starts->numel()) ||
      (steps && steps->numel() != starts->numel()))
    return im.fail("starts, ends (and axes, steps) must be known at import "
                   "time and of one length");
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  int64_t rank = shapeOf(*x).size();
  SmallVector<bool> seen(rank, false);
  Value v = *x;
  for (int64_t i = 0; i < starts->numel(); ++i) {
    int64_t axis = normalizeAxis(axes ? toInt(axes->data[i]) : i, rank);
    if (axis < 0 || seen[axis])
      return im.fail("axes must be distinct dimensions of " +
                     formatShape(shapeOf(*x)));
    seen[axis] = true;
    if (steps && steps->data[i] != 1)
      return im.fail("steps other than 1 are not supported");
    int64_t dim = shapeOf(v)[axis];
    FailureOr<Value> sliced =
        sliceValue(im, v, axis, clampSliceIndex(starts->data[i], dim),
                   clampSliceIndex(ends->data[i], dim));
    if (failed(sliced))
      return failure();
    v = *sliced;
  }
  im.setResult(0, v);
  return success();
}

/// Slice(table, [0], [S]) along axis 0 with unit steps of a parameter
/// (table[:S], learned positions, pending until the Add that uses it), or
/// a slice of any tensor (strata.slice).
static LogicalResult convertSlice(Importer &im) {
  const HostTensor *starts = im.getConstant(1), *ends = im.getConstant(2);
  const HostTensor *axes = im.getConstant(3), *steps = im.getConstant(4);
  bool rows = im.isParameter(0) && starts && ends && starts->numel() == 1 &&
              ends->numel() == 1 && starts->data[0] == 0 &&
              (!axes || (axes->numel() == 1 && axes->data[0] == 0)) &&
              (!steps || (steps->numel() == 1 && steps->data[0] == 1)) &&
              im.getConstant(0)->shape.size() == 2;
  if (!rows)
    return sliceTensor(im);
  int64_t n = im.getConstant(0)->shape[0];
  return setRows(im, std::min(toInt(ends->data[0]), n));
}

/// The sizes of the parts of a Split of a dimension of `dim` into `parts`:
/// the `split` input (opset 13+) or attribute, else equal parts (opset 18's
/// `num_outputs`: the last part may be smaller).
static FailureOr<SmallVector<int64_t>> getSplitSizes(Importer &im, int64_t dim,
                                                     int64_t parts) {
  const onnx::NodeProto &n = im.getNode();
  SmallVector<int64_t> sizes;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    const HostTensor *split = im.getConstant(1);
    if (!split || split->isFloat)
      return im.fail("the split sizes must be integers known at import time");
    for (double v : split->data)
      sizes.push_back(toInt(v));
  } else if (SmallVector<int64_t> attr = getIntsAttr(n, "split");
             !attr.empty()) {
    sizes = attr;
  } else {
    int64_t count = getIntAttr(n, "num_outputs", parts);
    if (count != parts || count < 1)
      return im.fail("num_outputs " + std::to_string(count) + " differs from " +
                     std::to_string(parts) + " outputs");
    int64_t chunk = (dim + count - 1) / count;
    for (int64_t i = 0; i < count; ++i)
      sizes.push_back(std::min(chunk, dim - i * chunk));
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    return im.fail(std::to_string(sizes.size()) + " split sizes for " +
                   std::to_string(parts) + " outputs");
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 1 || size > dim - total)
      return im.fail("split sizes " + formatShape(sizes) +
                     " do not divide a dimension of " + std::to_string(dim) +
                     " into non-empty parts");
    total += size;
  }
  if (total != dim)
    return im.fail("split sizes " + formatShape(sizes) + " add up to " +
                   std::to_string(total) + ", not " + std::to_string(dim));
  return sizes;
}

/// Split along one axis (GPT-2's fused query/key/value projection): one
/// strata.slice per used output.
static LogicalResult convertSplit(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  FailureOr<Value> x = im.getValue(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> s = shapeOf(*x);
  int64_t axis = normalizeAxis(getIntAttr(n, "axis", 0), s.size());
  if (axis < 0)
    return im.fail("axis out of range for " + formatShape(s));
  FailureOr<SmallVector<int64_t>> sizes =
      getSplitSizes(im, s[axis], n.output_size());
  if (failed(sizes))
    return failure();
  int64_t offset = 0;
  for (auto [i, size] : llvm::enumerate(*sizes)) {
    if (!n.output(i).empty()) {
      FailureOr<Value> part = sliceValue(im, *x, axis, offset, offset + size);
      if (failed(part))
        return failure();
      im.setResult(i, *part);
    }
    offset += size;
  }
  return success();
}

/// Concat of computed tensors (all-constant ones were folded).
static LogicalResult convertConcat(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  if (!findAttr(n, "axis"))
    return im.fail("the 'axis' attribute is required");
  SmallVector<Value> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    FailureOr<Value> v = im.getValue(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  if (inputs.empty())
    return im.fail("needs at least one input");
  ArrayRef<int64_t> first = shapeOf(inputs.front());
  int64_t axis = normalizeAxis(getIntAttr(n, "axis", 0), first.size());
  if (axis < 0)
    return im.fail("axis out of range for " + formatShape(first));
  int64_t total = 0;
  for (Value v : inputs) {
    ArrayRef<int64_t> s = shapeOf(v);
    bool fits = s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = static_cast<int64_t>(d) == axis || s[d] == first[d];
    if (!fits)
      return im.fail("inputs " + formatShape(first) + " and " + formatShape(s) +
                     " differ in a dimension other than " +
                     std::to_string(axis));
    total += s[axis];
  }
  SmallVector<int64_t> shape(first);
  shape[axis] = total;
  if (checkedNumel(shape) < 0)
    return im.fail("the result " + formatShape(shape) + " is too large");
  if (inputs.size() == 1) {
    im.setResult(0, inputs.front());
    return success();
  }
  im.setResult(0, im.create<ConcatOp>(inputs, axis).getResult());
  return success();
}

static LogicalResult convertGather(Importer &im) {
  if (getIntAttr(im.getNode(), "axis", 0) != 0)
    return im.fail("only axis 0 (an embedding lookup) is supported");
  if (std::optional<LogicalResult> r = tryPositionGather(im))
    return *r;
  FailureOr<Value> table = im.getValue(0), indices = im.getAnyValue(1);
  if (failed(table) || failed(indices))
    return failure();
  if (shapeOf(*table).size() != 2 ||
      !cast<RankedTensorType>(indices->getType()).getElementType().isInteger())
    return im.fail("expected a rank-2 table and integer indices (an "
                   "embedding lookup)");
  im.setResult(0, im.create<EmbeddingOp>(*table, *indices).getResult());
  return success();
}

static LogicalResult convertLayerNorm(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  for (int i = 1; i < n.output_size(); ++i)
    if (!n.output(i).empty())
      return im.fail("only the first output (Y) is supported");
  FailureOr<Value> x = im.getValue(0), gamma = im.getValue(1);
  if (failed(x) || failed(gamma))
    return failure();
  int64_t rank = shapeOf(*x).size();
  int64_t axis = getIntAttr(n, "axis", -1);
  if (axis != -1 && axis != rank - 1)
    return im.fail("only the last axis is supported");
  if (n.input_size() < 3 || n.input(2).empty())
    return im.fail("a bias input (B) is required");
  FailureOr<Value> beta = im.getValue(2);
  if (failed(beta))
    return failure();
  int64_t h = shapeOf(*x).back();
  if (shapeOf(*gamma) != ArrayRef<int64_t>{h} ||
      shapeOf(*beta) != ArrayRef<int64_t>{h})
    return im.fail("scale and bias must be 1-D of size " + std::to_string(h));
  double eps = getFloatAttr(n, "epsilon", 1e-5f);
  if (!(eps > 0))
    return im.fail("epsilon must be positive");
  im.setResult(0, im.create<LayerNormOp>(*x, *gamma, *beta, llvm::APFloat(eps))
                      .getResult());
  return success();
}

/// Whether the BatchNormalization node computes batch statistics: the
/// `training_mode` attribute (opset 14+), or before opset 14 the running
/// statistics among its outputs (training graphs ask for them).
static bool isTrainingBatchNorm(const onnx::NodeProto &n) {
  if (findAttr(n, "training_mode"))
    return getIntAttr(n, "training_mode", 0) != 0;
  return n.output_size() > 1 && !n.output(1).empty();
}

/// BatchNormalization in training mode (torch.onnx.export with
/// training=TrainingMode.TRAINING): strata.batch_norm with the running
/// mean and variance initializers as running statistics. ONNX's momentum
/// weighs the old statistic (PyTorch's is 1 - it); the running variance
/// follows PyTorch, the exporter's source, and takes the unbiased batch
/// variance (ONNX's reference says the biased one).
static LogicalResult convertBatchNorm(Importer &im) {
  const onnx::NodeProto &n = im.getNode();
  if (n.input_size() != 5 ||
      llvm::any_of(n.input(), [](const std::string &s) { return s.empty(); }))
    return im.fail("expects 5 inputs (X, scale, B, input_mean, input_var), "
                   "got " +
                   std::to_string(n.input_size()));
  if (!isTrainingBatchNorm(n))
    return im.fail(
        "batch normalisation in inference form (training_mode = 0) uses "
        "fixed statistics, which Strata does not train; export with "
        "training=torch.onnx.TrainingMode.TRAINING (batch statistics and "
        "running statistics), or let the exporter fold it into the Conv "
        "(model.eval() with do_constant_folding=True)");
  if (n.output_size() > 3 && !n.output(3).empty())
    return im.fail("the saved mean and variance outputs (opset 9) are not "
                   "supported");
  FailureOr<Value> x = im.getValue(0), gamma = im.getValue(1),
                   beta = im.getValue(2);
  if (failed(x) || failed(gamma) || failed(beta))
    return failure();
  ArrayRef<int64_t> s = shapeOf(*x);
  if (s.size() < 2)
    return im.fail("expected an input [N, C, ...], got " + formatShape(s));
  int64_t channels = s[1], values = checkedNumel(s) / channels;
  if (values < 2)
    return im.fail("the input " + formatShape(s) +
                   " has one value per channel; batch statistics need more");
  for (unsigned i = 1; i < 5; ++i) {
    const Slot &slot = im.getSlot(i);
    ArrayRef<int64_t> shape =
        i < 3 ? shapeOf(i == 1 ? *gamma : *beta)
              : (slot.constant ? ArrayRef<int64_t>(slot.constant->shape)
                               : ArrayRef<int64_t>());
    if (i >= 3 && !slot.constant)
      return im.fail("input '" + n.input(i) +
                     "' must be an initializer (a running statistic of the "
                     "model)");
    if (shape != ArrayRef<int64_t>{channels})
      return im.fail("input '" + n.input(i) + "' must be 1-D of the " +
                     std::to_string(channels) + " channels, got " +
                     formatShape(shape));
  }
  FailureOr<Value> mean = im.getRunningStat(3, InitKind::zeros);
  FailureOr<Value> var = failed(mean) ? FailureOr<Value>(failure())
                                      : im.getRunningStat(4, InitKind::ones);
  if (failed(var))
    return failure();
  double eps = getFloatAttr(n, "epsilon", 1e-5f);
  // 1 - momentum in f32, as the file holds it (0.9f gives 0.1 + 2.4e-8).
  double momentum = 1.0f - getFloatAttr(n, "momentum", 0.9f);
  if (!(eps > 0))
    return im.fail("epsilon must be positive");
  if (!(momentum >= 0 && momentum <= 1))
    return im.fail("momentum must lie in [0, 1]");
  auto op = im.create<BatchNormOp>(*x, *gamma, *beta, *mean, *var,
                                   llvm::APFloat(eps), llvm::APFloat(momentum));
  im.setResult(0, op.getResult());
  im.setResult(1, op.getNewRunningMean());
  im.setResult(2, op.getNewRunningVar());
  return success();
}

LogicalResult onnx_import::convertOperator(Importer &im) {
  using Converter = LogicalResult (*)(Importer &);
  static const std::pair<StringRef, Converter> table[] = {
      {"Identity", convertIdentity},
      {"Dropout", convertIdentity},
      {"Shape", convertShape},
      {"Gemm", convertGemm},
      {"MatMul", convertMatMul},
      {"Relu", convertRelu},
      {"Gelu", convertGelu},
      {"Softmax", convertSoftmax},
      {"Flatten", convertFlatten},
      {"Reshape", convertReshape},
      {"Transpose", convertTranspose},
      {"Conv", convertConv},
      {"MaxPool", convertMaxPool},
      {"GlobalAveragePool", convertAveragePool},
      {"AveragePool", convertAveragePool},
      {"Gather", convertGather},
      {"Slice", convertSlice},
      {"Split", convertSplit},
      {"Concat", convertConcat},
      {"LayerNormalization", convertLayerNorm},
      {"BatchNormalization", convertBatchNorm},
      {"ReduceMean", convertReduceMean},
  };
  StringRef op = im.getNode().op_type();
  if (!im.getNode().domain().empty() && im.getNode().domain() != "ai.onnx")
    return im.fail("operators of domain '" + im.getNode().domain() +
                   "' are not supported");
  for (const auto &[name, convert] : table)
    if (name == op)
      return convert(im);
  if (isElementwise(op))
    return convertElementwise(im);
  return im.fail("unsupported operator");
}
