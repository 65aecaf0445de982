//===- KernelsBackwardTest.cpp - Gradients against finite differences -----===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// For a backward kernel of op f with upstream gradient w (random), the exact
// gradient of L = sum_k w_k f(x)_k is estimated by central differences of the
// float64 reference forward (eps = 1e-5 in double, so the estimate is good to
// about 1e-9), and the f32 kernel's gradient must match within
// |got - fd| <= 1e-3 |fd| + 1e-4.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "ReferenceOps.h"

namespace strata::rt::test {
namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;

using ref::Vec;

TEST(KernelsBackward, ReluGrad) {
  Random rng(31);
  HostTensor x = rng.awayFromZero({4, 9}, 0.01f), dy = rng.tensor({4, 9});
  HostTensor dx = f32({4, 9});
  runKernel("relu_grad", {&dy, &x}, {&dx});
  expectClose(dx.f,
              numericGradient([](const Vec &v) { return ref::relu(v); },
                              x.asDouble(), dy.asDouble()),
              kRtol, kAtol, "relu_grad");
}

TEST(KernelsBackward, GeluGrad) {
  Random rng(32);
  HostTensor x = rng.tensor({5, 8}, 3.0f), dy = rng.tensor({5, 8});
  HostTensor dx = f32({5, 8});
  runKernel("gelu_grad", {&dy, &x}, {&dx});
  expectClose(dx.f,
              numericGradient([](const Vec &v) { return ref::gelu(v); },
                              x.asDouble(), dy.asDouble()),
              kRtol, kAtol, "gelu_grad");
}

TEST(KernelsBackward, SoftmaxGrad) {
  Random rng(33);
  for (bool causal : {false, true}) {
    Shape s = causal ? Shape{2, 6, 6} : Shape{2, 3, 7};
    double scale = causal ? 0.25 : 0.7;
    HostTensor x = rng.tensor(s, 2.0f), dy = rng.tensor(s);
    Vec yRef = ref::softmax(x.asDouble(), s, scale, causal);
    HostTensor y = f32(s), dx = f32(s);
    for (size_t e = 0; e < yRef.size(); ++e)
      y.f[e] = (float)yRef[e];
    Attrs attrs = makeAttrs({{"scale", scale}, {"causal", causal}});
    runKernel("softmax_grad", {&dy, &y}, {&dx}, attrs);
    expectClose(
        dx.f,
        numericGradient(
            [&](const Vec &v) { return ref::softmax(v, s, scale, causal); },
            x.asDouble(), dy.asDouble()),
        kRtol, kAtol, causal ? "causal softmax_grad" : "softmax_grad");
  }
}

TEST(KernelsBackward, LayerNormGrad) {
  Random rng(34);
  Shape s{3, 2, 10};
  HostTensor x = rng.tensor(s, 2.0f), g = rng.tensor({10}),
             b = rng.tensor({10}), dy = rng.tensor(s);
  HostTensor dx = f32(s), dg = f32({10}), db = f32({10});
  double eps = 1e-5;
  runKernel("layer_norm_grad", {&dy, &x, &g}, {&dx, &dg, &db},
            makeAttrs({{"epsilon", eps}}));
  Vec xv = x.asDouble(), gv = g.asDouble(), bv = b.asDouble();
  expectClose(
      dx.f,
      numericGradient(
          [&](const Vec &v) { return ref::layerNorm(v, s, gv, bv, eps); }, xv,
          dy.asDouble()),
      kRtol, kAtol, "layer_norm_grad dx");
  expectClose(
      dg.f,
      numericGradient(
          [&](const Vec &v) { return ref::layerNorm(xv, s, v, bv, eps); }, gv,
          dy.asDouble()),
      kRtol, kAtol, "layer_norm_grad dgamma");
  expectClose(
      db.f,
      numericGradient(
          [&](const Vec &v) { return ref::layerNorm(xv, s, gv, v, eps); }, bv,
          dy.asDouble()),
      kRtol, kAtol, "layer_norm_grad dbeta");
}

/// The batch statistics depend on the input: dx must be the gradient of the
/// whole training-mode batch norm (finite differences of the reference,
/// whose batch statistics move with the input).
TEST(KernelsBackward, BatchNormGrad) {
  Random rng(341);
  for (Shape s : {Shape{3, 2, 4, 5}, Shape{6, 5}}) {
    int64_t c = s[1];
    HostTensor x = rng.tensor(s, 2.0f), g = rng.tensor({c}),
               b = rng.tensor({c}), dy = rng.tensor(s);
    double eps = 1e-5;
    Vec xv = x.asDouble(), gv = g.asDouble(), bv = b.asDouble(), mu, var;
    ref::batchStats(xv, s, mu, var);
    HostTensor mean = f32({c}), istd = f32({c});
    for (int64_t ch = 0; ch < c; ++ch) {
      mean.f[ch] = (float)mu[ch];
      istd.f[ch] = (float)(1 / std::sqrt(var[ch] + eps));
    }
    HostTensor dx = f32(s), dg = f32({c}), db = f32({c});
    runKernel("batch_norm_grad", {&dy, &x, &g, &mean, &istd}, {&dx, &dg, &db});
    expectClose(
        dx.f,
        numericGradient(
            [&](const Vec &v) { return ref::batchNorm(v, s, gv, bv, eps); }, xv,
            dy.asDouble()),
        kRtol, kAtol, "batch_norm_grad dx");
    expectClose(
        dg.f,
        numericGradient(
            [&](const Vec &v) { return ref::batchNorm(xv, s, v, bv, eps); }, gv,
            dy.asDouble()),
        kRtol, kAtol, "batch_norm_grad dgamma");
    expectClose(
        db.f,
        numericGradient(
            [&](const Vec &v) { return ref::batchNorm(xv, s, gv, v, eps); }, bv,
            dy.asDouble()),
        kRtol, kAtol, "batch_norm_grad dbeta");
  }
}

TEST(KernelsBackward, BiasAddGrad) {
  Random rng(35);
  struct Case {
    Shape x;
    int64_t axis;
  };
  for (Case c : {Case{{2, 4, 3, 3}, 1}, Case{{3, 2, 5}, -1}, Case{{4, 3}, 0}}) {
    int64_t ax = c.axis < 0 ? c.axis + (int64_t)c.x.size() : c.axis;
    HostTensor x = rng.tensor(c.x), b = rng.tensor({c.x[ax]}),
               dy = rng.tensor(c.x);
    HostTensor db = f32({c.x[ax]});
    runKernel("bias_add_grad", {&dy}, {&db}, makeAttrs({{"axis", c.axis}}));
    Vec xv = x.asDouble();
    expectClose(
        db.f,
        numericGradient(
            [&](const Vec &v) { return ref::biasAdd(xv, c.x, v, c.axis); },
            b.asDouble(), dy.asDouble()),
        kRtol, kAtol, "bias_add_grad axis " + std::to_string(c.axis));
  }
}

TEST(KernelsBackward, EmbeddingGradWithRepeatedIds) {
  Random rng(36);
  HostTensor table = rng.tensor({6, 4}), ids = i32({2, 5});
  ids.i = {1, 3, 1, 1, 5, 0, 3, 5, 1, 2}; // id 4 unused: its row stays zero
  HostTensor dy = rng.tensor({2, 5, 4}), dtable = f32({6, 4});
  std::fill(dtable.f.begin(), dtable.f.end(), 9.0f); // overwritten
  runKernel("embedding_grad", {&dy, &ids}, {&dtable});
  expectClose(
      dtable.f,
      numericGradient([&](const Vec &v) { return ref::embedding(v, 4, ids.i); },
                      table.asDouble(), dy.asDouble()),
      kRtol, kAtol, "embedding_grad");
}

TEST(KernelsBackward, PositionEmbeddingGradShorterThanTable) {
  Random rng(37);
  Shape s{2, 3, 4};
  HostTensor x = rng.tensor(s), table = rng.tensor({6, 4}), dy = rng.tensor(s);
  HostTensor dtable = f32({6, 4});
  std::fill(dtable.f.begin(), dtable.f.end(), 9.0f);
  runKernel("position_embedding_grad", {&dy}, {&dtable});
  Vec xv = x.asDouble();
  expectClose(
      dtable.f,
      numericGradient(
          [&](const Vec &v) { return ref::positionEmbedding(xv, s, v); },
          table.asDouble(), dy.asDouble()),
      kRtol, kAtol, "position_embedding_grad");
  for (int64_t e = 12; e < 24; ++e)
    EXPECT_EQ(dtable.f[e], 0.0f);
}

TEST(KernelsBackward, Conv2dGrads) {
  Random rng(38);
  struct Case {
    Shape x, w;
    ref::Conv conv;
    int threads;
  };
  const Case cases[] = {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {2, 2, 1, 1}, 1}, // stride 2, padding 1
      {{4, 2, 6, 5}, {3, 2, 3, 2}, {1, 2, 0, 1}, 2}, // images per thread
      {{3, 2, 5, 5}, {2, 2, 2, 3}, {2, 1, 1, 1}, 2}, // per-image GEMMs
      {{2, 4, 3, 3}, {3, 4, 1, 1}, {1, 1, 0, 0}, 2}, // 1x1
  };
  for (const Case &c : cases) {
    HostTensor x = rng.tensor(c.x), w = rng.tensor(c.w);
    int64_t oh = (c.x[2] + 2 * c.conv.ph - c.w[2]) / c.conv.sh + 1;
    int64_t ow = (c.x[3] + 2 * c.conv.pw - c.w[3]) / c.conv.sw + 1;
    Shape ys{c.x[0], c.w[0], oh, ow};
    HostTensor dy = rng.tensor(ys), dx = f32(c.x), dw = f32(c.w);
    Attrs attrs = makeAttrs({}, {{"strides", {c.conv.sh, c.conv.sw}},
                                 {"padding", {c.conv.ph, c.conv.pw}}});
    runKernel("conv2d_grad_input", {&dy, &w}, {&dx}, attrs, c.threads);
    runKernel("conv2d_grad_filter", {&dy, &x}, {&dw}, attrs, c.threads);
    Vec xv = x.asDouble(), wv = w.asDouble();
    std::string what = formatShape(c.x) + " * " + formatShape(c.w);
    expectClose(
        dx.f,
        numericGradient(
            [&](const Vec &v) { return ref::conv2d(v, c.x, wv, c.w, c.conv); },
            xv, dy.asDouble()),
        kRtol, kAtol, "conv2d_grad_input " + what);
    expectClose(
        dw.f,
        numericGradient(
            [&](const Vec &v) { return ref::conv2d(xv, c.x, v, c.w, c.conv); },
            wv, dy.asDouble()),
        kRtol, kAtol, "conv2d_grad_filter " + what);
  }
}

