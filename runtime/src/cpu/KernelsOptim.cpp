//===- KernelsOptim.cpp - Optimizer update kernels ------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Updates run in place: the executor passes the parameter and state buffers
// as both inputs and outputs. Every element is updated independently, so the
// results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace strata::rt::detail {
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

void runSgd(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
            const OpAttrs &attrs) {
  const float *p = inputs[0].f32(), *g = inputs[1].f32(),
              *vel = inputs[2].f32();
  float *pOut = outputs[0].f32(), *velOut = outputs[1].f32();
  float lr = (float)attrs.lr, momentum = (float)attrs.momentum,
        decay = (float)attrs.weightDecay;
  parallelFor(ctx.pool, inputs[0].numel(), 4, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float pi = p[i];
      float vi = momentum * vel[i] + (g[i] + decay * pi);
      velOut[i] = vi;
      pOut[i] = pi - lr * vi;
    }
  });
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
      !(updates >= 1 && update >= 0 && update < updates))
    v.fail("attributes 'update' and 'updates' must satisfy 0 <= update < "
           "updates, got " +
           formatNumber(update) + " of " + formatNumber(updates));
  return v.error();
}

void runAdam(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &attrs) {
  const float *p = inputs[0].f32(), *g = inputs[1].f32(), *m = inputs[2].f32(),
              *v = inputs[3].f32();
  float *pOut = outputs[0].f32(), *mOut = outputs[1].f32(),
        *vOut = outputs[2].f32();
  int32_t stepInput = inputs[4].i32()[0];
  if (stepInput < 1)
    throw std::runtime_error("adam_update: step must be at least 1, got " +
                             std::to_string(stepInput));
  // Several updates per step (asynchronous pipeline schedules): t counts
  // updates.
  int64_t step = (int64_t(stepInput) - 1) * attrs.updates + attrs.update + 1;
  double beta1 = attrs.beta1, beta2 = attrs.beta2;
  float lr = (float)attrs.lr, epsilon = (float)attrs.epsilon,
        decay = (float)attrs.weightDecay;
  bool decoupled = attrs.decoupled;
  float b1 = (float)beta1, b2 = (float)beta2;
  float c1 = (float)(1.0 - beta1), c2 = (float)(1.0 - beta2);
  // Bias corrections in double: 1 - beta^t loses digits in float.
  float invBc1 = (float)(1.0 / (1.0 - std::pow(beta1, (double)step)));
  float invBc2 = (float)(1.0 / (1.0 - std::pow(beta2, (double)step)));
  parallelFor(ctx.pool, inputs[0].numel(), 12, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float pi = p[i], gi = g[i];
      if (decoupled)
        pi = pi - lr * decay * pi;
      else
        gi = gi + decay * pi;
      float mi = b1 * m[i] + c1 * gi;
      float vi = b2 * v[i] + c2 * gi * gi;
      mOut[i] = mi;
      vOut[i] = vi;
      pOut[i] = pi - lr * (mi * invBc1) / (std::sqrt(vi * invBc2) + epsilon);
    }
  });
}

std::string verifyCopyInto(const Descs &inputs, const Descs &outputs,
                           const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(2, 1) && v.dtypes() && v.sameShape(in(1), in(0)) &&
      v.sameShape(out(0), in(0));
  return v.error();
}

/// A weight version kept for the asynchronous pipeline schedules: the
/// output is the buffer of input 1 (the state), overwritten by input 0.
void runCopyInto(KernelContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &) {
  const float *source = inputs[0].f32();
  float *dest = outputs[0].f32();
  if (source == dest)
    return;
  parallelFor(ctx.pool, inputs[0].numel(), 1, [=](int64_t begin, int64_t end) {
    std::memcpy(dest + begin, source + begin,
                static_cast<size_t>(end - begin) * sizeof(float));
  });
}

} // namespace

void appendOptimKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::SgdUpdate, verifySgd, runSgd});
  kernels.push_back({OpCode::AdamUpdate, verifyAdam, runAdam});
  kernels.push_back({OpCode::CopyInto, verifyCopyInto, runCopyInto});
}

} // namespace strata::rt::detail
