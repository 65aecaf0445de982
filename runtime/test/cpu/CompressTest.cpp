//===- CompressTest.cpp - Activation codec tests --------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The element encodings against the OCP MX / bfp formulas, the fast codecs
// against the scalar reference bit for bit (every format, every ISA this CPU
// runs, 1 and 2 threads, edge-case inputs), round-trip errors against
// actMaxAbsError, stochastic rounding (unbiased, deterministic), the MX scale
// rules and the packed sizes; gradient calibration's choice of formats.
//
//===----------------------------------------------------------------------===//

#include "CompressInternal.h"

#include "../common/SameBits.h"

#include "strata-rt/Compress.h"
#include "strata-rt/Compression.h"
#include "strata-rt/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace strata_plan;
using strata::rt::ThreadPool;
using strata::rt::test::sameBits;
namespace rtd = strata::rt::detail;

namespace {

//===----------------------------------------------------------------------===//
// Formats and inputs
//===----------------------------------------------------------------------===//

const MxElement kElements[] = {MxElement::Fp8E4M3, MxElement::Fp8E5M2,
                               MxElement::Fp6E2M3, MxElement::Fp6E3M2,
                               MxElement::Fp4E2M1, MxElement::Int8};

ActFormat mx(MxElement e, ScaleRounding s = ScaleRounding::Up) {
  ActFormat f;
  f.kind = ActKind::Mx;
  f.element = e;
  f.block = 32;
  f.scale = s;
  return f;
}

ActFormat bfp(ActKind kind, int m, int block, int outliers = 0,
              ActRounding r = ActRounding::NearestEven) {
  ActFormat f;
  f.kind = kind;
  f.mantissaBits = m;
  f.block = block;
  f.outliers = outliers;
  f.rounding = r;
  return f;
}

ActFormat bf16() {
  ActFormat f;
  f.kind = ActKind::Bf16;
  f.block = 32;
  return f;
}

/// Every valid format: bf16, each MX element under both scale rules, and
/// bfp, bfp-outlier (K = 1..4) and bfp-nu for m = 1..8, blocks 16/32/64,
/// both roundings where allowed.
std::vector<ActFormat> allFormats() {
  std::vector<ActFormat> fs = {bf16()};
  for (MxElement e : kElements)
    for (ScaleRounding s : {ScaleRounding::Up, ScaleRounding::Spec})
      fs.push_back(mx(e, s));
  for (int m = 1; m <= 8; ++m) {
    for (int block : {16, 32, 64}) {
      for (ActRounding r :
           {ActRounding::NearestEven, ActRounding::Stochastic}) {
        fs.push_back(bfp(ActKind::Bfp, m, block, 0, r));
        for (int k = 1; k <= 4; ++k)
          fs.push_back(bfp(ActKind::BfpOutlier, m, block, k, r));
      }
      fs.push_back(bfp(ActKind::BfpNonUniform, m, block));
    }
  }
  for (const ActFormat &f : fs) {
    std::string why;
    EXPECT_TRUE(actFormatValid(f, why)) << why;
  }
  return fs;
}

float bitsToFloat(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
uint32_t floatToBits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

std::vector<float> normals(int64_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(size_t(n), 0.0f);
  for (float &v : x)
    v = d(rng) * scale;
  return x;
}

struct Input {
  std::string name;
  std::vector<float> x;
};

/// The edge-case inputs of the fast-vs-reference comparison.
std::vector<Input> edgeInputs() {
  std::vector<Input> in;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float scale : {1e-3f, 1.0f, 3e3f})
    in.push_back({"normal*" + std::to_string(scale), normals(1000, scale, 1)});
  in.push_back({"zeros", std::vector<float>(130, 0.0f)});
  in.push_back({"negative zeros", std::vector<float>(130, -0.0f)});
  {
    std::vector<float> x = normals(200, 1.0f, 2);
    for (size_t i = 0; i < x.size(); i += 3)
      x[i] = i % 2 ? -0.0f : 0.0f;
    in.push_back({"signed zeros mixed", x});
  }
  {
    std::vector<float> x = normals(300, 1e-40f, 3); // subnormal inputs
    x[7] = bitsToFloat(1);                          // the smallest
    x[8] = -bitsToFloat(0x007FFFFF);                // the largest
    for (size_t i = 100; i < 164; ++i)
      x[i] = bitsToFloat(uint32_t(i)); // a block of tiny subnormals
    in.push_back({"subnormals", x});
  }
  {
    std::vector<float> x = normals(400, 1.0f, 4);
    x[70] = nan;   // one block holds a NaN,
    x[200] = -inf; // another an Inf (with an outlier-sized neighbour)
    x[201] = 1e6f;
    in.push_back({"nan and inf", x});
  }
  in.push_back({"all equal", std::vector<float>(256, 0.7f)});
  in.push_back({"all equal negative", std::vector<float>(256, -3.0f)});
  {
    // The element types' largest values, at, just past and past them, at
    // several block scales.
    std::vector<float> x;
    for (float mx :
         {448.0f, 57344.0f, 7.5f, 28.0f, 6.0f, 127.0f / 64.0f, 1.0f, 2.0f}) {
      for (float k : {1.0f, 0.25f, 1024.0f}) {
        float v = mx * k;
        for (float w : {v, std::nextafter(v, inf), v * 1.03125f, v * 1.0625f,
                        v * 1.125f, -v, v * 0.999f, v * 0.5f, v * 0.75f,
                        std::nextafter(v, 0.0f), v * 1e-3f, v * 1e-6f})
          x.push_back(w);
      }
    }
    in.push_back({"saturation", x});
  }
  {
    // Exact rounding ties of every grid: multiples of 2^-8 and halfway
    // points.
    std::vector<float> x;
    for (int k = -300; k <= 300; ++k)
      x.push_back(float(k) / 128.0f + (k % 3 == 0 ? 1.0f / 256.0f : 0.0f));
    in.push_back({"ties", x});
  }
  in.push_back({"huge", normals(200, 1e38f, 5)});
  {
    std::vector<float> x = normals(200, 1e38f, 6);
    x[3] = std::numeric_limits<float>::max();
    x[40] = -std::numeric_limits<float>::max();
    x[90] = 3.3e38f;
    in.push_back({"near FLT_MAX", x});
  }
  in.push_back({"tiny", normals(200, 1e-40f, 7)});
  {
    std::vector<float> x = normals(200, 1.0f, 8);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] *= std::ldexp(1.0f, int(i % 60) - 30); // wide dynamic range
    in.push_back({"wide range", x});
  }
  in.push_back({"n=1", {0.3f}});
  in.push_back({"n=1 negative", {-5.0f}});
  in.push_back({"n=17", normals(17, 2.0f, 9)});
  in.push_back({"n=33", normals(33, 2.0f, 10)});
  in.push_back({"n=65", normals(65, 2.0f, 11)});
  return in;
}

