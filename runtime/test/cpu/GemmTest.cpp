//===- GemmTest.cpp - Tests of the blocked GEMM ---------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every product is compared with a double-precision reference on random
// data; an element passes when
//   |C - C_ref| <= 1e-5 * (|alpha| sum_p |op(A)_ip| |op(B)_pj| + |beta| |C0|),
// a bound that scales with the magnitude of the terms summed.
//
//===----------------------------------------------------------------------===//

#include "GemmInternal.h"
#include "KernelTestUtil.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace strata::rt::test {
namespace {

using detail::GemmIsa;

constexpr double kRelTol = 1e-5;

struct GemmCase {
  bool ta = false, tb = false;
  int64_t m = 1, n = 1, k = 1;
  float alpha = 1.0f, beta = 0.0f;
  int64_t padA = 0, padB = 0, padC = 0; // extra leading-dimension columns
};

std::string describe(const GemmCase &c, const GemmTiling &t, GemmIsa isa) {
  return std::string(detail::gemmIsaName(isa)) + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) +
         " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " tiling " + std::to_string(t.mc) +
         "/" + std::to_string(t.nc) + "/" + std::to_string(t.kc) + "/" +
         std::to_string(t.mr) + "x" + std::to_string(t.nr);
}

struct GemmData {
  std::vector<float> a, b, c;
  int64_t lda, ldb, ldc;
};

GemmData makeData(const GemmCase &c, Random &rng) {
  GemmData d;
  int64_t aRows = c.ta ? c.k : c.m, aCols = c.ta ? c.m : c.k;
  int64_t bRows = c.tb ? c.n : c.k, bCols = c.tb ? c.k : c.n;
  d.lda = aCols + c.padA;
  d.ldb = bCols + c.padB;
  d.ldc = c.n + c.padC;
  auto fill = [&](std::vector<float> &v, int64_t size) {
    v.resize(size);
    for (float &x : v) {
      do
        x = rng.uniform(-1.0f, 1.0f);
      while (x == 0.0f);
    }
  };
  fill(d.a, aRows * d.lda);
  fill(d.b, bRows * d.ldb);
  fill(d.c, c.m * d.ldc);
  return d;
}

/// Runs one GEMM and checks it against the double reference; padding
/// columns of C must be left alone. Returns C.
std::vector<float> checkGemm(GemmIsa isa, ThreadPool *pool, const GemmTiling &t,
                             const GemmCase &c, Random &rng) {
  GemmData d = makeData(c, rng);
  std::vector<float> c0 = d.c;
  detail::gemmWithIsa(isa, pool, t, c.ta, c.tb, c.m, c.n, c.k, c.alpha,
                      d.a.data(), d.lda, d.b.data(), d.ldb, c.beta, d.c.data(),
                      d.ldc);
  auto opA = [&](int64_t i, int64_t p) {
    return (double)(c.ta ? d.a[p * d.lda + i] : d.a[i * d.lda + p]);
  };
  auto opB = [&](int64_t p, int64_t j) {
    return (double)(c.tb ? d.b[j * d.ldb + p] : d.b[p * d.ldb + j]);
  };
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < d.ldc; ++j) {
      double got = d.c[i * d.ldc + j];
      if (j >= c.n) {
        if (got != c0[i * d.ldc + j] && bad++ == 0)
          first = "padding of C changed";
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        sum += opA(i, p) * opB(p, j);
        mag += std::fabs(opA(i, p) * opB(p, j));
      }
      double ref = (double)c.alpha * sum;
      double bound = std::fabs((double)c.alpha) * mag;
      if (c.beta != 0.0f) {
        ref += (double)c.beta * c0[i * d.ldc + j];
        bound += std::fabs((double)c.beta * c0[i * d.ldc + j]);
      }
      if (!(std::fabs(got - ref) <= kRelTol * bound + 1e-30) && bad++ == 0)
        first = "C[" + std::to_string(i) + "][" + std::to_string(j) +
                "] = " + std::to_string(got) + ", expected " +
                std::to_string(ref);
    }
  }
  EXPECT_EQ(bad, 0) << describe(c, t, isa) << ": " << first;
  return d.c;
}

