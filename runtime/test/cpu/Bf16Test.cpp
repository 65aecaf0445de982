//===- Bf16Test.cpp - Tests of the bf16 conversions and GEMM --------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Conversions: every f32 bit pattern through every vector kernel against the
// scalar reference, the reference against an independent round-to-nearest-
// even in double on a sample, and a table of edge values.
//
// GEMM: every path (AMX, AVX512-BF16, fallback; the ones this machine runs)
// against a double reference computed from the same bf16-rounded inputs. An
// element passes when
//   |C - C_ref| <= (n_eff + 1) u (|alpha| sum_p |op(A)_ip op(B)_pj| + |beta
//   C0|)
// with u = 2^-24 (f32 unit roundoff) and n_eff = k + 2 ceil(k / 256) + 2: the
// products of two bf16 values are exact in f32, each of the k accumulations
// rounds once, and every kc slice (kc >= 256) adds the alpha scaling and the
// fold into C. This is the worst-case bound of recursive summation (Higham,
// gamma_n), so it holds for any summation order the hardware uses.
//
//===----------------------------------------------------------------------===//

#include "GemmBf16Internal.h"
#include "GemmInternal.h"
#include "KernelTestUtil.h"

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <unistd.h>

namespace strata::rt::test {
namespace {

using detail::Bf16ConvertIsa;
using detail::Bf16Isa;

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

float fromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof(x));
  return x;
}

