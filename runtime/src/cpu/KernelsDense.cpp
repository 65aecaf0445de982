//===- KernelsDense.cpp - matmul, element-wise and layout kernels ---------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every kernel here computes each output element within one item of its
// parallel loop, so its results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "GemmBf16Internal.h"
#include "GemmInternal.h"
#include "KernelsInternal.h"
#include "VectorMath.h"

#include "strata-rt/Bf16.h"
#include "strata-rt/MatmulLayout.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace strata::rt::detail {
namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

const auto &kTilingAttrs = strata_plan::kGemmTilingNames;

/// Reads the optional tiling attributes (of the bf16 GEMM with `bf16`);
/// `present` says whether any is.
std::string readTiling(const Attrs &attrs, bool bf16, GemmTiling &tiling,
                       bool &present) {
  int count = 0;
  std::string missing;
  for (const char *name : kTilingAttrs) {
    if (attrs.numbers.count(name))
      ++count;
    else if (missing.empty())
      missing = name;
  }
  present = count > 0;
  if (!present)
    return "";
  if (count != 5)
    return "gemm tiling attributes mc, nc, kc, mr, nr must be given together "
           "(missing '" +
           missing + "')";
  int64_t values[5];
  for (int i = 0; i < 5; ++i) {
    double raw = attrs.number(kTilingAttrs[i]);
    if (!isInt64(raw))
      return std::string("attribute '") + kTilingAttrs[i] +
             "' must be an integer";
    values[i] = static_cast<int64_t>(raw);
  }
  tiling = GemmTiling{values[0], values[1], values[2], values[3], values[4]};
  return bf16 ? verifyGemmBf16Tiling(tiling) : verifyGemmTiling(tiling);
}

struct MatmulDims {
  int64_t batch, m, n, k;
};

MatmulDims matmulDims(const Shape &a, const Shape &b, bool ta, bool tb) {
  int64_t r = a.size();
  MatmulDims d;
  d.batch = 1;
  for (int64_t i = 0; i + 2 < r; ++i)
    d.batch *= a[i];
  d.m = ta ? a[r - 1] : a[r - 2];
  d.k = ta ? a[r - 2] : a[r - 1];
  d.n = tb ? b[b.size() - 2] : b[b.size() - 1];
  return d;
}

/// The product's checks shared by matmul and fused_matmul: inputs #0 and #1
/// multiply into output #0 (each stored in the heads layout where its flag
/// says so, MatmulLayout.h; matmul only), with an optional tiling. Returns
/// v.ok().
bool verifyProduct(Verifier &v, const Attrs &attrs, bool headsLayouts) {
  if (!v.minRank(in(0), 2) || !v.minRank(in(1), 2))
    return false;
  bool ta = attrs.flag("transpose_a"), tb = attrs.flag("transpose_b");
  bool ha = attrs.flag("heads_a"), hb = attrs.flag("heads_b"),
       hc = attrs.flag("heads_c");
  if (!headsLayouts && (ha || hb || hc))
    return v.fail("heads_a, heads_b and heads_c apply to matmul only");
  if ((ha && !v.minRank(in(0), 3)) || (hb && !v.minRank(in(1), 3)) ||
      (hc && !v.minRank(in(0), 3)))
    return false;
  const Shape a = logicalMatmulShape(v.shape(in(0)), ha),
              b = logicalMatmulShape(v.shape(in(1)), hb);
  int64_t ra = a.size(), rb = b.size();
  if (rb != 2 && rb != ra)
    return v.fail("input #1 must have rank 2 or the rank of input #0 (" +
                  std::to_string(ra) + "), got shape " + formatShape(b));
  if (rb == ra && !ha && !hb)
    for (int64_t i = 0; i + 2 < ra; ++i)
      v.dimEquals(in(1), i, a[i], "batch, as input #0");
  else if (rb == ra)
    for (int64_t i = 0; i + 2 < ra; ++i)
      if (a[i] != b[i])
        return v.fail("batch dimensions differ: input #0 reads as " +
                      formatShape(a) + ", input #1 as " + formatShape(b));
  int64_t kb = tb ? b[rb - 1] : b[rb - 2];
  MatmulDims d = matmulDims(a, b, ta, tb);
  if (v.ok() && d.k != kb)
    v.fail("contracting dimensions differ: input #0 has " +
           std::to_string(d.k) + ", input #1 has " + std::to_string(kb));
  Shape expected(a.begin(), a.end() - 2);
  expected.push_back(d.m);
  expected.push_back(d.n);
  v.hasShape(out(0), logicalMatmulShape(expected, hc));
  if (!v.ok())
    return false;
  GemmTiling tiling;
  bool present;
  std::string error = readTiling(attrs, attrs.flag("bf16"), tiling, present);
  if (!error.empty())
    return v.fail(error);
  return true;
}

