//===- CompressCodec.h - Per-element math of the activation codecs -*- C++ -*-//
//
// Part of the Strata runtime, which never includes an MLIR header. Included
// by the fast CPU codecs (Compress.cpp) and the CUDA codecs
// (CudaKernelsCompress.cu): every function is `__host__ __device__` under
// nvcc and a plain inline function otherwise, so both compute the same bits.
// The scalar reference (CompressReference.cpp) does not use this header: it
// recomputes everything from the format definitions in double precision, so
// the tests compare two independent implementations.
//
// Everything works on the f32 bit pattern with integer operations (exact, no
// dependence on the floating-point environment), except the bfp-nu level
// search (exact double comparisons) and the decoders (one f32 multiply by a
// power of two, exact unless the result is subnormal or past FLT_MAX).
// docs/activation-formats.md defines the semantics.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CPU_COMPRESSCODEC_H
#define STRATA_RT_CPU_COMPRESSCODEC_H

#include "strata-rt/ActivationFormat.h"

#include <cmath>
#include <cstdint>
#ifndef __CUDA_ARCH__
#include <cstring>
#endif

#if defined(__CUDACC__)
#define STRATA_CODEC_HD __host__ __device__ __forceinline__
#else
#define STRATA_CODEC_HD inline __attribute__((always_inline))
#endif

namespace strata::rt::codec {

/// The scale byte of a block that holds a NaN or an Inf (decodes to NaN).
constexpr uint8_t kNanScale = 0xFF;
/// The f32 bits of the NaN that non-finite blocks decode to.
constexpr uint32_t kQuietNan = 0x7FC00000u;

STRATA_CODEC_HD uint32_t floatBits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
#endif
}

STRATA_CODEC_HD float bitsFloat(uint32_t b) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(b);
#else
  float x;
  std::memcpy(&x, &b, 4);
  return x;
#endif
}

STRATA_CODEC_HD int minInt(int a, int b) { return a < b ? a : b; }
STRATA_CODEC_HD int maxInt(int a, int b) { return a > b ? a : b; }
STRATA_CODEC_HD uint32_t minU32(uint32_t a, uint32_t b) {
  return a < b ? a : b;
}

/// 2^e as an f32 for e in [-149, 127] (subnormal below -126).
STRATA_CODEC_HD float pow2f(int e) {
  return e >= -126 ? bitsFloat(uint32_t(e + 127) << 23)
                   : bitsFloat(uint32_t(1) << (e + 149));
}

/// The magnitude of a finite f32 as mant * 2^(exp - 23) with mant < 2^24:
/// the implicit bit is added for normal numbers, subnormals get exp = -126.
STRATA_CODEC_HD uint32_t magMant(uint32_t bits) {
  uint32_t fe = (bits >> 23) & 0xFF;
  return (bits & 0x7FFFFF) | (fe ? 0x800000u : 0u);
}
STRATA_CODEC_HD int magExp(uint32_t bits) {
  int fe = int((bits >> 23) & 0xFF);
  return (fe ? fe : 1) - 127;
}

/// As magMant/magExp, but normalised: |x| = mant * 2^(exp - 23) with mant in
/// [2^23, 2^24) (0 for zero; exp is then below any exponent in use). A
/// subnormal is converted to f32 as an integer (exact) to find its leading
/// bit.
STRATA_CODEC_HD void normalizeMag(uint32_t bits, uint32_t &mant, int &exp) {
  uint32_t a = bits & 0x7FFFFFFF;
  bool sub = a < 0x00800000u;
  uint32_t n = sub ? floatBits(float(int32_t(a))) : a;
  mant = n ? (n & 0x7FFFFF) | 0x800000u : 0u;
  exp = int(n >> 23) - 127 - (sub ? 149 : 0);
}

/// mant / 2^sh rounded to nearest, ties to even (mant < 2^24, sh >= 1; sh is
/// clamped to 31, where every result is 0).
STRATA_CODEC_HD uint32_t shiftRoundEven(uint32_t mant, int sh) {
  sh = minInt(sh, 31);
  return (mant + ((uint32_t(1) << (sh - 1)) - 1) + ((mant >> sh) & 1)) >> sh;
}