std::vector<Bf16ConvertIsa> convertIsas() {
  std::vector<Bf16ConvertIsa> isas;
  for (Bf16ConvertIsa isa : {Bf16ConvertIsa::Scalar, Bf16ConvertIsa::Avx512,
                             Bf16ConvertIsa::Avx512Bf16})
    if (detail::bf16ConvertIsaSupported(isa))
      isas.push_back(isa);
  return isas;
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

/// Round to nearest even through double: the nearer of the two bf16 values
/// around x (the even one on a tie). For finite, non-NaN x.
uint16_t roundThroughDouble(float x) {
  uint32_t bits = bitsOf(x);
  uint16_t lo = uint16_t(bits >> 16); // truncation: |lo| <= |x|
  uint16_t hi = uint16_t(lo + 1);     // next magnitude up (may be Inf)
  double dx = x, dlo = bf16ToF32(lo);
  double dhi = (hi & 0x7FFF) == 0x7F80
                   ? std::copysign(std::ldexp(1.0, 128), dx) // Inf's slot
                   : double(bf16ToF32(hi));
  double elo = std::fabs(dx - dlo), ehi = std::fabs(dhi - dx);
  if (elo < ehi)
    return lo;
  if (ehi < elo)
    return hi;
  return (lo & 1) ? hi : lo;
}

TEST(Bf16Convert, EdgeValues) {
  const std::pair<uint32_t, uint16_t> cases[] = {
      {0x00000000, 0x0000}, // +0
      {0x80000000, 0x8000}, // -0
      {0x3F800000, 0x3F80}, // 1
      {0x3F808000, 0x3F80}, // tie, even below
      {0x3F818000, 0x3F82}, // tie, even above
      {0x3F808001, 0x3F81}, // just above the tie
      {0x3F807FFF, 0x3F80}, // just below the tie
      {0x7F7FFFFF, 0x7F80}, // largest f32 rounds to Inf
      {0x7F7F7FFF, 0x7F7F}, // largest bf16
      {0x7F800000, 0x7F80}, // +Inf
      {0xFF800000, 0xFF80}, // -Inf
      {0x7F800001, 0x7FC0}, // signalling NaN (low payload) -> quiet
      {0xFF810000, 0xFFC1}, // negative signalling NaN keeps its payload
      {0x7FC00000, 0x7FC0}, // quiet NaN
      {0x7FFFFFFF, 0x7FFF}, // NaN never rounds into the exponent
      {0x00000001, 0x0000}, // smallest subnormal rounds to 0
      {0x00008000, 0x0000}, // subnormal tie, even below
      {0x00018000, 0x0002}, // subnormal tie, even above
      {0x00010000, 0x0001}, // smallest bf16 subnormal
      {0x807FFFFF, 0x8080}, // largest subnormal rounds to the smallest normal
      {0x00400000, 0x0040}, // a subnormal bf16 exactly
  };
  std::vector<float> in(67, 1.5f);
  std::vector<uint16_t> out(in.size());
  for (auto [bits, expected] : cases) {
    EXPECT_EQ(f32ToBf16(fromBits(bits)), expected) << std::hex << bits;
    // At every lane of a vector and in the scalar tail.
    for (size_t pos : {size_t(0), size_t(5), size_t(31), size_t(64)}) {
      in[pos] = fromBits(bits);
      for (Bf16ConvertIsa isa : convertIsas()) {
        detail::convertF32ToBf16WithIsa(isa, in.data(), out.data(), in.size());
        EXPECT_EQ(out[pos], expected)
            << detail::bf16ConvertIsaName(isa) << " " << std::hex << bits;
      }
      in[pos] = 1.5f;
    }
  }
}

// Every f32 bit pattern, every kernel, against the scalar reference.
TEST(Bf16Convert, ExhaustiveAgainstReference) {
  constexpr int64_t kChunk = 1 << 20;
  std::vector<float> in(kChunk);
  std::vector<uint16_t> ref(kChunk), out(kChunk);
  std::vector<Bf16ConvertIsa> isas = convertIsas();
  for (uint64_t base = 0; base < (uint64_t(1) << 32); base += kChunk) {
    for (int64_t i = 0; i < kChunk; ++i)
      in[i] = fromBits(uint32_t(base + i));
    detail::convertF32ToBf16WithIsa(Bf16ConvertIsa::Scalar, in.data(),
                                    ref.data(), kChunk);
    for (Bf16ConvertIsa isa : isas) {
      if (isa == Bf16ConvertIsa::Scalar)
        continue;
      detail::convertF32ToBf16WithIsa(isa, in.data(), out.data(), kChunk);
      if (out != ref) {
        int64_t i = std::mismatch(out.begin(), out.end(), ref.begin()).first -
                    out.begin();
        FAIL() << detail::bf16ConvertIsaName(isa) << ": f32 " << std::hex
               << uint32_t(base + i) << " -> " << out[i] << ", reference "
               << ref[i];
      }
    }
  }
}

// The scalar reference against rounding in double: every upper half with the
// low halves around the rounding boundary, and 2^22 random patterns.
TEST(Bf16Convert, ReferenceRoundsToNearestEven) {
  auto check = [](uint32_t bits) {
    float x = fromBits(bits);
    uint16_t got = f32ToBf16(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(bf16ToF32(got))) << std::hex << bits;
      ASSERT_TRUE(got & 0x0040) << "not quiet " << std::hex << bits;
      ASSERT_EQ(got & 0x8000, (bits >> 16) & 0x8000) << std::hex << bits;
      return;
    }
    ASSERT_EQ(got, roundThroughDouble(x)) << std::hex << bits;
  };
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      check(hi << 16 | lo);
  Random rng(11);
  for (int i = 0; i < (1 << 22); ++i)
    check(uint32_t(rng.integer(0, 0xFFFF)) << 16 |
          uint32_t(rng.integer(0, 0xFFFF)));
}