/// The products of a matmul instruction: their sizes and where each finds
/// its matrices.
struct Products {
  MatmulDims d;
  MatrixLayout a, b, c;
  /// One tall GEMM does them all (a linear layer over every batch element,
  /// or a single product).
  bool tall = false;
};

Products matmulProducts(const Shape &as, const Shape &bs,
                        const OpAttrs &attrs) {
  bool ha = attrs.headsA, hb = attrs.headsB, hc = attrs.headsC;
  Shape la = logicalMatmulShape(as, ha);
  Products p;
  p.d = matmulDims(la, logicalMatmulShape(bs, hb), attrs.transposeA,
                   attrs.transposeB);
  bool shared = bs.size() == 2, heads = ha || hb || hc;
  int64_t group = heads ? la[la.size() - 3] : 1;
  p.a = matrixLayout(as, ha, false, group);
  p.b = matrixLayout(bs, hb, shared, group);
  Shape cs(la.begin(), la.end() - 2);
  cs.push_back(p.d.m);
  cs.push_back(p.d.n);
  p.c = matrixLayout(logicalMatmulShape(cs, hc), hc, false, group);
  p.tall = !heads && (p.d.batch == 1 || (shared && !attrs.transposeA));
  return p;
}

std::string verifyMatmul(const Descs &inputs, const Descs &outputs,
                         const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(2, 1) && v.dtypes() && verifyProduct(v, attrs, true);
  return v.error();
}

/// fused_matmul: the product of inputs #0 and #1, then the epilogue with
/// input #2 (a bias of one value per column, or the tensor relu_grad and
/// gelu_grad read); bias_relu and bias_gelu may write the pre-activation to
/// a second output.
std::string verifyFusedMatmul(const Descs &inputs, const Descs &outputs,
                              const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double code;
  if (!v.number("epilogue", true, code))
    return v.error();
  if (!isInt64(code) || code < 1 || code > strata_plan::kMaxEpilogue) {
    v.fail("attribute 'epilogue' must be an integer in [1, " +
           std::to_string(strata_plan::kMaxEpilogue) + "], got " +
           formatNumber(code));
    return v.error();
  }
  auto epilogue = static_cast<strata_plan::Epilogue>(code);
  size_t maxOutputs = strata_plan::epilogueHasPreActivation(epilogue) ? 2 : 1;
  size_t numInputs = epilogue == strata_plan::Epilogue::BiasResidual ? 4 : 3;
  if (outputs.size() < 1 || outputs.size() > maxOutputs)
    v.counts(numInputs, maxOutputs);
  else
    v.counts(numInputs, outputs.size());
  if (!v.dtypes() || !verifyProduct(v, attrs, false))
    return v.error();
  const Shape &c = v.shape(out(0));
  if (strata_plan::epilogueHasBias(epilogue))
    v.hasShape(in(2), {c.back()});
  if (!strata_plan::epilogueHasBias(epilogue) ||
      strata_plan::epilogueHasResidual(epilogue))
    v.sameShape(in(numInputs - 1), out(0));
  if (outputs.size() == 2)
    v.sameShape(out(1), out(0));
  return v.error();
}