TEST(KernelsBackward, MaxPoolGradWithPadding) {
  Random rng(39);
  struct Case {
    Shape x;
    int64_t kh, kw;
    ref::Conv conv;
  };
  for (const Case &c : {Case{{2, 2, 6, 5}, 3, 3, {2, 2, 1, 1}},
                        Case{{1, 3, 4, 4}, 2, 2, {2, 2, 0, 0}},
                        Case{{1, 2, 5, 6}, 3, 2, {1, 1, 1, 1}}}) {
    HostTensor x = rng.tensor(c.x);
    for (float &v : x.f) // negative: padding must still never win
      v = -std::fabs(v) - 0.5f;
    int64_t oh = (c.x[2] + 2 * c.conv.ph - c.kh) / c.conv.sh + 1;
    int64_t ow = (c.x[3] + 2 * c.conv.pw - c.kw) / c.conv.sw + 1;
    HostTensor dy = rng.tensor({c.x[0], c.x[1], oh, ow}), dx = f32(c.x);
    Attrs attrs = makeAttrs({}, {{"kernel", {c.kh, c.kw}},
                                 {"strides", {c.conv.sh, c.conv.sw}},
                                 {"padding", {c.conv.ph, c.conv.pw}}});
    runKernel("max_pool2d_grad", {&dy, &x}, {&dx}, attrs);
    expectClose(dx.f,
                numericGradient(
                    [&](const Vec &v) {
                      return ref::maxPool(v, c.x, c.kh, c.kw, c.conv);
                    },
                    x.asDouble(), dy.asDouble(), 1e-6),
                kRtol, kAtol, "max_pool2d_grad " + formatShape(c.x));
  }
}

