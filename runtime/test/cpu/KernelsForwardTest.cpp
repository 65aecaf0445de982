//===- KernelsForwardTest.cpp - Forward kernels against float64 -----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Each forward kernel runs in f32 on random data and is compared with the
// float64 reference of ReferenceOps.h: |got - ref| <= 1e-5 |ref| + atol, with
// atol 1e-6 for bounded results and 1e-5 * (number of terms) for sums.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "ReferenceOps.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace strata::rt::test {
namespace {

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;

using ref::Vec;

TEST(KernelRegistry, EveryPlanOpHasAKernel) {
  // The op table of docs/plan-format.md: name, inputs, outputs.
  const std::tuple<const char *, int, int> ops[] = {
      {"matmul", 2, 1},
      {"bias_add", 2, 1},
      {"add", 2, 1},
      {"relu", 1, 1},
      // A product with an epilogue: a third input, an optional second
      // output (the pre-activation).
      {"fused_matmul", -1, -1},
      {"gelu", 1, 1},
      {"softmax", 1, 1},
      {"layer_norm", 3, 1},
      {"embedding", 2, 1},
      {"position_embedding", 2, 1},
      {"reshape", 1, 1},
      {"flatten", 1, 1},
      {"transpose", 1, 1},
      {"conv2d", 2, 1},
      {"max_pool2d", 1, 1},
      {"global_avg_pool", 1, 1},
      {"softmax_cross_entropy", 2, 1},
      {"mse_loss", 2, 1},
      {"fill", 0, 1},
      {"relu_grad", 2, 1},
      {"gelu_grad", 2, 1},
      {"softmax_grad", 2, 1},
      {"layer_norm_grad", 3, 3},
      {"batch_norm", 5, 5},
      {"batch_norm_grad", 5, 3},
      {"slice", 1, 1},
      {"slice_grad", 1, 1},
      // Any number of inputs (-1).
      {"concat", -1, 1},
      {"bias_add_grad", 1, 1},
      {"embedding_grad", 2, 1},
      {"position_embedding_grad", 1, 1},
      {"conv2d_grad_input", 2, 1},
      {"conv2d_grad_filter", 2, 1},
      {"max_pool2d_grad", 2, 1},
      {"global_avg_pool_grad", 1, 1},
      {"softmax_cross_entropy_grad", 3, 1},
      {"mse_loss_grad", 3, 1},
      {"sgd_update", 3, 2},
      {"adam_update", 5, 3},
      {"copy_into", 2, 1},
      {"all_reduce", 1, 1},
      // Buckets: any number of gradients (-1).
      {"all_reduce_start", -1, 0},
      {"all_reduce_wait", -1, -1},
      // Pipelines.
      {"send", 1, 0},
      {"recv", 0, 1},
      {"scale", 1, 1},
      {"micro_batch", 1, 1},
      // Activation swapping: host copies of slot `slot`.
      {"swap_out", 1, 0},
      {"swap_out_wait", 1, 0},
      {"swap_in", 0, 1},
      {"swap_in_wait", 1, 0},
      {"compress", 1, 1},
      {"decompress", 1, 1},
  };
  for (auto [name, numIn, numOut] : ops) {
    const OpKernel *k = lookupKernel(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_STREQ(k->name(), name);
    EXPECT_EQ(k->info().numInputs, numIn) << name;
    EXPECT_EQ(k->info().numOutputs, numOut) << name;
    EXPECT_NE(k->verify, nullptr);
    EXPECT_NE(k->run, nullptr);
  }
  std::vector<const OpKernel *> all = allKernels();
  EXPECT_EQ(all.size(), std::size(ops));
  for (size_t i = 1; i < all.size(); ++i)
    EXPECT_LT(std::string(all[i - 1]->name()), std::string(all[i]->name()));
  // Only the optimizer updates, batch_norm (its running statistics) and
  // copy_into write in place, into the buffers they update.
  for (const OpKernel *k : all)
    if (std::string(k->name()) == "sgd_update")
      EXPECT_EQ(k->info().inPlace, (std::vector<int>{0, 2}));
    else if (std::string(k->name()) == "adam_update")
      EXPECT_EQ(k->info().inPlace, (std::vector<int>{0, 2, 3}));
    else if (std::string(k->name()) == "copy_into")
      EXPECT_EQ(k->info().inPlace, (std::vector<int>{1}));
    else if (std::string(k->name()) == "batch_norm")
      EXPECT_EQ(k->info().inPlace, (std::vector<int>{-1, -1, -1, 3, 4}));
    else
      EXPECT_TRUE(k->info().inPlace.empty()) << k->name();
  for (const OpKernel *k : all)
    EXPECT_EQ(k->info().has(kInPlace), !k->info().inPlace.empty()) << k->name();
  EXPECT_EQ(lookupKernel("conv3d"), nullptr);
  EXPECT_EQ(lookupKernel(""), nullptr);
}

struct MatmulCase {
  Shape a, b;
  bool ta, tb;
};

TEST(KernelsForward, Matmul) {
  const MatmulCase cases[] = {
      {{5, 7}, {7, 4}, false, false},
      {{7, 5}, {7, 4}, true, false},
      {{5, 7}, {4, 7}, false, true},
      {{7, 5}, {4, 7}, true, true},
      // Batched, every transpose.
      {{2, 3, 5, 7}, {2, 3, 7, 4}, false, false},
      {{2, 3, 7, 5}, {2, 3, 7, 4}, true, false},
      {{2, 3, 5, 7}, {2, 3, 4, 7}, false, true},
      {{2, 3, 7, 5}, {2, 3, 4, 7}, true, true},
      // Rank-2 right-hand side broadcast over the batch.
      {{4, 5, 7}, {7, 9}, false, false},
      {{4, 5, 7}, {9, 7}, false, true},
      {{4, 7, 5}, {7, 9}, true, false},
      {{3, 7, 5}, {9, 7}, true, true},
      {{2, 2, 33, 17}, {17, 19}, false, false},
  };
  Random rng(11);
  for (const MatmulCase &c : cases) {
    for (int threads : {1, 2}) {
      HostTensor a = rng.tensor(c.a), b = rng.tensor(c.b);
      Shape cs(c.a.begin(), c.a.end() - 2);
      cs.push_back(c.ta ? c.a.back() : c.a[c.a.size() - 2]);
      cs.push_back(c.tb ? c.b[c.b.size() - 2] : c.b.back());
      HostTensor out = f32(cs);
      Attrs attrs = makeAttrs({{"transpose_a", c.ta}, {"transpose_b", c.tb}});
      runKernel("matmul", {&a, &b}, {&out}, attrs, threads);
      int64_t k = c.ta ? c.a[c.a.size() - 2] : c.a.back();
      expectClose(out.f,
                  ref::matmul(a.asDouble(), c.a, b.asDouble(), c.b, c.ta, c.tb),
                  kRtol, 1e-5 * k,
                  "matmul " + formatShape(c.a) + " x " + formatShape(c.b));
    }
  }
}

// Tiling attributes choose the GEMM blocking; the result is unchanged.
TEST(KernelsForward, MatmulTilingAttributes) {
  Random rng(12);
  HostTensor a = rng.tensor({3, 41, 29}), b = rng.tensor({29, 37});
  HostTensor out = f32({3, 41, 37});
  Attrs attrs =
      makeAttrs({{"mc", 12}, {"nc", 64}, {"kc", 8}, {"mr", 6}, {"nr", 32}});
  runKernel("matmul", {&a, &b}, {&out}, attrs, 2);
  expectClose(out.f,
              ref::matmul(a.asDouble(), a.desc.shape, b.asDouble(),
                          b.desc.shape, false, false),
              kRtol, 1e-5 * 29, "matmul with tiling attributes");
}

TEST(KernelsForward, BiasAdd) {
  Random rng(13);
  struct Case {
    Shape x;
    int64_t axis;
  };
  for (Case c : {Case{{4, 6}, -1}, Case{{2, 5, 3, 4}, 1}, Case{{3, 4, 5}, 0},
                 Case{{2, 3, 4, 5}, -1}}) {
    HostTensor x = rng.tensor(c.x);
    int64_t ax = c.axis < 0 ? c.axis + (int64_t)c.x.size() : c.axis;
    HostTensor b = rng.tensor({c.x[ax]}), y = f32(c.x);
    runKernel("bias_add", {&x, &b}, {&y}, makeAttrs({{"axis", c.axis}}));
    expectClose(y.f, ref::biasAdd(x.asDouble(), c.x, b.asDouble(), c.axis),
                kRtol, kAtol, "bias_add axis " + std::to_string(c.axis));
  }
}

TEST(KernelsForward, ElementWise) {
  Random rng(14);
  HostTensor a = rng.tensor({3, 4, 5}, 3.0f), b = rng.tensor({3, 4, 5});
  HostTensor c = f32({3, 4, 5});
  runKernel("add", {&a, &b}, {&c});
  ref::Vec sum(a.f.size());
  for (size_t e = 0; e < sum.size(); ++e)
    sum[e] = (double)a.f[e] + b.f[e];
  expectClose(c.f, sum, kRtol, kAtol, "add");
  runKernel("relu", {&a}, {&c});
  expectClose(c.f, ref::relu(a.asDouble()), 0, 0, "relu");
  runKernel("gelu", {&a}, {&c});
  expectClose(c.f, ref::gelu(a.asDouble()), kRtol, kAtol, "gelu");
}

TEST(KernelsForward, Softmax) {
  Random rng(15);
  HostTensor x = rng.tensor({3, 4, 9}, 4.0f), y = f32({3, 4, 9});
  runKernel("softmax", {&x}, {&y}, makeAttrs({{"scale", 0.5}}));
  expectClose(y.f, ref::softmax(x.asDouble(), x.desc.shape, 0.5, false), kRtol,
              kAtol, "softmax");
  // Large logits: stable (no overflow).
  for (float &v : x.f)
    v += 500.0f;
  runKernel("softmax", {&x}, {&y});
  expectClose(y.f, ref::softmax(x.asDouble(), x.desc.shape, 1.0, false), 1e-4,
              kAtol, "softmax of large logits");
}

TEST(KernelsForward, CausalSoftmax) {
  Random rng(16);
  Shape s{2, 3, 6, 6};
  HostTensor x = rng.tensor(s, 4.0f), y = f32(s);
  std::fill(y.f.begin(), y.f.end(), 7.0f); // garbage to overwrite
  runKernel("softmax", {&x}, {&y},
            makeAttrs({{"causal", 1}, {"scale", 0.125}}));
  expectClose(y.f, ref::softmax(x.asDouble(), s, 0.125, true), kRtol, kAtol,
              "causal softmax");
  // Masked entries are exactly zero.
  for (int64_t r = 0; r < 36; ++r)
    for (int64_t j = r % 6 + 1; j < 6; ++j)
      ASSERT_EQ(y.f[r * 6 + j], 0.0f) << r << " " << j;
}

TEST(KernelsForward, LayerNorm) {
  Random rng(17);
  Shape s{2, 5, 24};
  HostTensor x = rng.tensor(s, 2.0f), g = rng.tensor({24}),
             b = rng.tensor({24}), y = f32(s);
  for (float &v : x.f)
    v += 3.0f; // a mean far from zero
  runKernel("layer_norm", {&x, &g, &b}, {&y}, makeAttrs({{"epsilon", 1e-5}}));
  expectClose(y.f,
              ref::layerNorm(x.asDouble(), s, g.asDouble(), b.asDouble(), 1e-5),
              1e-4, 1e-5, "layer_norm");
}

/// Training mode: the batch statistics normalise, are saved, and update the
/// running statistics in place (unbiased variance, momentum 0.1); the
/// result does not depend on the thread count.
TEST(KernelsForward, BatchNormTraining) {
  Random rng(171);
  Shape s{4, 3, 5, 6};
  HostTensor x = rng.tensor(s, 2.0f), g = rng.tensor({3}), b = rng.tensor({3}),
             rm = rng.tensor({3}), rv = rng.tensor({3});
  for (float &v : x.f)
    v += 3.0f; // a mean far from zero
  for (float &v : rv.f)
    v = 0.5f + std::fabs(v);
  Vec rm0 = rm.asDouble(), rv0 = rv.asDouble();
  HostTensor y = f32(s), mean = f32({3}), istd = f32({3});
  double eps = 1e-5, momentum = 0.1;
  Attrs attrs = makeAttrs({{"epsilon", eps}, {"momentum", momentum}});
  runKernel("batch_norm", {&x, &g, &b, &rm, &rv}, {&y, &mean, &istd, &rm, &rv},
            attrs);
  Vec mu, var;
  ref::batchStats(x.asDouble(), s, mu, var);
  expectClose(y.f,
              ref::batchNorm(x.asDouble(), s, g.asDouble(), b.asDouble(), eps),
              1e-4, 1e-5, "batch_norm y");
  Vec wantIstd(3), wantRm(3), wantRv(3);
  double m = 4 * 5 * 6;
  for (int c = 0; c < 3; ++c) {
    wantIstd[c] = 1 / std::sqrt(var[c] + eps);
    wantRm[c] = 0.9 * rm0[c] + 0.1 * mu[c];
    wantRv[c] = 0.9 * rv0[c] + 0.1 * var[c] * m / (m - 1);
  }
  expectClose(mean.f, mu, kRtol, kAtol, "batch_norm mean");
  expectClose(istd.f, wantIstd, kRtol, kAtol, "batch_norm inv_std");
  expectClose(rm.f, wantRm, kRtol, kAtol, "batch_norm running_mean");
  expectClose(rv.f, wantRv, kRtol, kAtol, "batch_norm running_var");
  // Two threads: the same bits.
  HostTensor rm2 = f32({3}), rv2 = f32({3}), y2 = f32(s), mean2 = f32({3}),
             istd2 = f32({3});
  for (int c = 0; c < 3; ++c) {
    rm2.f[c] = (float)rm0[c];
    rv2.f[c] = (float)rv0[c];
  }
  runKernel("batch_norm", {&x, &g, &b, &rm2, &rv2},
            {&y2, &mean2, &istd2, &rm2, &rv2}, attrs, /*threads=*/2);
  EXPECT_EQ(y2.f, y.f);
  EXPECT_EQ(rv2.f, rv.f);
}

/// Evaluation: the running statistics normalise and stay unchanged.
TEST(KernelsForward, BatchNormEvaluation) {
  Random rng(172);
  Shape s{2, 4, 3};
  HostTensor x = rng.tensor(s, 2.0f), g = rng.tensor({4}), b = rng.tensor({4}),
             rm = rng.tensor({4}), rv = rng.tensor({4});
  for (float &v : rv.f)
    v = 0.5f + std::fabs(v);
  std::vector<float> rmBefore = rm.f, rvBefore = rv.f;
  HostTensor y = f32(s), mean = f32({4}), istd = f32({4});
  runKernel("batch_norm", {&x, &g, &b, &rm, &rv}, {&y, &mean, &istd, &rm, &rv},
            makeAttrs({{"epsilon", 1e-5}}), 1, GemmTiling{},
            /*evaluation=*/true);
  expectClose(y.f,
              ref::batchNormWith(x.asDouble(), s, g.asDouble(), b.asDouble(),
                                 rm.asDouble(), rv.asDouble(), 1e-5),
              1e-4, 1e-5, "batch_norm evaluation");
  EXPECT_EQ(rm.f, rmBefore);
  EXPECT_EQ(rv.f, rvBefore);
  EXPECT_EQ(mean.f, rmBefore);
}

/// slice copies a range of one dimension; concat of the slices of a tensor
/// along that dimension gives the tensor back; slice_grad puts a range in a
/// zero tensor. Pure copies: exact.
TEST(KernelsForward, SliceConcatSliceGrad) {
  Random rng(173);
  Shape s{3, 7, 4};
  HostTensor x = rng.tensor(s);
  HostTensor a = f32({3, 2, 4}), b = f32({3, 5, 4});
  runKernel("slice", {&x}, {&a},
            makeAttrs({{"axis", 1}, {"offset", 0}, {"size", 2}}));
  runKernel("slice", {&x}, {&b},
            makeAttrs({{"axis", 1}, {"offset", 2}, {"size", 5}}));
  expectClose(a.f, ref::slice(x.asDouble(), s, 1, 0, 2), 0, 0, "slice");
  expectClose(b.f, ref::slice(x.asDouble(), s, 1, 2, 5), 0, 0, "slice");
  HostTensor joined = f32(s);
  runKernel("concat", {&a, &b}, {&joined}, makeAttrs({{"axis", 1}}), 2);
  EXPECT_EQ(joined.f, x.f);
  HostTensor grad = f32(s);
  std::fill(grad.f.begin(), grad.f.end(), 7.0f); // overwritten with zeros
  runKernel("slice_grad", {&b}, {&grad},
            makeAttrs({{"axis", 1}, {"offset", 2}}));
  expectClose(
      grad.f,
      [&] {
        Vec want = x.asDouble();
        for (int64_t o = 0; o < 3; ++o)
          for (int64_t r = 0; r < 2; ++r)
            for (int64_t i = 0; i < 4; ++i)
              want[(o * 7 + r) * 4 + i] = 0;
        return want;
      }(),
      0, 0, "slice_grad");
}

TEST(KernelsForward, EmbeddingWithRepeatedIds) {
  Random rng(18);
  HostTensor table = rng.tensor({10, 6});
  HostTensor ids = i32({2, 4});
  ids.i = {3, 3, 0, 9, 3, 5, 9, 1};
  HostTensor y = f32({2, 4, 6});
  runKernel("embedding", {&table, &ids}, {&y});
  expectClose(y.f, ref::embedding(table.asDouble(), 6, ids.i), 0, 0,
              "embedding");
}

TEST(KernelsForward, EmbeddingIdOutOfRangeIsARunTimeError) {
  HostTensor table = f32({4, 3}), ids = i32({3}), y = f32({3, 3});
  ids.i = {0, 4, 1};
  std::vector<Tensor> in{table.view(), ids.view()}, out{y.view()};
  ThreadPool pool(2);
  KernelContext ctx{pool, GemmTiling{}};
  try {
    lookupKernel("embedding")->run(ctx, in, out, OpAttrs{});
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "embedding: id 4 at index 1 is outside [0, 4)");
  }
  ids.i = {0, -1, 1};
  EXPECT_THROW(lookupKernel("embedding")->run(ctx, in, out, OpAttrs{}),
               std::runtime_error);
  HostTensor logits = f32({3, 4}), loss = f32({});
  ids.i = {0, 1, 4};
  std::vector<Tensor> ceIn{logits.view(), ids.view()}, ceOut{loss.view()};
  EXPECT_THROW(
      lookupKernel("softmax_cross_entropy")->run(ctx, ceIn, ceOut, OpAttrs{}),
      std::runtime_error);
}

TEST(KernelsForward, PositionEmbeddingShorterThanTable) {
  Random rng(19);
  HostTensor x = rng.tensor({2, 3, 5}), table = rng.tensor({8, 5}),
             y = f32({2, 3, 5});
  runKernel("position_embedding", {&x, &table}, {&y});
  expectClose(
      y.f, ref::positionEmbedding(x.asDouble(), x.desc.shape, table.asDouble()),
      kRtol, kAtol, "position_embedding");
}

TEST(KernelsForward, ReshapeAndFlatten) {
  Random rng(20);
  HostTensor x = rng.tensor({2, 3, 4, 5}), y = f32({6, 20}), z = f32({2, 60});
  runKernel("reshape", {&x}, {&y});
  EXPECT_TRUE(sameBits(x.f, y.f));
  runKernel("flatten", {&x}, {&z});
  EXPECT_TRUE(sameBits(x.f, z.f));
  HostTensor ids = i32({2, 3}), flat = i32({6});
  ids.i = {1, 2, 3, 4, 5, 6};
  runKernel("reshape", {&ids}, {&flat});
  EXPECT_EQ(flat.i, ids.i);
}

TEST(KernelsForward, Transpose) {
  Random rng(21);
  struct Case {
    Shape x;
    std::vector<int64_t> perm;
  };
  for (const Case &c :
       {Case{{2, 3, 4, 5}, {0, 2, 1, 3}}, Case{{2, 3, 4, 5}, {3, 1, 0, 2}},
        Case{{2, 3, 4, 5}, {1, 0, 3, 2}}, Case{{7, 9}, {1, 0}},
        Case{{4}, {0}}}) {
    HostTensor x = rng.tensor(c.x);
    Shape ys;
    for (int64_t p : c.perm)
      ys.push_back(c.x[p]);
    HostTensor y = f32(ys);
    runKernel("transpose", {&x}, {&y}, makeAttrs({}, {{"permutation", c.perm}}),
              2);
    expectClose(y.f, ref::transpose(x.asDouble(), c.x, c.perm), 0, 0,
                "transpose " + formatShape(c.perm));
  }
}

TEST(KernelsForward, Conv2d) {
  Random rng(22);
  struct Case {
    Shape x, w;
    ref::Conv conv;
    int threads;
  };
  const Case cases[] = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, {2, 2, 1, 1}, 1}, // stride 2, padding 1
      {{4, 3, 9, 8}, {4, 3, 3, 3}, {2, 2, 1, 1}, 2}, // images per thread
      {{3, 2, 7, 7}, {5, 2, 3, 2}, {1, 2, 0, 1}, 2}, // per-image GEMMs
      {{2, 6, 5, 4}, {3, 6, 1, 1}, {1, 1, 0, 0}, 2}, // 1x1: no im2col
      {{1, 2, 6, 6}, {2, 2, 5, 5}, {3, 1, 2, 0}, 1},
  };
  for (const Case &c : cases) {
    HostTensor x = rng.tensor(c.x), w = rng.tensor(c.w);
    int64_t oh = (c.x[2] + 2 * c.conv.ph - c.w[2]) / c.conv.sh + 1;
    int64_t ow = (c.x[3] + 2 * c.conv.pw - c.w[3]) / c.conv.sw + 1;
    HostTensor y = f32({c.x[0], c.w[0], oh, ow});
    Attrs attrs = makeAttrs({}, {{"strides", {c.conv.sh, c.conv.sw}},
                                 {"padding", {c.conv.ph, c.conv.pw}}});
    runKernel("conv2d", {&x, &w}, {&y}, attrs, c.threads);
    expectClose(y.f, ref::conv2d(x.asDouble(), c.x, w.asDouble(), c.w, c.conv),
                kRtol, 1e-5 * c.w[1] * c.w[2] * c.w[3],
                "conv2d " + formatShape(c.x) + " * " + formatShape(c.w));
  }
}