/// A bf16 matmul: operands rounded to bf16 as the bf16 GEMM packs them,
/// products summed in f32, blocked by the tiling attributes where the plan
/// has them (else the path's defaults), then `epilogue` when given. Its
/// results do not depend on the thread count.
void runMatmulBf16(KernelContext &ctx, const Tensors &inputs, float *c,
                   const OpAttrs &attrs, const GemmEpilogue *epilogue) {
  // The verifier saw all five tiling attributes or none.
  GemmTiling given{attrs.mc, attrs.nc, attrs.kc, attrs.mr, attrs.nr};
  const GemmTiling *tiling = attrs.has(AttrId::Mc) ? &given : nullptr;
  bool ta = attrs.transposeA, tb = attrs.transposeB;
  Products p = matmulProducts(inputs[0].shape(), inputs[1].shape(), attrs);
  const MatmulDims &d = p.d;
  const float *a = inputs[0].f32(), *b = inputs[1].f32();
  if (p.tall) {
    detail::gemmBf16WithIsa(
        detail::defaultBf16Isa(), &ctx.pool, ta, tb, d.batch * d.m, d.n, d.k,
        1.0f, Bf16Operand::f32(a, p.a.ld), Bf16Operand::f32(b, p.b.ld), 0.0f, c,
        p.c.ld, tiling, epilogue);
    return;
  }
  auto product = [&](int64_t i, ThreadPool *pool) {
    GemmEpilogue shifted;
    if (epilogue)
      shifted = epilogue->shifted(p.c.offset(i));
    detail::gemmBf16WithIsa(
        detail::defaultBf16Isa(), pool, ta, tb, d.m, d.n, d.k, 1.0f,
        Bf16Operand::f32(a + p.a.offset(i), p.a.ld),
        Bf16Operand::f32(b + p.b.offset(i), p.b.ld), 0.0f, c + p.c.offset(i),
        p.c.ld, tiling, epilogue ? &shifted : nullptr);
  };
  // As in runMatmul: whole products per thread when the batch divides well
  // (the bits do not depend on the split).
  int threads = ctx.pool.size();
  if (threads > 1 && (d.batch >= 4 * threads || d.batch % threads == 0)) {
    ctx.pool.parallelFor(d.batch, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        product(i, nullptr);
    });
    return;
  }
  for (int64_t i = 0; i < d.batch; ++i)
    product(i, &ctx.pool);
}

/// C = op(A) op(B) for inputs #0 and #1 into `c`, then `epilogue` (when
/// given) on every tile of C once it is complete.
void runProduct(KernelContext &ctx, const Tensors &inputs, float *c,
                const OpAttrs &attrs, const GemmEpilogue *epilogue) {
  if (attrs.bf16)
    return runMatmulBf16(ctx, inputs, c, attrs, epilogue);
  // The verifier saw all five tiling attributes or none.
  GemmTiling tiling =
      attrs.has(AttrId::Mc)
          ? GemmTiling{attrs.mc, attrs.nc, attrs.kc, attrs.mr, attrs.nr}
          : ctx.gemm;
  bool ta = attrs.transposeA, tb = attrs.transposeB;
  Products p = matmulProducts(inputs[0].shape(), inputs[1].shape(), attrs);
  const MatmulDims &d = p.d;
  const float *a = inputs[0].f32(), *b = inputs[1].f32();
  // A linear layer over every batch element is one tall GEMM: same per-element
  // arithmetic, better blocking.
  if (p.tall) {
    gemmWithIsa(defaultGemmIsa(), &ctx.pool, tiling, ta, tb, d.batch * d.m, d.n,
                d.k, 1.0f, a, p.a.ld, b, p.b.ld, 0.0f, c, p.c.ld, epilogue);
    return;
  }
  auto product = [&](int64_t i, ThreadPool *pool) {
    GemmEpilogue shifted;
    if (epilogue)
      shifted = epilogue->shifted(p.c.offset(i));
    const GemmEpilogue *e = epilogue ? &shifted : nullptr;
    if (pool)
      gemmWithIsa(defaultGemmIsa(), pool, tiling, ta, tb, d.m, d.n, d.k, 1.0f,
                  a + p.a.offset(i), p.a.ld, b + p.b.offset(i), p.b.ld, 0.0f,
                  c + p.c.offset(i), p.c.ld, e);
    else
      gemmSerial(tiling, ta, tb, d.m, d.n, d.k, 1.0f, a + p.a.offset(i), p.a.ld,
                 b + p.b.offset(i), p.b.ld, 0.0f, c + p.c.offset(i), p.c.ld, e);
  };
  int threads = ctx.pool.size();
  // GEMMs are bit-identical however they are split, so pick the faster
  // split: whole products per thread when the batch divides well.
  if (threads > 1 && (d.batch >= 4 * threads || d.batch % threads == 0)) {
    ctx.pool.parallelFor(d.batch, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        product(i, nullptr);
    });
    return;
  }
  for (int64_t i = 0; i < d.batch; ++i)
    product(i, &ctx.pool);
}