// Ties go to the first maximum of the window in row-major order.
TEST(KernelsBackward, MaxPoolGradTiesGoToTheFirstMaximum) {
  HostTensor x = f32({1, 1, 2, 4}), dy = f32({1, 1, 1, 2}),
             dx = f32({1, 1, 2, 4});
  x.f = {1, 5, 5, 2, 5, 0, 3, 5};
  dy.f = {10, 20};
  runKernel(
      "max_pool2d_grad", {&dy, &x}, {&dx},
      makeAttrs(
          {}, {{"kernel", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0}}}));
  EXPECT_EQ(dx.f, (std::vector<float>{0, 10, 20, 0, 0, 0, 0, 0}));
}

TEST(KernelsBackward, GlobalAvgPoolGrad) {
  Random rng(40);
  Shape s{2, 3, 4, 5};
  HostTensor x = rng.tensor(s), dy = rng.tensor({2, 3}), dx = f32(s);
  runKernel("global_avg_pool_grad", {&dy}, {&dx});
  expectClose(
      dx.f,
      numericGradient([&](const Vec &v) { return ref::globalAvgPool(v, s); },
                      x.asDouble(), dy.asDouble()),
      kRtol, kAtol, "global_avg_pool_grad");
}

TEST(KernelsBackward, CrossEntropyGradOver3DLogits) {
  Random rng(41);
  HostTensor logits = rng.tensor({2, 3, 5}, 3.0f), labels = rng.ids({2, 3}, 5);
  HostTensor dloss = f32({}), dx = f32({2, 3, 5});
  dloss.f = {0.7f};
  runKernel("softmax_cross_entropy_grad", {&logits, &labels, &dloss}, {&dx});
  expectClose(
      dx.f,
      numericGradient(
          [&](const Vec &v) { return Vec{ref::crossEntropy(v, 5, labels.i)}; },
          logits.asDouble(), Vec{0.7f}),
      kRtol, kAtol, "softmax_cross_entropy_grad");
}

TEST(KernelsBackward, MseLossGrad) {
  Random rng(42);
  HostTensor x = rng.tensor({4, 6}), t = rng.tensor({4, 6});
  HostTensor dloss = f32({}), dx = f32({4, 6});
  dloss.f = {1.3f};
  runKernel("mse_loss_grad", {&x, &t, &dloss}, {&dx});
  Vec tv = t.asDouble();
  expectClose(
      dx.f,
      numericGradient([&](const Vec &v) { return Vec{ref::mse(v, tv)}; },
                      x.asDouble(), Vec{1.3f}),
      kRtol, kAtol, "mse_loss_grad");
}

} // namespace
} // namespace strata::rt::test
