//===- VectorMathTest.cpp - Tests of the vectorised exp and GELU ----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every instruction set this CPU supports is checked against float64:
// exp within 4e-7 relative over its whole finite range (about 3 ulp), GELU
// and its derivative within 1e-5 relative + 1e-6 absolute.
//
//===----------------------------------------------------------------------===//

#include "VectorMath.h"

#include "KernelTestUtil.h"

#include <limits>

namespace strata::rt::test {
namespace {

using detail::GemmIsa;

std::vector<GemmIsa> supportedIsas() {
  std::vector<GemmIsa> isas;
  for (GemmIsa isa : {GemmIsa::Scalar, GemmIsa::Avx2, GemmIsa::Avx512})
    if (detail::gemmIsaSupported(isa))
      isas.push_back(isa);
  return isas;
}

double geluRef(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

double geluGradRef(double x) {
  double u = 0.7978845608 * (x + 0.044715 * x * x * x);
  double t = std::tanh(u);
  return 0.5 * (1 + t) +
         0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x);
}

/// add, relu and relu_grad are exact: every instruction set gives the scalar
/// loop's bits, on random values, zeros of both signs, NaN, infinities and
/// subnormals, at lengths that leave every tail.
TEST(VectorMath, SelectionsAndSumsAreBitIdentical) {
  Random rng(73);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            inf,
                            -inf,
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min()};
  for (int64_t n : {1, 7, 8, 15, 16, 17, 1003}) {
    std::vector<float> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = i % 5 == 0 ? specials[i % 8] : rng.uniform(-2.0f, 2.0f);
      b[i] = i % 3 == 0 ? specials[(i + 3) % 8] : rng.uniform(-2.0f, 2.0f);
    }
    const detail::VectorMath &ref = detail::vectorMath(GemmIsa::Scalar);
    std::vector<float> want[3], got[3];
    for (auto &w : want)
      w.assign(n, 1.0f);
    ref.add(a.data(), b.data(), want[0].data(), n);
    ref.relu(a.data(), want[1].data(), n);
    ref.reluGrad(a.data(), b.data(), want[2].data(), n);
    for (GemmIsa isa : supportedIsas()) {
      const detail::VectorMath &m = detail::vectorMath(isa);
      for (auto &g : got)
        g.assign(n, 1.0f);
      m.add(a.data(), b.data(), got[0].data(), n);
      m.relu(a.data(), got[1].data(), n);
      m.reluGrad(a.data(), b.data(), got[2].data(), n);
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(std::memcmp(got[k].data(), want[k].data(), n * 4), 0)
            << (k == 0   ? "add"
                : k == 1 ? "relu"
                         : "relu_grad")
            << " " << detail::gemmIsaName(isa) << " n=" << n;
    }
  }
}

/// The column sums of bias_add_grad and layer_norm_grad: every instruction
/// set gives the scalar loop's bits (the same additions in row order), the
/// sums are within rounding of float64, and nothing past n is written
/// (1100 columns span two column groups of the vector loops).
TEST(VectorMath, ColumnSumsAreBitIdentical) {
  Random rng(91);
  for (int64_t rows : {1, 5, 37})
    for (int64_t n : {1, 7, 8, 15, 16, 17, 100, 129, 300, 1100}) {
      int64_t ld = n + 3;
      std::vector<float> dy(rows * ld), x(rows * ld), mean(rows), rstd(rows);
      for (float &v : dy)
        v = rng.uniform(-2.0f, 2.0f);
      for (float &v : x)
        v = rng.uniform(-2.0f, 2.0f);
      for (int64_t r = 0; r < rows; ++r) {
        mean[r] = rng.uniform(-0.5f, 0.5f);
        rstd[r] = rng.uniform(0.5f, 2.0f);
      }
      auto run = [&](const detail::VectorMath &m, std::vector<float> &sum,
                     std::vector<float> &dgamma, std::vector<float> &dbeta) {
        // One guard element past n must stay as it was.
        sum.assign(n + 1, 7.0f);
        dgamma.assign(n + 1, 7.0f);
        dbeta.assign(n + 1, 7.0f);
        m.columnSums(dy.data(), rows, ld, sum.data(), n);
        m.normColumnSums({dy.data(), x.data(), mean.data(), rstd.data(), rows,
                          ld, dgamma.data(), dbeta.data()},
                         n);
      };
      std::vector<float> want[3], got[3];
      run(detail::vectorMath(GemmIsa::Scalar), want[0], want[1], want[2]);
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, sumAbs = 0, dg = 0, dgAbs = 0;
        for (int64_t r = 0; r < rows; ++r) {
          double g = dy[r * ld + j];
          double xhat = ((double)x[r * ld + j] - mean[r]) * rstd[r];
          sum += g;
          sumAbs += std::fabs(g);
          dg += g * xhat;
          dgAbs += std::fabs(g * xhat);
        }
        double eps = 1.2e-7 * (rows + 2);
        EXPECT_NEAR(want[0][j], sum, eps * sumAbs + 1e-30) << "j=" << j;
        EXPECT_NEAR(want[1][j], dg, 2 * eps * dgAbs + 1e-30) << "j=" << j;
        EXPECT_EQ(want[2][j], want[0][j]) << "dbeta is dy's column sum";
      }
      EXPECT_EQ(want[0][n], 7.0f);
      for (GemmIsa isa : supportedIsas()) {
        run(detail::vectorMath(isa), got[0], got[1], got[2]);
        for (int k = 0; k < 3; ++k)
          EXPECT_EQ(std::memcmp(got[k].data(), want[k].data(), (n + 1) * 4), 0)
              << (k == 0   ? "columnSums"
                  : k == 1 ? "dgamma"
                           : "dbeta")
              << " " << detail::gemmIsaName(isa) << " rows=" << rows
              << " n=" << n;
      }
    }
}