void runMatmul(KernelContext &ctx, const Tensors &inputs,
               const Tensors &outputs, const OpAttrs &attrs) {
  runProduct(ctx, inputs, outputs[0].f32(), attrs, nullptr);
}

/// The product goes into the pre-activation output when there is one (the
/// epilogue then writes the activation to output #0), else into output #0.
void runFusedMatmul(KernelContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  GemmEpilogue epilogue;
  epilogue.kind = static_cast<strata_plan::Epilogue>(attrs.epilogue);
  int64_t n = outputs[0].shape().back();
  if (strata_plan::epilogueHasBias(epilogue.kind))
    epilogue.bias = inputs[2].f32();
  if (!strata_plan::epilogueHasBias(epilogue.kind) ||
      strata_plan::epilogueHasResidual(epilogue.kind)) {
    epilogue.aux = inputs.back().f32();
    epilogue.ldaux = n;
  }
  float *c = outputs[0].f32();
  if (outputs.size() == 2) {
    epilogue.act = outputs[0].f32();
    epilogue.ldact = n;
    c = outputs[1].f32();
  }
  runProduct(ctx, inputs, c, attrs, &epilogue);
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

std::string verifyUnary(const Descs &inputs, const Descs &outputs,
                        const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(1, 1) && v.dtypes() && v.sameShape(out(0), in(0));
  return v.error();
}

/// Two inputs and one output, all of the same shape.
std::string verifyBinary(const Descs &inputs, const Descs &outputs,
                         const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(2, 1) && v.dtypes() && v.sameShape(in(1), in(0)) &&
      v.sameShape(out(0), in(0));
  return v.error();
}

/// copy_into: two inputs and an output of one shape and one element type
/// (f32, or i32 for a carried value such as token ids).
std::string verifyCopyInto(const Descs &inputs, const Descs &outputs,
                           const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  bool i32 = !inputs.empty() && inputs[0].dtype == DType::I32;
  std::vector<Operand> ints;
  if (i32)
    ints = {in(0), in(1), out(0)};
  v.counts(2, 1) && v.dtypes(ints) && v.sameShape(in(1), in(0)) &&
      v.sameShape(out(0), in(0));
  return v.error();
}

template <typename Fn>
void elementwise(KernelContext &ctx, int64_t n, int64_t cost, Fn fn) {
  parallelFor(ctx.pool, n, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      fn(i);
  });
}

void runAdd(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
            const OpAttrs &) {
  const float *a = inputs[0].f32(), *b = inputs[1].f32();
  float *c = outputs[0].f32();
  parallelFor(ctx.pool, outputs[0].numel(), 1, [=](int64_t begin, int64_t end) {
    addArray(a + begin, b + begin, c + begin, end - begin);
  });
}

void runRelu(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &) {
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  parallelFor(ctx.pool, outputs[0].numel(), 1, [=](int64_t begin, int64_t end) {
    reluArray(x + begin, y + begin, end - begin);
  });
}

void runReluGrad(KernelContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &) {
  const float *dy = inputs[0].f32(), *x = inputs[1].f32();
  float *dx = outputs[0].f32();
  parallelFor(ctx.pool, outputs[0].numel(), 1, [=](int64_t begin, int64_t end) {
    reluGradArray(dy + begin, x + begin, dx + begin, end - begin);
  });
}

void runGelu(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &) {
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  parallelFor(ctx.pool, outputs[0].numel(), 10,
              [=](int64_t begin, int64_t end) {
                geluArray(x + begin, y + begin, end - begin);
              });
}

void runGeluGrad(KernelContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &) {
  const float *dy = inputs[0].f32(), *x = inputs[1].f32();
  float *dx = outputs[0].f32();
  parallelFor(ctx.pool, outputs[0].numel(), 12,
              [=](int64_t begin, int64_t end) {
                geluGradArray(dy + begin, x + begin, dx + begin, end - begin);
              });
}

//===----------------------------------------------------------------------===//
// bias_add and its gradient
//===----------------------------------------------------------------------===//

/// [outer, D, inner] view of a tensor around dimension `axis`.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};

