//===- KernelsOptimTest.cpp - Optimizer updates against float64 -----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Three in-place steps (the same buffers as inputs and outputs, as the
// executor passes them) against a hand-written double reference; the f32
// state must stay within 1e-5 relative + 1e-6 absolute.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <cmath>
#include <stdexcept>

namespace strata::rt::test {
namespace {

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;

TEST(KernelsOptim, SgdMomentumAndWeightDecay) {
  Random rng(51);
  Shape s{7, 5};
  HostTensor p = rng.tensor(s), vel = f32(s);
  std::vector<double> pRef = p.asDouble(), vRef(p.f.size(), 0.0);
  double lr = 0.1, momentum = 0.9, decay = 0.01;
  Attrs attrs =
      makeAttrs({{"lr", lr}, {"momentum", momentum}, {"weight_decay", decay}});
  for (int step = 1; step <= 3; ++step) {
    HostTensor g = rng.tensor(s);
    runKernel("sgd_update", {&p, &g, &vel}, {&p, &vel}, attrs);
    for (size_t e = 0; e < pRef.size(); ++e) {
      vRef[e] = momentum * vRef[e] + (g.f[e] + decay * pRef[e]);
      pRef[e] -= lr * vRef[e];
    }
    expectClose(p.f, pRef, kRtol, kAtol,
                "sgd param, step " + std::to_string(step));
    expectClose(vel.f, vRef, kRtol, kAtol,
                "sgd velocity, step " + std::to_string(step));
  }
}

TEST(KernelsOptim, SgdPlain) {
  Random rng(52);
  HostTensor p = rng.tensor({9}), g = rng.tensor({9}), vel = f32({9});
  std::vector<double> expected(9);
  for (int e = 0; e < 9; ++e)
    expected[e] = (double)p.f[e] - 0.5 * g.f[e];
  runKernel("sgd_update", {&p, &g, &vel}, {&p, &vel}, makeAttrs({{"lr", 0.5}}));
  expectClose(p.f, expected, kRtol, kAtol, "sgd without momentum");
}

void checkAdam(bool decoupled) {
  Random rng(decoupled ? 53 : 54);
  Shape s{4, 6};
  HostTensor p = rng.tensor(s), m = f32(s), v = f32(s), step = i32({});
  std::vector<double> pRef = p.asDouble(), mRef(p.f.size(), 0.0),
                      vRef(p.f.size(), 0.0);
  double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, decay = 0.1;
  Attrs attrs = makeAttrs({{"lr", lr},
                           {"beta1", b1},
                           {"beta2", b2},
                           {"epsilon", eps},
                           {"weight_decay", decay},
                           {"decoupled", decoupled}});
  for (int t = 1; t <= 3; ++t) {
    HostTensor g = rng.tensor(s);
    step.i = {t};
    runKernel("adam_update", {&p, &g, &m, &v, &step}, {&p, &m, &v}, attrs);
    for (size_t e = 0; e < pRef.size(); ++e) {
      double grad = g.f[e];
      if (decoupled)
        pRef[e] -= lr * decay * pRef[e];
      else
        grad += decay * pRef[e];
      mRef[e] = b1 * mRef[e] + (1 - b1) * grad;
      vRef[e] = b2 * vRef[e] + (1 - b2) * grad * grad;
      double mHat = mRef[e] / (1 - std::pow(b1, t));
      double vHat = vRef[e] / (1 - std::pow(b2, t));
      pRef[e] -= lr * mHat / (std::sqrt(vHat) + eps);
    }
    std::string what = std::string(decoupled ? "adamw" : "adam") + " step " +
                       std::to_string(t);
    expectClose(p.f, pRef, kRtol, kAtol, what + " param");
    expectClose(m.f, mRef, kRtol, kAtol, what + " m");
    expectClose(v.f, vRef, kRtol, kAtol, what + " v");
  }
}

TEST(KernelsOptim, AdamCoupledWeightDecay) { checkAdam(false); }
TEST(KernelsOptim, AdamWDecoupledWeightDecay) { checkAdam(true); }

TEST(KernelsOptim, AdamCountsUpdatesNotSteps) {
  // Update u of U per step (asynchronous pipeline schedules): the bias
  // correction uses t = (step - 1) U + u + 1, so update 1 of 3 in step 2
  // equals a plain update at step 5.
  Random rng(56);
  HostTensor p = rng.tensor({6}), g = rng.tensor({6}), m = rng.tensor({6}),
             v = rng.tensor({6}), step = i32({});
  for (float &x : v.f)
    x = std::abs(x);
  HostTensor p2 = p, m2 = m, v2 = v, step2 = i32({});
  step.i = {2};
  runKernel("adam_update", {&p, &g, &m, &v, &step}, {&p, &m, &v},
            makeAttrs({{"lr", 0.1}, {"update", 1}, {"updates", 3}}));
  step2.i = {5};
  runKernel("adam_update", {&p2, &g, &m2, &v2, &step2}, {&p2, &m2, &v2},
            makeAttrs({{"lr", 0.1}}));
  EXPECT_EQ(p.f, p2.f);
  EXPECT_EQ(m.f, m2.f);
  EXPECT_EQ(v.f, v2.f);
}

TEST(KernelsOptim, CopyIntoKeepsAWeightVersion) {
  // In place, as the executor runs it: the state's buffer takes the
  // parameter's bits; the parameter is untouched. A later update of the
  // parameter leaves the kept version alone.
  Random rng(55);
  HostTensor p = rng.tensor({5, 7}), kept = rng.tensor({5, 7});
  std::vector<float> before = p.f;
  runKernel("copy_into", {&p, &kept}, {&kept}, makeAttrs({}));
  EXPECT_EQ(kept.f, before);
  EXPECT_EQ(p.f, before);
  HostTensor g = rng.tensor({5, 7}), vel = f32({5, 7});
  runKernel("sgd_update", {&p, &g, &vel}, {&p, &vel}, makeAttrs({{"lr", 0.5}}));
  EXPECT_EQ(kept.f, before);
  EXPECT_NE(p.f, before);
}

TEST(KernelsOptim, AdamStepMustBePositive) {
  HostTensor p = f32({3}), g = f32({3}), m = f32({3}), v = f32({3}),
             step = i32({});
  step.i = {0};
  std::vector<Tensor> in{p.view(), g.view(), m.view(), v.view(), step.view()};
  std::vector<Tensor> out{p.view(), m.view(), v.view()};
  ThreadPool pool(1);
  KernelContext ctx{pool, GemmTiling{}};
  EXPECT_THROW(lookupKernel("adam_update")
                   ->run(ctx, in, out,
                         decodeAttrsOrThrow(OpCode::AdamUpdate,
                                            makeAttrs({{"lr", 0.1}}))),
               std::runtime_error);
}

} // namespace
} // namespace strata::rt::test