TEST(Bf16Convert, Bf16ToF32IsExactAndRoundTrips) {
  std::vector<uint16_t> in(0x10000 + 7);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = uint16_t(i);
  for (Bf16ConvertIsa isa : convertIsas()) {
    std::vector<float> out(in.size());
    detail::convertBf16ToF32WithIsa(isa, in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(bitsOf(out[i]), uint32_t(in[i]) << 16)
          << detail::bf16ConvertIsaName(isa) << " " << i;
      uint16_t back = f32ToBf16(out[i]);
      if (std::isnan(out[i]))
        ASSERT_EQ(back, in[i] | 0x0040);
      else
        ASSERT_EQ(back, in[i]);
    }
  }
  // The public entry points use the best kernel.
  std::vector<float> f(in.size());
  std::vector<uint16_t> h(in.size());
  convertBf16ToF32(in.data(), f.data(), in.size());
  convertF32ToBf16(f.data(), h.data(), h.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(h[i], std::isnan(f[i]) ? (in[i] | 0x0040) : in[i]) << i;
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

constexpr double kUnitRoundoff = 1.0 / (1 << 24);

struct Bf16Case {
  bool ta = false, tb = false;
  int64_t m = 1, n = 1, k = 1;
  float alpha = 1.0f, beta = 0.0f;
  int64_t padA = 0, padB = 0, padC = 0;
  bool f32A = false, f32B = false; // pass f32 inputs (rounded while packing)
  bool tiled = false;              // block with `tiling` (else the defaults)
  GemmTiling tiling;
};

std::string describe(const Bf16Case &c, Bf16Isa isa, int threads) {
  return std::string(detail::bf16IsaName(isa)) + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) +
         " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " f32A=" + std::to_string(c.f32A) +
         " f32B=" + std::to_string(c.f32B) +
         (c.tiled ? " tiling=" + std::to_string(c.tiling.mc) + "," +
                        std::to_string(c.tiling.nc) + "," +
                        std::to_string(c.tiling.kc) + "," +
                        std::to_string(c.tiling.mr) + "x" +
                        std::to_string(c.tiling.nr)
                  : std::string()) +
         " threads=" + std::to_string(threads);
}

/// Inputs in f32 and their bf16 roundings, and C.
struct Bf16Data {
  std::vector<float> a, b, c;
  std::vector<uint16_t> ah, bh;
  int64_t lda, ldb, ldc;
};

Bf16Data makeData(const Bf16Case &c, Random &rng) {
  Bf16Data d;
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
  d.ah.resize(d.a.size());
  d.bh.resize(d.b.size());
  for (size_t i = 0; i < d.a.size(); ++i)
    d.ah[i] = f32ToBf16(d.a[i]);
  for (size_t i = 0; i < d.b.size(); ++i)
    d.bh[i] = f32ToBf16(d.b[i]);
  return d;
}

/// The number of bad elements of `got` (C after the GEMM) against the double
/// reference from the bf16 inputs; `first` describes the first one.
int64_t countBad(const Bf16Case &c, const Bf16Data &d,
                 const std::vector<float> &c0, const std::vector<float> &got,
                 std::string &first) {
  auto opA = [&](int64_t i, int64_t p) {
    return (double)bf16ToF32(c.ta ? d.ah[p * d.lda + i] : d.ah[i * d.lda + p]);
  };
  auto opB = [&](int64_t p, int64_t j) {
    return (double)bf16ToF32(c.tb ? d.bh[j * d.ldb + p] : d.bh[p * d.ldb + j]);
  };
  // Every kc slice folds into C once: kc is at least 256 by default, at
  // least the tiling's kc when tiled.
  const int64_t kc = c.tiled ? std::min<int64_t>(256, c.tiling.kc) : 256;
  const double nEff = double(c.k + 2 * ((c.k + kc - 1) / kc) + 2);
  const double tol = (nEff + 1) * kUnitRoundoff;
  int64_t bad = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < d.ldc; ++j) {
      double value = got[i * d.ldc + j];
      if (j >= c.n) {
        if (value != c0[i * d.ldc + j] && bad++ == 0)
          first = "padding of C changed";
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        double prod = opA(i, p) * opB(p, j);
        sum += prod;
        mag += std::fabs(prod);
      }
      double ref = (double)c.alpha * sum;
      double bound = std::fabs((double)c.alpha) * mag;
      if (c.beta != 0.0f) {
        ref += (double)c.beta * c0[i * d.ldc + j];
        bound += std::fabs((double)c.beta * c0[i * d.ldc + j]);
      }
      if (!(std::fabs(value - ref) <= tol * bound) && bad++ == 0)
        first = "C[" + std::to_string(i) + "][" + std::to_string(j) +
                "] = " + std::to_string(value) + ", expected " +
                std::to_string(ref) + " +- " + std::to_string(tol * bound);
    }
  }
  return bad;
}

