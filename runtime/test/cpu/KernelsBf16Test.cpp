//===- KernelsBf16Test.cpp - bf16 matmul and convolution kernels ----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// A `bf16` instruction rounds its two GEMM operands to bf16 and sums in f32:
// its result must match the float64 reference computed from the rounded
// operands (the products of two bf16 values are exact, so only the f32
// summation differs: the f32 kernels' tolerances apply), and must differ
// from the reference of the unrounded operands by far more (the rounding
// happened). Gradients are checked as the f32 ones are (KernelsBackwardTest),
// against central differences of the reference on the rounded operands.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "ReferenceOps.h"

#include "strata-rt/Bf16.h"

namespace strata::rt::test {
namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;

using ref::Vec;

/// `t`'s values rounded to bf16 (as doubles).
Vec rounded(const HostTensor &t) {
  Vec v(t.f.size());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = bf16ToF32(f32ToBf16(t.f[i]));
  return v;
}

/// The largest |got - expected| relative to max |expected|.
double relativeError(const std::vector<float> &got, const Vec &expected) {
  double err = 0, mag = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - expected[i]));
    mag = std::max(mag, std::fabs(expected[i]));
  }
  return err / mag;
}

struct ConvCase {
  Shape x, w;
  ref::Conv conv;
  int threads;
};

const ConvCase kConvCases[] = {
    {{2, 3, 9, 8}, {4, 3, 3, 3}, {2, 2, 1, 1}, 1}, // stride 2, padding 1
    {{4, 3, 9, 8}, {4, 3, 3, 3}, {2, 2, 1, 1}, 2}, // images per thread
    {{3, 8, 7, 7}, {5, 8, 3, 2}, {1, 2, 0, 1}, 2}, // per-image GEMMs
    {{2, 6, 5, 4}, {3, 6, 1, 1}, {1, 1, 0, 0}, 2}, // 1x1: no im2col
};

Attrs convAttrs(const ConvCase &c, bool bf16) {
  return makeAttrs({{"bf16", bf16 ? 1 : 0}},
                   {{"strides", {c.conv.sh, c.conv.sw}},
                    {"padding", {c.conv.ph, c.conv.pw}}});
}

TEST(KernelsBf16, Conv2dRoundsItsOperands) {
  Random rng(61);
  for (const ConvCase &c : kConvCases) {
    HostTensor x = rng.tensor(c.x), w = rng.tensor(c.w);
    int64_t oh = (c.x[2] + 2 * c.conv.ph - c.w[2]) / c.conv.sh + 1;
    int64_t ow = (c.x[3] + 2 * c.conv.pw - c.w[3]) / c.conv.sw + 1;
    HostTensor y = f32({c.x[0], c.w[0], oh, ow});
    runKernel("conv2d", {&x, &w}, {&y}, convAttrs(c, true), c.threads);
    std::string what =
        "bf16 conv2d " + formatShape(c.x) + " * " + formatShape(c.w);
    expectClose(y.f, ref::conv2d(rounded(x), c.x, rounded(w), c.w, c.conv),
                kRtol, 1e-5 * c.w[1] * c.w[2] * c.w[3], what);
    // bf16 has 8 significant bits: the unrounded product is ~2^-9 away.
    EXPECT_GT(relativeError(y.f, ref::conv2d(x.asDouble(), c.x, w.asDouble(),
                                             c.w, c.conv)),
              1e-4)
        << what;
  }
}

TEST(KernelsBf16, Conv2dGradsRoundTheirOperands) {
  Random rng(62);
  for (const ConvCase &c : kConvCases) {
    HostTensor x = rng.tensor(c.x), w = rng.tensor(c.w);
    int64_t oh = (c.x[2] + 2 * c.conv.ph - c.w[2]) / c.conv.sh + 1;
    int64_t ow = (c.x[3] + 2 * c.conv.pw - c.w[3]) / c.conv.sw + 1;
    HostTensor dy = rng.tensor({c.x[0], c.w[0], oh, ow});
    HostTensor dx = f32(c.x), dw = f32(c.w);
    runKernel("conv2d_grad_input", {&dy, &w}, {&dx}, convAttrs(c, true),
              c.threads);
    runKernel("conv2d_grad_filter", {&dy, &x}, {&dw}, convAttrs(c, true),
              c.threads);
    Vec xr = rounded(x), wr = rounded(w), dyr = rounded(dy);
    std::string what = formatShape(c.x) + " * " + formatShape(c.w);
    Vec dxRef = numericGradient(
        [&](const Vec &v) { return ref::conv2d(v, c.x, wr, c.w, c.conv); }, xr,
        dyr);
    Vec dwRef = numericGradient(
        [&](const Vec &v) { return ref::conv2d(xr, c.x, v, c.w, c.conv); }, wr,
        dyr);
    expectClose(dx.f, dxRef, kRtol, kAtol, "bf16 conv2d_grad_input " + what);
    expectClose(dw.f, dwRef, kRtol, kAtol, "bf16 conv2d_grad_filter " + what);
    Vec dxExact = numericGradient(
        [&](const Vec &v) {
          return ref::conv2d(v, c.x, w.asDouble(), c.w, c.conv);
        },
        x.asDouble(), dy.asDouble());
    EXPECT_GT(relativeError(dx.f, dxExact), 1e-4) << what;
  }
}

// A bf16 matmul's tiling attributes block the bf16 GEMM (a register tile of
// the bf16 paths, which the f32 GEMM does not have, is accepted); the result
// is the rounded operands' product whatever the tiling.
TEST(KernelsBf16, MatmulTilingAttributes) {
  Random rng(63);
  HostTensor a = rng.tensor({3, 41, 29}), b = rng.tensor({29, 37});
  Vec expected = ref::matmul(rounded(a), a.desc.shape, rounded(b), b.desc.shape,
                             false, false);
  for (GemmTiling t : {GemmTiling{64, 64, 32, 32, 32},
                       GemmTiling{24, 96, 16, 12, 32}, GemmTiling()}) {
    HostTensor out = f32({3, 41, 37});
    Attrs attrs = makeAttrs({{"bf16", 1},
                             {"mc", t.mc},
                             {"nc", t.nc},
                             {"kc", t.kc},
                             {"mr", t.mr},
                             {"nr", t.nr}});
    runKernel("matmul", {&a, &b}, {&out}, attrs, 2);
    expectClose(out.f, expected, kRtol, 1e-5 * 29,
                "bf16 matmul with tiling " + std::to_string(t.mc) + "," +
                    std::to_string(t.nc) + "," + std::to_string(t.kc));
  }
  std::vector<TensorDesc> in = {desc({41, 29}), desc({29, 37})};
  std::vector<TensorDesc> out = {desc({41, 37})};
  auto tiled = [](double bf16, double mr, double nr) {
    return makeAttrs({{"bf16", bf16},
                      {"mc", 64},
                      {"nc", 64},
                      {"kc", 32},
                      {"mr", mr},
                      {"nr", nr}});
  };
  EXPECT_EQ(verifyMessage("matmul", in, out, tiled(1, 32, 32)), "");
  EXPECT_NE(verifyMessage("matmul", in, out, tiled(0, 32, 32)), "");
  EXPECT_NE(verifyMessage("matmul", in, out, tiled(1, 32, 16))
                .find("unsupported bf16 gemm register tile"),
            std::string::npos);
}

} // namespace
} // namespace strata::rt::test