std::vector<GemmIsa> supportedIsas() {
  std::vector<GemmIsa> isas;
  for (GemmIsa isa : {GemmIsa::Scalar, GemmIsa::Avx2, GemmIsa::Avx512})
    if (detail::gemmIsaSupported(isa))
      isas.push_back(isa);
  return isas;
}

/// Every supported register tile.
const std::pair<int64_t, int64_t> kTiles[] = {
    {4, 16},  {6, 16}, {8, 16}, {4, 32}, {6, 32}, {8, 32}, {12, 32},
    {14, 32}, {8, 8},  {4, 8},  {8, 48}, {6, 48}, {4, 64}};

/// Small blocks exercise every loop boundary; large ones the usual path.
std::vector<GemmTiling> tilingsFor(int64_t mr, int64_t nr) {
  return {GemmTiling{2 * mr, 2 * nr, 16, mr, nr},
          GemmTiling{8 * mr, 16 * nr, 96, mr, nr}};
}

const std::pair<float, float> kAlphaBeta[] = {
    {1.0f, 0.0f}, {0.5f, -1.25f}, {-2.0f, 1.0f}};

TEST(Gemm, OddShapesAndTransposes) {
  const int64_t sizes[] = {1, 7, 13, 63, 65, 129};
  Random rng(1);
  ThreadPool pool(2);
  GemmTiling tiling;
  int index = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes)
        for (int trans = 0; trans < 4; ++trans) {
          GemmCase c;
          c.m = m, c.n = n, c.k = k;
          c.ta = trans & 1, c.tb = trans & 2;
          std::tie(c.alpha, c.beta) = kAlphaBeta[index++ % 3];
          checkGemm(detail::defaultGemmIsa(), &pool, tiling, c, rng);
        }
}

TEST(Gemm, EveryTileAndBlockSize) {
  const int64_t shapes[][3] = {
      {1, 1, 1}, {7, 13, 5}, {13, 7, 63}, {65, 63, 129}, {37, 70, 17}};
  Random rng(2);
  ThreadPool pool(3);
  int index = 0;
  for (auto [mr, nr] : kTiles)
    for (const GemmTiling &t : tilingsFor(mr, nr))
      for (auto &s : shapes)
        for (int trans = 0; trans < 4; ++trans) {
          GemmCase c;
          c.m = s[0], c.n = s[1], c.k = s[2];
          c.ta = trans & 1, c.tb = trans & 2;
          std::tie(c.alpha, c.beta) = kAlphaBeta[index++ % 3];
          checkGemm(detail::defaultGemmIsa(), &pool, t, c, rng);
        }
}

TEST(Gemm, LeadingDimensionsLargerThanTheMatrix) {
  Random rng(3);
  ThreadPool pool(2);
  for (int trans = 0; trans < 4; ++trans) {
    GemmCase c;
    c.m = 45, c.n = 37, c.k = 29;
    c.ta = trans & 1, c.tb = trans & 2;
    c.padA = 3, c.padB = 5, c.padC = 7;
    c.alpha = 1.5f, c.beta = 0.25f;
    checkGemm(detail::defaultGemmIsa(), &pool, GemmTiling{16, 32, 8, 8, 16}, c,
              rng);
  }
}

TEST(Gemm, LargeProblem) {
  Random rng(4);
  ThreadPool pool(2);
  GemmCase c;
  c.m = 300, c.n = 517, c.k = 611;
  checkGemm(detail::defaultGemmIsa(), &pool, GemmTiling{}, c, rng);
  c.ta = c.tb = true;
  checkGemm(detail::defaultGemmIsa(), &pool, GemmTiling{}, c, rng);
}