AxisView axisView(const Shape &shape, int64_t axis) {
  AxisView view;
  for (int64_t i = 0; i < (int64_t)shape.size(); ++i) {
    if (i < axis)
      view.outer *= shape[i];
    else if (i == axis)
      view.dim = shape[i];
    else
      view.inner *= shape[i];
  }
  return view;
}

std::string verifyBiasAdd(const Descs &inputs, const Descs &outputs,
                          const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (!v.counts(2, 1) || !v.dtypes() || !v.minRank(in(0), 1))
    return v.error();
  int64_t axis;
  if (v.axis("axis", v.shape(in(0)).size(), axis, -1))
    v.hasShape(in(1), {v.shape(in(0))[axis]}) && v.sameShape(out(0), in(0));
  return v.error();
}

void runBiasAdd(KernelContext &ctx, const Tensors &inputs,
                const Tensors &outputs, const OpAttrs &attrs) {
  int64_t axis = attrs.axis;
  if (axis < 0)
    axis += inputs[0].rank();
  AxisView view = axisView(inputs[0].shape(), axis);
  const float *x = inputs[0].f32(), *bias = inputs[1].f32();
  float *y = outputs[0].f32();
  if (view.inner == 1) {
    int64_t d = view.dim;
    parallelFor(ctx.pool, view.outer, d, [=](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o)
        addArray(x + o * d, bias, y + o * d, d);
    });
    return;
  }
  int64_t inner = view.inner, d = view.dim;
  parallelFor(ctx.pool, view.outer * d, inner, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float bv = bias[r % d];
      for (int64_t i = 0; i < inner; ++i)
        y[r * inner + i] = x[r * inner + i] + bv;
    }
  });
}

std::string verifyBiasAddGrad(const Descs &inputs, const Descs &outputs,
                              const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (!v.counts(1, 1) || !v.dtypes() || !v.minRank(in(0), 1))
    return v.error();
  int64_t axis;
  if (v.axis("axis", v.shape(in(0)).size(), axis, -1))
    v.hasShape(out(0), {v.shape(in(0))[axis]});
  return v.error();
}

void runBiasAddGrad(KernelContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  int64_t axis = attrs.axis;
  if (axis < 0)
    axis += inputs[0].rank();
  AxisView view = axisView(inputs[0].shape(), axis);
  const float *dy = inputs[0].f32();
  float *db = outputs[0].f32();
  int64_t outer = view.outer, d = view.dim, inner = view.inner;
  // Each thread owns a range of bias entries and sums them over the other
  // dimensions in a fixed order.
  parallelFor(ctx.pool, d, outer * inner, [=](int64_t begin, int64_t end) {
    if (inner == 1) {
      columnSumsArray(dy + begin, outer, d, db + begin, end - begin);
      return;
    }
    for (int64_t j = begin; j < end; ++j) {
      float acc = 0.0f;
      for (int64_t o = 0; o < outer; ++o)
        acc += sumFloats(dy + (o * d + j) * inner, inner);
      db[j] = acc;
    }
  });
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

/// reshape and flatten: a copy. Token ids may be reshaped too, so i32 is
/// accepted when input and output agree.
std::string verifyCopyLike(const Descs &inputs, const Descs &outputs,
                           const Attrs &attrs, bool flatten) {
  Verifier v(inputs, outputs, attrs);
  if (!v.counts(1, 1))
    return v.error();
  if (inputs[0].dtype != outputs[0].dtype)
    v.fail(std::string("output #0 must be ") + dtypeName(inputs[0].dtype) +
           " like input #0, got " + dtypeName(outputs[0].dtype));
  if (flatten) {
    if (v.minRank(in(0), 1)) {
      const Shape &x = v.shape(in(0));
      v.hasShape(out(0), {x[0], numElements(x) / std::max<int64_t>(x[0], 1)});
    }
    return v.error();
  }
  if (v.ok() && inputs[0].numel() != outputs[0].numel())
    v.fail("output #0 must have " + std::to_string(inputs[0].numel()) +
           " elements like input #0, got shape " +
           formatShape(outputs[0].shape));
  return v.error();
}

std::string verifyReshape(const Descs &inputs, const Descs &outputs,
                          const Attrs &attrs) {
  return verifyCopyLike(inputs, outputs, attrs, false);
}

std::string verifyFlatten(const Descs &inputs, const Descs &outputs,
                          const Attrs &attrs) {
  return verifyCopyLike(inputs, outputs, attrs, true);
}

void runCopy(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &) {
  const char *src = static_cast<const char *>(inputs[0].data);
  char *dst = static_cast<char *>(outputs[0].data);
  if (src == dst)
    return;
  int64_t bytes = outputs[0].desc.bytes();
  constexpr int64_t kBlock = 1 << 16;
  parallelFor(ctx.pool, (bytes + kBlock - 1) / kBlock, kBlock / 4,
              [=](int64_t begin, int64_t end) {
                int64_t lo = begin * kBlock, hi = std::min(bytes, end * kBlock);
                std::memcpy(dst + lo, src + lo, hi - lo);
              });
}

std::string verifyTranspose(const Descs &inputs, const Descs &outputs,
                            const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (!v.counts(1, 1))
    return v.error();
  if (inputs[0].dtype != outputs[0].dtype) {
    v.fail(std::string("output #0 must be ") + dtypeName(inputs[0].dtype) +
           " like input #0, got " + dtypeName(outputs[0].dtype));
    return v.error();
  }
  const Shape &x = v.shape(in(0));
  auto it = attrs.lists.find("permutation");
  if (it == attrs.lists.end()) {
    v.fail("missing attribute 'permutation'");
    return v.error();
  }
  const std::vector<int64_t> &perm = it->second;
  std::vector<bool> seen(x.size(), false);
  bool valid = perm.size() == x.size();
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= (int64_t)x.size() || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid) {
    v.fail("attribute 'permutation' must be a permutation of [0, " +
           std::to_string(x.size()) + "), got " + formatShape(perm));
    return v.error();
  }
  Shape expected;
  for (int64_t p : perm)
    expected.push_back(x[p]);
  v.hasShape(out(0), expected);
  return v.error();
}