std::vector<rtd::GemmIsa> isas() {
  std::vector<rtd::GemmIsa> out;
  for (rtd::GemmIsa isa :
       {rtd::GemmIsa::Scalar, rtd::GemmIsa::Avx2, rtd::GemmIsa::Avx512})
    if (rtd::gemmIsaSupported(isa))
      out.push_back(isa);
  return out;
}

std::vector<uint8_t> compressRef(const ActFormat &f,
                                 const std::vector<float> &x,
                                 uint64_t seed = 42) {
  std::vector<uint8_t> out(size_t(actPackedBytes(f, int64_t(x.size()))));
  strata::rt::compressActivationsReference(f, x.data(), int64_t(x.size()),
                                           out.data(), seed);
  return out;
}

std::vector<float> decompressRef(const ActFormat &f,
                                 const std::vector<uint8_t> &bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  strata::rt::decompressActivationsReference(f, bytes.data(), n, out.data());
  return out;
}

std::vector<uint8_t> compressFast(const ActFormat &f,
                                  const std::vector<float> &x,
                                  uint64_t seed = 42) {
  ThreadPool pool(1);
  std::vector<uint8_t> out(size_t(actPackedBytes(f, int64_t(x.size()))));
  strata::rt::compressActivations(pool, f, x.data(), int64_t(x.size()),
                                  out.data(), seed);
  return out;
}

std::vector<float> decompressFast(const ActFormat &f,
                                  const std::vector<uint8_t> &bytes,
                                  int64_t n) {
  ThreadPool pool(1);
  std::vector<float> out(static_cast<size_t>(n));
  strata::rt::decompressActivations(pool, f, bytes.data(), n, out.data());
  return out;
}

/// Floats equal bit for bit, except that any two NaNs match.
::testing::AssertionResult sameValues(const std::vector<float> &a,
                                      const std::vector<float> &b) {
  std::vector<float> ca = a, cb = b;
  for (size_t i = 0; i < ca.size() && i < cb.size(); ++i)
    if (std::isnan(ca[i]) && std::isnan(cb[i]))
      ca[i] = cb[i] = 0.0f;
  return sameBits(ca, cb);
}

//===----------------------------------------------------------------------===//
// Element encodings
//===----------------------------------------------------------------------===//

/// The OCP MX v1.0 value of element code c (section 5.3 tables), written out
/// per type.
double specValue(MxElement e, uint32_t c) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto fp = [&](int ebits, int mbits, int bias) {
    int bits = 1 + ebits + mbits;
    double sign = (c >> (bits - 1)) & 1 ? -1.0 : 1.0;
    int E = int((c >> mbits) & ((1u << ebits) - 1));
    int M = int(c & ((1u << mbits) - 1));
    if (E == 0)
      return sign * std::pow(2.0, 1 - bias) * (M / std::pow(2.0, mbits));
    return sign * std::pow(2.0, E - bias) * (1 + M / std::pow(2.0, mbits));
  };
  switch (e) {
  case MxElement::Fp8E4M3:
    if ((c & 0x7F) == 0x7F)
      return nan; // S.1111.111; no Inf
    return fp(4, 3, 7);
  case MxElement::Fp8E5M2:
    if ((c & 0x7C) == 0x7C) // S.11111.MM: Inf (MM = 0) or NaN
      return (c & 3) ? nan
                     : ((c & 0x80) ? -1.0 : 1.0) *
                           std::numeric_limits<double>::infinity();
    return fp(5, 2, 15);
  case MxElement::Fp6E2M3:
    return fp(2, 3, 1);
  case MxElement::Fp6E3M2:
    return fp(3, 2, 3);
  case MxElement::Fp4E2M1:
    return fp(2, 1, 1);
  case MxElement::Int8:
    return double(int8_t(uint8_t(c))) / 64.0;
  case MxElement::None:
    break;
  }
  return nan;
}