/// floor(mant / 2^sh + r / 2^24), exactly (mant < 2^24, r < 2^24, sh >= 1).
STRATA_CODEC_HD uint32_t shiftRoundStochastic(uint32_t mant, int sh,
                                              uint32_t r) {
  sh = minInt(sh, 49); // mant / 2^49 + r / 2^24 < 1 always
  int g = maxInt(sh, 24);
  uint64_t a = (uint64_t(mant) << (g - sh)) + (uint64_t(r) << (g - 24));
  return uint32_t(a >> g);
}

//===----------------------------------------------------------------------===//
// Stochastic rounding: the counter-based hash of (seed, element index)
//===----------------------------------------------------------------------===//

/// MurmurHash3's 32-bit finaliser (a bijection).
STRATA_CODEC_HD uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

/// The key of elements whose index has the high 32 bits `indexHigh` (a block
/// never straddles two keys: blocks are aligned powers of two).
STRATA_CODEC_HD uint32_t randomKey(uint64_t seed, uint32_t indexHigh) {
  return mix32(uint32_t(seed) ^
               mix32(uint32_t(seed >> 32) ^ mix32(indexHigh + 0x9E3779B9u)));
}

/// The 24-bit random integer R of the element with the low index bits
/// `indexLow` under `key`; the rounding offset is r = R / 2^24 in [0, 1).
STRATA_CODEC_HD uint32_t random24(uint32_t key, uint32_t indexLow) {
  return mix32(key ^ (indexLow * 0x9E3779B9u)) >> 8;
}

//===----------------------------------------------------------------------===//
// MX elements (OCP MX v1.0)
//===----------------------------------------------------------------------===//

/// The bit layout of an MX element type: sign-magnitude minifloats with
/// `ebits` exponent bits, `mbits` mantissa bits and exponent `bias`; `maxMag`
/// is the magnitude code of the largest finite value (2^emax * maxSig).
/// Int8 is two's complement with an implicit 2^-6 (mbits = 6, emax = 0).
struct MxSpec {
  int bits, ebits, mbits, bias, emax;
  uint32_t maxMag;
  /// The largest finite value's significand in [1, 2), as f32 bits.
  uint32_t maxSigBits;
};

STRATA_CODEC_HD MxSpec mxSpec(strata_plan::MxElement e) {
  using strata_plan::MxElement;
  switch (e) {
  case MxElement::Fp8E4M3: // 448 = 1.75 * 2^8 (S.1111.110; S.1111.111 NaN)
    return {8, 4, 3, 7, 8, 0x7E, 0x3FE00000u};
  case MxElement::Fp8E5M2: // 57344 = 1.75 * 2^15 (S.11110.11; Inf/NaN above)
    return {8, 5, 2, 15, 15, 0x7B, 0x3FE00000u};
  case MxElement::Fp6E2M3: // 7.5 = 1.875 * 2^2 (S.11.111)
    return {6, 2, 3, 1, 2, 0x1F, 0x3FF00000u};
  case MxElement::Fp6E3M2: // 28 = 1.75 * 2^4 (S.111.11)
    return {6, 3, 2, 3, 4, 0x1F, 0x3FE00000u};
  case MxElement::Fp4E2M1: // 6 = 1.5 * 2^2 (S.11.1)
    return {4, 2, 1, 1, 2, 0x7, 0x3FC00000u};
  case MxElement::Int8: // 127/64 = 1.984375 * 2^0
    return {8, 0, 6, 0, 0, 127, 0x3FFE0000u};
  case MxElement::None:
    break;
  }
  return {0, 0, 0, 0, 0, 0, 0};
}

/// floor(log2(a)) of a finite, nonzero f32 magnitude (bits without sign),
/// subnormals included.
STRATA_CODEC_HD int floorLog2(uint32_t abits) {
  int fe = int(abits >> 23);
  if (fe)
    return fe - 127;
  int lead = 31;
  while (!((abits >> lead) & 1))
    --lead;
  return lead - 149;
}

/// The shared exponent s (scale 2^s, s in [-127, 127]) of an MX block whose
/// finite largest magnitude has the bits `amax`; s = -127 for amax == 0.
STRATA_CODEC_HD int mxScaleExp(uint32_t amax, const MxSpec &m,
                               strata_plan::ScaleRounding rounding) {
  if (amax == 0)
    return -127;
  int lg = floorLog2(amax);
  int s = lg - m.emax;
  if (rounding == strata_plan::ScaleRounding::Up) {
    // amax = sig * 2^lg; amax / 2^s <= maxSig * 2^emax iff sig <= maxSig.
    uint32_t sig =
        amax >> 23 ? (amax & 0x7FFFFF) : ((amax << (-126 - lg)) & 0x7FFFFF);
    if (sig > (m.maxSigBits & 0x7FFFFF))
      ++s;
  }
  return maxInt(-127, minInt(127, s));
}

