//===- KernelsOptim.cpp - Optimizer update kernels ------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Updates run in place: the executor passes the parameter and state buffers
// as both inputs and outputs. Every element is updated independently, so the
// results do not depend on the thread count, and a multi-tensor group (the
// updates of consecutive instructions sharing a `multi_tensor` id) runs as
// one parallel loop over all its tensors' elements with the same results.
//
// The loops come in three instruction sets chosen at run time like the GEMM's
// (detail::defaultGemmIsa(); the library is built without -march flags): the
// scalar loop, AVX2 and AVX-512. They are bit-identical: each computes the
// same IEEE operations (multiply, add, subtract, divide, square root, all
// correctly rounded) in the same order. Nothing is contracted into a fused
// multiply-add: the scalar loop is compiled for the baseline x86-64, which
// has none, and clang's default -ffp-contract=on fuses only within one
// source expression, which the intrinsics never form (the unit tests compare
// every set against the scalar loop bit for bit).
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"
#include "OptimInternal.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#define STRATA_OPTIM_X86 1
#define STRATA_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define STRATA_AVX2 __attribute__((target("avx2,fma")))
#else
#define STRATA_OPTIM_X86 0
#endif

namespace strata::rt::detail {

SgdConstants sgdConstants(const OpAttrs &attrs) {
  return {(float)attrs.lr, (float)attrs.momentum, (float)attrs.weightDecay};
}

int64_t adamUpdateCount(const OpAttrs &attrs, int32_t step) {
  return (int64_t(step) - 1) * attrs.updates + attrs.update + 1;
}

AdamConstants adamConstants(const OpAttrs &attrs, int32_t step) {
  AdamConstants k;
  double t = (double)adamUpdateCount(attrs, step);
  double beta1 = attrs.beta1, beta2 = attrs.beta2;
  k.lr = (float)attrs.lr;
  k.epsilon = (float)attrs.epsilon;
  k.decay = (float)attrs.weightDecay;
  k.lrDecay = k.lr * k.decay;
  k.decoupled = attrs.decoupled;
  k.b1 = (float)beta1;
  k.b2 = (float)beta2;
  k.c1 = (float)(1.0 - beta1);
  k.c2 = (float)(1.0 - beta2);
  k.invBc1 = (float)(1.0 / (1.0 - std::pow(beta1, t)));
  k.invBc2 = (float)(1.0 / (1.0 - std::pow(beta2, t)));
  return k;
}

namespace {

//===----------------------------------------------------------------------===//
// Scalar loops (the reference arithmetic)
//===----------------------------------------------------------------------===//

void sgdScalar(const SgdConstants &k, const float *p, const float *g,
               const float *vel, float *pOut, float *velOut, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float pi = p[i];
    float vi = k.momentum * vel[i] + (g[i] + k.decay * pi);
    velOut[i] = vi;
    pOut[i] = pi - k.lr * vi;
  }
}

void adamScalar(const AdamConstants &k, const float *p, const float *g,
                const float *m, const float *v, float *pOut, float *mOut,
                float *vOut, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float pi = p[i], gi = g[i];
    if (k.decoupled)
      pi = pi - k.lrDecay * pi;
    else
      gi = gi + k.decay * pi;
    float mi = k.b1 * m[i] + k.c1 * gi;
    float vi = k.b2 * v[i] + k.c2 * gi * gi;
    mOut[i] = mi;
    vOut[i] = vi;
    pOut[i] =
        pi - k.lr * (mi * k.invBc1) / (std::sqrt(vi * k.invBc2) + k.epsilon);
  }
}

#if STRATA_OPTIM_X86

//===----------------------------------------------------------------------===//
// AVX-512: 16 lanes, the tail masked
//===----------------------------------------------------------------------===//

STRATA_AVX512 void sgdAvx512(const SgdConstants &k, const float *p,
                             const float *g, const float *vel, float *pOut,
                             float *velOut, int64_t n) {
  const __m512 lr = _mm512_set1_ps(k.lr), mom = _mm512_set1_ps(k.momentum),
               decay = _mm512_set1_ps(k.decay);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mask = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    __m512 pi = _mm512_maskz_loadu_ps(mask, p + i);
    __m512 gi = _mm512_maskz_loadu_ps(mask, g + i);
    __m512 veli = _mm512_maskz_loadu_ps(mask, vel + i);
    __m512 vi = _mm512_add_ps(_mm512_mul_ps(mom, veli),
                              _mm512_add_ps(gi, _mm512_mul_ps(decay, pi)));
    _mm512_mask_storeu_ps(velOut + i, mask, vi);
    _mm512_mask_storeu_ps(pOut + i, mask,
                          _mm512_sub_ps(pi, _mm512_mul_ps(lr, vi)));
  }
}

