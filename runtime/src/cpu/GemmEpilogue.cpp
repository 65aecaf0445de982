//===- GemmEpilogue.cpp - Element-wise tails of fused GEMMs ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Each epilogue repeats, element by element, the expression of the unfused
// kernel it replaces (KernelsDense.cpp: bias_add `x + bias[j]`, relu
// `x > 0 ? x : 0`, relu_grad `x > 0 ? dy : 0`; VectorMath: gelu and
// gelu_grad, whose results do not depend on where an array starts or how
// long it is). This file is compiled without -march flags, like those
// kernels, so no multiply-add is contracted here either.
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
    switch (kind) {
    case Epilogue::Bias:
    case Epilogue::BiasRelu:
    case Epilogue::BiasGelu: {
      const float *b = bias + j0;
      for (int64_t j = 0; j < cols; ++j)
        row[j] = row[j] + b[j];
      if (kind == Epilogue::Bias)
        break;
      float *out = act ? act + (i0 + i) * ldact + j0 : row;
      if (kind == Epilogue::BiasGelu) {
        geluArray(row, out, cols);
        break;
      }
      for (int64_t j = 0; j < cols; ++j)
        out[j] = row[j] > 0.0f ? row[j] : 0.0f;
      break;
    }
    case Epilogue::ReluGrad: {
      const float *x = aux + (i0 + i) * ldaux + j0;
      for (int64_t j = 0; j < cols; ++j)
        row[j] = x[j] > 0.0f ? row[j] : 0.0f;
      break;
    }
    case Epilogue::GeluGrad:
      geluGradArray(row, aux + (i0 + i) * ldaux + j0, row, cols);
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