std::vector<float> runGemm(Bf16Isa isa, ThreadPool *pool, const Bf16Case &c,
                           const Bf16Data &d) {
  std::vector<float> out = d.c;
  Bf16Operand a = c.f32A ? Bf16Operand::f32(d.a.data(), d.lda)
                         : Bf16Operand::bf16(d.ah.data(), d.lda);
  Bf16Operand b = c.f32B ? Bf16Operand::f32(d.b.data(), d.ldb)
                         : Bf16Operand::bf16(d.bh.data(), d.ldb);
  detail::gemmBf16WithIsa(isa, pool, c.ta, c.tb, c.m, c.n, c.k, c.alpha, a, b,
                          c.beta, out.data(), d.ldc,
                          c.tiled ? &c.tiling : nullptr);
  return out;
}

/// Runs the case on `isa` with 1 and 2 threads, checks both against the
/// reference and against each other (bit for bit). Returns C.
std::vector<float> checkCase(Bf16Isa isa, const Bf16Case &c, Random &rng) {
  Bf16Data d = makeData(c, rng);
  std::vector<float> first;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<float> out = runGemm(isa, &pool, c, d);
    std::string what;
    int64_t bad = countBad(c, d, d.c, out, what);
    EXPECT_EQ(bad, 0) << describe(c, isa, threads) << ": " << what;
    if (threads == 1)
      first = out;
    else
      EXPECT_TRUE(sameBits(first, out)) << describe(c, isa, threads);
  }
  return first;
}

std::vector<Bf16Isa> gemmIsas() {
  std::vector<Bf16Isa> isas;
  for (Bf16Isa isa : {Bf16Isa::Fallback, Bf16Isa::Avx512Bf16, Bf16Isa::Amx})
    if (detail::bf16IsaSupported(isa))
      isas.push_back(isa);
  return isas;
}

const std::pair<float, float> kAlphaBeta[] = {
    {1.0f, 0.0f}, {0.5f, -1.25f}, {-2.0f, 1.0f}};

TEST(GemmBf16, Paths) {
  std::vector<Bf16Isa> isas = gemmIsas();
  if (!std::getenv("STRATA_GEMM_BF16_ISA"))
    EXPECT_EQ(isas.back(), detail::defaultBf16Isa());
#if defined(__x86_64__)
  // Where the CPU has the instructions, the path must be on (AMX also needs
  // the OS, which every Linux since 5.16 grants).
  if (__builtin_cpu_supports("avx512bf16"))
    EXPECT_TRUE(detail::bf16IsaSupported(Bf16Isa::Avx512Bf16));
  if (__builtin_cpu_supports("amx-bf16"))
    EXPECT_TRUE(detail::bf16IsaSupported(Bf16Isa::Amx));
#endif
  EXPECT_STREQ(detail::bf16IsaName(Bf16Isa::Fallback), "fallback");
  EXPECT_STREQ(detail::bf16IsaName(Bf16Isa::Avx512Bf16), "avx512bf16");
  EXPECT_STREQ(detail::bf16IsaName(Bf16Isa::Amx), "amx");
}

TEST(GemmBf16, OddShapesAndTransposes) {
  const int64_t sizes[] = {1, 17, 33, 64, 255};
  Random rng(21);
  int index = 0;
  for (Bf16Isa isa : gemmIsas())
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes)
          for (int trans = 0; trans < 4; ++trans) {
            Bf16Case c;
            c.m = m, c.n = n, c.k = k;
            c.ta = trans & 1, c.tb = trans & 2;
            std::tie(c.alpha, c.beta) = kAlphaBeta[index++ % 3];
            checkCase(isa, c, rng);
          }
}