double specMax(MxElement e) {
  switch (e) {
  case MxElement::Fp8E4M3:
    return 448;
  case MxElement::Fp8E5M2:
    return 57344;
  case MxElement::Fp6E2M3:
    return 7.5;
  case MxElement::Fp6E3M2:
    return 28;
  case MxElement::Fp4E2M1:
    return 6;
  default:
    return 127.0 / 64.0;
  }
}

/// Packs `codes` (one block) under scale byte `scale` into the format's
/// layout, LSB first.
std::vector<uint8_t> packBlock(const ActFormat &f, uint8_t scale,
                               const std::vector<uint32_t> &codes) {
  std::vector<uint8_t> out(size_t(actBlockBytes(f)), 0);
  out[0] = scale;
  int bits = actElementBits(f);
  for (size_t i = 0; i < codes.size(); ++i)
    for (int b = 0; b < bits; ++b)
      if ((codes[i] >> b) & 1)
        out[1 + (i * bits + b) / 8] |= uint8_t(1u << ((i * bits + b) % 8));
  return out;
}

std::vector<uint32_t> unpackBlock(const ActFormat &f,
                                  const std::vector<uint8_t> &bytes) {
  std::vector<uint32_t> codes(size_t(f.block), 0);
  int bits = actElementBits(f);
  for (size_t i = 0; i < codes.size(); ++i)
    for (int b = 0; b < bits; ++b)
      codes[i] |=
          uint32_t((bytes[1 + (i * bits + b) / 8] >> ((i * bits + b) % 8)) & 1)
          << b;
  return codes;
}

TEST(CompressElements, MxDecodeEveryCodeAndReencode) {
  for (MxElement e : kElements) {
    for (ScaleRounding s : {ScaleRounding::Up, ScaleRounding::Spec}) {
      ActFormat f = mx(e, s);
      int bits = mxElementBits(e);
      for (uint32_t c0 = 0; c0 < (1u << bits); c0 += 31) {
        // Slot 0 holds the largest value (so that the block's scale is 2^0
        // under both rules); slots 1..31 codes c0 .. c0 + 30.
        std::vector<uint32_t> codes(32);
        for (int i = 1; i < 32; ++i)
          codes[size_t(i)] = (c0 + uint32_t(i) - 1) & ((1u << bits) - 1);
        // The code of the largest value: found from the formula.
        for (uint32_t c = 0; c < (1u << bits); ++c)
          if (specValue(e, c) == specMax(e))
            codes[0] = c;
        ASSERT_EQ(specValue(e, codes[0]), specMax(e));
        std::vector<uint8_t> bytes = packBlock(f, 127, codes);
        std::vector<float> ref = decompressRef(f, bytes, 32);
        std::vector<float> fast = decompressFast(f, bytes, 32);
        ASSERT_TRUE(sameValues(ref, fast)) << actFormatName(f) << " c0 " << c0;
        std::vector<float> x(32);
        bool finite = true;
        for (int i = 0; i < 32; ++i) {
          double want = specValue(e, codes[size_t(i)]);
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(fast[size_t(i)]));
          } else {
            EXPECT_EQ(double(fast[size_t(i)]), want)
                << actFormatName(f) << " code " << codes[size_t(i)];
          }
          finite = finite && std::isfinite(want);
          x[size_t(i)] = float(want);
        }
        // encode(decode(c)) == c, except the negative zero (encodes as +0);
        // NaN and Inf codes are never produced (the block becomes NaN) and
        // MXINT8's -128 (-2, past the range) never is either: those slots
        // get 0.
        for (int i = 0; i < 32; ++i)
          if (!(std::fabs(x[size_t(i)]) <= specMax(e)))
            x[size_t(i)] = 0.0f;
        std::vector<uint8_t> again = compressFast(f, x);
        EXPECT_EQ(again, compressRef(f, x));
        EXPECT_EQ(again[0], 127) << actFormatName(f);
        std::vector<uint32_t> back = unpackBlock(f, again);
        for (int i = 0; i < 32; ++i) {
          uint32_t want = codes[size_t(i)];
          if (!(std::fabs(specValue(e, want)) <= specMax(e)) ||
              specValue(e, want) == 0)
            want = 0;
          EXPECT_EQ(back[size_t(i)], want)
              << actFormatName(f) << " value " << x[size_t(i)];
        }
      }
    }
  }
}

