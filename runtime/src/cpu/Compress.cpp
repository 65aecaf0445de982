//===- Compress.cpp - Fast activation codecs ------------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The fast CPU codecs of the compressed activation formats. Each block is
// loaded as f32 bit patterns into a fixed-size array, then every per-element
// step is a branch-free loop over that array (absolute maximum, element
// codes from CompressCodec.h's integer math, decoded values), which the
// compiler vectorises; codes are packed and unpacked by per-width routines
// (byte copies for 8-bit codes, nibbles for 4-bit, 64-bit words otherwise).
// The library is built without -march flags: the whole block loop is
// compiled three times (scalar, AVX2, AVX-512, by function attributes) and
// the best one the CPU supports is picked at run time, as for the GEMM.
//
// The results are the reference's (CompressReference.cpp) bit for bit, for
// every ISA and thread count: blocks are independent, the stochastic
// rounding draws from a hash of the global element index, and parallelFor
// splits whole blocks.
//
//===----------------------------------------------------------------------===//

#include "CompressInternal.h"

#include "CompressCodec.h"

#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#define STRATA_COMPRESS_X86 1
#else
#define STRATA_COMPRESS_X86 0
#endif

#define STRATA_INLINE inline __attribute__((always_inline))

using namespace strata_plan;

namespace strata::rt {
namespace {
using namespace codec;

/// What a range of blocks needs, computed once per call.
struct Job {
  ActFormat f;
  int64_t n = 0;
  int64_t blockBytes = 0;
  int bits = 0;
  uint64_t seed = 0;
  const float *in = nullptr;
  uint8_t *packed = nullptr;
  const uint8_t *cin = nullptr;
  float *out = nullptr;
};

//===----------------------------------------------------------------------===//
// Tables (built once)
//===----------------------------------------------------------------------===//

/// Unscaled values of every code of an MX element type.
struct MxTables {
  float value[7][256];
  MxTables() {
    for (int e = 1; e <= 6; ++e) {
      MxSpec sp = mxSpec(MxElement(e));
      for (uint32_t c = 0; c < 256; ++c)
        value[e][c] = c < (1u << sp.bits) ? mxDecode(c, sp) : 0.0f;
    }
  }
};
const MxTables &mxTables() {
  static const MxTables tables;
  return tables;
}

/// bfp-nu: the normalised levels and the doubled midpoints
/// mid2[c] = level(c) + level(c + 1) of every m.
struct NuTables {
  float level[9][256];
  double mid2[9][256];
  NuTables() {
    for (int m = 1; m <= 8; ++m) {
      int k = (1 << m) - 1;
      for (int c = 0; c <= k; ++c)
        level[m][c] = nuLevel(c, m);
      for (int c = 0; c < k; ++c)
        mid2[m][c] = double(level[m][c]) + double(level[m][c + 1]);
    }
  }
};
const NuTables &nuTables() {
  static const NuTables tables;
  return tables;
}

//===----------------------------------------------------------------------===//
// Block load, packing
//===----------------------------------------------------------------------===//

/// The block's f32 bits, zero padded past `count`.
template <int B>
STRATA_INLINE void loadBlock(const float *x, int64_t count, uint32_t *bits) {
  if (count == B) {
    std::memcpy(bits, x, sizeof(uint32_t) * B);
    return;
  }
  std::memset(bits, 0, sizeof(uint32_t) * B);
  std::memcpy(bits, x, sizeof(uint32_t) * size_t(count));
}

/// Bits of the largest magnitude (>= 0x7F800000 when any is Inf or NaN).
template <int B> STRATA_INLINE uint32_t absMaxBits(const uint32_t *bits) {
  uint32_t m = 0;
  for (int i = 0; i < B; ++i)
    m = std::max(m, bits[i] & 0x7FFFFFFFu);
  return m;
}

/// Packs B codes of Bits bits (B is a multiple of 8, so 8 codes fill Bits
/// whole bytes).
template <int Bits, int B, typename C>
STRATA_INLINE void packCodes(const C *codes, uint8_t *dst) {
  if constexpr (Bits == 8) {
    for (int i = 0; i < B; ++i)
      dst[i] = uint8_t(codes[i]);
  } else if constexpr (Bits == 4) {
    for (int j = 0; j < B / 2; ++j)
      dst[j] = uint8_t(codes[2 * j] | codes[2 * j + 1] << 4);
  } else {
    for (int g = 0; g < B / 8; ++g) {
      uint64_t acc = 0;
      for (int k = 0; k < 8; ++k)
        acc |= uint64_t(codes[8 * g + k]) << (k * Bits);
      uint8_t bytes[9];
      for (int k = 0; k < 8; ++k)
        bytes[k] = uint8_t(acc >> (8 * k));
      if constexpr (Bits == 9)
        bytes[8] = uint8_t(codes[8 * g + 7] >> 1);
      std::memcpy(dst + g * Bits, bytes, Bits);
    }
  }
}

template <int Bits, int B, typename C>
STRATA_INLINE void unpackCodes(const uint8_t *src, C *codes) {
  if constexpr (Bits == 8) {
    for (int i = 0; i < B; ++i)
      codes[i] = src[i];
  } else if constexpr (Bits == 4) {
    for (int j = 0; j < B / 2; ++j) {
      codes[2 * j] = src[j] & 0xF;
      codes[2 * j + 1] = src[j] >> 4;
    }
  } else {
    constexpr uint64_t mask = (uint64_t(1) << Bits) - 1;
    for (int g = 0; g < B / 8; ++g) {
      uint8_t bytes[9] = {};
      std::memcpy(bytes, src + g * Bits, Bits);
      uint64_t acc = 0;
      for (int k = 0; k < 8; ++k)
        acc |= uint64_t(bytes[k]) << (8 * k);
      for (int k = 0; k < 8; ++k)
        codes[8 * g + k] = C((acc >> (k * Bits)) & mask);
      if constexpr (Bits == 9)
        codes[8 * g + 7] = C(codes[8 * g + 7] | (uint32_t(bytes[8]) << 1));
    }
  }
}

/// Calls fn(std::integral_constant<int, Bits>{}) for a run-time code width
/// in 2..9 (bfp) or 4, 6, 8 (mx); 9 for anything wider.
template <typename Fn> STRATA_INLINE void withBits(int bits, Fn &&fn) {
  switch (bits) {
  case 2:
    return fn(std::integral_constant<int, 2>{});
  case 3:
    return fn(std::integral_constant<int, 3>{});
  case 4:
    return fn(std::integral_constant<int, 4>{});
  case 5:
    return fn(std::integral_constant<int, 5>{});
  case 6:
    return fn(std::integral_constant<int, 6>{});
  case 7:
    return fn(std::integral_constant<int, 7>{});
  case 8:
    return fn(std::integral_constant<int, 8>{});
  default:
    return fn(std::integral_constant<int, 9>{});
  }
}

/// packCodes / unpackCodes for a run-time width.
template <int B, typename C>
STRATA_INLINE void packAny(int bits, const C *codes, uint8_t *dst) {
  withBits(bits, [&](auto w) { packCodes<decltype(w)::value, B>(codes, dst); });
}

template <int B, typename C>
STRATA_INLINE void unpackAny(int bits, const uint8_t *src, C *codes) {
  withBits(bits,
           [&](auto w) { unpackCodes<decltype(w)::value, B>(src, codes); });
}

/// Code bits of an MX element type, at compile time.
template <MxElement El>
constexpr int kMxBits = El == MxElement::Fp4E2M1   ? 4
                        : El == MxElement::Fp6E2M3 ? 6
                        : El == MxElement::Fp6E3M2 ? 6
                                                   : 8;

STRATA_INLINE void nanBlock(const Job &job, uint8_t *dst) {
  dst[0] = kNanScale;
  std::memset(dst + 1, 0, size_t(job.blockBytes - 1));
}

//===----------------------------------------------------------------------===//
// Encoders of one block
//===----------------------------------------------------------------------===//

template <MxElement El>
STRATA_INLINE void mxEncodeBlock(const Job &job, const uint32_t *x,
                                 uint8_t *dst) {
  constexpr int B = 32;
  const MxSpec sp = mxSpec(El);
  uint32_t amax = absMaxBits<B>(x);
  if (amax >= 0x7F800000u)
    return nanBlock(job, dst);
  int s = mxScaleExp(amax, sp, job.f.scale);
  dst[0] = uint8_t(s + 127);
  uint8_t codes[B];
  for (int i = 0; i < B; ++i)
    codes[i] = uint8_t(mxEncode(x[i], s, sp));
  packCodes<kMxBits<El>, B>(codes, dst + 1);
}

/// bf16: a flag byte (the NaN-block marker, else 127) and 32 little-endian
/// bf16 codes.
STRATA_INLINE void bf16EncodeBlock(const Job &job, const uint32_t *x,
                                   uint8_t *dst) {
  constexpr int B = 32;
  if (absMaxBits<B>(x) >= 0x7F800000u)
    return nanBlock(job, dst);
  dst[0] = 127;
  for (int i = 0; i < B; ++i) {
    uint16_t h = bf16Encode(x[i]);
    dst[1 + 2 * i] = uint8_t(h & 0xFF);
    dst[2 + 2 * i] = uint8_t(h >> 8);
  }
}

/// bfp and bfp-outlier.
template <int B, bool Stochastic, bool Outliers>
STRATA_INLINE void bfpEncodeBlock(const Job &job, const uint32_t *xIn,
                                  int64_t first, uint8_t *dst) {
  uint32_t amax = absMaxBits<B>(xIn);
  if (amax >= 0x7F800000u)
    return nanBlock(job, dst);
  const int m = job.f.mantissaBits;
  const uint32_t *x = xIn;
  uint32_t masked[B];
  if constexpr (Outliers) {
    // The K largest magnitudes (ties: lowest index) leave the block: their
    // code slot holds +0 and they do not count towards the exponent.
    uint8_t *triples = dst + 1 + (B * job.bits + 7) / 8;
    int32_t mag[B]; // -1 once selected
    for (int i = 0; i < B; ++i)
      mag[i] = int32_t(xIn[i] & 0x7FFFFFFFu);
    std::memcpy(masked, xIn, sizeof(masked));
    for (int k = 0; k < job.f.outliers; ++k) {
      int best = 0;
      int32_t bestMag = -1;
      for (int i = 0; i < B; ++i) {
        if (mag[i] > bestMag) {
          best = i;
          bestMag = mag[i];
        }
      }
      uint16_t h = bf16Encode(xIn[best]);
      triples[3 * k] = uint8_t(best);
      triples[3 * k + 1] = uint8_t(h & 0xFF);
      triples[3 * k + 2] = uint8_t(h >> 8);
      mag[best] = -1;
      masked[best] = 0;
    }
    amax = absMaxBits<B>(masked);
    x = masked;
  }
  const int E = bfpExp(amax);
  dst[0] = uint8_t(E + 127);
  uint32_t r[B] = {};
  if constexpr (Stochastic) {
    uint64_t index = uint64_t(first);
    uint32_t key = randomKey(job.seed, uint32_t(index >> 32));
    uint32_t low = uint32_t(index);
    for (int i = 0; i < B; ++i)
      r[i] = random24(key, low + uint32_t(i));
  }
  uint16_t codes[B];
  for (int i = 0; i < B; ++i)
    codes[i] = uint16_t(bfpEncode(x[i], E, m, Stochastic, r[i]));
  packAny<B>(job.bits, codes, dst + 1);
}

template <int B>
STRATA_INLINE void nuEncodeBlock(const Job &job, const uint32_t *x,
                                 uint8_t *dst) {
  uint32_t amax = absMaxBits<B>(x);
  if (amax >= 0x7F800000u)
    return nanBlock(job, dst);
  const int m = job.f.mantissaBits, k = (1 << m) - 1;
  const int E = bfpNuExp(amax);
  dst[0] = uint8_t(E + 127);
  const double *mid2 = nuTables().mid2[m];
  const double p = double(pow2f(-E));
  uint16_t codes[B];
  for (int i = 0; i < B; ++i) {
    double t2 = double(bitsFloat(x[i] & 0x7FFFFFFFu)) * p; // 2t, exact
    double est = __builtin_sqrt(t2 * 0.5) * k + 0.5;
    int c = est >= k ? k : int(est);
    while (c < k && t2 > mid2[c])
      ++c;
    while (c > 0 && t2 <= mid2[c - 1])
      --c;
    codes[i] = uint16_t(c ? ((x[i] >> 31) << m) | uint32_t(c) : 0u);
  }
  packAny<B>(job.bits, codes, dst + 1);
}

//===----------------------------------------------------------------------===//
// Decoders of one block
//===----------------------------------------------------------------------===//

/// Writes `count` values of a decoded block (all of them when count == B).
template <int B>
STRATA_INLINE void storeBlock(const float *v, int64_t count, float *y) {
  std::memcpy(y, v, sizeof(float) * size_t(count == B ? B : count));
}

STRATA_INLINE void nanValues(int64_t count, float *y) {
  const float nan = bitsFloat(kQuietNan);
  for (int64_t i = 0; i < count; ++i)
    y[i] = nan;
}

template <MxElement El>
STRATA_INLINE void mxDecodeBlock(const uint8_t *src, int64_t count, float *y) {
  constexpr int B = 32;
  if (src[0] == kNanScale)
    return nanValues(count, y);
  const float scale = pow2f(int(src[0]) - 127);
  const float *table = mxTables().value[int(El)];
  uint8_t codes[B];
  unpackCodes<kMxBits<El>, B>(src + 1, codes);
  float v[B];
  for (int i = 0; i < B; ++i)
    v[i] = table[codes[i]] * scale;
  storeBlock<B>(v, count, y);
}

STRATA_INLINE void bf16DecodeBlock(const uint8_t *src, int64_t count,
                                   float *y) {
  constexpr int B = 32;
  if (src[0] == kNanScale)
    return nanValues(count, y);
  float v[B];
  for (int i = 0; i < B; ++i)
    v[i] = bf16Decode(uint16_t(src[1 + 2 * i] | src[2 + 2 * i] << 8));
  storeBlock<B>(v, count, y);
}

template <int B, bool NonUniform, bool Outliers>
STRATA_INLINE void bfpDecodeBlock(const Job &job, const uint8_t *src,
                                  int64_t count, float *y) {
  if (src[0] == kNanScale)
    return nanValues(count, y);
  const int m = job.f.mantissaBits;
  const int E = int(src[0]) - 127;
  uint16_t codes[B];
  unpackAny<B>(job.bits, src + 1, codes);
  const uint32_t mask = (uint32_t(1) << m) - 1;
  float v[B];
  if constexpr (NonUniform) {
    const float *level = nuTables().level[m];
    if (E == 127) { // never written by compress (see bfpNuDecode)
      for (int i = 0; i < B; ++i)
        v[i] = bfpNuDecode(codes[i], E, m);
    } else {
      const float p = pow2f(E + 1);
      for (int i = 0; i < B; ++i)
        v[i] = bitsFloat(floatBits(level[codes[i] & mask] * p) |
                         (uint32_t(codes[i] >> m) << 31));
    }
  } else {
    const float u = pow2f(E - m + 1);
    for (int i = 0; i < B; ++i)
      v[i] = bitsFloat(floatBits(float(codes[i] & mask) * u) |
                       (uint32_t(codes[i] >> m) << 31));
  }
  if constexpr (Outliers) {
    const uint8_t *triples = src + 1 + (B * job.bits + 7) / 8;
    for (int k = 0; k < job.f.outliers; ++k)
      if (triples[3 * k] < B) // (always, in bytes that compress wrote)
        v[triples[3 * k]] =
            bf16Decode(uint16_t(triples[3 * k + 1] | triples[3 * k + 2] << 8));
  }
  storeBlock<B>(v, count, y);
}

//===----------------------------------------------------------------------===//
// Ranges of blocks
//===----------------------------------------------------------------------===//

/// Calls fn(std::integral_constant<MxElement, E>{}) for the element type
/// `e` (Int8 for None, which valid formats never have), so that each element
/// type gets its own instantiation.
template <typename Fn> STRATA_INLINE void withElement(MxElement e, Fn &&fn) {
  switch (e) {
  case MxElement::Fp8E4M3:
    return fn(std::integral_constant<MxElement, MxElement::Fp8E4M3>{});
  case MxElement::Fp8E5M2:
    return fn(std::integral_constant<MxElement, MxElement::Fp8E5M2>{});
  case MxElement::Fp6E2M3:
    return fn(std::integral_constant<MxElement, MxElement::Fp6E2M3>{});
  case MxElement::Fp6E3M2:
    return fn(std::integral_constant<MxElement, MxElement::Fp6E3M2>{});
  case MxElement::Fp4E2M1:
    return fn(std::integral_constant<MxElement, MxElement::Fp4E2M1>{});
  case MxElement::Int8:
  case MxElement::None:
    return fn(std::integral_constant<MxElement, MxElement::Int8>{});
  }
}

template <int B>
STRATA_INLINE void compressBlocks(const Job &job, int64_t b0, int64_t b1) {
  alignas(64) uint32_t x[B];
  for (int64_t b = b0; b < b1; ++b) {
    int64_t first = b * B;
    loadBlock<B>(job.in + first, std::min<int64_t>(B, job.n - first), x);
    uint8_t *dst = job.packed + b * job.blockBytes;
    switch (job.f.kind) {
    case ActKind::Mx:
      if constexpr (B == 32) {
        withElement(job.f.element, [&](auto e) {
          mxEncodeBlock<decltype(e)::value>(job, x, dst);
        });
      }
      break;
    case ActKind::Bfp:
      if (job.f.rounding == ActRounding::Stochastic)
        bfpEncodeBlock<B, true, false>(job, x, first, dst);
      else
        bfpEncodeBlock<B, false, false>(job, x, first, dst);
      break;
    case ActKind::BfpOutlier:
      if (job.f.rounding == ActRounding::Stochastic)
        bfpEncodeBlock<B, true, true>(job, x, first, dst);
      else
        bfpEncodeBlock<B, false, true>(job, x, first, dst);
      break;
    case ActKind::BfpNonUniform:
      nuEncodeBlock<B>(job, x, dst);
      break;
    case ActKind::Bf16:
      if constexpr (B == 32)
        bf16EncodeBlock(job, x, dst);
      break;
    case ActKind::None:
      break;
    }
  }
}

template <int B>
STRATA_INLINE void decompressBlocks(const Job &job, int64_t b0, int64_t b1) {
  for (int64_t b = b0; b < b1; ++b) {
    int64_t first = b * B, count = std::min<int64_t>(B, job.n - first);
    const uint8_t *src = job.cin + b * job.blockBytes;
    float *y = job.out + first;
    switch (job.f.kind) {
    case ActKind::Mx:
      if constexpr (B == 32) {
        withElement(job.f.element, [&](auto e) {
          mxDecodeBlock<decltype(e)::value>(src, count, y);
        });
      }
      break;
    case ActKind::Bfp:
      bfpDecodeBlock<B, false, false>(job, src, count, y);
      break;
    case ActKind::BfpOutlier:
      bfpDecodeBlock<B, false, true>(job, src, count, y);
      break;
    case ActKind::BfpNonUniform:
      bfpDecodeBlock<B, true, false>(job, src, count, y);
      break;
    case ActKind::Bf16:
      if constexpr (B == 32)
        bf16DecodeBlock(src, count, y);
      break;
    case ActKind::None:
      break;
    }
  }
}

STRATA_INLINE void compressRange(const Job &job, int64_t b0, int64_t b1) {
  switch (job.f.block) {
  case 16:
    return compressBlocks<16>(job, b0, b1);
  case 32:
    return compressBlocks<32>(job, b0, b1);
  default:
    return compressBlocks<64>(job, b0, b1);
  }
}

STRATA_INLINE void decompressRange(const Job &job, int64_t b0, int64_t b1) {
  switch (job.f.block) {
  case 16:
    return decompressBlocks<16>(job, b0, b1);
  case 32:
    return decompressBlocks<32>(job, b0, b1);
  default:
    return decompressBlocks<64>(job, b0, b1);
  }
}

using RangeFn = void (*)(const Job &, int64_t, int64_t);

void compressScalar(const Job &job, int64_t b0, int64_t b1) {
  compressRange(job, b0, b1);
}
void decompressScalar(const Job &job, int64_t b0, int64_t b1) {
  decompressRange(job, b0, b1);
}

#if STRATA_COMPRESS_X86
__attribute__((target("avx2,fma"))) void compressAvx2(const Job &job,
                                                      int64_t b0, int64_t b1) {
  compressRange(job, b0, b1);
}
__attribute__((target("avx2,fma"))) void
decompressAvx2(const Job &job, int64_t b0, int64_t b1) {
  decompressRange(job, b0, b1);
}
__attribute__((target("avx512f,avx2,fma"))) void
compressAvx512(const Job &job, int64_t b0, int64_t b1) {
  compressRange(job, b0, b1);
}
__attribute__((target("avx512f,avx2,fma"))) void
decompressAvx512(const Job &job, int64_t b0, int64_t b1) {
  decompressRange(job, b0, b1);
}
#endif

RangeFn compressFn(detail::GemmIsa isa) {
#if STRATA_COMPRESS_X86
  if (isa == detail::GemmIsa::Avx512)
    return compressAvx512;
  if (isa == detail::GemmIsa::Avx2)
    return compressAvx2;
#endif
  (void)isa;
  return compressScalar;
}

RangeFn decompressFn(detail::GemmIsa isa) {
#if STRATA_COMPRESS_X86
  if (isa == detail::GemmIsa::Avx512)
    return decompressAvx512;
  if (isa == detail::GemmIsa::Avx2)
    return decompressAvx2;
#endif
  (void)isa;
  return decompressScalar;
}

/// Runs fn over every block: on the pool in chunks of whole blocks, or on
/// the calling thread.
void forBlocks(ThreadPool *pool, const Job &job, RangeFn fn) {
  int64_t blocks = (job.n + job.f.block - 1) / job.f.block;
  if (!pool || pool->size() <= 1 || blocks < 64) {
    fn(job, 0, blocks);
    return;
  }
  pool->parallelFor(blocks, [&](int64_t b0, int64_t b1) { fn(job, b0, b1); });
}

Job makeJob(const ActFormat &f, int64_t n) {
  Job job;
  job.f = f;
  job.n = n;
  job.blockBytes = actBlockBytes(f);
  job.bits = actElementBits(f);
  return job;
}

} // namespace

namespace detail {

void compressActivationsWithIsa(GemmIsa isa, ThreadPool *pool,
                                const ActFormat &f, const float *in, int64_t n,
                                uint8_t *out, uint64_t seed) {
  if (n <= 0)
    return;
  if (f.isNone()) {
    std::memcpy(out, in, size_t(n) * 4);
    return;
  }
  Job job = makeJob(f, n);
  job.in = in;
  job.packed = out;
  job.seed = seed;
  forBlocks(pool, job, compressFn(isa));
}

void decompressActivationsWithIsa(GemmIsa isa, ThreadPool *pool,
                                  const ActFormat &f, const uint8_t *in,
                                  int64_t n, float *out) {
  if (n <= 0)
    return;
  if (f.isNone()) {
    std::memcpy(out, in, size_t(n) * 4);
    return;
  }
  Job job = makeJob(f, n);
  job.cin = in;
  job.out = out;
  forBlocks(pool, job, decompressFn(isa));
}

} // namespace detail

void compressActivations(ThreadPool &pool, const ActFormat &f, const float *in,
                         int64_t n, uint8_t *out, uint64_t seed) {
  detail::compressActivationsWithIsa(detail::defaultGemmIsa(), &pool, f, in, n,
                                     out, seed);
}

void decompressActivations(ThreadPool &pool, const ActFormat &f,
                           const uint8_t *in, int64_t n, float *out) {
  detail::decompressActivationsWithIsa(detail::defaultGemmIsa(), &pool, f, in,
                                       n, out);
}

} // namespace strata::rt