STRATA_AVX512 void adamAvx512(const AdamConstants &k, const float *p,
                              const float *g, const float *m, const float *v,
                              float *pOut, float *mOut, float *vOut,
                              int64_t n) {
  const __m512 lr = _mm512_set1_ps(k.lr), eps = _mm512_set1_ps(k.epsilon),
               decay = _mm512_set1_ps(k.decay),
               lrDecay = _mm512_set1_ps(k.lrDecay), b1 = _mm512_set1_ps(k.b1),
               b2 = _mm512_set1_ps(k.b2), c1 = _mm512_set1_ps(k.c1),
               c2 = _mm512_set1_ps(k.c2), inv1 = _mm512_set1_ps(k.invBc1),
               inv2 = _mm512_set1_ps(k.invBc2);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 mask = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    __m512 pi = _mm512_maskz_loadu_ps(mask, p + i);
    __m512 gi = _mm512_maskz_loadu_ps(mask, g + i);
    if (k.decoupled)
      pi = _mm512_sub_ps(pi, _mm512_mul_ps(lrDecay, pi));
    else
      gi = _mm512_add_ps(gi, _mm512_mul_ps(decay, pi));
    __m512 mi =
        _mm512_add_ps(_mm512_mul_ps(b1, _mm512_maskz_loadu_ps(mask, m + i)),
                      _mm512_mul_ps(c1, gi));
    __m512 vi =
        _mm512_add_ps(_mm512_mul_ps(b2, _mm512_maskz_loadu_ps(mask, v + i)),
                      _mm512_mul_ps(_mm512_mul_ps(c2, gi), gi));
    _mm512_mask_storeu_ps(mOut + i, mask, mi);
    _mm512_mask_storeu_ps(vOut + i, mask, vi);
    __m512 denom = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vi, inv2)), eps);
    __m512 step =
        _mm512_div_ps(_mm512_mul_ps(lr, _mm512_mul_ps(mi, inv1)), denom);
    _mm512_mask_storeu_ps(pOut + i, mask, _mm512_sub_ps(pi, step));
  }
}

//===----------------------------------------------------------------------===//
// AVX2: 8 lanes, the tail through a padded block
//===----------------------------------------------------------------------===//

STRATA_AVX2 inline void sgd256(const SgdConstants &k, const float *p,
                               const float *g, const float *vel, float *pOut,
                               float *velOut) {
  __m256 pi = _mm256_loadu_ps(p);
  __m256 vi = _mm256_add_ps(
      _mm256_mul_ps(_mm256_set1_ps(k.momentum), _mm256_loadu_ps(vel)),
      _mm256_add_ps(_mm256_loadu_ps(g),
                    _mm256_mul_ps(_mm256_set1_ps(k.decay), pi)));
  _mm256_storeu_ps(velOut, vi);
  _mm256_storeu_ps(pOut,
                   _mm256_sub_ps(pi, _mm256_mul_ps(_mm256_set1_ps(k.lr), vi)));
}

STRATA_AVX2 void sgdAvx2(const SgdConstants &k, const float *p, const float *g,
                         const float *vel, float *pOut, float *velOut,
                         int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    sgd256(k, p + i, g + i, vel + i, pOut + i, velOut + i);
  if (i == n)
    return;
  alignas(32) float block[5][8] = {};
  for (int64_t j = i; j < n; ++j) {
    block[0][j - i] = p[j];
    block[1][j - i] = g[j];
    block[2][j - i] = vel[j];
  }
  sgd256(k, block[0], block[1], block[2], block[3], block[4]);
  for (int64_t j = i; j < n; ++j) {
    pOut[j] = block[3][j - i];
    velOut[j] = block[4][j - i];
  }
}

STRATA_AVX2 inline void adam256(const AdamConstants &k, const float *p,
                                const float *g, const float *m, const float *v,
                                float *pOut, float *mOut, float *vOut) {
  __m256 pi = _mm256_loadu_ps(p), gi = _mm256_loadu_ps(g);
  if (k.decoupled)
    pi = _mm256_sub_ps(pi, _mm256_mul_ps(_mm256_set1_ps(k.lrDecay), pi));
  else
    gi = _mm256_add_ps(gi, _mm256_mul_ps(_mm256_set1_ps(k.decay), pi));
  __m256 mi =
      _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(k.b1), _mm256_loadu_ps(m)),
                    _mm256_mul_ps(_mm256_set1_ps(k.c1), gi));
  __m256 vi =
      _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(k.b2), _mm256_loadu_ps(v)),
                    _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(k.c2), gi), gi));
  _mm256_storeu_ps(mOut, mi);
  _mm256_storeu_ps(vOut, vi);
  __m256 denom =
      _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vi, _mm256_set1_ps(k.invBc2))),
                    _mm256_set1_ps(k.epsilon));
  __m256 step =
      _mm256_div_ps(_mm256_mul_ps(_mm256_set1_ps(k.lr),
                                  _mm256_mul_ps(mi, _mm256_set1_ps(k.invBc1))),
                    denom);
  _mm256_storeu_ps(pOut, _mm256_sub_ps(pi, step));
}