TEST(VectorMath, ExpAccuracy) {
  Random rng(71);
  std::vector<float> x(10007), y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i < 5000 ? rng.uniform(-87.0f, 88.5f) : rng.uniform(-5.0f, 5.0f);
  for (GemmIsa isa : supportedIsas()) {
    detail::vectorMath(isa).exp(x.data(), y.data(), (int64_t)x.size());
    std::vector<double> ref(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      ref[i] = std::exp((double)x[i]);
    expectClose(y, ref, 4e-7, 0,
                std::string("exp ") + detail::gemmIsaName(isa));
  }
}

TEST(VectorMath, ExpSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f,    -0.0f,
                          1.0f,    -1.0f,
                          -87.0f,  -88.0f,
                          -100.0f, -1e30f,
                          -inf,    88.7f,
                          89.0f,   1e30f,
                          inf,     std::numeric_limits<float>::quiet_NaN()};
  for (GemmIsa isa : supportedIsas()) {
    std::vector<float> y(x.size());
    detail::vectorMath(isa).exp(x.data(), y.data(), (int64_t)x.size());
    std::string what = detail::gemmIsaName(isa);
    EXPECT_EQ(y[0], 1.0f) << what;
    EXPECT_EQ(y[1], 1.0f) << what;
    EXPECT_NEAR(y[2], 2.718281828f, 1e-6) << what;
    EXPECT_NEAR(y[3], 0.367879441f, 1e-7) << what;
    EXPECT_GT(y[4], 0.0f) << what;
    // Below FLT_MIN: 0 on the vector paths (flushed), tiny on the C library.
    EXPECT_LT(y[5], 1.2e-38f) << what;
    EXPECT_LT(y[6], 1e-40f) << what;
    EXPECT_EQ(y[7], 0.0f) << what;
    EXPECT_EQ(y[8], 0.0f) << what;
    EXPECT_NEAR(y[9] / std::exp((double)88.7f), 1.0, 1e-6) << what;
    EXPECT_EQ(y[10], inf) << what;
    EXPECT_EQ(y[11], inf) << what;
    EXPECT_EQ(y[12], inf) << what;
    EXPECT_TRUE(std::isnan(y[13])) << what;
  }
}

TEST(VectorMath, Gelu) {
  Random rng(72);
  std::vector<float> x(4099), dy(x.size()), y(x.size()), dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = i < 100 ? rng.uniform(-30.0f, 30.0f) : rng.uniform(-6.0f, 6.0f);
    dy[i] = rng.uniform(-1.0f, 1.0f);
  }
  for (GemmIsa isa : supportedIsas()) {
    const detail::VectorMath &math = detail::vectorMath(isa);
    math.gelu(x.data(), y.data(), (int64_t)x.size());
    math.geluGrad(dy.data(), x.data(), dx.data(), (int64_t)x.size());
    std::vector<double> yRef(x.size()), dxRef(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      yRef[i] = geluRef(x[i]);
      dxRef[i] = dy[i] * geluGradRef(x[i]);
    }
    std::string what = detail::gemmIsaName(isa);
    expectClose(y, yRef, 1e-5, 1e-6, "gelu " + what);
    expectClose(dx, dxRef, 1e-5, 1e-6, "gelu_grad " + what);
  }
}

// An element's result does not depend on its position in the array (tails
// use the same lane arithmetic), so a parallel split cannot change the bits.
TEST(VectorMath, ResultsDoNotDependOnPosition) {
  Random rng(73);
  std::vector<float> x(53), whole(x.size()), dy(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = rng.uniform(-10.0f, 10.0f);
    dy[i] = rng.uniform(-1.0f, 1.0f);
  }
  for (GemmIsa isa : supportedIsas()) {
    const detail::VectorMath &math = detail::vectorMath(isa);
    using Fn = std::function<void(const float *, float *, int64_t, int64_t)>;
    const Fn fns[] = {[&](const float *in, float *out, int64_t off, int64_t n) {
                        math.exp(in + off, out + off, n);
                      },
                      [&](const float *in, float *out, int64_t off, int64_t n) {
                        math.gelu(in + off, out + off, n);
                      },
                      [&](const float *in, float *out, int64_t off, int64_t n) {
                        math.geluGrad(dy.data() + off, in + off, out + off, n);
                      }};
    for (const Fn &fn : fns) {
      fn(x.data(), whole.data(), 0, (int64_t)x.size());
      for (int64_t split : {1, 5, 16, 17, 30}) {
        std::vector<float> pieces(x.size());
        fn(x.data(), pieces.data(), 0, split);
        fn(x.data(), pieces.data(), split, (int64_t)x.size() - split);
        EXPECT_TRUE(sameBits(whole, pieces))
            << detail::gemmIsaName(isa) << " split " << split;
      }
    }
  }
}

} // namespace
} // namespace strata::rt::test