/// The code of x / 2^s in the MX element type `m`: round to nearest even,
/// subnormals kept, saturating to +-max finite; zero magnitudes get sign 0.
STRATA_CODEC_HD uint32_t mxEncode(uint32_t xbits, int s, const MxSpec &m) {
  uint32_t sign = xbits >> 31;
  if (m.ebits == 0) {
    // Int8: q = round(|y| * 2^6), two's complement, -128 never used.
    int e = magExp(xbits) - s; // y = x / 2^s = mant * 2^(e - 23)
    uint32_t q = minU32(shiftRoundEven(magMant(xbits), maxInt(1, 17 - e)), 127);
    return (sign ? 0u - q : q) & 0xFF;
  }
  // The element's exponent field needs y's true exponent: normalise.
  uint32_t mant;
  int e;
  normalizeMag(xbits, mant, e);
  e -= s;                         // y = x / 2^s = mant * 2^(e - 23)
  int ee = maxInt(e, 1 - m.bias); // the element's exponent (subnormal floor)
  uint32_t q = shiftRoundEven(mant, 23 + ee - e - m.mbits);
  uint32_t mag = minU32((uint32_t(ee + m.bias - 1) << m.mbits) + q, m.maxMag);
  return mag ? (sign << (m.bits - 1)) | mag : 0u;
}

/// The value of element code c (unscaled); NaN/Inf codes of E4M3 and E5M2
/// decode to NaN/Inf.
STRATA_CODEC_HD float mxDecode(uint32_t c, const MxSpec &m) {
  if (m.ebits == 0)
    return float(int(int8_t(uint8_t(c)))) * (1.0f / 64.0f);
  uint32_t sign = (c >> (m.bits - 1)) & 1;
  uint32_t mag = c & ((uint32_t(1) << (m.bits - 1)) - 1);
  uint32_t ef = mag >> m.mbits, mf = mag & ((uint32_t(1) << m.mbits) - 1);
  float v;
  if (m.bits == 8 && m.ebits == 4 && mag == 0x7F) {
    v = bitsFloat(kQuietNan);
  } else if (m.bits == 8 && m.ebits == 5 && ef == 31) {
    v = bitsFloat(mf ? kQuietNan : 0x7F800000u);
  } else if (ef == 0) {
    v = float(mf) * pow2f(1 - m.bias - m.mbits);
  } else {
    v = float(mf | (uint32_t(1) << m.mbits)) *
        pow2f(int(ef) - m.bias - m.mbits);
  }
  return sign ? -v : v;
}

//===----------------------------------------------------------------------===//
// BFP (uniform, outlier, non-uniform)
//===----------------------------------------------------------------------===//

/// The shared exponent E of a bfp/bfp-outlier block from its finite largest
/// magnitude: floor(log2(amax)) clamped to [-127, 127], so the scale byte
/// E + 127 is exactly the f32 exponent field of amax (0 for zero and
/// subnormal amax).
STRATA_CODEC_HD int bfpExp(uint32_t amax) { return int(amax >> 23) - 127; }
/// bfp-nu also clamps E to 126 so that its top level 2^(E+1) is finite.
STRATA_CODEC_HD int bfpNuExp(uint32_t amax) {
  return minInt(int(amax >> 23), 253) - 127;
}

/// Code of x in a bfp block with exponent E: sign bit (bit m) and the m-bit
/// magnitude round(|x| / 2^(E-m+1)) clamped to 2^m - 1. `r` is the 24-bit
/// random integer for stochastic rounding, unused for nearest.
STRATA_CODEC_HD uint32_t bfpEncode(uint32_t xbits, int E, int m,
                                   bool stochastic, uint32_t r) {
  uint32_t mant = magMant(xbits);
  int sh = maxInt(1, 24 + E - m - magExp(xbits));
  uint32_t q =
      stochastic ? shiftRoundStochastic(mant, sh, r) : shiftRoundEven(mant, sh);
  q = minU32(q, (uint32_t(1) << m) - 1);
  return q ? ((xbits >> 31) << m) | q : 0u;
}

