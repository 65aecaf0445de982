//===- KernelsVerifyTest.cpp - Rejections by the kernels' verify ----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// One test per kind of error; each checks that the message names the
// operand or attribute and the expected and actual values.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

namespace strata::rt::test {
namespace {

constexpr DType kI32 = DType::I32;

#define EXPECT_CONTAINS(text, part)                                            \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

Attrs convAttrs(std::vector<int64_t> strides, std::vector<int64_t> padding) {
  return makeAttrs({}, {{"strides", strides}, {"padding", padding}});
}

Attrs poolAttrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                std::vector<int64_t> padding) {
  return makeAttrs(
      {}, {{"kernel", kernel}, {"strides", strides}, {"padding", padding}});
}

TEST(KernelsVerify, WrongOperandCount) {
  EXPECT_EQ(verifyMessage("add", {desc({3})}, {desc({3})}),
            "expected 2 inputs, got 1");
  EXPECT_EQ(verifyMessage("relu", {desc({3})}, {desc({3}), desc({3})}),
            "expected 1 output, got 2");
  EXPECT_EQ(verifyMessage("layer_norm_grad",
                          {desc({2, 4}), desc({2, 4}), desc({4})},
                          {desc({2, 4})}),
            "expected 3 outputs, got 1");
  EXPECT_EQ(verifyMessage("fill", {desc({3})}, {desc({3})},
                          makeAttrs({{"value", 1}})),
            "expected 0 inputs, got 1");
}

TEST(KernelsVerify, WrongDType) {
  EXPECT_EQ(
      verifyMessage("embedding", {desc({10, 4}), desc({3})}, {desc({3, 4})}),
      "input #1 must be i32, got f32");
  EXPECT_EQ(verifyMessage("matmul", {desc({2, 3}, kI32), desc({3, 4})},
                          {desc({2, 4})}),
            "input #0 must be f32, got i32");
  EXPECT_EQ(verifyMessage("softmax_cross_entropy",
                          {desc({4, 5}), desc({4}, kI32)}, {desc({}, kI32)}),
            "output #0 must be f32, got i32");
  EXPECT_EQ(verifyMessage(
                "adam_update",
                {desc({3}), desc({3}), desc({3}), desc({3}), desc({})},
                {desc({3}), desc({3}), desc({3})}, makeAttrs({{"lr", 0.1}})),
            "input #4 must be i32, got f32");
  EXPECT_EQ(verifyMessage("reshape", {desc({2, 3}, kI32)}, {desc({6})}),
            "output #0 must be i32 like input #0, got f32");
}

TEST(KernelsVerify, ShapeMismatch) {
  EXPECT_EQ(
      verifyMessage("bias_add", {desc({4, 16}), desc({15})}, {desc({4, 16})}),
      "input #1 must have shape [16], got [15]");
  EXPECT_EQ(verifyMessage("bias_add", {desc({2, 8, 5, 5}), desc({5})},
                          {desc({2, 8, 5, 5})}, makeAttrs({{"axis", 1}})),
            "input #1 must have shape [8], got [5]");
  EXPECT_EQ(verifyMessage("add", {desc({2, 3}), desc({3, 2})}, {desc({2, 3})}),
            "input #1 must have shape [2, 3], got [3, 2]");
  EXPECT_EQ(verifyMessage("layer_norm", {desc({2, 8}), desc({7}), desc({8})},
                          {desc({2, 8})}),
            "input #1 must have shape [8], got [7]");
  EXPECT_EQ(
      verifyMessage(
          "batch_norm",
          {desc({2, 8, 3, 3}), desc({8}), desc({8}), desc({7}), desc({8})},
          {desc({2, 8, 3, 3}), desc({8}), desc({8}), desc({8}), desc({8})}),
      "input #3 must have shape [8], got [7]");
  EXPECT_EQ(
      verifyMessage("batch_norm",
                    {desc({1, 8}), desc({8}), desc({8}), desc({8}), desc({8})},
                    {desc({1, 8}), desc({8}), desc({8}), desc({8}), desc({8})}),
      "input #0 [1, 8] has one value per channel; batch normalisation "
      "needs more");
  EXPECT_EQ(
      verifyMessage("batch_norm",
                    {desc({2, 8}), desc({8}), desc({8}), desc({8}), desc({8})},
                    {desc({2, 8}), desc({8}), desc({8}), desc({8}), desc({8})},
                    makeAttrs({{"momentum", 1.5}})),
      "attribute 'momentum' must lie in [0, 1], got 1.5");
  EXPECT_EQ(verifyMessage("batch_norm_grad",
                          {desc({2, 8, 3}), desc({2, 8, 4}), desc({8}),
                           desc({8}), desc({8})},
                          {desc({2, 8, 4}), desc({8}), desc({8})}),
            "input #0 must have shape [2, 8, 4], got [2, 8, 3]");
  EXPECT_EQ(verifyMessage("slice", {desc({2, 8})}, {desc({2, 4})},
                          makeAttrs({{"axis", 1}, {"offset", 6}, {"size", 4}})),
            "range [6, 10) of dimension 1 does not fit [2, 8]");
  EXPECT_EQ(verifyMessage("slice", {desc({2, 8})}, {desc({2, 4})},
                          makeAttrs({{"axis", 2}, {"offset", 0}, {"size", 4}})),
            "attribute 'axis' must be an integer in [0, 1], got 2");
  EXPECT_EQ(verifyMessage("concat", {desc({2, 3}), desc({3, 3})},
                          {desc({2, 6})}, makeAttrs({{"axis", 1}})),
            "input #1 must have shape [2, 3], got [3, 3]");
  EXPECT_EQ(verifyMessage("concat", {desc({2, 3}), desc({2, 3})},
                          {desc({2, 7})}, makeAttrs({{"axis", 1}})),
            "output #0 has 7 entries in dimension 1, the inputs together 6");
  EXPECT_EQ(verifyMessage("reshape", {desc({2, 3})}, {desc({7})}),
            "output #0 must have 6 elements like input #0, got shape [7]");
  EXPECT_EQ(verifyMessage("flatten", {desc({2, 3, 4})}, {desc({6, 4})}),
            "output #0 must have shape [2, 12], got [6, 4]");
}

TEST(KernelsVerify, MatmulShapes) {
  EXPECT_EQ(
      verifyMessage("matmul", {desc({2, 3}), desc({4, 5})}, {desc({2, 5})}),
      "contracting dimensions differ: input #0 has 3, input #1 has 4");
  EXPECT_EQ(verifyMessage("matmul", {desc({2, 3}), desc({5, 3})},
                          {desc({2, 5})}, makeAttrs({{"transpose_b", 1}})),
            "");
  EXPECT_EQ(
      verifyMessage("matmul", {desc({2, 3}), desc({3, 5})}, {desc({3, 5})}),
      "output #0 must have shape [2, 5], got [3, 5]");
  EXPECT_EQ(verifyMessage("matmul", {desc({4, 2, 3}), desc({5, 3, 6})},
                          {desc({4, 2, 6})}),
            "input #1 dimension 0 (batch, as input #0) must be 4, got 5");
  EXPECT_EQ(verifyMessage("matmul", {desc({2, 4, 2, 3}), desc({4, 3, 6})},
                          {desc({2, 4, 2, 6})}),
            "input #1 must have rank 2 or the rank of input #0 (4), got shape "
            "[4, 3, 6]");
  EXPECT_EQ(verifyMessage("matmul", {desc({3}), desc({3, 6})}, {desc({6})}),
            "input #0 must have rank at least 2, got shape [3]");
}

TEST(KernelsVerify, LossShapes) {
  EXPECT_EQ(verifyMessage("softmax_cross_entropy",
                          {desc({2, 3, 5}), desc({2, 5}, kI32)}, {desc({})}),
            "input #1 must have shape [2, 3], got [2, 5]");
  EXPECT_EQ(verifyMessage("softmax_cross_entropy",
                          {desc({2, 5}), desc({2}, kI32)}, {desc({1})}),
            "output #0 must have shape [], got [1]");
  EXPECT_EQ(verifyMessage("mse_loss_grad", {desc({4}), desc({4}), desc({1})},
                          {desc({4})}),
            "input #2 must have shape [], got [1]");
}

TEST(KernelsVerify, GradientShapes) {
  EXPECT_EQ(verifyMessage("layer_norm_grad",
                          {desc({2, 8}), desc({2, 8}), desc({8})},
                          {desc({2, 8}), desc({4}), desc({8})}),
            "output #1 must have shape [8], got [4]");
  EXPECT_EQ(
      verifyMessage("relu_grad", {desc({2, 8}), desc({2, 8})}, {desc({8, 2})}),
      "output #0 must have shape [2, 8], got [8, 2]");
  EXPECT_EQ(verifyMessage("embedding_grad", {desc({3, 4}), desc({3}, kI32)},
                          {desc({10, 5})}),
            "input #0 must have shape [3, 5], got [3, 4]");
  EXPECT_EQ(verifyMessage("conv2d_grad_input",
                          {desc({2, 4, 4, 4}), desc({4, 3, 3, 3})},
                          {desc({2, 3, 9, 9})}, convAttrs({2, 2}, {1, 1})),
            "input #0 must have shape [2, 4, 5, 5], got [2, 4, 4, 4]");
  EXPECT_EQ(verifyMessage("conv2d_grad_filter",
                          {desc({2, 4, 5, 5}), desc({2, 3, 9, 9})},
                          {desc({4, 2, 3, 3})}, convAttrs({2, 2}, {1, 1})),
            "output #0 dimension 1 (channels, as input #1) must be 3, got 2");
  EXPECT_EQ(verifyMessage("bias_add_grad", {desc({4, 6})}, {desc({4})}),
            "output #0 must have shape [6], got [4]");
  EXPECT_EQ(verifyMessage(
                "adam_update",
                {desc({3}), desc({3}), desc({3}), desc({3}), desc({}, kI32)},
                {desc({3}), desc({2}), desc({3})}, makeAttrs({{"lr", 0.1}})),
            "output #1 must have shape [3], got [2]");
}

TEST(KernelsVerify, ConvAndPoolShapes) {
  EXPECT_EQ(verifyMessage("conv2d", {desc({2, 3, 9, 9}), desc({4, 3, 3, 3})},
                          {desc({2, 4, 4, 4})}, convAttrs({2, 2}, {1, 1})),
            "output #0 must have shape [2, 4, 5, 5], got [2, 4, 4, 4]");
  EXPECT_EQ(verifyMessage("conv2d", {desc({2, 3, 9, 9}), desc({4, 2, 3, 3})},
                          {desc({2, 4, 5, 5})}, convAttrs({2, 2}, {1, 1})),
            "input #1 dimension 1 (channels, as input #0) must be 3, got 2");
  EXPECT_EQ(verifyMessage("conv2d", {desc({1, 1, 2, 2}), desc({1, 1, 5, 5})},
                          {desc({1, 1, 1, 1})}, convAttrs({1, 1}, {1, 1})),
            "window 5x5 is larger than the padded input #0 (4x4)");
  EXPECT_EQ(verifyMessage("max_pool2d", {desc({1, 2, 8, 8})},
                          {desc({1, 2, 3, 3})},
                          poolAttrs({2, 2}, {2, 2}, {0, 0})),
            "output #0 must have shape [1, 2, 4, 4], got [1, 2, 3, 3]");
  EXPECT_EQ(verifyMessage("global_avg_pool", {desc({2, 3, 4})}, {desc({2, 3})}),
            "input #0 must have rank 4, got shape [2, 3, 4]");
  EXPECT_EQ(verifyMessage("position_embedding", {desc({2, 9, 4}), desc({8, 4})},
                          {desc({2, 9, 4})}),
            "input #1 must have at least 9 rows (the sequence length of "
            "input #0), got 8");
}

TEST(KernelsVerify, BadAttributes) {
  EXPECT_EQ(verifyMessage("transpose", {desc({2, 3, 4})}, {desc({2, 3, 4})},
                          makeAttrs({}, {{"permutation", {0, 1, 1}}})),
            "attribute 'permutation' must be a permutation of [0, 3), got "
            "[0, 1, 1]");
  EXPECT_EQ(verifyMessage("transpose", {desc({2, 3})}, {desc({3, 2})}),
            "missing attribute 'permutation'");
  EXPECT_EQ(verifyMessage("transpose", {desc({2, 3})}, {desc({2, 3})},
                          makeAttrs({}, {{"permutation", {1, 0}}})),
            "output #0 must have shape [3, 2], got [2, 3]");
  EXPECT_EQ(verifyMessage("conv2d", {desc({2, 3, 9, 9}), desc({4, 3, 3, 3})},
                          {desc({2, 4, 5, 5})}, convAttrs({0, 2}, {1, 1})),
            "attribute 'strides' must be positive, got [0, 2]");
  EXPECT_EQ(verifyMessage("conv2d", {desc({2, 3, 9, 9}), desc({4, 3, 3, 3})},
                          {desc({2, 4, 5, 5})}, convAttrs({2, 2}, {-1, 1})),
            "attribute 'padding' must be non-negative, got [-1, 1]");
  EXPECT_EQ(verifyMessage("conv2d", {desc({2, 3, 9, 9}), desc({4, 3, 3, 3})},
                          {desc({2, 4, 5, 5})},
                          makeAttrs({}, {{"strides", {2, 2}}})),
            "missing attribute 'padding'");
  EXPECT_EQ(verifyMessage("conv2d", {desc({2, 3, 9, 9}), desc({4, 3, 3, 3})},
                          {desc({2, 4, 5, 5})}, convAttrs({2, 2, 2}, {1, 1})),
            "attribute 'strides' must have 2 values, got [2, 2, 2]");
  EXPECT_EQ(verifyMessage("max_pool2d", {desc({1, 2, 8, 8})},
                          {desc({1, 2, 5, 5})},
                          poolAttrs({2, 2}, {2, 2}, {2, 0})),
            "attribute 'padding' must be smaller than 'kernel', got [2, 0] and "
            "[2, 2]");
  EXPECT_EQ(verifyMessage("softmax", {desc({2, 5})}, {desc({2, 5})},
                          makeAttrs({{"scale", 0}})),
            "attribute 'scale' must be positive, got 0");
  EXPECT_EQ(verifyMessage("softmax", {desc({2, 4, 5})}, {desc({2, 4, 5})},
                          makeAttrs({{"causal", 1}})),
            "input #0 must end in a square [S, S] matrix for a causal softmax, "
            "got [2, 4, 5]");
  EXPECT_EQ(verifyMessage("layer_norm", {desc({2, 8}), desc({8}), desc({8})},
                          {desc({2, 8})}, makeAttrs({{"epsilon", -1e-5}})),
            "attribute 'epsilon' must be positive, got -1e-05");
  EXPECT_EQ(verifyMessage("bias_add", {desc({4, 6}), desc({6})}, {desc({4, 6})},
                          makeAttrs({{"axis", 2}})),
            "attribute 'axis' must be an integer in [-2, 2), got 2");
  EXPECT_EQ(verifyMessage("sgd_update", {desc({3}), desc({3}), desc({3})},
                          {desc({3}), desc({3})}),
            "missing attribute 'lr'");
  EXPECT_EQ(verifyMessage(
                "adam_update",
                {desc({3}), desc({3}), desc({3}), desc({3}), desc({}, kI32)},
                {desc({3}), desc({3}), desc({3})},
                makeAttrs({{"lr", 0.1}, {"beta1", 1.0}})),
            "attribute 'beta1' must be in [0, 1), got 1");
  EXPECT_EQ(verifyMessage(
                "adam_update",
                {desc({3}), desc({3}), desc({3}), desc({3}), desc({}, kI32)},
                {desc({3}), desc({3}), desc({3})},
                makeAttrs({{"lr", 0.1}, {"update", 2}, {"updates", 2}})),
            "attributes 'update' and 'updates' must satisfy -updates <= "
            "update < updates, got 2 of 2");
  EXPECT_EQ(verifyMessage(
                "adam_update",
                {desc({3}), desc({3}), desc({3}), desc({3}), desc({}, kI32)},
                {desc({3}), desc({3}), desc({3})},
                makeAttrs({{"lr", 0.1}, {"update", -3}, {"updates", 2}})),
            "attributes 'update' and 'updates' must satisfy -updates <= "
            "update < updates, got -3 of 2");
  EXPECT_EQ(verifyMessage("copy_into", {desc({3}), desc({4})}, {desc({4})}),
            "input #1 must have shape [3], got [4]");
  EXPECT_EQ(verifyMessage("fill", {}, {desc({3})}),
            "missing attribute 'value'");
}

TEST(KernelsVerify, MatmulTilingAttributes) {
  std::vector<TensorDesc> in{desc({8, 8}), desc({8, 8})}, out{desc({8, 8})};
  EXPECT_EQ(
      verifyMessage(
          "matmul", in, out,
          makeAttrs(
              {{"mc", 96}, {"nc", 512}, {"kc", 256}, {"mr", 6}, {"nr", 32}})),
      "");
  EXPECT_EQ(verifyMessage("matmul", in, out,
                          makeAttrs({{"mc", 96}, {"nc", 512}, {"mr", 6}})),
            "gemm tiling attributes mc, nc, kc, mr, nr must be given together "
            "(missing 'kc')");
  EXPECT_CONTAINS(
      verifyMessage(
          "matmul", in, out,
          makeAttrs(
              {{"mc", 96}, {"nc", 512}, {"kc", 256}, {"mr", 5}, {"nr", 32}})),
      "unsupported gemm register tile mr x nr = 5x32");
  EXPECT_CONTAINS(
      verifyMessage(
          "matmul", in, out,
          makeAttrs(
              {{"mc", 100}, {"nc", 512}, {"kc", 256}, {"mr", 6}, {"nr", 32}})),
      "mc=100 must be a multiple of mr=6");
}

// Numbers no integer type holds (found by fuzzing the plan loader under
// UBSan: the verifiers converted them before checking).
TEST(KernelsVerify, HugeNumbersAreNotIntegers) {
  EXPECT_EQ(verifyMessage("bias_add", {desc({4, 6}), desc({6})}, {desc({4, 6})},
                          makeAttrs({{"axis", 1e300}})),
            "attribute 'axis' must be an integer in [-2, 2), got 1e+300");
  EXPECT_CONTAINS(verifyMessage("matmul", {desc({8, 8}), desc({8, 8})},
                                {desc({8, 8})},
                                makeAttrs({{"mc", 1e300},
                                           {"nc", 512},
                                           {"kc", 256},
                                           {"mr", 6},
                                           {"nr", 32}})),
                  "attribute 'mc' must be an integer");
  EXPECT_CONTAINS(verifyMessage("send", {desc({3})}, {},
                                makeAttrs({{"peer", 1e300}, {"tag", 0}})),
                  "must be integers");
  EXPECT_CONTAINS(verifyMessage("micro_batch", {desc({4, 3})}, {desc({2, 3})},
                                makeAttrs({{"index", 0}, {"count", 1e300}})),
                  "attribute 'index' must be an integer");
}

TEST(KernelsAttrs, IntegerSaturates) {
  Attrs attrs = makeAttrs({{"big", 1e300},
                           {"small", -1e300},
                           {"nan", std::nan("")},
                           {"minus", -2.5}});
  EXPECT_EQ(attrs.integer("big"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(attrs.integer("small"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(attrs.integer("nan", 7), 7);
  EXPECT_EQ(attrs.integer("minus"), -2);
  EXPECT_EQ(attrs.integer("absent", 5), 5);
  EXPECT_TRUE(isInt64(-0x1p63));
  EXPECT_FALSE(isInt64(0x1p63));
  EXPECT_FALSE(isInt64(0.5));
  EXPECT_FALSE(isInt64(std::nan("")));
}

} // namespace
} // namespace strata::rt::test