// beta == 0 must not read C: NaN garbage is overwritten.
TEST(Gemm, BetaZeroOverwritesNaN) {
  Random rng(5);
  for (GemmIsa isa : supportedIsas()) {
    GemmCase c;
    c.m = 19, c.n = 35, c.k = 11;
    GemmData d = makeData(c, rng);
    std::fill(d.c.begin(), d.c.end(), std::numeric_limits<float>::quiet_NaN());
    ThreadPool pool(2);
    detail::gemmWithIsa(isa, &pool, GemmTiling{12, 32, 8, 6, 16}, false, false,
                        c.m, c.n, c.k, 1.0f, d.a.data(), d.lda, d.b.data(),
                        d.ldb, 0.0f, d.c.data(), d.ldc);
    for (float x : d.c)
      ASSERT_FALSE(std::isnan(x)) << detail::gemmIsaName(isa);
    // alpha == 0 and k == 0 reduce to C = beta C.
    std::fill(d.c.begin(), d.c.end(), std::numeric_limits<float>::quiet_NaN());
    detail::gemmWithIsa(isa, &pool, GemmTiling{}, false, false, c.m, c.n, 0,
                        1.0f, d.a.data(), d.lda, d.b.data(), d.ldb, 0.0f,
                        d.c.data(), d.ldc);
    for (float x : d.c)
      ASSERT_EQ(x, 0.0f);
    std::fill(d.c.begin(), d.c.end(), 2.0f);
    detail::gemmWithIsa(isa, &pool, GemmTiling{}, false, false, c.m, c.n, c.k,
                        0.0f, d.a.data(), d.lda, d.b.data(), d.ldb, 1.5f,
                        d.c.data(), d.ldc);
    for (float x : d.c)
      ASSERT_EQ(x, 3.0f);
  }
}

// Each C element is computed by one thread with its k loop in a fixed order,
// so the bits do not depend on the thread count.
TEST(Gemm, BitIdenticalAcrossThreadCounts) {
  Random rng(6);
  for (auto [mr, nr] : kTiles) {
    for (int trans = 0; trans < 4; ++trans) {
      GemmCase c;
      c.m = 203, c.n = 175, c.k = 150;
      c.ta = trans & 1, c.tb = trans & 2;
      c.alpha = 0.75f, c.beta = 0.5f;
      GemmData d = makeData(c, rng);
      GemmTiling t{4 * mr, 3 * nr, 64, mr, nr};
      std::vector<float> first;
      for (int threads = 1; threads <= 4; ++threads) {
        ThreadPool pool(threads);
        std::vector<float> out = d.c;
        gemm(pool, t, c.ta, c.tb, c.m, c.n, c.k, c.alpha, d.a.data(), d.lda,
             d.b.data(), d.ldb, c.beta, out.data(), d.ldc);
        if (threads == 1)
          first = out;
        else
          EXPECT_TRUE(sameBits(first, out))
              << "tile " << mr << "x" << nr << " threads " << threads;
      }
    }
  }
}

// Narrow products (few rows) split the column panels across threads.
TEST(Gemm, BitIdenticalForNarrowProducts) {
  Random rng(7);
  GemmCase c;
  c.m = 3, c.n = 700, c.k = 300;
  GemmData d = makeData(c, rng);
  std::vector<float> first;
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool pool(threads);
    std::vector<float> out = d.c;
    gemm(pool, GemmTiling{}, false, false, c.m, c.n, c.k, 1.0f, d.a.data(),
         d.lda, d.b.data(), d.ldb, 0.0f, out.data(), d.ldc);
    if (threads == 1)
      first = out;
    else
      EXPECT_TRUE(sameBits(first, out)) << threads;
  }
}