STRATA_CODEC_HD float bfpDecode(uint32_t c, int E, int m) {
  float v = float(c & ((uint32_t(1) << m) - 1)) * pow2f(E - m + 1);
  return ((c >> m) & 1) ? -v : v;
}

/// The normalised bfp-nu level c of K = 2^m - 1: f32(c^2 / K^2) (one
/// correctly rounded f32 division of exact integers).
STRATA_CODEC_HD float nuLevel(int c, int m) {
  int k = (1 << m) - 1;
  return float(c * c) / float(k * k);
}

/// Magnitude code of x in a bfp-nu block with exponent E: the level c whose
/// nuLevel(c) is nearest to t = |x| / 2^(E+1) (exact in double), ties to the
/// lower code.
STRATA_CODEC_HD uint32_t bfpNuEncode(uint32_t xbits, int E, int m) {
  int k = (1 << m) - 1;
  // 2t = |x| / 2^E, exact in double (E is in [-127, 126]).
  double t2 = double(bitsFloat(xbits & 0x7FFFFFFF)) * double(pow2f(-E));
  // An estimate (sqrt(t) * K rounded), then the exact comparisons with the
  // midpoints: c is the code with mid(c - 1) < 2t <= mid(c), where
  // mid(c) = level(c) + level(c + 1) (exact in double).
  double est = ::sqrt(t2 * 0.5) * k + 0.5;
  int c = est >= k ? k : int(est);
  while (c < k && t2 > double(nuLevel(c, m)) + double(nuLevel(c + 1, m)))
    ++c;
  while (c > 0 && t2 <= double(nuLevel(c - 1, m)) + double(nuLevel(c, m)))
    --c;
  return c ? ((xbits >> 31) << m) | uint32_t(c) : 0u;
}

STRATA_CODEC_HD float bfpNuDecode(uint32_t c, int E, int m) {
  float v = nuLevel(int(c & ((uint32_t(1) << m) - 1)), m);
  // 2^(E+1) is not an f32 for E = 127 (a scale byte compress never writes
  // for bfp-nu): two exact steps then.
  v = E < 127 ? v * pow2f(E + 1) : v * pow2f(127) * 2.0f;
  return ((c >> m) & 1) ? -v : v;
}

//===----------------------------------------------------------------------===//
// bf16 outliers
//===----------------------------------------------------------------------===//

/// bf16 of a finite f32, round to nearest even, saturating to +-max finite
/// bf16; a value that rounds to zero is +0.
STRATA_CODEC_HD uint16_t bf16Encode(uint32_t xbits) {
  uint32_t a = xbits & 0x7FFFFFFF;
  uint32_t r = (a + 0x7FFF + ((a >> 16) & 1)) >> 16;
  r = minU32(r, 0x7F7F);
  return uint16_t(r ? ((xbits >> 16) & 0x8000) | r : 0);
}
STRATA_CODEC_HD float bf16Decode(uint16_t h) {
  return bitsFloat(uint32_t(h) << 16);
}

//===----------------------------------------------------------------------===//
// Code packing: element i takes bits [i * bits, (i + 1) * bits) of the codes
// region, least-significant bit first.
//===----------------------------------------------------------------------===//

/// Byte j of the codes region of `codes[0..count)` (`bits` <= 16).
template <typename CodeT>
STRATA_CODEC_HD uint8_t packedByte(const CodeT *codes, int count, int bits,
                                   int j) {
  uint32_t byte = 0;
  int lo = 8 * j, hi = 8 * j + 8;
  for (int i = lo / bits; i < count && i * bits < hi; ++i) {
    int shift = i * bits - lo; // may be negative
    uint32_t c = uint32_t(codes[i]);
    byte |= shift >= 0 ? c << shift : c >> -shift;
  }
  return uint8_t(byte);
}

/// Code i of a codes region.
STRATA_CODEC_HD uint32_t unpackCode(const uint8_t *region, int bits, int i) {
  int bit = i * bits, byte = bit >> 3, shift = bit & 7;
  uint32_t w = region[byte];
  if (shift + bits > 8)
    w |= uint32_t(region[byte + 1]) << 8;
  if (shift + bits > 16)
    w |= uint32_t(region[byte + 2]) << 16;
  return (w >> shift) & ((uint32_t(1) << bits) - 1);
}

} // namespace strata::rt::codec

#endif // STRATA_RT_CPU_COMPRESSCODEC_H