// More than one kc slice (k > 512) and nc block (n > 2048), and many row
// panels split across the threads.
TEST(GemmBf16, LargeProblems) {
  Random rng(22);
  for (Bf16Isa isa : gemmIsas()) {
    for (int trans = 0; trans < 4; ++trans) {
      Bf16Case c;
      c.m = 131, c.n = 97, c.k = 1100;
      c.ta = trans & 1, c.tb = trans & 2;
      c.alpha = 0.75f, c.beta = 0.5f;
      checkCase(isa, c, rng);
    }
    Bf16Case wide;
    wide.m = 33, wide.n = 2080, wide.k = 520;
    checkCase(isa, wide, rng);
    Bf16Case tall;
    tall.m = 600, tall.n = 64, tall.k = 64, tall.beta = 1.0f;
    checkCase(isa, tall, rng);
  }
}

TEST(GemmBf16, LeadingDimensionsAndF32Inputs) {
  Random rng(23);
  for (Bf16Isa isa : gemmIsas())
    for (int trans = 0; trans < 4; ++trans)
      for (int f32 = 0; f32 < 4; ++f32) {
        Bf16Case c;
        c.m = 45, c.n = 37, c.k = 70;
        c.ta = trans & 1, c.tb = trans & 2;
        c.padA = 3, c.padB = 5, c.padC = 7;
        c.alpha = 1.5f, c.beta = 0.25f;
        c.f32A = f32 & 1, c.f32B = f32 & 2;
        checkCase(isa, c, rng);
      }
}

// f32 inputs give exactly the bits of their bf16 roundings (k = 1100: a
// whole kc slice of 1024 and a remainder of 76; k = 37: odd, so the
// transposed f32 packers take their element loops).
TEST(GemmBf16, F32InputsMatchBf16Inputs) {
  Random rng(24);
  for (Bf16Isa isa : gemmIsas()) {
    for (int trans = 0; trans < 8; ++trans) {
      Bf16Case c;
      c.m = 70, c.n = 90, c.k = trans & 4 ? 37 : 1100;
      c.ta = trans & 1, c.tb = trans & 2;
      Bf16Data d = makeData(c, rng);
      ThreadPool pool(2);
      std::vector<float> ref = runGemm(isa, &pool, c, d);
      c.f32A = c.f32B = true;
      EXPECT_TRUE(sameBits(ref, runGemm(isa, &pool, c, d)))
          << describe(c, isa, 2);
    }
  }
}

// A transposed f32 A (the weight gradients' operand) packed from f32 gives
// the bits of its bf16 rounding for one-row and partial panels, k slices
// too short to prefetch, odd k (the element loop) and special values (NaN,
// Inf, rounding up to Inf, ties, a subnormal), one per run, in the last row
// and the last k pair.
TEST(GemmBf16, TransposedF32AMatchesBf16) {
  const uint32_t special[] = {
      0x3F800000u, 0x7F800001u, 0xFF810000u, 0x7FFFFFFFu, 0x7F800000u,
      0xFF800000u, 0x7F7FFFFFu, 0x3F808000u, 0x3F818000u, 0x807FFFFFu};
  Random rng(29);
  for (Bf16Isa isa : gemmIsas())
    for (int64_t m : {1, 11, 12, 13, 70})
      for (int64_t k : {2, 14, 38, 37})
        for (size_t s = 0; s < sizeof(special) / sizeof(special[0]); ++s) {
          Bf16Case c;
          c.m = m, c.n = 33, c.k = k, c.ta = true, c.padA = 5;
          Bf16Data d = makeData(c, rng);
          // op(A)[m - 1][p] = a[p * lda + m - 1], p in the last k pair.
          int64_t p = std::max<int64_t>(0, k - 1 - int64_t(s % 2));
          int64_t index = p * d.lda + m - 1;
          std::memcpy(&d.a[index], &special[s], sizeof(float));
          d.ah[index] = f32ToBf16(d.a[index]);
          ThreadPool pool(2);
          std::vector<float> ref = runGemm(isa, &pool, c, d);
          c.f32A = true;
          EXPECT_TRUE(sameBits(ref, runGemm(isa, &pool, c, d)))
              << describe(c, isa, 2) << " special=" << special[s];
        }
}

