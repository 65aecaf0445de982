//===- GemmEpilogue.cpp - Element-wise tails of fused GEMMs ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Each epilogue calls the array loops of the unfused kernels it replaces
// (VectorMath: add for bias_add and add, relu, gelu, relu_grad, gelu_grad),
// whose
// results do not depend on where an array starts or how long it is, so the
// fused result is bit-identical. The GEMM drivers call it on blocks of whole
// rows once their sums are complete, while they are in cache.
//
//===----------------------------------------------------------------------===//

#include "GemmInternal.h"
#include "VectorMath.h"

namespace strata::rt::detail {

using strata_plan::Epilogue;

void GemmEpilogue::apply(int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                         float *c, int64_t ldc) const {
  for (int64_t i = 0; i < rows; ++i) {
    float *row = c + i * ldc;
    // The next row's operand from memory (the hardware prefetchers do not
    // see a row's start coming); C's rows are still in cache.
    if (aux && i + 1 < rows)
      prefetchBytes(aux + (i0 + i + 1) * ldaux + j0, cols * sizeof(float));
    switch (kind) {
    case Epilogue::Bias:
    case Epilogue::BiasRelu:
    case Epilogue::BiasGelu: {
      addArray(row, bias + j0, row, cols);
      float *out = act ? act + (i0 + i) * ldact + j0 : row;
      if (kind == Epilogue::BiasRelu)
        reluArray(row, out, cols);
      else if (kind == Epilogue::BiasGelu)
        geluArray(row, out, cols);
      break;
    }
    case Epilogue::ReluGrad:
      reluGradArray(row, aux + (i0 + i) * ldaux + j0, row, cols);
      break;
    case Epilogue::GeluGrad:
      geluGradArray(row, aux + (i0 + i) * ldaux + j0, row, cols);
      break;
    case Epilogue::BiasResidual:
      addArray(row, bias + j0, row, cols);
      [[fallthrough]];
    case Epilogue::Residual:
      addArray(row, aux + (i0 + i) * ldaux + j0, row, cols);
      break;
    }
  }
}

GemmEpilogue GemmEpilogue::shifted(int64_t offset) const {
  GemmEpilogue e = *this;
  if (e.aux)
    e.aux += offset;
  if (e.act)
    e.act += offset;
  return e;
}

} // namespace strata::rt::detail
