//===- KernelsDeterminismTest.cpp - Bitwise reproducibility ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every kernel is deterministic, and every kernel is also thread-count
// invariant: each output element (or each loss partial sum, over blocks of a
// fixed size) is computed by one thread in an order that does not depend on
// how the work is split, and GEMM results depend only on the tiling's kc.
// These tests run each kernel on inputs large enough to take its parallel
// paths, twice and with 1, 2 and 3 threads, and compare the bits.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <limits>

namespace strata::rt::test {
namespace {

struct Config {
  std::string name;
  std::vector<HostTensor> inputs;
  std::vector<Shape> outputs;
  Attrs attrs;
  /// For in-place updates: output i is input inPlace[i].
  std::vector<int> inPlace = {};
};

std::vector<std::vector<float>> runOnce(const Config &c, int threads) {
  std::vector<HostTensor> inputs = c.inputs;
  std::vector<HostTensor> outputs;
  for (const Shape &s : c.outputs) {
    outputs.push_back(f32(s));
    std::fill(outputs.back().f.begin(), outputs.back().f.end(),
              std::numeric_limits<float>::quiet_NaN());
  }
  std::vector<HostTensor *> in, out;
  for (HostTensor &t : inputs)
    in.push_back(&t);
  for (size_t i = 0; i < outputs.size(); ++i)
    out.push_back(c.inPlace.empty() ? &outputs[i] : &inputs[c.inPlace[i]]);
  runKernel(c.name, in, out, c.attrs, threads);
  std::vector<std::vector<float>> result;
  for (HostTensor *t : out)
    result.push_back(t->f);
  return result;
}

std::vector<Config> configs() {
  Random rng(61);
  std::vector<Config> cs;
  auto ids = [&](Shape s, int32_t limit) {
    return rng.ids(std::move(s), limit);
  };
  auto t = [&](Shape s) { return rng.tensor(std::move(s)); };
  Attrs none;
  cs.push_back({"matmul", {t({4, 64, 96}), t({96, 80})}, {{4, 64, 80}}, none});
  cs.push_back({"matmul",
                {t({6, 32, 48}), t({6, 40, 32})},
                {{6, 48, 40}},
                makeAttrs({{"transpose_a", 1}, {"transpose_b", 1}})});
  cs.push_back(
      {"matmul", {t({3, 100, 50}), t({3, 50, 70})}, {{3, 100, 70}}, none});
  cs.push_back({"bias_add",
                {t({64, 128, 8}), t({128})},
                {{64, 128, 8}},
                makeAttrs({{"axis", 1}})});
  cs.push_back({"bias_add", {t({256, 200}), t({200})}, {{256, 200}}, none});
  cs.push_back(
      {"bias_add_grad", {t({64, 128, 8})}, {{128}}, makeAttrs({{"axis", 1}})});
  cs.push_back({"bias_add_grad", {t({512, 300})}, {{300}}, none});
  cs.push_back({"add", {t({300, 400}), t({300, 400})}, {{300, 400}}, none});
  cs.push_back({"relu", {t({300, 400})}, {{300, 400}}, none});
  cs.push_back({"gelu", {t({300, 400})}, {{300, 400}}, none});
  cs.push_back(
      {"relu_grad", {t({300, 400}), t({300, 400})}, {{300, 400}}, none});
  cs.push_back(
      {"gelu_grad", {t({300, 400}), t({300, 400})}, {{300, 400}}, none});
  Attrs causal = makeAttrs({{"causal", 1}, {"scale", 0.125}});
  cs.push_back({"softmax", {t({8, 64, 64})}, {{8, 64, 64}}, causal});
  cs.push_back({"softmax_grad",
                {t({8, 64, 64}), t({8, 64, 64})},
                {{8, 64, 64}},
                causal});
  cs.push_back(
      {"layer_norm", {t({256, 192}), t({192}), t({192})}, {{256, 192}}, none});
  cs.push_back({"layer_norm_grad",
                {t({256, 192}), t({256, 192}), t({192})},
                {{256, 192}, {192}, {192}},
                none});
  cs.push_back(
      {"batch_norm_grad",
       {t({16, 64, 12, 12}), t({16, 64, 12, 12}), t({64}), t({64}), t({64})},
       {{16, 64, 12, 12}, {64}, {64}},
       none});
  cs.push_back(
      {"embedding", {t({1000, 64}), ids({2000}, 1000)}, {{2000, 64}}, none});
  cs.push_back(
      {"embedding_grad", {t({4000, 64}), ids({4000}, 300)}, {{300, 64}}, none});
  cs.push_back({"position_embedding",
                {t({8, 64, 96}), t({128, 96})},
                {{8, 64, 96}},
                none});
  cs.push_back(
      {"position_embedding_grad", {t({8, 64, 96})}, {{128, 96}}, none});
  cs.push_back({"transpose",
                {t({8, 32, 12, 16})},
                {{8, 12, 32, 16}},
                makeAttrs({}, {{"permutation", {0, 2, 1, 3}}})});
  cs.push_back({"transpose",
                {t({8, 32, 12, 16})},
                {{16, 32, 8, 12}},
                makeAttrs({}, {{"permutation", {3, 1, 0, 2}}})});
  cs.push_back({"reshape", {t({300, 400})}, {{400, 300}}, none});
  Attrs conv = makeAttrs({}, {{"strides", {1, 1}}, {"padding", {1, 1}}});
  Attrs conv2 = makeAttrs({}, {{"strides", {2, 2}}, {"padding", {1, 1}}});
  cs.push_back({"conv2d",
                {t({4, 8, 20, 20}), t({16, 8, 3, 3})},
                {{4, 16, 20, 20}},
                conv});
  cs.push_back({"conv2d",
                {t({3, 8, 21, 21}), t({16, 8, 3, 3})},
                {{3, 16, 11, 11}},
                conv2});
  cs.push_back({"conv2d_grad_input",
                {t({4, 16, 20, 20}), t({16, 8, 3, 3})},
                {{4, 8, 20, 20}},
                conv});
  cs.push_back({"conv2d_grad_input",
                {t({3, 16, 11, 11}), t({16, 8, 3, 3})},
                {{3, 8, 21, 21}},
                conv2});
  cs.push_back({"conv2d_grad_filter",
                {t({4, 16, 20, 20}), t({4, 8, 20, 20})},
                {{16, 8, 3, 3}},
                conv});
  Attrs pool = makeAttrs(
      {}, {{"kernel", {3, 3}}, {"strides", {2, 2}}, {"padding", {1, 1}}});
  cs.push_back({"max_pool2d", {t({4, 16, 24, 24})}, {{4, 16, 12, 12}}, pool});
  cs.push_back({"max_pool2d_grad",
                {t({4, 16, 12, 12}), t({4, 16, 24, 24})},
                {{4, 16, 24, 24}},
                pool});
  cs.push_back({"global_avg_pool", {t({8, 64, 16, 16})}, {{8, 64}}, none});
  cs.push_back({"global_avg_pool_grad", {t({8, 64})}, {{8, 64, 16, 16}}, none});
  cs.push_back(
      {"softmax_cross_entropy", {t({512, 100}), ids({512}, 100)}, {{}}, none});
  HostTensor dloss = f32({});
  dloss.f = {0.5f};
  cs.push_back({"softmax_cross_entropy_grad",
                {t({512, 100}), ids({512}, 100), dloss},
                {{512, 100}},
                none});
  cs.push_back({"mse_loss", {t({300, 400}), t({300, 400})}, {{}}, none});
  cs.push_back({"mse_loss_grad",
                {t({300, 400}), t({300, 400}), dloss},
                {{300, 400}},
                none});
  cs.push_back({"fill", {}, {{300, 400}}, makeAttrs({{"value", 0.25}})});
  cs.push_back({"sgd_update",
                {t({100000}), t({100000}), t({100000})},
                {{100000}, {100000}},
                makeAttrs({{"lr", 0.1}, {"momentum", 0.9}}),
                {0, 2}});
  HostTensor step = i32({});
  step.i = {2};
  cs.push_back({"adam_update",
                {t({100000}), t({100000}), t({100000}), t({100000}), step},
                {{100000}, {100000}, {100000}},
                makeAttrs({{"lr", 0.01}, {"weight_decay", 0.1}}),
                {0, 2, 3}});
  for (Config &c : cs) // the second moment must be non-negative
    if (c.name == "adam_update")
      for (float &v : c.inputs[3].f)
        v = std::fabs(v);
  return cs;
}

TEST(KernelsDeterminism, SameBitsTwiceAndForEveryThreadCount) {
  for (const Config &c : configs()) {
    std::vector<std::vector<float>> reference = runOnce(c, 1);
    for (const std::vector<float> &out : reference)
      for (float v : out)
        ASSERT_FALSE(std::isnan(v)) << c.name << " left an output unwritten";
    for (int threads : {1, 2, 2, 3}) {
      std::vector<std::vector<float>> again = runOnce(c, threads);
      for (size_t i = 0; i < reference.size(); ++i)
        EXPECT_TRUE(sameBits(reference[i], again[i]))
            << c.name << " output #" << i << " with " << threads << " threads";
    }
  }
}

// The matmul tiling attributes change the blocking, not the result, as
// long as kc is unchanged.
TEST(KernelsDeterminism, MatmulTilesAgreeForTheSameKc) {
  Random rng(62);
  HostTensor a = rng.tensor({2, 70, 90}), b = rng.tensor({90, 50});
  HostTensor first = f32({2, 70, 50}), second = f32({2, 70, 50});
  runKernel(
      "matmul", {&a, &b}, {&first},
      makeAttrs({{"mc", 96}, {"nc", 512}, {"kc", 32}, {"mr", 6}, {"nr", 32}}),
      2);
  runKernel(
      "matmul", {&a, &b}, {&second},
      makeAttrs({{"mc", 16}, {"nc", 64}, {"kc", 32}, {"mr", 8}, {"nr", 8}}), 1);
  EXPECT_TRUE(sameBits(first.f, second.f));
}

} // namespace
} // namespace strata::rt::test
