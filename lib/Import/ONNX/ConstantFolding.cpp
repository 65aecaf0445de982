//===- ConstantFolding.cpp - Host evaluation of shape subgraphs -----------===//
//
// Exporters compute the target shapes of Reshape at run time:
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape. With every input shape
// static, the importer evaluates such nodes on the host; the converters then
// see the results as constants.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;

bool onnx_import::isFoldable(StringRef opType) {
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Constant", "Identity", "Gather", "Unsqueeze", "Squeeze",
              "Concat", "Cast", "Slice", "ConstantOfShape", "Reshape", "Range"},
             true)
      .Cases({"Add", "Sub", "Mul", "Div", "Equal", "Where", "Neg", "Sqrt"},
             true)
      .Default(false);
}

/// Normalises `axis` into [0, rank); -1 when out of range.
static int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return -1;
  return axis < 0 ? axis + rank : axis;
}

static std::string foldConstant(const onnx::NodeProto &node, HostTensor &out) {
  if (const onnx::AttributeProto *attr = findAttr(node, "value")) {
    if (!attr->has_t())
      return "attribute 'value' is not a tensor";
    return decodeTensor(attr->t(), out);
  }
  out = HostTensor();
  if (const onnx::AttributeProto *attr = findAttr(node, "value_float")) {
    out.data.push_back(attr->f());
  } else if (const onnx::AttributeProto *attr = findAttr(node, "value_int")) {
    out.isFloat = false;
    out.data.push_back(static_cast<double>(attr->i()));
  } else if (const onnx::AttributeProto *attr = findAttr(node, "value_ints")) {
    out.isFloat = false;
    for (int64_t v : attr->ints())
      out.data.push_back(static_cast<double>(v));
    out.shape = {out.numel()};
  } else if (const onnx::AttributeProto *attr =
                 findAttr(node, "value_floats")) {
    for (float v : attr->floats())
      out.data.push_back(v);
    out.shape = {out.numel()};
  } else {
    return "no supported value attribute";
  }
  return "";
}

/// Row-major strides of `shape`.
static SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Numpy-style broadcasting of `inputs` with `fn` applied per element.
static std::string broadcast(ArrayRef<const HostTensor *> inputs,
                             function_ref<double(ArrayRef<double>)> fn,
                             HostTensor &out) {
  size_t rank = 0;
  for (const HostTensor *t : inputs)
    rank = std::max(rank, t->shape.size());
  SmallVector<int64_t> shape(rank, 1);
  for (const HostTensor *t : inputs)
    for (size_t i = 0; i < t->shape.size(); ++i) {
      int64_t &d = shape[rank - t->shape.size() + i];
      int64_t e = t->shape[i];
      if (d != 1 && e != 1 && d != e)
        return "shapes cannot be broadcast together";
      if (e != 1)
        d = e;
    }
  int64_t numel = checkedNumel(shape);
  if (numel < 0 || numel > kMaxFoldElements)
    return "result too large";
  out.shape = shape;
  out.data.assign(numel, 0.0);
  SmallVector<int64_t> outStrides = getStrides(shape);
  SmallVector<double> args(inputs.size());
  SmallVector<SmallVector<int64_t>> inputStrides;
  for (const HostTensor *t : inputs)
    inputStrides.push_back(getStrides(t->shape));
  for (int64_t flat = 0; flat < numel; ++flat) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      const HostTensor &t = *inputs[k];
      ArrayRef<int64_t> strides = inputStrides[k];
      int64_t offset = 0, skip = rank - t.shape.size();
      for (size_t i = 0; i < t.shape.size(); ++i) {
        int64_t index = (flat / outStrides[skip + i]) % shape[skip + i];
        offset += (t.shape[i] == 1 ? 0 : index) * strides[i];
      }
      args[k] = t.data[offset];
    }
    out.data[flat] = fn(args);
  }
  return "";
}

static std::string foldArithmetic(StringRef op, ArrayRef<const HostTensor *> in,
                                  HostTensor &out) {
  bool isFloat = in[0]->isFloat;
  auto fn = [&](ArrayRef<double> a) -> double {
    if (op == "Add")
      return a[0] + a[1];
    if (op == "Sub")
      return a[0] - a[1];
    if (op == "Mul")
      return a[0] * a[1];
    if (op == "Div") {
      if (isFloat)
        return a[0] / a[1];
      return a[1] == 0 ? 0 : std::trunc(a[0] / a[1]);
    }
    if (op == "Equal")
      return a[0] == a[1];
    if (op == "Where")
      return a[0] != 0 ? a[1] : a[2];
    if (op == "Neg")
      return -a[0];
    return std::sqrt(a[0]); // Sqrt
  };
  if (op == "Div" && !isFloat)
    for (double d : in[1]->data)
      if (d == 0)
        return "integer division by zero";
  std::string error = broadcast(in, fn, out);
  out.isFloat = op == "Equal"   ? false
                : op == "Where" ? in[1]->isFloat
                                : isFloat;
  return error;
}