// The cache blocks of a tiling (the plan's attributes, strata-tune's search)
// apply on every path with the path's own register tile: mc rounded down to
// its mr, kc up to its k group (kc = 40 -> 64 on AMX), an f32 register tile
// for the fallback. Results stay within the bound (with the tiling's kc) and
// do not depend on the thread count.
TEST(GemmBf16, Tilings) {
  const GemmTiling tilings[] = {
      {64, 64, 64, 32, 32},   // AMX's tile, small blocks
      {96, 256, 128, 12, 32}, // AVX512-BF16's tile
      {36, 96, 40, 12, 32},   // mc below AMX's mr, kc off every k group
      {48, 64, 30, 8, 16},    // an f32 tile (the fallback's)
  };
  Random rng(28);
  for (Bf16Isa isa : gemmIsas())
    for (const GemmTiling &t : tilings)
      for (int variant = 0; variant < 8; ++variant) {
        Bf16Case c;
        c.m = 100, c.n = 130, c.k = 300;
        c.ta = variant & 1, c.tb = variant & 2;
        c.f32A = c.f32B = variant & 4;
        c.beta = 0.5f;
        c.tiled = true, c.tiling = t;
        ASSERT_EQ(verifyGemmBf16Tiling(t), "");
        checkCase(isa, c, rng);
      }
}

TEST(GemmBf16, VerifyTiling) {
  EXPECT_EQ(verifyGemmBf16Tiling({256, 2048, 1024, 32, 32}), "");
  EXPECT_EQ(verifyGemmBf16Tiling({96, 2048, 512, 12, 32}), "");
  EXPECT_EQ(verifyGemmBf16Tiling(GemmTiling()), "");
  EXPECT_NE(verifyGemmTiling({256, 2048, 1024, 32, 32}), "");
  EXPECT_NE(verifyGemmBf16Tiling({256, 2048, 1024, 32, 16})
                .find("unsupported bf16 gemm register tile mr x nr = 32x16"),
            std::string::npos);
  EXPECT_NE(verifyGemmBf16Tiling({100, 2048, 1024, 32, 32})
                .find("mc=100 must be a multiple of mr=32"),
            std::string::npos);
  EXPECT_NE(verifyGemmBf16Tiling({0, 2048, 1024, 32, 32}), "");
  // An f32 tile (the fallback's) with a bad cache block is told about the
  // block, not called an unsupported tile.
  EXPECT_NE(verifyGemmBf16Tiling({100, 2048, 1024, 6, 16})
                .find("mc=100 must be a multiple of mr=6"),
            std::string::npos);
  EXPECT_EQ(verifyGemmBf16Tiling({96, 2048, 1024, 6, 16}), "");
  // The default blocking of each path is a valid tiling.
  for (Bf16Isa isa : gemmIsas())
    EXPECT_EQ(verifyGemmBf16Tiling(detail::bf16DefaultTiling(isa)), "")
        << detail::bf16IsaName(isa);
}

