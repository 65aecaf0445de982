//===- MatmulLayout.h - Where a batched product finds its matrices -*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// A matmul instruction multiplies `batch` pairs of matrices. Each operand
// (and the result) holds its matrices either one after the other (the
// default), once for all products (a rank-2 B), or in the heads layout
// (`heads_a`, `heads_b`, `heads_c`): logical [..., H, R, C] stored as
// [..., R, H, C], so that product i = (outer o, head h) starts at
// o * R * H * C + h * C with a row stride of H * C. The CPU and CUDA
// kernels share these rules.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_MATMULLAYOUT_H
#define STRATA_RT_MATMULLAYOUT_H

#include "strata-rt/Tensor.h"

#include <cstdint>
#include <utility>

namespace strata::rt {

/// The logical shape of a stored operand: dimensions rank-3 and rank-2
/// swapped in the heads layout (the caller has checked rank >= 3).
inline Shape logicalMatmulShape(Shape stored, bool heads) {
  if (heads)
    std::swap(stored[stored.size() - 3], stored[stored.size() - 2]);
  return stored;
}

/// Product i's matrix starts at offset(i) elements; rows are `ld` apart.
/// Products come in groups of `group` (the heads: one group per outer
/// index), `outer` elements between groups and `inner` between the
/// products of one group, so a strided batched GEMM can run each group.
struct MatrixLayout {
  int64_t group = 1;
  int64_t outer = 0;
  int64_t inner = 0;
  int64_t ld = 0;

  int64_t offset(int64_t i) const {
    return i / group * outer + i % group * inner;
  }
};

/// The layout of an operand stored with shape `stored` in products grouped
/// by `group` (the heads count when any operand has the heads layout, else
/// 1). `heads`: this operand is in the heads layout; `shared`: one matrix
/// for every product (a rank-2 B).
inline MatrixLayout matrixLayout(const Shape &stored, bool heads, bool shared,
                                 int64_t group) {
  size_t r = stored.size();
  MatrixLayout layout;
  layout.group = group;
  layout.ld = stored[r - 1];
  if (shared)
    return layout;
  if (heads) {
    // [..., R, H, C]: a group spans R * H * C, a head C.
    layout.outer = stored[r - 3] * stored[r - 2] * stored[r - 1];
    layout.inner = stored[r - 1];
    layout.ld = stored[r - 2] * stored[r - 1];
    return layout;
  }
  int64_t matrix = stored[r - 2] * stored[r - 1];
  layout.outer = group * matrix;
  layout.inner = matrix;
  return layout;
}

} // namespace strata::rt

#endif // STRATA_RT_MATMULLAYOUT_H
