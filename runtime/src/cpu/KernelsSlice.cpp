//===- KernelsSlice.cpp - slice, slice_grad and concat --------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Copies of ranges along one dimension. A tensor is viewed as
// [outer, dim, inner] around the dimension `axis`; every kernel copies rows
// of `inner` contiguous floats, split over `outer` across threads (pure
// copies: the result never depends on the split).
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include <algorithm>
#include <cstring>

namespace strata::rt::detail {
namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

/// The [outer, dim, inner] view of `shape` around dimension `axis`.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
  AxisView(const Shape &shape, int64_t axis) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      (d < axis ? outer : d == axis ? dim : inner) *= shape[d];
  }
};

/// An integer attribute `name` in [lo, hi].
bool intAttr(Verifier &v, const std::string &name, int64_t lo, int64_t hi,
             int64_t &value) {
  double raw;
  if (!v.number(name, true, raw))
    return false;
  if (!(raw >= static_cast<double>(lo) && raw <= static_cast<double>(hi)) ||
      raw != static_cast<double>(static_cast<int64_t>(raw)))
    return v.fail("attribute '" + name + "' must be an integer in [" +
                  std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                  formatNumber(raw));
  value = static_cast<int64_t>(raw);
  return true;
}

/// `small` equals `big` but in dimension `axis`, where the range
/// [offset, offset + small[axis]) fits big's.
bool checkRange(Verifier &v, Operand smallOp, Operand bigOp, int64_t axis,
                int64_t offset) {
  Shape expected = v.shape(bigOp);
  const Shape &small = v.shape(smallOp);
  if (small.size() != expected.size())
    return v.fail(smallOp.name() + " must have rank " +
                  std::to_string(expected.size()) + ", got " +
                  formatShape(small));
  if (small[axis] > expected[axis] - offset)
    return v.fail("range [" + std::to_string(offset) + ", " +
                  std::to_string(offset + small[axis]) + ") of dimension " +
                  std::to_string(axis) + " does not fit " +
                  formatShape(expected));
  expected[axis] = small[axis];
  return v.hasShape(smallOp, expected);
}

std::string verifySlice(const Descs &inputs, const Descs &outputs,
                        const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  int64_t axis, offset, size;
  if (v.counts(1, 1) && v.dtypes() && v.minRank(in(0), 1) &&
      intAttr(v, "axis", 0, static_cast<int64_t>(v.shape(in(0)).size()) - 1,
              axis) &&
      intAttr(v, "offset", 0, v.shape(in(0))[axis], offset) &&
      intAttr(v, "size", 1, v.shape(in(0))[axis], size) &&
      checkRange(v, out(0), in(0), axis, offset) &&
      v.dimEquals(out(0), axis, size, "the attribute 'size'"))
    return "";
  return v.error();
}

/// Copies `rows` rows of `inner` floats per outer index: from row
/// `fromRow` of a [outer, fromDim, inner] tensor to row `toRow` of a
/// [outer, toDim, inner] one.
void copyRows(KernelContext &ctx, const float *from, int64_t fromDim,
              int64_t fromRow, float *to, int64_t toDim, int64_t toRow,
              int64_t outer, int64_t rows, int64_t inner) {
  int64_t block = rows * inner;
  parallelFor(ctx.pool, outer, block, [=](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o)
      std::memcpy(to + (o * toDim + toRow) * inner,
                  from + (o * fromDim + fromRow) * inner,
                  static_cast<size_t>(block) * sizeof(float));
  });
}

void runSlice(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
              const OpAttrs &attrs) {
  AxisView in(inputs[0].desc.shape, attrs.axis);
  copyRows(ctx, inputs[0].f32(), in.dim, attrs.offset, outputs[0].f32(),
           attrs.size, 0, in.outer, attrs.size, in.inner);
}

std::string verifySliceGrad(const Descs &inputs, const Descs &outputs,
                            const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  int64_t axis, offset;
  if (v.counts(1, 1) && v.dtypes() && v.minRank(out(0), 1) &&
      intAttr(v, "axis", 0, static_cast<int64_t>(v.shape(out(0)).size()) - 1,
              axis) &&
      intAttr(v, "offset", 0, v.shape(out(0))[axis], offset) &&
      checkRange(v, in(0), out(0), axis, offset))
    return "";
  return v.error();
}

void runSliceGrad(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  AxisView out(outputs[0].desc.shape, attrs.axis);
  int64_t rows = inputs[0].dim(attrs.axis);
  float *y = outputs[0].f32();
  std::fill(y, y + outputs[0].numel(), 0.0f);
  copyRows(ctx, inputs[0].f32(), rows, 0, y, out.dim, attrs.offset, out.outer,
           rows, out.inner);
}

std::string verifyConcat(const Descs &inputs, const Descs &outputs,
                         const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (inputs.empty())
    return "expected at least one input";
  int64_t axis;
  if (!v.counts(inputs.size(), 1) || !v.dtypes() || !v.minRank(out(0), 1) ||
      !intAttr(v, "axis", 0, static_cast<int64_t>(v.shape(out(0)).size()) - 1,
               axis))
    return v.error();
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!checkRange(v, in(static_cast<int>(i)), out(0), axis, offset))
      return v.error();
    offset += inputs[i].shape[axis];
  }
  if (offset != outputs[0].shape[axis])
    return "output #0 has " + std::to_string(outputs[0].shape[axis]) +
           " entries in dimension " + std::to_string(axis) +
           ", the inputs together " + std::to_string(offset);
  return "";
}

void runConcat(KernelContext &ctx, const Tensors &inputs,
               const Tensors &outputs, const OpAttrs &attrs) {
  AxisView out(outputs[0].desc.shape, attrs.axis);
  int64_t row = 0;
  for (const Tensor &input : inputs) {
    int64_t rows = input.dim(attrs.axis);
    copyRows(ctx, input.f32(), rows, 0, outputs[0].f32(), out.dim, row,
             out.outer, rows, out.inner);
    row += rows;
  }
}

} // namespace

void appendSliceKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::Slice, verifySlice, runSlice});
  kernels.push_back({OpCode::SliceGrad, verifySliceGrad, runSliceGrad});
  kernels.push_back({OpCode::Concat, verifyConcat, runConcat});
}

} // namespace strata::rt::detail