// beta == 0 must not read C; alpha == 0 and k == 0 reduce to C = beta C.
TEST(GemmBf16, BetaZeroAlphaZeroAndEmptyK) {
  Random rng(25);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Bf16Isa isa : gemmIsas()) {
    Bf16Case c;
    c.m = 40, c.n = 35, c.k = 11;
    Bf16Data d = makeData(c, rng);
    ThreadPool pool(2);
    std::fill(d.c.begin(), d.c.end(), nan);
    for (float x : runGemm(isa, &pool, c, d))
      ASSERT_FALSE(std::isnan(x)) << detail::bf16IsaName(isa);
    c.k = 0;
    for (float x : runGemm(isa, &pool, c, d))
      ASSERT_EQ(x, 0.0f);
    c.k = 11, c.alpha = 0.0f, c.beta = 1.5f;
    std::fill(d.c.begin(), d.c.end(), 2.0f);
    for (float x : runGemm(isa, &pool, c, d))
      ASSERT_EQ(x, 3.0f);
  }
}

// The checker can fail: one element moved by twice its tolerance, or inputs
// that skip the bf16 rounding, are reported.
TEST(GemmBf16, CheckerRejectsWrongResults) {
  Random rng(26);
  Bf16Case c;
  c.m = 17, c.n = 33, c.k = 255;
  Bf16Data d = makeData(c, rng);
  ThreadPool pool(1);
  std::vector<float> out = runGemm(detail::defaultBf16Isa(), &pool, c, d);
  std::string what;
  ASSERT_EQ(countBad(c, d, d.c, out, what), 0) << what;
  double mag = 0;
  for (int64_t p = 0; p < c.k; ++p)
    mag += std::fabs(double(bf16ToF32(d.ah[5 * d.lda + p])) *
                     bf16ToF32(d.bh[p * d.ldb + 7]));
  std::vector<float> moved = out;
  moved[5 * d.ldc + 7] +=
      float(2 * (c.k + 5) * kUnitRoundoff * mag); // twice the tolerance
  EXPECT_EQ(countBad(c, d, d.c, moved, what), 1);
  // The exact f32 product (no bf16 rounding of the inputs) is far off.
  std::vector<float> unrounded = d.c;
  detail::gemmWithIsa(detail::defaultGemmIsa(), nullptr, GemmTiling(), false,
                      false, c.m, c.n, c.k, 1.0f, d.a.data(), d.lda, d.b.data(),
                      d.ldb, 0.0f, unrounded.data(), d.ldc);
  EXPECT_GT(countBad(c, d, d.c, unrounded, what), c.m * c.n / 2);
}

// STRATA_GEMM_BF16_ISA forces a slower path. The choice is made once per
// process, so the test runs itself again with the variable set (and this
// test only); in that child it checks the path and the public gemmBf16.
TEST(GemmBf16, EnvironmentOverride) {
  if (const char *forced = std::getenv("STRATA_GEMM_BF16_ISA")) {
    Bf16Isa expected = gemmIsas().back();
    for (Bf16Isa isa : gemmIsas())
      if (std::string(forced) == detail::bf16IsaName(isa))
        expected = isa;
    ASSERT_EQ(detail::defaultBf16Isa(), expected) << forced;
    Random rng(27);
    Bf16Case c;
    c.m = 70, c.n = 45, c.k = 300, c.tb = true, c.beta = 0.5f;
    Bf16Data d = makeData(c, rng);
    ThreadPool pool(2);
    std::vector<float> out = d.c;
    gemmBf16(pool, c.ta, c.tb, c.m, c.n, c.k, c.alpha, d.ah.data(), d.lda,
             d.bh.data(), d.ldb, c.beta, out.data(), d.ldc);
    std::string what;
    EXPECT_EQ(countBad(c, d, d.c, out, what), 0) << what;
    EXPECT_TRUE(sameBits(out, runGemm(expected, &pool, c, d))) << forced;
    return;
  }
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(len, 0);
  self[len] = 0;
  for (Bf16Isa isa : gemmIsas()) {
    std::string cmd = std::string("STRATA_GEMM_BF16_ISA=") +
                      detail::bf16IsaName(isa) + " '" + self +
                      "' --gtest_filter=GemmBf16.EnvironmentOverride"
                      " > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

} // namespace
} // namespace strata::rt::test