// The bits depend only on the ISA and kc: not on mc, nc or the register tile.
TEST(Gemm, BitsDependOnlyOnKc) {
  Random rng(8);
  GemmCase c;
  c.m = 77, c.n = 91, c.k = 200;
  GemmData d = makeData(c, rng);
  for (GemmIsa isa : supportedIsas()) {
    std::vector<float> first;
    for (auto [mr, nr] : kTiles) {
      for (int64_t blocks : {1, 3}) {
        std::vector<float> out = d.c;
        detail::gemmWithIsa(isa, nullptr,
                            GemmTiling{blocks * mr, blocks * nr, 64, mr, nr},
                            false, false, c.m, c.n, c.k, 1.0f, d.a.data(),
                            d.lda, d.b.data(), d.ldb, 0.0f, out.data(), d.ldc);
        if (first.empty())
          first = out;
        else
          EXPECT_TRUE(sameBits(first, out))
              << detail::gemmIsaName(isa) << " tile " << mr << "x" << nr;
      }
    }
  }
}

// Every instruction set this CPU has (scalar always; AVX2 and AVX-512 where
// present) against the reference, and against each other.
TEST(Gemm, EveryInstructionSet) {
  std::vector<GemmIsa> isas = supportedIsas();
  if (!std::getenv("STRATA_GEMM_ISA"))
    EXPECT_EQ(isas.back(), detail::defaultGemmIsa());
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f"))
    EXPECT_EQ(isas.size(), 3u);
#endif
  ThreadPool pool(2);
  const int64_t shapes[][3] = {{1, 1, 1}, {13, 63, 65}, {129, 65, 7}};
  for (auto [mr, nr] : kTiles) {
    for (auto &s : shapes) {
      for (int trans = 0; trans < 4; ++trans) {
        std::vector<std::vector<float>> results;
        for (GemmIsa isa : isas) {
          Random rng(9); // the same data for every ISA
          GemmCase c;
          c.m = s[0], c.n = s[1], c.k = s[2];
          c.ta = trans & 1, c.tb = trans & 2;
          c.alpha = 1.25f, c.beta = -0.5f;
          results.push_back(checkGemm(
              isa, &pool, GemmTiling{3 * mr, 2 * nr, 32, mr, nr}, c, rng));
        }
        for (size_t i = 1; i < results.size(); ++i)
          for (size_t e = 0; e < results[0].size(); ++e)
            ASSERT_NEAR(results[i][e], results[0][e],
                        1e-4 * (1 + std::fabs(results[0][e])));
      }
    }
  }
}

TEST(Gemm, VerifyTiling) {
  EXPECT_EQ(verifyGemmTiling(GemmTiling{}), "");
  for (auto [mr, nr] : kTiles)
    EXPECT_EQ(verifyGemmTiling(GemmTiling{mr * 4, nr * 4, 64, mr, nr}), "")
        << mr << "x" << nr;
  EXPECT_NE(
      verifyGemmTiling(GemmTiling{0, 512, 256, 8, 16}).find("must be positive"),
      std::string::npos);
  EXPECT_NE(verifyGemmTiling(GemmTiling{128, 512, -1, 8, 16})
                .find("must be positive"),
            std::string::npos);
  std::string tile = verifyGemmTiling(GemmTiling{128, 512, 256, 5, 16});
  EXPECT_NE(tile.find("unsupported gemm register tile mr x nr = 5x16"),
            std::string::npos)
      << tile;
  EXPECT_NE(tile.find("6x32"), std::string::npos) << tile;
  EXPECT_NE(verifyGemmTiling(GemmTiling{100, 512, 256, 8, 16})
                .find("mc=100 must be a multiple of mr=8"),
            std::string::npos);
  EXPECT_NE(verifyGemmTiling(GemmTiling{96, 500, 256, 6, 32})
                .find("nc=500 must be a multiple of nr=32"),
            std::string::npos);
}

TEST(Gemm, IsaNames) {
  EXPECT_STREQ(detail::gemmIsaName(GemmIsa::Scalar), "scalar");
  EXPECT_STREQ(detail::gemmIsaName(GemmIsa::Avx2), "avx2");
  EXPECT_STREQ(detail::gemmIsaName(GemmIsa::Avx512), "avx512");
  EXPECT_TRUE(detail::gemmIsaSupported(GemmIsa::Scalar));
}

} // namespace
} // namespace strata::rt::test