TEST(KernelsForward, MaxPool) {
  Random rng(23);
  struct Case {
    Shape x;
    int64_t kh, kw;
    ref::Conv conv;
  };
  for (const Case &c : {Case{{2, 3, 7, 6}, 3, 3, {2, 2, 1, 1}},
                        Case{{1, 2, 8, 8}, 2, 2, {2, 2, 0, 0}},
                        Case{{2, 2, 5, 7}, 3, 2, {1, 2, 2, 1}}}) {
    // All-negative input: a padding cell (treated as -inf) never wins.
    HostTensor x = rng.tensor(c.x);
    for (float &v : x.f)
      v = -std::fabs(v) - 0.5f;
    int64_t oh = (c.x[2] + 2 * c.conv.ph - c.kh) / c.conv.sh + 1;
    int64_t ow = (c.x[3] + 2 * c.conv.pw - c.kw) / c.conv.sw + 1;
    HostTensor y = f32({c.x[0], c.x[1], oh, ow});
    Attrs attrs = makeAttrs({}, {{"kernel", {c.kh, c.kw}},
                                 {"strides", {c.conv.sh, c.conv.sw}},
                                 {"padding", {c.conv.ph, c.conv.pw}}});
    runKernel("max_pool2d", {&x}, {&y}, attrs, 2);
    expectClose(y.f, ref::maxPool(x.asDouble(), c.x, c.kh, c.kw, c.conv), 0, 0,
                "max_pool2d " + formatShape(c.x));
  }
}