STRATA_AVX2 void adamAvx2(const AdamConstants &k, const float *p,
                          const float *g, const float *m, const float *v,
                          float *pOut, float *mOut, float *vOut, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    adam256(k, p + i, g + i, m + i, v + i, pOut + i, mOut + i, vOut + i);
  if (i == n)
    return;
  alignas(32) float block[7][8] = {};
  for (int64_t j = i; j < n; ++j) {
    block[0][j - i] = p[j];
    block[1][j - i] = g[j];
    block[2][j - i] = m[j];
    block[3][j - i] = v[j];
  }
  adam256(k, block[0], block[1], block[2], block[3], block[4], block[5],
          block[6]);
  for (int64_t j = i; j < n; ++j) {
    pOut[j] = block[4][j - i];
    mOut[j] = block[5][j - i];
    vOut[j] = block[6][j - i];
  }
}

#endif // STRATA_OPTIM_X86

} // namespace

void sgdLoop(GemmIsa isa, const SgdConstants &k, const float *p, const float *g,
             const float *vel, float *pOut, float *velOut, int64_t n) {
#if STRATA_OPTIM_X86
  if (isa == GemmIsa::Avx512 && gemmIsaSupported(isa))
    return sgdAvx512(k, p, g, vel, pOut, velOut, n);
  if (isa == GemmIsa::Avx2 && gemmIsaSupported(isa))
    return sgdAvx2(k, p, g, vel, pOut, velOut, n);
#endif
  (void)isa;
  sgdScalar(k, p, g, vel, pOut, velOut, n);
}

void adamLoop(GemmIsa isa, const AdamConstants &k, const float *p,
              const float *g, const float *m, const float *v, float *pOut,
              float *mOut, float *vOut, int64_t n) {
#if STRATA_OPTIM_X86
  if (isa == GemmIsa::Avx512 && gemmIsaSupported(isa))
    return adamAvx512(k, p, g, m, v, pOut, mOut, vOut, n);
  if (isa == GemmIsa::Avx2 && gemmIsaSupported(isa))
    return adamAvx2(k, p, g, m, v, pOut, mOut, vOut, n);
#endif
  (void)isa;
  adamScalar(k, p, g, m, v, pOut, mOut, vOut, n);
}

namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

std::string verifySgd(const Descs &inputs, const Descs &outputs,
                      const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double lr, momentum, decay;
  v.counts(3, 2) && v.dtypes() && v.sameShape(in(1), in(0)) &&
      v.sameShape(in(2), in(0)) && v.sameShape(out(0), in(0)) &&
      v.sameShape(out(1), in(0)) && v.number("lr", true, lr) &&
      v.number("momentum", false, momentum) &&
      v.number("weight_decay", false, decay);
  return v.error();
}

std::string verifyAdam(const Descs &inputs, const Descs &outputs,
                       const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double lr, beta1, beta2, epsilon, decay;
  if (!v.counts(5, 3) || !v.dtypes({in(4)}))
    return v.error();
  for (int i = 1; i < 4; ++i)
    v.sameShape(in(i), in(0));
  for (int i = 0; i < 3; ++i)
    v.sameShape(out(i), in(0));
  v.scalar(in(4)) && v.number("lr", true, lr) &&
      v.number("beta1", false, beta1, 0.9) &&
      v.number("beta2", false, beta2, 0.999) &&
      v.number("epsilon", false, epsilon, 1e-8) &&
      v.number("weight_decay", false, decay);
  if (v.ok() && !(beta1 >= 0 && beta1 < 1))
    v.fail("attribute 'beta1' must be in [0, 1), got " + formatNumber(beta1));
  if (v.ok() && !(beta2 >= 0 && beta2 < 1))
    v.fail("attribute 'beta2' must be in [0, 1), got " + formatNumber(beta2));
  if (v.ok() && epsilon < 0)
    v.fail("attribute 'epsilon' must be non-negative, got " +
           formatNumber(epsilon));
  double update = 0, updates = 1;
  if (v.ok() && v.number("update", false, update, 0) &&
      v.number("updates", false, updates, 1) &&
      !(updates >= 1 && update >= -updates && update < updates))
    v.fail("attributes 'update' and 'updates' must satisfy -updates <= "
           "update < updates, got " +
           formatNumber(update) + " of " + formatNumber(updates));
  return v.error();
}