TEST(CompressElements, BfpDecodeEveryCodeAndReencode) {
  for (ActKind kind : {ActKind::Bfp, ActKind::BfpNonUniform}) {
    for (int m = 1; m <= 8; ++m) {
      ActFormat f = bfp(kind, m, 32);
      const uint32_t ncodes = 1u << (m + 1), K = (1u << m) - 1;
      for (uint32_t c0 = 0; c0 < ncodes; c0 += 31) {
        // E = 0 (scale byte 127): slot 0 holds 1.0 (sets E), slots 1..31
        // codes c0 .. c0 + 30.
        std::vector<uint32_t> codes(32, 0);
        for (int i = 1; i < 32; ++i)
          codes[size_t(i)] = (c0 + uint32_t(i) - 1) % ncodes;
        std::vector<float> x(32);
        auto value = [&](uint32_t c) {
          double mag = c & K;
          double v = kind == ActKind::Bfp
                         ? mag * std::ldexp(1.0, 1 - m) // q * 2^(E - m + 1)
                         : double(float(mag * mag / (double(K) * K))) * 2.0;
          return (c >> m) & 1 ? -v : v;
        };
        // Slot 0 is 1.0 when re-encoding (E = 0); its code is checked only
        // by the decoding.
        codes[0] = kind == ActKind::Bfp ? 1u << (m - 1) : K;
        std::vector<uint8_t> bytes = packBlock(f, 127, codes);
        std::vector<float> fast = decompressFast(f, bytes, 32);
        ASSERT_TRUE(sameBits(fast, decompressRef(f, bytes, 32)));
        for (int i = 0; i < 32; ++i) {
          EXPECT_EQ(double(fast[size_t(i)]), value(codes[size_t(i)]))
              << actFormatName(f) << " code " << codes[size_t(i)];
          x[size_t(i)] = float(value(codes[size_t(i)]));
        }
        x[0] = 1.0f; // E = 0
        // bfp-nu's top level is 2^(E+1) = 2, which would raise E: skip it.
        for (int i = 1; i < 32; ++i)
          if (std::fabs(x[size_t(i)]) >= 2.0f)
            x[size_t(i)] = 0.0f;
        std::vector<uint8_t> again = compressFast(f, x);
        EXPECT_EQ(again, compressRef(f, x));
        ASSERT_EQ(again[0], 127);
        std::vector<uint32_t> back = unpackBlock(f, again);
        for (int i = 1; i < 32; ++i) {
          uint32_t want = (codes[size_t(i)] & K) && x[size_t(i)] != 0.0f
                              ? codes[size_t(i)]
                              : 0;
          EXPECT_EQ(back[size_t(i)], want) << actFormatName(f);
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Fast == reference
//===----------------------------------------------------------------------===//

TEST(CompressFast, MatchesReferenceOnEdgeCases) {
  std::vector<ActFormat> formats = allFormats();
  std::vector<Input> inputs = edgeInputs();
  ThreadPool pool1(1), pool2(2);
  int checked = 0;
  for (const ActFormat &f : formats) {
    for (const Input &in : inputs) {
      const int64_t n = int64_t(in.x.size());
      std::vector<uint8_t> ref = compressRef(f, in.x, 7);
      std::vector<float> refValues = decompressRef(f, ref, n);
      for (rtd::GemmIsa isa : isas()) {
        for (ThreadPool *pool : {(ThreadPool *)nullptr, &pool1, &pool2}) {
          std::vector<uint8_t> fast(ref.size(), 0xA5);
          rtd::compressActivationsWithIsa(isa, pool, f, in.x.data(), n,
                                          fast.data(), 7);
          ASSERT_EQ(fast, ref) << actFormatName(f) << " on " << in.name
                               << " isa " << rtd::gemmIsaName(isa);
          std::vector<float> values(static_cast<size_t>(n));
          rtd::decompressActivationsWithIsa(isa, pool, f, ref.data(), n,
                                            values.data());
          ASSERT_TRUE(sameBits(values, refValues))
              << actFormatName(f) << " on " << in.name << " isa "
              << rtd::gemmIsaName(isa);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(CompressFast, MatchesReferenceOnLargeInputsAcrossThreads) {
  // Enough blocks for the pool to split them; the bytes must not depend on
  // the thread count.
  std::vector<float> x = normals(64 * 150 + 13, 1.0f, 12);
  for (size_t i = 0; i < x.size(); i += 97)
    x[i] *= 1000.0f; // outliers
  ThreadPool pool1(1), pool2(2);
  for (const ActFormat &f : allFormats()) {
    std::vector<uint8_t> ref = compressRef(f, x, 99);
    std::vector<float> refValues = decompressRef(f, ref, int64_t(x.size()));
    for (ThreadPool *pool : {&pool1, &pool2}) {
      std::vector<uint8_t> fast(ref.size());
      strata::rt::compressActivations(*pool, f, x.data(), int64_t(x.size()),
                                      fast.data(), 99);
      ASSERT_EQ(fast, ref) << actFormatName(f) << " threads " << pool->size();
      std::vector<float> values(x.size());
      strata::rt::decompressActivations(*pool, f, ref.data(), int64_t(x.size()),
                                        values.data());
      ASSERT_TRUE(sameBits(values, refValues)) << actFormatName(f);
    }
  }
}

TEST(CompressFast, DecodesArbitraryBytesLikeTheReference) {
  // Every code, including ones compress never writes (-0, NaN and Inf codes,
  // any scale byte), decodes the same way in both.
  std::mt19937 rng(13);
  for (const ActFormat &f : allFormats()) {
    int64_t n = 5 * f.block - 3;
    std::vector<uint8_t> bytes(size_t(actPackedBytes(f, n)));
    for (uint8_t &b : bytes)
      b = uint8_t(rng());
    if (f.kind == ActKind::BfpOutlier) // valid outlier indices
      for (int64_t b = 0; b < 5; ++b)
        for (int k = 0; k < f.outliers; ++k)
          bytes[size_t(b * actBlockBytes(f) + actBlockBytes(f) -
                       3 * (k + 1))] %= uint8_t(f.block);
    ASSERT_TRUE(
        sameValues(decompressFast(f, bytes, n), decompressRef(f, bytes, n)))
        << actFormatName(f);
  }
}

//===----------------------------------------------------------------------===//
// Semantics
//===----------------------------------------------------------------------===//

TEST(CompressSemantics, NonFiniteAndZeroBlocks) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const ActFormat &f : allFormats()) {
    const int B = f.block;
    std::vector<float> x = normals(3 * B, 1.0f, 14);
    x[size_t(B + 3)] = nan;
    x[size_t(2 * B + 1)] = -inf;
    for (int i = 0; i < B; ++i)
      x[size_t(i)] = i % 2 ? -0.0f : 0.0f; // block 0: zeros of both signs
    std::vector<uint8_t> bytes = compressFast(f, x);
    std::vector<float> y = decompressFast(f, bytes, int64_t(x.size()));
    const int64_t bb = actBlockBytes(f);
    EXPECT_EQ(bytes[size_t(bb)], 0xFF) << actFormatName(f);
    EXPECT_EQ(bytes[size_t(2 * bb)], 0xFF) << actFormatName(f);
    // All codes 0 in the zero block and in the NaN blocks (whose outlier
    // triples are 0 too; the zero block keeps its outliers' indices).
    for (int64_t j = 1; j < bb; ++j) {
      if (j <= (B * actElementBits(f) + 7) / 8)
        ASSERT_EQ(bytes[size_t(j)], 0) << actFormatName(f) << " byte " << j;
      ASSERT_EQ(bytes[size_t(bb + j)], 0) << actFormatName(f) << " byte " << j;
    }
    for (int i = 0; i < B; ++i) {
      EXPECT_EQ(floatToBits(y[size_t(i)]), 0u) << "zeros decode to +0";
      EXPECT_TRUE(std::isnan(y[size_t(B + i)]));
      EXPECT_TRUE(std::isnan(y[size_t(2 * B + i)])) << "Inf becomes NaN";
    }
  }
}

/// The largest magnitude of each block, outliers excluded.
std::vector<double> blockAmax(const ActFormat &f, const std::vector<float> &x,
                              std::vector<bool> &isOutlier) {
  std::vector<double> amax;
  isOutlier.assign(x.size(), false);
  for (size_t b = 0; b < x.size(); b += size_t(f.block)) {
    size_t end = std::min(x.size(), b + size_t(f.block));
    for (int k = 0; k < f.outliers; ++k) {
      size_t best = x.size();
      for (size_t i = b; i < end; ++i)
        if (!isOutlier[i] &&
            (best == x.size() || std::fabs(x[i]) > std::fabs(x[best])))
          best = i;
      if (best < x.size())
        isOutlier[best] = true;
    }
    double a = 0;
    for (size_t i = b; i < end; ++i)
      if (!isOutlier[i])
        a = std::max(a, double(std::fabs(x[i])));
    amax.push_back(a);
  }
  return amax;
}

TEST(CompressSemantics, RoundTripErrorWithinBound) {
  int tightBlocks = 0, blocks = 0;
  for (const ActFormat &f : allFormats()) {
    if (f.rounding != ActRounding::NearestEven)
      continue;
    for (float scale : {1e-3f, 1.0f, 5e4f, 1e30f, 1e-39f}) {
      std::vector<float> x = normals(1000, scale, 15);
      for (size_t i = 0; i < x.size(); i += 50)
        x[i] *= 30.0f; // outliers
      std::vector<float> y =
          decompressFast(f, compressFast(f, x), int64_t(x.size()));
      std::vector<bool> isOutlier;
      std::vector<double> amax = blockAmax(f, x, isOutlier);
      for (size_t b = 0; b < amax.size(); ++b) {
        double bound = strata::rt::actMaxAbsError(f, amax[b]);
        double worst = 0;
        for (size_t i = b * size_t(f.block);
             i < std::min(x.size(), (b + 1) * size_t(f.block)); ++i) {
          double err = std::fabs(double(x[i]) - double(y[i]));
          if (isOutlier[i]) { // bf16: 8 significant bits
            EXPECT_LE(err, std::fabs(double(x[i])) * std::ldexp(1.0, -8) +
                               std::ldexp(1.0, -134))
                << actFormatName(f);
            continue;
          }
          worst = std::max(worst, err);
          ASSERT_LE(err, bound)
              << actFormatName(f) << " x " << x[i] << " amax " << amax[b];
        }
        ++blocks;
        tightBlocks += worst >= bound / 4; // the bound is not vacuous
      }
    }
  }
  EXPECT_GT(tightBlocks, blocks / 2);
}

TEST(CompressSemantics, MaxAbsErrorValues) {
  // bfp m=4 at amax 1.5: E = 0, u = 2^-3, the saturation error is below u/2.
  EXPECT_EQ(strata::rt::actMaxAbsError(bfp(ActKind::Bfp, 4, 32), 1.5),
            1.0 / 16);
  // bfp m=1 at amax 1.9: levels {0, 1}: 0.9 past the top level.
  EXPECT_NEAR(strata::rt::actMaxAbsError(bfp(ActKind::Bfp, 1, 32), 1.9), 0.9,
              1e-7);
  // mxfp8 (E4M3), scale up, amax 448: s = 0, top binade step 32.
  EXPECT_EQ(strata::rt::actMaxAbsError(mx(MxElement::Fp8E4M3), 448.0), 16.0);
  // scale=spec at amax 480: s = 0, 480 saturates to 448.
  EXPECT_EQ(strata::rt::actMaxAbsError(
                mx(MxElement::Fp8E4M3, ScaleRounding::Spec), 480.0),
            32.0);
  EXPECT_EQ(strata::rt::actMaxAbsError(mx(MxElement::Int8), 0.0), 0.0);
  EXPECT_TRUE(std::isnan(strata::rt::actMaxAbsError(
      mx(MxElement::Int8), std::numeric_limits<double>::infinity())));
}

TEST(CompressSemantics, MxSpecScaleSaturatesWhereUpDoesNot) {
  for (MxElement e : kElements) {
    // Past the largest value, below the next power of two: scale=spec keeps
    // s = floor(log2(amax)) - emax = 0 and saturates; scale=up takes s = 1.
    const double top = specMax(e);
    float big = float(0.25 * top + 0.75 * std::ldexp(1.0, std::ilogb(top) + 1));
    std::vector<float> x(32, 0.0f);
    x[0] = big;
    x[1] = -big;
    x[2] = 1.0f;
    ActFormat spec = mx(e, ScaleRounding::Spec), up = mx(e, ScaleRounding::Up);
    std::vector<float> ys = decompressFast(spec, compressFast(spec, x), 32);
    std::vector<float> yu = decompressFast(up, compressFast(up, x), 32);
    EXPECT_EQ(double(ys[0]), specMax(e)) << actFormatName(spec);
    EXPECT_EQ(double(ys[1]), -specMax(e)) << actFormatName(spec);
    EXPECT_GT(yu[0], float(specMax(e))) << actFormatName(up);
    EXPECT_LE(std::fabs(double(yu[0]) - big),
              strata::rt::actMaxAbsError(up, big));
    EXPECT_GT(std::fabs(double(ys[0]) - big), std::fabs(double(yu[0]) - big))
        << actFormatName(spec);
  }
}

TEST(CompressSemantics, StochasticRoundingIsUnbiasedAndDeterministic) {
  for (ActKind kind : {ActKind::Bfp, ActKind::BfpOutlier}) {
    for (int m : {1, 3, 8}) {
      ActFormat f = bfp(kind, m, 32, kind == ActKind::BfpOutlier ? 1 : 0,
                        ActRounding::Stochastic);
      // Block: 1.0 (E = 0, exact) and values off the grid, below the top
      // level (no saturation). u = 2^(1 - m).
      // Two blocks: 1.0 twice (E = 0 even with one taken as an outlier),
      // the rest off the grid in (-1, 1), so nothing saturates; block 1 has
      // a large outlier (bf16, exact) for bfp-outlier. u = 2^(1 - m).
      std::vector<float> x = normals(64, 0.3f, 16);
      const double u = std::ldexp(1.0, 1 - m);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = float(std::fmod(std::fabs(double(x[i])), 1.0)) *
               (i % 2 ? -1.0f : 1.0f);
      x[0] = x[1] = x[32] = x[33] = 1.0f;
      x[34] = kind == ActKind::BfpOutlier ? 100.0f : 0.5f;
      const int trials = 4000;
      std::vector<double> mean(x.size(), 0.0);
      for (int t = 0; t < trials; ++t) {
        std::vector<float> y = decompressFast(
            f, compressFast(f, x, 0x1234567ull * uint64_t(t + 1)),
            int64_t(x.size()));
        for (size_t i = 0; i < x.size(); ++i)
          mean[i] += (double(y[i]) - double(x[i])) / trials;
      }
      // Each error lies in (-u, u) with mean 0 and variance <= u^2 / 4: the
      // mean of `trials` draws has standard deviation <= u / (2 sqrt(trials));
      // allow 5 standard deviations (a false alarm is ~1e-6 per element).
      const double tol = 5 * u / (2 * std::sqrt(double(trials)));
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_LE(std::fabs(mean[i]), tol)
            << actFormatName(f) << " x[" << i << "] = " << x[i];
      EXPECT_EQ(compressFast(f, x, 5), compressFast(f, x, 5));
      EXPECT_EQ(compressFast(f, x, 5), compressRef(f, x, 5));
      EXPECT_NE(compressFast(f, x, 5), compressFast(f, x, 6));
    }
  }
}

TEST(CompressSemantics, PackedBytesAreExactlyWhatIsWritten) {
  for (const ActFormat &f : allFormats()) {
    for (int64_t n : {int64_t(1), int64_t(f.block - 1), int64_t(f.block),
                      int64_t(3 * f.block + 5), int64_t(200 * f.block + 1)}) {
      std::vector<float> x = normals(n, 1.0f, 17);
      int64_t bytes = actPackedBytes(f, n);
      ASSERT_EQ(bytes, (n + f.block - 1) / f.block * actBlockBytes(f));
      ThreadPool pool(2);
      // Two different canaries: bytes inside the packed size must be written
      // (same result), bytes past it never.
      std::vector<uint8_t> a(size_t(bytes + 64), 0xA5),
          b(size_t(bytes + 64), 0x5A);
      strata::rt::compressActivations(pool, f, x.data(), n, a.data(), 3);
      strata::rt::compressActivations(pool, f, x.data(), n, b.data(), 3);
      for (int64_t j = bytes; j < bytes + 64; ++j)
        ASSERT_TRUE(a[size_t(j)] == 0xA5 && b[size_t(j)] == 0x5A)
            << actFormatName(f) << " wrote past " << bytes;
      a.resize(size_t(bytes));
      b.resize(size_t(bytes));
      ASSERT_EQ(a, b) << actFormatName(f) << " left bytes unwritten";
      std::vector<float> y(size_t(n + 16), 1234.5f);
      strata::rt::decompressActivations(pool, f, a.data(), n, y.data());
      for (int64_t j = n; j < n + 16; ++j)
        ASSERT_EQ(y[size_t(j)], 1234.5f) << actFormatName(f);
    }
  }
}

/// bf16 keeps each element's own exponent: values bf16 holds come back
/// exactly, others round to the nearest even bf16 (subnormals too), finite
/// values past the largest bf16 saturate, -0 comes back +0, and a NaN or
/// an Inf makes its block of 32 NaN (as in every format).
TEST(CompressSemantics, Bf16Elements) {
  ActFormat f = bf16();
  ActFormat parsed;
  ASSERT_EQ(parseActFormat("bf16", parsed), "");
  EXPECT_TRUE(parsed == f);
  EXPECT_EQ(actFormatName(f), "bf16");
  EXPECT_NE(parseActFormat("bf16:block=16", parsed), "");
  EXPECT_EQ(actPackedBytes(f, 64), 130);
  ActFormat decoded;
  std::string why;
  ASSERT_TRUE(decodeActFormat(encodeActFormat(f), decoded, why)) << why;
  EXPECT_TRUE(decoded == f);
  const float largest = bitsToFloat(0x7F7F0000u);
  struct Case {
    float in, out;
  } cases[] = {
      {1.0f, 1.0f},
      {-3.5f, -3.5f},
      {1e-30f, bitsToFloat(0x0DA20000u)}, // 0x0DA24260 rounded down
      {bitsToFloat(0x3F808000u), 1.0f},   // a tie, to even (down)
      {bitsToFloat(0x3F818000u), bitsToFloat(0x3F820000u)}, // a tie, up
      {bitsToFloat(0x3F808001u), bitsToFloat(0x3F810000u)}, // past the tie
      {bitsToFloat(0x00010000u), bitsToFloat(0x00010000u)}, // a subnormal
      {bitsToFloat(0x00018000u), bitsToFloat(0x00020000u)}, // its tie, up
      {3.4e38f, largest},                                   // saturates
      {-3.4e38f, -largest},
      {-0.0f, 0.0f},
      {bitsToFloat(0x00007FFFu), 0.0f}, // below half the smallest: +0
  };
  std::vector<float> x(32, 0.5f);
  for (size_t i = 0; i < std::size(cases); ++i)
    x[i] = cases[i].in;
  std::vector<float> y = decompressFast(f, compressFast(f, x), 32);
  for (size_t i = 0; i < std::size(cases); ++i)
    EXPECT_EQ(floatToBits(y[i]), floatToBits(cases[i].out))
        << "element " << i << " (" << cases[i].in << ")";
  EXPECT_EQ(y[31], 0.5f);
}

TEST(CompressSemantics, NoneIsACopy) {
  ActFormat none;
  std::vector<float> x = normals(100, 1.0f, 18);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> bytes = compressFast(none, x);
  ASSERT_EQ(bytes.size(), x.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data(), x.data(), bytes.size()), 0);
  EXPECT_TRUE(sameBits(decompressFast(none, bytes, 100), x));
}

//===----------------------------------------------------------------------===//
// Gradient calibration's choice
//===----------------------------------------------------------------------===//

using strata::rt::chooseWithinGradientBudget;
using Errors = std::vector<std::vector<double>>;
using Bytes = std::vector<std::vector<int64_t>>;

/// sqrt(sum of the picked errors squared).
double combined(const Errors &errors, const std::vector<size_t> &pick) {
  double sum = 0;
  for (size_t s = 0; s < pick.size(); ++s)
    sum += errors[s][pick[s]] * errors[s][pick[s]];
  return std::sqrt(sum);
}

// Candidates in the order wide (0), middle (1), narrow (2).
TEST(GradientBudget, LooseBudgetTakesTheSmallestAndTightTheMostAccurate) {
  Errors errors = {{0.001, 0.01, 0.1}, {0.002, 0.02, 0.2}};
  Bytes bytes = {{200, 100, 50}, {400, 200, 100}};
  EXPECT_EQ(chooseWithinGradientBudget(errors, bytes, 1.0),
            (std::vector<size_t>{2, 2}));
  EXPECT_EQ(chooseWithinGradientBudget(errors, bytes, 0.0),
            (std::vector<size_t>{0, 0}));
  // Within reach only with both in their widest.
  EXPECT_EQ(chooseWithinGradientBudget(errors, bytes, 0.0023),
            (std::vector<size_t>{0, 0}));
}

TEST(GradientBudget, WidensTheSensitiveSiteFirst) {
  // Site 0 is sensitive (its narrow candidate errs 100x more than site 1's)
  // and as large: the budget is met by widening site 0 alone.
  Errors errors = {{0.001, 0.05, 0.5}, {0.00001, 0.0005, 0.005}};
  Bytes bytes = {{200, 100, 50}, {200, 100, 50}};
  std::vector<size_t> pick = chooseWithinGradientBudget(errors, bytes, 0.06);
  EXPECT_EQ(pick, (std::vector<size_t>{1, 2}));
  EXPECT_LE(combined(errors, pick), 0.06);
}

TEST(GradientBudget, GivesBackWhatAWideningOvershot) {
  // The greedy's best ratio is site 1 (0.02^2 / 50 bytes); then the sum
  // (0.03^2 + 0.001^2) is over the budget, and site 0's widening brings it
  // far under: site 1 can then go back to its narrow candidate.
  Errors errors = {{0.001, 0.03}, {0.001, 0.02}};
  Bytes bytes = {{1000, 100}, {150, 100}};
  std::vector<size_t> pick = chooseWithinGradientBudget(errors, bytes, 0.025);
  EXPECT_EQ(pick, (std::vector<size_t>{0, 1}));
  EXPECT_LE(combined(errors, pick), 0.025);
}

TEST(GradientBudget, EqualSizesPreferTheMoreAccurate) {
  Errors errors = {{0.3, 0.1, 0.2}};
  Bytes bytes = {{100, 100, 100}};
  EXPECT_EQ(chooseWithinGradientBudget(errors, bytes, 1.0),
            (std::vector<size_t>{1}));
}

TEST(GradientBudget, MeetsTheBudgetWithFewBytesOnRandomCases) {
  // Against every combination: the choice is within the budget whenever
  // some combination is, and its bytes are at most 1.5x the fewest.
  // The same cases with every standard library (no distributions).
  std::mt19937 rng(7);
  auto unit = [](std::mt19937 &r) { return r() / 4294967296.0; };
  for (int round = 0; round < 200; ++round) {
    size_t n = 1 + rng() % 4;
    Errors errors(n);
    Bytes bytes(n);
    for (size_t s = 0; s < n; ++s) {
      double scale = std::pow(10.0, -3 * unit(rng));
      for (int64_t b : {64, 128, 256, 512}) {
        bytes[s].push_back(b + static_cast<int64_t>(rng() % 16));
        errors[s].push_back(scale * unit(rng) * 256.0 / b);
      }
    }
    double budget = 0.3 * unit(rng) * combined(errors, std::vector<size_t>(n));
    std::vector<size_t> pick =
        chooseWithinGradientBudget(errors, bytes, budget);
    int64_t best = -1;
    std::vector<size_t> combo(n, 0);
    for (;;) {
      if (combined(errors, combo) <= budget) {
        int64_t total = 0;
        for (size_t s = 0; s < n; ++s)
          total += bytes[s][combo[s]];
        best = best < 0 ? total : std::min(best, total);
      }
      size_t s = 0;
      while (s < n && ++combo[s] == 4)
        combo[s++] = 0;
      if (s == n)
        break;
    }
    int64_t total = 0;
    for (size_t s = 0; s < n; ++s)
      total += bytes[s][pick[s]];
    if (best < 0)
      continue;
    EXPECT_LE(combined(errors, pick), budget) << "round " << round;
    EXPECT_LE(total, best * 3 / 2) << "round " << round;
  }
}

} // namespace