static std::string foldGather(const onnx::NodeProto &node,
                              const HostTensor &data, const HostTensor &indices,
                              HostTensor &out) {
  int64_t rank = data.shape.size();
  int64_t axis = normalizeAxis(getIntAttr(node, "axis", 0), rank);
  if (axis < 0)
    return "axis out of range";
  int64_t outer = 1, inner = 1, n = data.shape[axis];
  for (int64_t i = 0; i < axis; ++i)
    outer *= data.shape[i];
  for (int64_t i = axis + 1; i < rank; ++i)
    inner *= data.shape[i];
  out.isFloat = data.isFloat;
  out.shape.assign(data.shape.begin(), data.shape.begin() + axis);
  out.shape.append(indices.shape.begin(), indices.shape.end());
  out.shape.append(data.shape.begin() + axis + 1, data.shape.end());
  int64_t numel = checkedNumel(out.shape);
  if (numel < 0 || numel > kMaxFoldElements)
    return "result too large";
  for (int64_t o = 0; o < outer; ++o)
    for (double idx : indices.data) {
      int64_t i = toInt(idx);
      if (i < -n || i >= n)
        return "index " + std::to_string(i) + " out of range";
      i = i < 0 ? i + n : i;
      for (int64_t k = 0; k < inner; ++k)
        out.data.push_back(data.data[(o * n + i) * inner + k]);
    }
  return "";
}

/// The axes of Unsqueeze/Squeeze: an input from opset 13, else an attribute.
static SmallVector<int64_t> getAxes(const onnx::NodeProto &node,
                                    ArrayRef<const HostTensor *> in) {
  if (in.size() > 1 && in[1]) {
    SmallVector<int64_t> axes;
    for (double a : in[1]->data)
      axes.push_back(toInt(a));
    return axes;
  }
  return getIntsAttr(node, "axes");
}

static std::string foldSqueeze(const onnx::NodeProto &node,
                               ArrayRef<const HostTensor *> in, HostTensor &out,
                               bool unsqueeze) {
  out = *in[0];
  SmallVector<int64_t> axes = getAxes(node, in);
  if (unsqueeze) {
    int64_t rank = out.shape.size() + axes.size();
    SmallVector<int64_t> normalized;
    for (int64_t a : axes)
      normalized.push_back(normalizeAxis(a, rank));
    llvm::sort(normalized);
    for (int64_t a : normalized) {
      if (a < 0 || a > static_cast<int64_t>(out.shape.size()))
        return "axis out of range";
      out.shape.insert(out.shape.begin() + a, 1);
    }
    return "";
  }
  SmallVector<int64_t> shape;
  int64_t rank = out.shape.size();
  for (int64_t i = 0; i < rank; ++i) {
    bool listed =
        axes.empty() ? out.shape[i] == 1 : llvm::any_of(axes, [&](int64_t a) {
          return normalizeAxis(a, rank) == i;
        });
    if (!listed)
      shape.push_back(out.shape[i]);
    else if (out.shape[i] != 1)
      return "cannot squeeze a dimension of size " +
             std::to_string(out.shape[i]);
  }
  out.shape = shape;
  return "";
}

static std::string foldConcat(const onnx::NodeProto &node,
                              ArrayRef<const HostTensor *> in,
                              HostTensor &out) {
  int64_t rank = in[0]->shape.size();
  int64_t axis = normalizeAxis(getIntAttr(node, "axis", 0), rank);
  if (axis < 0)
    return "axis out of range";
  out.isFloat = in[0]->isFloat;
  out.shape.assign(in[0]->shape.begin(), in[0]->shape.end());
  out.shape[axis] = 0;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= in[0]->shape[i];
  for (const HostTensor *t : in) {
    if (static_cast<int64_t>(t->shape.size()) != rank)
      return "inputs of different ranks";
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis && t->shape[i] != in[0]->shape[i])
        return "inputs of different shapes";
    out.shape[axis] += t->shape[axis];
  }
  int64_t numel = checkedNumel(out.shape);
  if (numel < 0 || numel > kMaxFoldElements)
    return "result too large";
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor *t : in) {
      int64_t chunk = t->numel() / std::max<int64_t>(outer, 1);
      out.data.insert(out.data.end(), t->data.begin() + o * chunk,
                      t->data.begin() + (o + 1) * chunk);
    }
  return "";
}