/// The step counter of an adam_update (input #4), checked.
int32_t adamStep(const Tensors &inputs) {
  int32_t step = inputs[4].i32()[0];
  if (step < 1)
    throw std::runtime_error("adam_update: step must be at least 1, got " +
                             std::to_string(step));
  return step;
}

/// Elements per item of a multi-tensor loop: 16K floats, 64 KiB per array.
constexpr int64_t kChunk = 1 << 14;

/// One chunk of one tensor of a multi-tensor group.
struct Chunk {
  size_t call;
  int64_t begin, end;
};

/// Cuts every call's tensor (of input #0's size) into chunks of at most
/// kChunk elements, in call order.
std::vector<Chunk> chunksOf(const std::vector<KernelCall> &calls) {
  std::vector<Chunk> chunks;
  for (size_t c = 0; c < calls.size(); ++c) {
    int64_t n = calls[c].inputs[0].numel();
    for (int64_t b = 0; b < n; b += kChunk)
      chunks.push_back({c, b, std::min(n, b + kChunk)});
  }
  return chunks;
}

void runSgd(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
            const OpAttrs &attrs) {
  const float *p = inputs[0].f32(), *g = inputs[1].f32(),
              *vel = inputs[2].f32();
  float *pOut = outputs[0].f32(), *velOut = outputs[1].f32();
  SgdConstants k = sgdConstants(attrs);
  GemmIsa isa = defaultGemmIsa();
  parallelFor(ctx.pool, inputs[0].numel(), 4, [=](int64_t begin, int64_t end) {
    sgdLoop(isa, k, p + begin, g + begin, vel + begin, pOut + begin,
            velOut + begin, end - begin);
  });
}

void runSgdGroup(KernelContext &ctx, const std::vector<KernelCall> &calls) {
  std::vector<SgdConstants> constants;
  for (const KernelCall &call : calls)
    constants.push_back(sgdConstants(*call.attrs));
  std::vector<Chunk> chunks = chunksOf(calls);
  GemmIsa isa = defaultGemmIsa();
  parallelFor(ctx.pool, chunks.size(), 4 * kChunk,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  const Chunk &c = chunks[i];
                  const KernelCall &call = calls[c.call];
                  int64_t b = c.begin;
                  sgdLoop(isa, constants[c.call], call.inputs[0].f32() + b,
                          call.inputs[1].f32() + b, call.inputs[2].f32() + b,
                          call.outputs[0].f32() + b, call.outputs[1].f32() + b,
                          c.end - b);
                }
              });
}

void runAdam(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &attrs) {
  const float *p = inputs[0].f32(), *g = inputs[1].f32(), *m = inputs[2].f32(),
              *v = inputs[3].f32();
  float *pOut = outputs[0].f32(), *mOut = outputs[1].f32(),
        *vOut = outputs[2].f32();
  AdamConstants k = adamConstants(attrs, adamStep(inputs));
  GemmIsa isa = defaultGemmIsa();
  parallelFor(ctx.pool, inputs[0].numel(), 12, [=](int64_t begin, int64_t end) {
    adamLoop(isa, k, p + begin, g + begin, m + begin, v + begin, pOut + begin,
             mOut + begin, vOut + begin, end - begin);
  });
}

void runAdamGroup(KernelContext &ctx, const std::vector<KernelCall> &calls) {
  std::vector<AdamConstants> constants;
  for (const KernelCall &call : calls)
    constants.push_back(adamConstants(*call.attrs, adamStep(call.inputs)));
  std::vector<Chunk> chunks = chunksOf(calls);
  GemmIsa isa = defaultGemmIsa();
  parallelFor(
      ctx.pool, chunks.size(), 12 * kChunk, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const Chunk &c = chunks[i];
          const Tensors &in = calls[c.call].inputs;
          const Tensors &out = calls[c.call].outputs;
          int64_t b = c.begin;
          adamLoop(isa, constants[c.call], in[0].f32() + b, in[1].f32() + b,
                   in[2].f32() + b, in[3].f32() + b, out[0].f32() + b,
                   out[1].f32() + b, out[2].f32() + b, c.end - b);
        }
      });
}

} // namespace

void appendOptimKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::SgdUpdate, verifySgd, runSgd, runSgdGroup});
  kernels.push_back({OpCode::AdamUpdate, verifyAdam, runAdam, runAdamGroup});
}

} // namespace strata::rt::detail