TEST(KernelsForward, GlobalAvgPool) {
  Random rng(24);
  HostTensor x = rng.tensor({2, 3, 5, 7}), y = f32({2, 3});
  runKernel("global_avg_pool", {&x}, {&y});
  expectClose(y.f, ref::globalAvgPool(x.asDouble(), x.desc.shape), kRtol, kAtol,
              "global_avg_pool");
}

TEST(KernelsForward, CrossEntropyOver3DLogits) {
  Random rng(25);
  HostTensor logits = rng.tensor({2, 3, 7}, 5.0f);
  HostTensor labels = rng.ids({2, 3}, 7), loss = f32({});
  runKernel("softmax_cross_entropy", {&logits, &labels}, {&loss});
  expectClose(loss.f, {ref::crossEntropy(logits.asDouble(), 7, labels.i)},
              kRtol, kAtol, "softmax_cross_entropy");
  for (float &v : logits.f)
    v += 1000.0f;
  runKernel("softmax_cross_entropy", {&logits, &labels}, {&loss});
  expectClose(loss.f, {ref::crossEntropy(logits.asDouble(), 7, labels.i)}, 1e-4,
              1e-4, "softmax_cross_entropy of large logits");
}

TEST(KernelsForward, MseLoss) {
  Random rng(26);
  HostTensor x = rng.tensor({5, 7}), t = rng.tensor({5, 7}), loss = f32({});
  runKernel("mse_loss", {&x, &t}, {&loss});
  expectClose(loss.f, {ref::mse(x.asDouble(), t.asDouble())}, kRtol, kAtol,
              "mse_loss");
}

TEST(KernelsForward, Fill) {
  HostTensor y = f32({3, 4});
  runKernel("fill", {}, {&y}, makeAttrs({{"value", -2.5}}));
  for (float v : y.f)
    ASSERT_EQ(v, -2.5f);
  HostTensor z = i32({5});
  runKernel("fill", {}, {&z}, makeAttrs({{"value", 7}}));
  for (int32_t v : z.i)
    ASSERT_EQ(v, 7);
}

} // namespace
} // namespace strata::rt::test