/// Slice of a 1-D tensor (shape vectors), the only rank exporters slice in
/// shape computations.
static std::string foldSlice(ArrayRef<const HostTensor *> in, HostTensor &out) {
  if (in.size() < 3 || !in[1] || !in[2] || in[0]->shape.size() != 1)
    return "only 1-D slices with constant starts and ends are folded";
  if (in.size() > 3 && in[3] &&
      (in[3]->numel() != 1 || (in[3]->data[0] != 0 && in[3]->data[0] != -1)))
    return "only axis 0 is folded";
  if (in.size() > 4 && in[4] && (in[4]->numel() != 1 || in[4]->data[0] != 1))
    return "only unit steps are folded";
  if (in[1]->numel() != 1 || in[2]->numel() != 1)
    return "only one start and one end are folded";
  int64_t n = in[0]->numel();
  auto clampIndex = [&](double v) {
    int64_t i = toInt(v);
    i = std::clamp<int64_t>(i, -n - 1, n + 1);
    i = i < 0 ? i + n : i;
    return std::clamp<int64_t>(i, 0, n);
  };
  int64_t begin = clampIndex(in[1]->data[0]), end = clampIndex(in[2]->data[0]);
  out.isFloat = in[0]->isFloat;
  for (int64_t i = begin; i < end; ++i)
    out.data.push_back(in[0]->data[i]);
  out.shape = {out.numel()};
  return "";
}

static std::string foldReshape(ArrayRef<const HostTensor *> in,
                               HostTensor &out) {
  out = *in[0];
  SmallVector<int64_t> shape;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < in[1]->data.size(); ++i) {
    int64_t d = toInt(in[1]->data[i]);
    if (d == 0 && i < in[0]->shape.size())
      d = in[0]->shape[i];
    if (d == -1) {
      if (inferred >= 0)
        return "more than one -1 in the shape";
      inferred = i;
    } else if (d < 0) {
      return "invalid dimension " + std::to_string(d);
    } else if (d > kMaxTensorElements ||
               (d != 0 && known > kMaxTensorElements / d)) {
      return "the shape is too large";
    } else {
      known *= d;
    }
    shape.push_back(d);
  }
  if (inferred >= 0 && known > 0)
    shape[inferred] = in[0]->numel() / known;
  if (checkedNumel(shape) != in[0]->numel())
    return "the shape does not hold the input's element count";
  out.shape = shape;
  return "";
}

std::string onnx_import::foldNode(const onnx::NodeProto &node,
                                  ArrayRef<const HostTensor *> in,
                                  std::vector<HostTensor> &outputs) {
  StringRef op = node.op_type();
  outputs.assign(1, HostTensor());
  HostTensor &out = outputs[0];
  if (op == "Constant")
    return foldConstant(node, out);
  // Every other foldable op needs its first input.
  if (in.empty() || !in[0])
    return "missing input";
  if (op == "Identity") {
    out = *in[0];
    return "";
  }
  if (op == "Cast") {
    out = *in[0];
    int64_t to = getIntAttr(node, "to", onnx::TensorProto::FLOAT);
    out.isFloat =
        to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
    if (!out.isFloat)
      for (double &v : out.data)
        v = std::trunc(v);
    return "";
  }
  size_t arity = llvm::StringSwitch<size_t>(op)
                     .Cases({"Neg", "Sqrt", "ConstantOfShape", "Unsqueeze",
                             "Squeeze", "Slice", "Concat"},
                            1)
                     .Case("Where", 3)
                     .Default(2);
  if (in.size() < arity || llvm::any_of(in.take_front(arity),
                                        [](const HostTensor *t) { return !t; }))
    return "missing input";
  if (op == "Gather")
    return foldGather(node, *in[0], *in[1], out);
  if (op == "Unsqueeze" || op == "Squeeze")
    return foldSqueeze(node, in, out, op == "Unsqueeze");
  if (op == "Concat") {
    if (llvm::any_of(in, [](const HostTensor *t) { return !t; }))
      return "missing input";
    return foldConcat(node, in, out);
  }
  if (op == "Slice")
    return foldSlice(in, out);
  if (op == "Reshape")
    return foldReshape(in, out);
  if (op == "Range") {
    if (in.size() < 3 || !in[1] || !in[2] || in[0]->numel() != 1 ||
        in[1]->numel() != 1 || in[2]->numel() != 1 || in[2]->data[0] == 0)
      return "needs scalar start, limit and a non-zero delta";
    double start = in[0]->data[0], limit = in[1]->data[0],
           delta = in[2]->data[0];
    double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(kMaxFoldElements)))
      return "too many elements";
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
      out.data.push_back(start + i * delta);
    out.isFloat = in[0]->isFloat;
    out.shape = {out.numel()};
    return "";
  }
  if (op == "ConstantOfShape") {
    HostTensor value;
    value.data = {0.0};
    if (const onnx::AttributeProto *attr = findAttr(node, "value"))
      if (std::string error = decodeTensor(attr->t(), value); !error.empty())
        return error;
    for (double d : in[0]->data)
      out.shape.push_back(toInt(d));
    int64_t numel = checkedNumel(out.shape);
    if (numel < 0 || numel > kMaxFoldElements || value.data.empty())
      return "invalid or too large shape";
    out.isFloat = value.isFloat;
    out.data.assign(numel, value.data[0]);
    return "";
  }
  return foldArithmetic(op, in, out);
}