void runTranspose(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  const std::vector<int64_t> &perm = attrs.permutation;
  const Shape &xs = inputs[0].shape();
  const Shape &ys = outputs[0].shape();
  int64_t rank = xs.size();
  if (rank == 0 || outputs[0].numel() == 0) {
    if (rank == 0)
      runCopy(ctx, inputs, outputs, attrs);
    return;
  }
  std::vector<int64_t> xStride(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    xStride[i] = xStride[i + 1] * xs[i + 1];
  // Input stride of each output dimension.
  std::vector<int64_t> stride(rank);
  for (int64_t i = 0; i < rank; ++i)
    stride[i] = xStride[perm[i]];
  int64_t rowLen = ys[rank - 1], innerStride = stride[rank - 1];
  int64_t rows = outputs[0].numel() / rowLen;
  const uint32_t *x = static_cast<const uint32_t *>(inputs[0].data);
  uint32_t *y = static_cast<uint32_t *>(outputs[0].data);
  parallelFor(ctx.pool, rows, rowLen, [&](int64_t begin, int64_t end) {
    // Decompose the first row index into output coordinates, then step.
    std::vector<int64_t> idx(rank, 0);
    int64_t rem = begin;
    for (int64_t i = rank - 2; i >= 0; --i) {
      idx[i] = rem % ys[i];
      rem /= ys[i];
    }
    for (int64_t r = begin; r < end; ++r) {
      int64_t offset = 0;
      for (int64_t i = 0; i + 1 < rank; ++i)
        offset += idx[i] * stride[i];
      uint32_t *dst = y + r * rowLen;
      if (innerStride == 1)
        std::memcpy(dst, x + offset, rowLen * sizeof(uint32_t));
      else
        for (int64_t j = 0; j < rowLen; ++j)
          dst[j] = x[offset + j * innerStride];
      for (int64_t i = rank - 2; i >= 0; --i) {
        if (++idx[i] < ys[i])
          break;
        idx[i] = 0;
      }
    }
  });
}

//===----------------------------------------------------------------------===//
// fill
//===----------------------------------------------------------------------===//

std::string verifyFill(const Descs &inputs, const Descs &outputs,
                       const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double value;
  v.counts(0, 1) && v.number("value", true, value);
  return v.error();
}

void runFill(KernelContext &ctx, const Tensors &, const Tensors &outputs,
             const OpAttrs &attrs) {
  double value = attrs.value;
  int64_t n = outputs[0].numel();
  if (outputs[0].desc.dtype == DType::I32) {
    int32_t *y = outputs[0].i32();
    int32_t v = (int32_t)value;
    elementwise(ctx, n, 1, [=](int64_t i) { y[i] = v; });
    return;
  }
  float *y = outputs[0].f32();
  float v = (float)value;
  elementwise(ctx, n, 1, [=](int64_t i) { y[i] = v; });
}

//===----------------------------------------------------------------------===//
// scale, micro_batch
//===----------------------------------------------------------------------===//

std::string verifyScale(const Descs &inputs, const Descs &outputs,
                        const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double factor;
  v.counts(1, 1) && v.dtypes() && v.sameShape(out(0), in(0)) &&
      v.number("factor", true, factor);
  return v.error();
}

void runScale(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
              const OpAttrs &attrs) {
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  float factor = static_cast<float>(attrs.factor);
  elementwise(ctx, outputs[0].numel(), 1,
              [=](int64_t i) { y[i] = x[i] * factor; });
}

/// Block `index` of `count` equal blocks of rows (dimension 0).
std::string verifyMicroBatch(const Descs &inputs, const Descs &outputs,
                             const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double index = -1, count = 0;
  if (!v.counts(1, 1) || !v.minRank(in(0), 1) ||
      !v.number("index", true, index) ||
      !v.positiveNumber("count", true, count))
    return v.error();
  if (index < 0 || index >= count || !isInt64(index) || !isInt64(count))
    v.fail("attribute 'index' must be an integer in [0, count), got " +
           formatNumber(index));
  else if (inputs[0].dtype != outputs[0].dtype)
    v.fail("out[0] must have the dtype of in[0]");
  else if (inputs[0].shape[0] % static_cast<int64_t>(count) != 0)
    v.fail("in[0] has " + std::to_string(inputs[0].shape[0]) +
           " rows, which do not split into " + formatNumber(count) +
           " equal micro-batches");
  else {
    Shape expected = inputs[0].shape;
    expected[0] /= static_cast<int64_t>(count);
    v.hasShape(out(0), expected);
  }
  return v.error();
}

void runMicroBatch(KernelContext &, const Tensors &inputs,
                   const Tensors &outputs, const OpAttrs &attrs) {
  int64_t bytes = outputs[0].desc.bytes();
  int64_t index = attrs.index;
  std::memcpy(outputs[0].data,
              static_cast<const char *>(inputs[0].data) + index * bytes,
              static_cast<size_t>(bytes));
}

} // namespace

void appendDenseKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::Matmul, verifyMatmul, runMatmul});
  kernels.push_back({OpCode::FusedMatmul, verifyFusedMatmul, runFusedMatmul});
  kernels.push_back({OpCode::Add, verifyBinary, runAdd});
  kernels.push_back({OpCode::Relu, verifyUnary, runRelu});
  kernels.push_back({OpCode::ReluGrad, verifyBinary, runReluGrad});
  kernels.push_back({OpCode::Gelu, verifyUnary, runGelu});
  kernels.push_back({OpCode::GeluGrad, verifyBinary, runGeluGrad});
  kernels.push_back({OpCode::BiasAdd, verifyBiasAdd, runBiasAdd});
  kernels.push_back({OpCode::BiasAddGrad, verifyBiasAddGrad, runBiasAddGrad});
  kernels.push_back({OpCode::Reshape, verifyReshape, runCopy});
  kernels.push_back({OpCode::Flatten, verifyFlatten, runCopy});
  // copy_into: a weight version kept for the asynchronous pipeline
  // schedules, or a value carried over to the next step; its output is the
  // buffer of input 1 (the state), overwritten by input 0.
  kernels.push_back({OpCode::CopyInto, verifyCopyInto, runCopy});
  kernels.push_back({OpCode::Transpose, verifyTranspose, runTranspose});
  kernels.push_back({OpCode::Fill, verifyFill, runFill});
  kernels.push_back({OpCode::Scale, verifyScale, runScale});
  kernels.push_back({OpCode::MicroBatch, verifyMicroBatch, runMicroBatch});
}

} // namespace strata::rt::detail
