//===- CudaKernelsSlice.cu - slice, slice_grad and concat -----------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Copies of ranges along one dimension, as the CPU kernels (KernelsSlice.cpp):
// a tensor is [outer, dim, inner] around the dimension `axis`, and one
// grid-stride loop moves a block of rows per outer index.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

namespace strata::rt::cuda::detail {
namespace {

/// The [outer, dim, inner] view of `shape` around dimension `axis`.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
  AxisView(const Shape &shape, int64_t axis) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      (d < axis ? outer : d == axis ? dim : inner) *= shape[d];
  }
};

/// Copies `rows` rows of `inner` floats per outer index from row `fromRow`
/// of a [outer, fromDim, inner] tensor to row `toRow` of a
/// [outer, toDim, inner] one.
__global__ void copyRowsKernel(const float *__restrict__ from, int64_t fromDim,
                               int64_t fromRow, float *__restrict__ to,
                               int64_t toDim, int64_t toRow, int64_t outer,
                               int64_t rows, int64_t inner) {
  int64_t block = rows * inner, n = outer * block;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = i / block, r = i % block;
    to[(o * toDim + toRow) * inner + r] =
        from[(o * fromDim + fromRow) * inner + r];
  }
}

void copyRows(CudaContext &ctx, const float *from, int64_t fromDim,
              int64_t fromRow, float *to, int64_t toDim, int64_t toRow,
              int64_t outer, int64_t rows, int64_t inner) {
  int64_t n = outer * rows * inner;
  if (n == 0)
    return;
  copyRowsKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(
      from, fromDim, fromRow, to, toDim, toRow, outer, rows, inner);
  STRATA_CUDA_CHECK_LAUNCH();
}

void runSlice(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
              const OpAttrs &attrs) {
  AxisView in(inputs[0].desc.shape, attrs.axis);
  copyRows(ctx, inputs[0].f32(), in.dim, attrs.offset, outputs[0].f32(),
           attrs.size, 0, in.outer, attrs.size, in.inner);
}

void runSliceGrad(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  AxisView out(outputs[0].desc.shape, attrs.axis);
  int64_t rows = inputs[0].dim(attrs.axis);
  STRATA_CUDA_CHECK(
      cudaMemsetAsync(outputs[0].data, 0, outputs[0].desc.bytes(), ctx.stream));
  copyRows(ctx, inputs[0].f32(), rows, 0, outputs[0].f32(), out.dim,
           attrs.offset, out.outer, rows, out.inner);
}

void runConcat(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
               const OpAttrs &attrs) {
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

void appendSliceCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::Slice, runSlice});
  kernels.push_back({OpCode::SliceGrad, runSliceGrad});
  kernels.push_back({OpCode::Concat, runConcat});
}

} // namespace strata::rt::cuda::detail
