//===- CompressReference.cpp - Reference activation codecs ----------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The scalar reference of the activation codecs, written straight from the
// definitions in docs/activation-formats.md, one element at a time and in
// double precision (every intermediate below is exact in double): element
// values from the OCP MX formulas, nearest values by search over every code,
// codes packed bit by bit. It shares nothing with the fast kernels but the
// stochastic-rounding hash (which is part of the format's definition), so
// the tests that compare the two check one against the other. Also
// actMaxAbsError, from the same definitions.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Compress.h"

#include "CompressCodec.h" // random24 / randomKey only

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

using namespace strata_plan;

namespace strata::rt {
namespace {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

struct MxType {
  int bits;  // code bits, sign included
  int ebits; // 0 for Int8
  int mbits;
  int bias;
  int emax;
  double maxValue;
};

MxType mxType(MxElement e) {
  switch (e) {
  case MxElement::Fp8E4M3:
    return {8, 4, 3, 7, 8, 448.0};
  case MxElement::Fp8E5M2:
    return {8, 5, 2, 15, 15, 57344.0};
  case MxElement::Fp6E2M3:
    return {6, 2, 3, 1, 2, 7.5};
  case MxElement::Fp6E3M2:
    return {6, 3, 2, 3, 4, 28.0};
  case MxElement::Fp4E2M1:
    return {4, 2, 1, 1, 2, 6.0};
  case MxElement::Int8:
    return {8, 0, 6, 0, 0, 127.0 / 64.0};
  case MxElement::None:
    break;
  }
  return {0, 0, 0, 0, 0, 0.0};
}

/// OCP MX v1.0 section 5.3: the value of an element code.
double mxValue(const MxType &t, uint32_t code) {
  if (t.ebits == 0) // two's complement, implicit 2^-6
    return double(int8_t(uint8_t(code))) / 64.0;
  int sign = (code >> (t.bits - 1)) & 1;
  uint32_t exponent = (code >> t.mbits) & ((1u << t.ebits) - 1);
  uint32_t mantissa = code & ((1u << t.mbits) - 1);
  double s = sign ? -1.0 : 1.0;
  if (t.bits == 8 && t.ebits == 4 && exponent == 15 && mantissa == 7)
    return std::numeric_limits<double>::quiet_NaN(); // E4M3: no Inf
  if (t.bits == 8 && t.ebits == 5 && exponent == 31)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : s * std::numeric_limits<double>::infinity();
  if (exponent == 0) // subnormal
    return s * std::ldexp(1.0, 1 - t.bias) *
           (mantissa / std::ldexp(1.0, t.mbits));
  return s * std::ldexp(1.0, int(exponent) - t.bias) *
         (1.0 + mantissa / std::ldexp(1.0, t.mbits));
}

/// The code of y: the nearest finite element value (ties to the code with a
/// 0 lowest bit, i.e. an even mantissa), |y| past the largest finite value
/// saturates; a zero result has sign 0.
uint32_t mxCode(const MxType &t, double y) {
  double a = std::fabs(y);
  uint32_t magCodes = t.ebits == 0 ? 128u : 1u << (t.bits - 1);
  uint32_t best = 0;
  double bestDist = std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c < magCodes; ++c) {
    double v = mxValue(t, c);
    if (!std::isfinite(v))
      continue;
    double d = std::fabs(a - v);
    if (d < bestDist || (d == bestDist && (c & 1) == 0 && (best & 1) == 1)) {
      best = c;
      bestDist = d;
    }
  }
  if (a > t.maxValue) // saturate
    for (uint32_t c = 0; c < magCodes; ++c)
      if (mxValue(t, c) == t.maxValue)
        best = c;
  if (best == 0)
    return 0;
  if (t.ebits == 0)
    return y < 0 ? (256u - best) & 0xFF : best;
  return (y < 0 ? 1u << (t.bits - 1) : 0u) | best;
}

/// The shared exponent of an MX block (scale 2^s).
int mxScale(const MxType &t, ScaleRounding rounding, double amax) {
  if (amax == 0)
    return -127;
  int s;
  if (rounding == ScaleRounding::Spec) {
    s = std::ilogb(amax) - t.emax; // floor(log2(amax)) - emax
  } else {
    // The smallest s with amax / 2^s <= the largest element value.
    s = -400;
    while (std::ldexp(amax, -s) > t.maxValue)
      ++s;
  }
  return std::clamp(s, -127, 127);
}

//===----------------------------------------------------------------------===//
// BFP
//===----------------------------------------------------------------------===//

/// floor(log2(amax)) clamped to [-127, hi] (-127 for amax == 0).
int bfpExponent(double amax, int hi) {
  if (amax == 0)
    return -127;
  return std::clamp(std::ilogb(amax), -127, hi);
}

/// The f32 nearest to c^2 / K^2 (the double quotient is within 2^-53 of it
/// and c^2 / K^2 is never within 2^-41 of an f32 midpoint, so rounding the
/// double to f32 rounds the exact quotient).
double nuLevel(int c, int m) {
  double k = std::ldexp(1.0, m) - 1;
  return double(float(double(c) * c / (k * k)));
}

/// bf16 of x, round to nearest even, saturating at the largest finite bf16;
/// returns the bits, +0 for a result of zero.
uint16_t bf16Code(float x) {
  double a = std::fabs(double(x));
  double v;
  if (a < std::ldexp(1.0, -126)) {
    v = std::nearbyint(a / std::ldexp(1.0, -133)) * std::ldexp(1.0, -133);
  } else {
    int e = std::ilogb(a);
    v = std::nearbyint(std::ldexp(a, 7 - e)) * std::ldexp(1.0, e - 7);
  }
  v = std::min(v, (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  if (v == 0)
    return 0;
  float f = float(x < 0 ? -v : v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return uint16_t(bits >> 16);
}

float bf16Value(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

//===----------------------------------------------------------------------===//
// Bit packing
//===----------------------------------------------------------------------===//

void putCode(uint8_t *codes, int bits, int64_t i, uint32_t code) {
  for (int b = 0; b < bits; ++b) {
    int64_t bit = i * bits + b;
    if ((code >> b) & 1)
      codes[bit / 8] |= uint8_t(1u << (bit % 8));
  }
}

uint32_t getCode(const uint8_t *codes, int bits, int64_t i) {
  uint32_t code = 0;
  for (int b = 0; b < bits; ++b) {
    int64_t bit = i * bits + b;
    code |= uint32_t((codes[bit / 8] >> (bit % 8)) & 1) << b;
  }
  return code;
}

//===----------------------------------------------------------------------===//
// One block
//===----------------------------------------------------------------------===//

void compressBlock(const ActFormat &f, const float *x, int64_t first,
                   uint8_t *out, uint64_t seed) {
  const int B = f.block, bits = actElementBits(f);
  uint8_t *codes = out + 1;
  uint8_t *outliers = codes + (int64_t(B) * bits + 7) / 8;
  std::memset(out, 0, size_t(actBlockBytes(f)));
  for (int i = 0; i < B; ++i) {
    if (!std::isfinite(x[i])) {
      out[0] = 0xFF;
      return;
    }
  }
  if (f.kind == ActKind::Bf16) {
    out[0] = 127;
    for (int i = 0; i < B; ++i)
      putCode(codes, bits, i, bf16Code(x[i]));
    return;
  }
  if (f.kind == ActKind::Mx) {
    MxType t = mxType(f.element);
    double amax = 0;
    for (int i = 0; i < B; ++i)
      amax = std::max(amax, std::fabs(double(x[i])));
    int s = mxScale(t, f.scale, amax);
    out[0] = uint8_t(s + 127);
    for (int i = 0; i < B; ++i)
      putCode(codes, bits, i, mxCode(t, std::ldexp(double(x[i]), -s)));
    return;
  }

  // The outliers: the K largest magnitudes, ties to the lowest index.
  std::vector<bool> isOutlier(static_cast<size_t>(B), false);
  if (f.kind == ActKind::BfpOutlier) {
    std::vector<int> order(static_cast<size_t>(B));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      float xa = std::fabs(x[a]), xb = std::fabs(x[b]);
      return xa > xb || (xa == xb && a < b);
    });
    for (int k = 0; k < f.outliers; ++k) {
      int i = order[size_t(k)];
      isOutlier[size_t(i)] = true;
      uint16_t h = bf16Code(x[i]);
      outliers[3 * k] = uint8_t(i);
      outliers[3 * k + 1] = uint8_t(h & 0xFF);
      outliers[3 * k + 2] = uint8_t(h >> 8);
    }
  }
  double amax = 0;
  for (int i = 0; i < B; ++i)
    if (!isOutlier[size_t(i)])
      amax = std::max(amax, std::fabs(double(x[i])));
  const int m = f.mantissaBits;
  const double qmax = std::ldexp(1.0, m) - 1;
  if (f.kind == ActKind::BfpNonUniform) {
    int E = bfpExponent(amax, 126);
    out[0] = uint8_t(E + 127);
    for (int i = 0; i < B; ++i) {
      double t = std::ldexp(std::fabs(double(x[i])), -(E + 1));
      int best = 0; // nearest level, ties to the lower code
      for (int c = 1; c <= int(qmax); ++c)
        if (std::fabs(t - nuLevel(c, m)) < std::fabs(t - nuLevel(best, m)))
          best = c;
      if (best)
        putCode(codes, bits, i, (x[i] < 0 ? 1u << m : 0u) | uint32_t(best));
    }
    return;
  }
  int E = bfpExponent(amax, 127);
  out[0] = uint8_t(E + 127);
  for (int i = 0; i < B; ++i) {
    if (isOutlier[size_t(i)])
      continue;
    double t = std::ldexp(std::fabs(double(x[i])), -(E - m + 1)); // |x| / u
    double q;
    if (f.rounding == ActRounding::Stochastic) {
      uint64_t index = uint64_t(first + i);
      uint32_t key = codec::randomKey(seed, uint32_t(index >> 32));
      double r = std::ldexp(double(codec::random24(key, uint32_t(index))), -24);
      q = std::floor(t + r);
    } else {
      q = std::nearbyint(t); // the default mode: nearest, ties to even
    }
    q = std::min(q, qmax);
    if (q != 0)
      putCode(codes, bits, i, (x[i] < 0 ? 1u << m : 0u) | uint32_t(q));
  }
}

void decompressBlock(const ActFormat &f, const uint8_t *in, int count,
                     float *y) {
  const int B = f.block, bits = actElementBits(f);
  const uint8_t *codes = in + 1;
  const uint8_t *outliers = codes + (int64_t(B) * bits + 7) / 8;
  if (in[0] == 0xFF) {
    for (int i = 0; i < count; ++i)
      y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  int scale = int(in[0]) - 127;
  const int m = f.mantissaBits;
  for (int i = 0; i < count; ++i) {
    uint32_t c = getCode(codes, bits, i);
    double v;
    if (f.kind == ActKind::Bf16) {
      v = bf16Value(uint16_t(c));
    } else if (f.kind == ActKind::Mx) {
      v = mxValue(mxType(f.element), c) * std::ldexp(1.0, scale);
    } else {
      double mag = c & ((1u << m) - 1);
      v = f.kind == ActKind::BfpNonUniform
              ? nuLevel(int(mag), m) * std::ldexp(1.0, scale + 1)
              : mag * std::ldexp(1.0, scale - m + 1);
      if ((c >> m) & 1)
        v = -v;
    }
    y[i] = float(v);
  }
  for (int k = 0; k < f.outliers; ++k) {
    int i = outliers[3 * k];
    if (i < count)
      y[i] =
          bf16Value(uint16_t(outliers[3 * k + 1] | outliers[3 * k + 2] << 8));
  }
}

} // namespace

void compressActivationsReference(const ActFormat &f, const float *in,
                                  int64_t n, uint8_t *out, uint64_t seed) {
  if (f.isNone()) {
    std::memcpy(out, in, size_t(n) * 4);
    return;
  }
  const int B = f.block;
  std::vector<float> block(static_cast<size_t>(B));
  for (int64_t first = 0; first < n; first += B) {
    int64_t count = std::min<int64_t>(B, n - first);
    std::fill(block.begin(), block.end(), 0.0f); // the last block: zero padded
    std::copy(in + first, in + first + count, block.begin());
    compressBlock(f, block.data(), first, out + first / B * actBlockBytes(f),
                  seed);
  }
}

void decompressActivationsReference(const ActFormat &f, const uint8_t *in,
                                    int64_t n, float *out) {
  if (f.isNone()) {
    std::memcpy(out, in, size_t(n) * 4);
    return;
  }
  const int B = f.block;
  for (int64_t first = 0; first < n; first += B)
    decompressBlock(f, in + first / B * actBlockBytes(f),
                    int(std::min<int64_t>(B, n - first)), out + first);
}

double actMaxAbsError(const ActFormat &f, double amax) {
  if (f.isNone())
    return 0;
  if (!(amax >= 0) || !std::isfinite(amax))
    return std::numeric_limits<double>::quiet_NaN();
  if (amax == 0)
    return 0;
  // The stored amax is an f32: the block's exponent follows from its f32.
  amax = double(float(amax));
  if (f.kind == ActKind::Bf16) {
    // Half a bf16 step in amax's binade (subnormal steps below 2^-126), or
    // what saturating at the largest finite bf16 loses.
    double step = std::ldexp(1.0, std::max(std::ilogb(amax), -126) - 7);
    double largest = (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127);
    return std::max(step / 2, amax - largest);
  }
  if (f.kind == ActKind::Mx) {
    MxType t = mxType(f.element);
    int s = mxScale(t, f.scale, amax);
    double y = std::ldexp(amax, -s); // the largest scaled magnitude
    // The element grid's step where the largest in-range magnitudes lie.
    double top = std::min(y, t.maxValue);
    double step =
        t.ebits == 0
            ? 1.0 / 64
            : std::ldexp(1.0, std::max(std::ilogb(top), 1 - t.bias) - t.mbits);
    return std::ldexp(std::max(step / 2, y - t.maxValue), s);
  }
  const int m = f.mantissaBits;
  const double qmax = std::ldexp(1.0, m) - 1;
  if (f.kind == ActKind::BfpNonUniform) {
    int E = bfpExponent(amax, 126);
    double t = std::ldexp(amax, -(E + 1));
    // Gaps grow with c: the worst is the gap below the one holding amax, or
    // the part of that gap below amax (or amax past the top level).
    double worst = 0;
    for (int c = 0; c < int(qmax); ++c) {
      double lo = nuLevel(c, m), hi = nuLevel(c + 1, m);
      if (lo > t)
        break;
      worst = std::max(worst, std::min(t - lo, (hi - lo) / 2));
    }
    worst = std::max(worst, t - 1.0);
    // Decoded levels below 2^-126 are rounded to the f32 subnormal grid.
    double subnormal = E + 1 <= -126 ? std::ldexp(1.0, -150) : 0.0;
    return std::ldexp(worst, E + 1) + subnormal;
  }
  int E = bfpExponent(amax, 127);
  double u = std::ldexp(1.0, E - m + 1);
  return std::max(u / 2, amax - qmax * u);
}

} // namespace strata::rt
