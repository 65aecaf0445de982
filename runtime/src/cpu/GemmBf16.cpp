//===- GemmBf16.cpp - Cache-blocked bf16 GEMM with f32 accumulation -------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The blocking of Gemm.cpp (nc-wide column blocks, kc-deep slices, B packed
// once per block and shared by the threads, A packed per thread an mc-row
// block at a time) around bf16 micro-kernels that accumulate in f32:
//
// - AMX: a 32 x 32 tile of C in four 16 x 16 f32 tile registers, tdpbf16ps
//   on 16 x 32 bf16 tiles of A and 16 k-pair x 16 column tiles of B.
// - AVX512-BF16: a 12 x 32 tile of C in 24 zmm registers, vdpbf16ps on a
//   broadcast pair of A values and 16 column pairs of B.
// - Fallback: the inputs widened to f32 (exactly) and the f32 GEMM.
//
// Packed layouts. B (both kernels): a kc x 32 micro-panel as k pairs
// [kc/2][32 columns][2] (the "VNNI" layout both instructions read). A: an
// mr x kc micro-panel as groups of G consecutive k values, [kc/G][mr][G],
// with G = 32 for AMX (one 64-byte tile row per A row) and G = 2 for
// AVX512-BF16 (one 32-bit broadcast per row and pair). k is zero padded to a
// multiple of G, rows to mr and columns to 32. f32 inputs are rounded to
// bf16 (f32ToBf16) while they are packed.
//
// Determinism as for the f32 GEMM: every element of C is owned by one thread
// and accumulated in a fixed order, so the bits depend on the path and kc,
// never on the thread count. (The AMX kernel accumulates onto C inside the
// tiles when alpha == 1 and beta is 0 or 1, and goes through a buffer
// otherwise and for edge tiles: the rounding also depends on alpha, beta and
// the tile's position, which no thread count changes.)
//
// Fast packers (AVX-512BW permutes and gathers; f32 rows rounded by the
// vector conversion first) take whole 32-column panels; a transposed f32
// input is rounded by the vector conversion along its contiguous k runs into
// a bf16 block, which the transposed bf16 packers then gather. Partial
// panels and odd k take the generic element loops.
//
// Blocking: each path's defaults (pathFor), or the mc, nc, kc of a tiling
// (the plan's tiling attributes, tuned by strata-tune) on the path's own
// register tile.
//
//===----------------------------------------------------------------------===//

#include "GemmBf16Internal.h"
#include "GemmInternal.h"

#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#define STRATA_BF16_X86 1
#else
#define STRATA_BF16_X86 0
#endif

namespace strata::rt {
namespace {

using detail::Bf16Isa;

/// C[mr x nr] = alpha * A B + beta * C over one packed kc slice (kc a
/// multiple of the kernel's k group); beta == 0 never reads C.
using Bf16Kernel = void (*)(int64_t kc, const uint16_t *a, const uint16_t *b,
                            float *c, int64_t ldc, float alpha, float beta);

/// Columns of every micro-panel of B (two 16-lane f32 vectors or tiles).
constexpr int64_t kNr = 32;
/// Largest mr (AMX).
constexpr int64_t kMaxMr = 32;

/// C = alpha * acc + beta * C for one row of `cols` values (beta == 0 never
/// reads C).
inline void foldRow(const float *acc, float *c, int64_t cols, float alpha,
                    float beta) {
  for (int64_t j = 0; j < cols; ++j) {
    float r = acc[j];
    if (alpha != 1.0f)
      r = alpha * r;
    if (beta != 0.0f) {
      float old = beta * c[j];
      r = r + old;
    }
    c[j] = r;
  }
}

//===----------------------------------------------------------------------===//
// Micro-kernels
//===----------------------------------------------------------------------===//

#if STRATA_BF16_X86

/// AVX512-BF16: MR rows x 32 columns; `a` is [kc/2][MR][2], `b` [kc/2][32][2].
template <int MR>
__attribute__((target("avx512f,avx512bf16"))) void
microAvx512Bf16(int64_t kc, const uint16_t *__restrict a,
                const uint16_t *__restrict b, float *c, int64_t ldc,
                float alpha, float beta) {
  __m512 acc[MR][2];
#pragma unroll
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch(reinterpret_cast<const char *>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + i * ldc + kNr - 1),
                 _MM_HINT_T0);
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  }
#pragma unroll 2
  for (int64_t p = 0; p < kc / 2; ++p) {
    __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * 2 * kNr);
    __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + p * 2 * kNr + 32);
#pragma unroll
    for (int i = 0; i < MR; ++i) {
      int32_t pair;
      std::memcpy(&pair, a + (p * MR + i) * 2, sizeof(pair));
      __m512bh ai = (__m512bh)_mm512_set1_epi32(pair);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma unroll
  for (int i = 0; i < MR; ++i) {
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      float *ci = c + i * ldc + 16 * v;
      __m512 r = acc[i][v];
      if (alpha != 1.0f)
        r = _mm512_mul_ps(va, r);
      if (beta != 0.0f)
        r = _mm512_add_ps(r, _mm512_mul_ps(vb, _mm512_loadu_ps(ci)));
      _mm512_storeu_ps(ci, r);
    }
  }
}

/// The AMX tile configuration (64-byte ldtilecfg operand, palette 1): tiles
/// 0-3 accumulate C, 4-5 hold A, 6-7 B; all are 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) {
      colsb[t] = 64;
      rows[t] = 16;
    }
  }
};

/// AMX: 32 x 32 (2 x 2 tiles of 16 x 16 f32); `a` is [kc/32][32][32],
/// `b` [kc/2][32][2]. The tile configuration must be loaded. With alpha == 1
/// and beta 0 or 1 the tiles start from zero or from C and are stored straight
/// into C; otherwise through a buffer.
__attribute__((target("amx-tile,amx-bf16,avx512f"))) void
microAmx(int64_t kc, const uint16_t *__restrict a, const uint16_t *__restrict b,
         float *c, int64_t ldc, float alpha, float beta) {
  const bool direct = alpha == 1.0f && (beta == 0.0f || beta == 1.0f);
  const int64_t cStride = ldc * int64_t(sizeof(float));
  if (direct && beta == 1.0f) {
    _tile_loadd(0, c, cStride);
    _tile_loadd(1, c + 16, cStride);
    _tile_loadd(2, c + 16 * ldc, cStride);
    _tile_loadd(3, c + 16 * ldc + 16, cStride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  // The next tile of the row-panel loop is 32 rows down: bring its 32 C rows
  // into the cache for writing, spread over the k blocks.
  const float *next = c + 32 * ldc;
  const int64_t blocks = kc / 32;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    for (int64_t r = kb * 32 / blocks; r < (kb + 1) * 32 / blocks; ++r) {
      _mm_prefetch(reinterpret_cast<const char *>(next + r * ldc),
                   _MM_HINT_ET0);
      _mm_prefetch(reinterpret_cast<const char *>(next + r * ldc + 16),
                   _MM_HINT_ET0);
    }
    const uint16_t *ak = a + kb * 32 * 32;
    const uint16_t *bk = b + kb * 32 * kNr;
    _tile_loadd(4, ak, 64);
    _tile_loadd(6, bk, 2 * kNr * 2);
    _tile_loadd(7, bk + 32, 2 * kNr * 2);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, ak + 16 * 32, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (direct) {
    _tile_stored(0, c, cStride);
    _tile_stored(1, c + 16, cStride);
    _tile_stored(2, c + 16 * ldc, cStride);
    _tile_stored(3, c + 16 * ldc + 16, cStride);
    return;
  }
  alignas(64) float acc[32 * kNr];
  _tile_stored(0, acc, kNr * 4);
  _tile_stored(1, acc + 16, kNr * 4);
  _tile_stored(2, acc + 16 * kNr, kNr * 4);
  _tile_stored(3, acc + 16 * kNr + 16, kNr * 4);
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int i = 0; i < 32; ++i) {
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      float *ci = c + i * ldc + 16 * v;
      __m512 r = _mm512_load_ps(acc + i * kNr + 16 * v);
      if (alpha != 1.0f)
        r = _mm512_mul_ps(va, r);
      if (beta != 0.0f)
        r = _mm512_add_ps(r, _mm512_mul_ps(vb, _mm512_loadu_ps(ci)));
      _mm512_storeu_ps(ci, r);
    }
  }
}

__attribute__((target("amx-tile"))) void loadTileConfig() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}

__attribute__((target("amx-tile"))) void releaseTiles() { _tile_release(); }

#endif // STRATA_BF16_X86

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

inline uint16_t toBf16(uint16_t x) { return x; }
inline uint16_t toBf16(float x) { return f32ToBf16(x); }

/// A grow-only 64-byte aligned scratch buffer of bf16 values.
class Scratch {
public:
  ~Scratch() { std::free(ptr); }
  uint16_t *get(int64_t count) {
    if (count > capacity) {
      std::free(ptr);
      int64_t bytes = (count * 2 + 63) / 64 * 64;
      ptr = static_cast<uint16_t *>(std::aligned_alloc(64, bytes));
      capacity = bytes / 2;
    }
    return ptr;
  }

private:
  uint16_t *ptr = nullptr;
  int64_t capacity = 0;
};

thread_local Scratch packedAScratch;
thread_local Scratch packedBScratch;
/// f32 operands rounded to bf16 before packing (A rows, B columns).
thread_local Scratch roundedAScratch;
thread_local Scratch roundedBScratch;

/// Packs rows [i0, i0 + rows) and columns [p0, p0 + kc) of op(A) into an
/// mr x kcPad micro-panel laid out [kcPad/G][mr][G], zero padded.
template <int G, typename T>
void packAPanel(const void *data, int64_t lda, bool transA, int64_t i0,
                int64_t rows, int64_t p0, int64_t kc, int64_t kcPad, int64_t mr,
                uint16_t *dst) {
  const T *a = static_cast<const T *>(data);
  if (rows < mr || kc < kcPad)
    std::memset(dst, 0, sizeof(uint16_t) * mr * kcPad);
  auto at = [&](int64_t i, int64_t p) -> uint16_t & {
    return dst[(p / G) * mr * G + i * G + p % G];
  };
  if (transA) {
    // op(A)[i][p] = a[p * lda + i]: each p reads `rows` contiguous values.
    for (int64_t p = 0; p < kc; ++p) {
      const T *src = a + (p0 + p) * lda + i0;
      uint16_t *d = &at(0, p);
      for (int64_t i = 0; i < rows; ++i)
        d[i * G] = toBf16(src[i]);
    }
    return;
  }
  for (int64_t i = 0; i < rows; ++i) {
    const T *src = a + (i0 + i) * lda + p0;
    for (int64_t pg = 0; pg < kc; pg += G) {
      uint16_t *d = &at(i, pg);
      int64_t len = std::min<int64_t>(G, kc - pg);
      for (int64_t q = 0; q < len; ++q)
        d[q] = toBf16(src[pg + q]);
    }
  }
}

/// Packs rows [p0, p0 + kc) and columns [j0, j0 + cols) of op(B) into a
/// kcPad x 32 micro-panel laid out [kcPad/2][32][2], zero padded.
template <typename T>
void packBPanel(const void *data, int64_t ldb, bool transB, int64_t p0,
                int64_t kc, int64_t kcPad, int64_t j0, int64_t cols,
                uint16_t *dst) {
  const T *b = static_cast<const T *>(data);
  if (cols < kNr || kc < kcPad)
    std::memset(dst, 0, sizeof(uint16_t) * kNr * kcPad);
  if (transB) {
    // op(B)[p][j] = b[j * ldb + p]: each column reads contiguous k values.
    for (int64_t j = 0; j < cols; ++j) {
      const T *src = b + (j0 + j) * ldb + p0;
      for (int64_t p = 0; p < kc; ++p)
        dst[(p / 2) * 2 * kNr + 2 * j + (p & 1)] = toBf16(src[p]);
    }
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const T *src = b + (p0 + p) * ldb + j0;
    uint16_t *d = dst + (p / 2) * 2 * kNr + (p & 1);
    for (int64_t j = 0; j < cols; ++j)
      d[2 * j] = toBf16(src[j]);
  }
}

/// Packs columns [j0, j0 + cols) of the kc rows from p0 of op(B) as
/// consecutive micro-panels (the last one zero padded).
template <typename T>
void packBPanels(const void *data, int64_t ldb, bool transB, int64_t p0,
                 int64_t kc, int64_t kcPad, int64_t j0, int64_t cols,
                 uint16_t *dst) {
  for (int64_t j = 0; j < cols; j += kNr)
    packBPanel<T>(data, ldb, transB, p0, kc, kcPad, j0 + j,
                  std::min(kNr, cols - j), dst + j * kcPad);
}

#if STRATA_BF16_X86

/// The AMX A panel [kc/32][mr][32] of a transposed bf16 A (op(A)[i][p] =
/// a[p * lda + i]): each 32-bit gather picks rows i and i + 1 of 16 k values,
/// and two permutes split the pairs into the two 32-value rows.
__attribute__((target("avx512f,avx512bw"))) void
packATransposedAmx(const uint16_t *a, int64_t lda, int64_t i0, int64_t p0,
                   int64_t kc, int64_t mr, uint16_t *dst) {
  alignas(64) static const uint16_t even[32] = {
      0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
      32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
  alignas(64) static const uint16_t odd[32] = {
      1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
      33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i evenIdx = _mm512_load_si512(even);
  const __m512i oddIdx = _mm512_load_si512(odd);
  const __m512i rowsIdx = _mm512_mullo_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
      _mm512_set1_epi32(int32_t(lda)));
  for (int64_t pg = 0; pg < kc; pg += 32) {
    const uint16_t *src = a + (p0 + pg) * lda + i0;
    uint16_t *d = dst + pg * mr;
    for (int64_t i = 0; i < mr; i += 2) {
      __m512i lo = _mm512_i32gather_epi32(rowsIdx, src + i, 2);
      __m512i hi = _mm512_i32gather_epi32(rowsIdx, src + 16 * lda + i, 2);
      _mm512_storeu_si512(d + i * 32,
                          _mm512_permutex2var_epi16(lo, evenIdx, hi));
      _mm512_storeu_si512(d + (i + 1) * 32,
                          _mm512_permutex2var_epi16(lo, oddIdx, hi));
    }
  }
}

/// packAPanel<G, uint16_t> with fast paths: an untransposed A has whole k
/// groups copied row by row (64 bytes for AMX, 4 for AVX512-BF16), a
/// transposed one full AMX panels gathered.
template <int G>
void packAPanelBf16(const void *data, int64_t lda, bool transA, int64_t i0,
                    int64_t rows, int64_t p0, int64_t kc, int64_t kcPad,
                    int64_t mr, uint16_t *dst) {
  const uint16_t *a = static_cast<const uint16_t *>(data);
  if (G == 32 && transA && rows == mr && kc % 32 == 0 && mr % 2 == 0 &&
      lda < (int64_t(1) << 26)) {
    packATransposedAmx(a, lda, i0, p0, kc, mr, dst);
    return;
  }
  if (transA || kc % G != 0) {
    packAPanel<G, uint16_t>(data, lda, transA, i0, rows, p0, kc, kcPad, mr,
                            dst);
    return;
  }
  if (rows < mr)
    std::memset(dst, 0, sizeof(uint16_t) * mr * kcPad);
  for (int64_t i = 0; i < rows; ++i) {
    const uint16_t *src = a + (i0 + i) * lda + p0;
    uint16_t *d = dst + i * G;
    for (int64_t pg = 0; pg < kc; pg += G)
      std::memcpy(d + pg * mr, src + pg, G * sizeof(uint16_t));
  }
}

/// Interleaves two rows of 32 bf16 values into 32 pairs.
__attribute__((target("avx512f,avx512bw"))) inline void
interleaveRows(const uint16_t *r0, const uint16_t *r1, uint16_t *dst) {
  alignas(64) static const uint16_t lo[32] = {
      0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static const uint16_t hi[32] = {
      16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
      24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  __m512i x = _mm512_loadu_si512(r0), y = _mm512_loadu_si512(r1);
  _mm512_storeu_si512(dst,
                      _mm512_permutex2var_epi16(x, _mm512_load_si512(lo), y));
  _mm512_storeu_si512(dst + 32,
                      _mm512_permutex2var_epi16(x, _mm512_load_si512(hi), y));
}

/// packBPanels<uint16_t> with AVX-512: untransposed B is read a pair of rows
/// at a time across all the panels (sequential reads), each 32-column piece
/// interleaved by permutes; transposed B is gathered a k pair (32 bits) of
/// 16 columns at a time. Partial panels and odd kc take the generic route.
__attribute__((target("avx512f,avx512bw"))) void
packBPanelsBf16(const void *data, int64_t ldb, bool transB, int64_t p0,
                int64_t kc, int64_t kcPad, int64_t j0, int64_t cols,
                uint16_t *dst) {
  // Gather offsets (15 ldb) must fit in 32 bits.
  const bool ok = kc % 2 == 0 && ldb < (int64_t(1) << 27);
  const int64_t full = ok ? cols / kNr : 0;
  const uint16_t *b = static_cast<const uint16_t *>(data);
  if (kc < kcPad)
    for (int64_t jp = 0; jp < full; ++jp)
      std::memset(dst + jp * kNr * kcPad + kc * kNr, 0,
                  sizeof(uint16_t) * kNr * (kcPad - kc));
  if (!transB) {
    // Groups of 8 panels: 512-byte row pieces, 8 write streams.
    for (int64_t g = 0; g < full; g += 8) {
      int64_t ge = std::min(full, g + 8);
      for (int64_t p = 0; p < kc; p += 2) {
        const uint16_t *src = b + (p0 + p) * ldb + j0;
        for (int64_t jp = g; jp < ge; ++jp)
          interleaveRows(src + jp * kNr, src + ldb + jp * kNr,
                         dst + jp * kNr * kcPad + p * kNr);
      }
    }
  } else {
    // Each k pair of 16 columns is one gather (offsets in bf16 units).
    __m512i rows = _mm512_mullo_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
        _mm512_set1_epi32(int32_t(ldb)));
    for (int64_t jp = 0; jp < full; ++jp) {
      uint16_t *d = dst + jp * kNr * kcPad;
      for (int64_t half = 0; half < 2; ++half) {
        const uint16_t *src = b + (j0 + jp * kNr + 16 * half) * ldb + p0;
        for (int64_t p = 0; p < kc; p += 2)
          _mm512_storeu_si512(d + p * kNr + 32 * half,
                              _mm512_i32gather_epi32(rows, src + p, 2));
      }
    }
  }
  if (full * kNr < cols)
    packBPanels<uint16_t>(data, ldb, transB, p0, kc, kcPad, j0 + full * kNr,
                          cols - full * kNr, dst + full * kNr * kcPad);
}

/// Rows ahead that a transposed f32 A panel asks for.
constexpr int64_t kAhead = 16;

/// The AVX512-BF16 A panel [kc/2][mr][2] of a transposed f32 A (op(A)[i][p]
/// = a[p * lda + i], offsets i0 and p0 aside; rows <= mr <= 16, kc even):
/// rows p and p + 1 of A hold the k pair of every panel row, so each pair is
/// two masked loads rounded by the integer rounding (f32ToBf16's bits) and
/// merged, row p + 1 into the high halves; rows past `rows` load as zeros.
__attribute__((target("avx512f"))) void
packATransposedF32Pairs(const float *a, int64_t lda, int64_t i0, int64_t rows,
                        int64_t p0, int64_t kc, int64_t mr, uint16_t *dst) {
  const __mmask16 load = __mmask16((1u << rows) - 1);
  const __mmask16 store = __mmask16((1u << mr) - 1);
  for (int64_t p = 0; p < kc; p += 2) {
    const float *r0 = a + (p0 + p) * lda + i0;
    if (p + kAhead < kc) {
      detail::prefetchBytes(r0 + kAhead * lda, rows * 4);
      detail::prefetchBytes(r0 + (kAhead + 1) * lda, rows * 4);
    }
    __m512i x0 = _mm512_maskz_loadu_epi32(load, r0);
    __m512i x1 = _mm512_maskz_loadu_epi32(load, r0 + lda);
    __m512i pairs =
        _mm512_or_si512(detail::roundLanesToBf16(x0),
                        _mm512_slli_epi32(detail::roundLanesToBf16(x1), 16));
    _mm512_mask_storeu_epi32(dst + p * mr, store, pairs);
  }
}

/// packAPanel<G, float> with the vector conversion: an untransposed A has
/// each row's kc values rounded, then copied as for bf16 inputs; a
/// transposed one has, on AMX, the kc runs of `rows` values rounded into a
/// bf16 block [kc][mr], packed as a transposed bf16 A, and on AVX512-BF16
/// (even kc) its k pairs packed by packATransposedF32Pairs; odd kc takes the
/// element loop.
template <int G>
void packAPanelF32(const void *data, int64_t lda, bool transA, int64_t i0,
                   int64_t rows, int64_t p0, int64_t kc, int64_t kcPad,
                   int64_t mr, uint16_t *dst) {
  const float *a = static_cast<const float *>(data);
  if (G == 32 && transA) {
    uint16_t *block = roundedAScratch.get(kc * mr);
    for (int64_t p = 0; p < kc; ++p) {
      if (p + kAhead < kc)
        detail::prefetchBytes(a + (p0 + p + kAhead) * lda + i0, rows * 4);
      convertF32ToBf16(a + (p0 + p) * lda + i0, block + p * mr, rows);
    }
    packAPanelBf16<G>(block, mr, true, 0, rows, 0, kc, kcPad, mr, dst);
    return;
  }
  if (G == 2 && transA && kc % 2 == 0 && mr <= 16 && rows <= mr) {
    // kc even: kcPad (kc rounded up to the k pair) is kc, nothing to pad.
    packATransposedF32Pairs(a, lda, i0, rows, p0, kc, mr, dst);
    return;
  }
  if (transA || kc % G != 0) {
    packAPanel<G, float>(data, lda, transA, i0, rows, p0, kc, kcPad, mr, dst);
    return;
  }
  if (rows < mr)
    std::memset(dst, 0, sizeof(uint16_t) * mr * kcPad);
  uint16_t *row = roundedAScratch.get(kc);
  for (int64_t i = 0; i < rows; ++i) {
    if (i == 0 && rows > 1)
      detail::prefetchBytes(a + (i0 + 1) * lda + p0, kc * 4);
    if (i + 2 < rows)
      detail::prefetchBytes(a + (i0 + i + 2) * lda + p0, kc * 4);
    convertF32ToBf16(a + (i0 + i) * lda + p0, row, kc);
    uint16_t *d = dst + i * G;
    for (int64_t pg = 0; pg < kc; pg += G)
      std::memcpy(d + pg * mr, row + pg, G * sizeof(uint16_t));
  }
}

/// packBPanels<float> for a transposed B (op(B)[p][j] = b[j ldb + p]): the
/// kc values of each of a whole panel's 32 columns are rounded by the vector
/// conversion into a bf16 block [32][kc], packed as a transposed bf16 B.
void packBTransposedF32(const float *b, int64_t ldb, int64_t p0, int64_t kc,
                        int64_t kcPad, int64_t j0, int64_t cols,
                        uint16_t *dst) {
  const int64_t full = kc % 2 == 0 ? cols / kNr : 0;
  uint16_t *block = roundedBScratch.get(kNr * kc);
  for (int64_t jp = 0; jp < full; ++jp) {
    for (int64_t j = 0; j < kNr; ++j) {
      if (j + 1 < kNr || jp + 1 < full)
        detail::prefetchBytes(b + (j0 + jp * kNr + j + 1) * ldb + p0, kc * 4);
      convertF32ToBf16(b + (j0 + jp * kNr + j) * ldb + p0, block + j * kc, kc);
    }
    packBPanelsBf16(block, kc, true, 0, kc, kcPad, 0, kNr,
                    dst + jp * kNr * kcPad);
  }
  if (full * kNr < cols)
    packBPanels<float>(b, ldb, true, p0, kc, kcPad, j0 + full * kNr,
                       cols - full * kNr, dst + full * kNr * kcPad);
}

/// packBPanels<float> for an untransposed B: each pair of rows of up to 8
/// whole panels is rounded by the vector conversion, then interleaved; a
/// transposed B goes to packBTransposedF32.
__attribute__((target("avx512f,avx512bw"))) void
packBPanelsF32(const void *data, int64_t ldb, bool transB, int64_t p0,
               int64_t kc, int64_t kcPad, int64_t j0, int64_t cols,
               uint16_t *dst) {
  if (transB)
    return packBTransposedF32(static_cast<const float *>(data), ldb, p0, kc,
                              kcPad, j0, cols, dst);
  const int64_t full = kc % 2 == 0 ? cols / kNr : 0;
  const float *b = static_cast<const float *>(data);
  if (kc < kcPad)
    for (int64_t jp = 0; jp < full; ++jp)
      std::memset(dst + jp * kNr * kcPad + kc * kNr, 0,
                  sizeof(uint16_t) * kNr * (kcPad - kc));
  alignas(64) uint16_t r0[8 * kNr], r1[8 * kNr];
  for (int64_t g = 0; g < full; g += 8) {
    int64_t ge = std::min(full, g + 8);
    for (int64_t p = 0; p < kc; p += 2) {
      const float *src = b + (p0 + p) * ldb + j0 + g * kNr;
      if (p + 2 < kc) {
        detail::prefetchBytes(src + 2 * ldb, (ge - g) * kNr * 4);
        detail::prefetchBytes(src + 3 * ldb, (ge - g) * kNr * 4);
      }
      convertF32ToBf16(src, r0, (ge - g) * kNr);
      convertF32ToBf16(src + ldb, r1, (ge - g) * kNr);
      for (int64_t jp = g; jp < ge; ++jp)
        interleaveRows(r0 + (jp - g) * kNr, r1 + (jp - g) * kNr,
                       dst + jp * kNr * kcPad + p * kNr);
    }
  }
  if (full * kNr < cols)
    packBPanels<float>(data, ldb, transB, p0, kc, kcPad, j0 + full * kNr,
                       cols - full * kNr, dst + full * kNr * kcPad);
}

#endif // STRATA_BF16_X86

using PackA = void (*)(const void *, int64_t, bool, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, uint16_t *);
using PackB = void (*)(const void *, int64_t, bool, int64_t, int64_t, int64_t,
                       int64_t, int64_t, uint16_t *);

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// A path's kernel, register tile and blocking.
struct Path {
  Bf16Kernel kernel;
  int64_t mr, kGroup, mc, nc, kc;
  bool amx;
};

struct Problem {
  Path path;
  PackA packA;
  PackB packB;
  bool transA, transB;
  int64_t m;
  float alpha;
  Bf16Operand a, b;
  float *c;
  int64_t ldc;
  /// Applied to each tile after its last kc slice; nullptr: none.
  const detail::GemmEpilogue *epilogue;
};

/// Computes C[.., jc..] for row panels [ip0, ip1) and column panels
/// [jp0, jp1) of the current (jc, pc) block (as Gemm.cpp's computeBlock).
void computeBlock(const Problem &P, const uint16_t *packedB, int64_t jc,
                  int64_t ncur, int64_t pc, int64_t kcur, int64_t kcPad,
                  float beta, int64_t ip0, int64_t ip1, int64_t jp0,
                  int64_t jp1, bool last) {
  const int64_t mr = P.path.mr;
  const detail::GemmEpilogue *epilogue = last ? P.epilogue : nullptr;
  const int64_t panelsPerBlock = std::max<int64_t>(1, P.path.mc / mr);
  uint16_t *packedA = packedAScratch.get(panelsPerBlock * mr * kcPad);
  alignas(64) float edge[kMaxMr * kNr];
#if STRATA_BF16_X86
  if (P.path.amx)
    loadTileConfig();
#endif
  for (int64_t ib = ip0; ib < ip1; ib += panelsPerBlock) {
    int64_t ie = std::min(ip1, ib + panelsPerBlock);
    for (int64_t ip = ib; ip < ie; ++ip) {
      int64_t i0 = ip * mr;
      P.packA(P.a.data, P.a.ld, P.transA, i0, std::min(mr, P.m - i0), pc, kcur,
              kcPad, mr, packedA + (ip - ib) * mr * kcPad);
    }
    for (int64_t jp = jp0; jp < jp1; ++jp) {
      int64_t j0 = jp * kNr;
      int64_t cols = std::min(kNr, ncur - j0);
      const uint16_t *bPanel = packedB + jp * kNr * kcPad;
      for (int64_t ip = ib; ip < ie; ++ip) {
        int64_t i0 = ip * mr;
        int64_t rows = std::min(mr, P.m - i0);
        const uint16_t *aPanel = packedA + (ip - ib) * mr * kcPad;
        float *cTile = P.c + i0 * P.ldc + jc + j0;
        if (rows == mr && cols == kNr) {
          P.path.kernel(kcPad, aPanel, bPanel, cTile, P.ldc, P.alpha, beta);
          continue;
        }
        // Edge tile: the same arithmetic through a buffer.
        P.path.kernel(kcPad, aPanel, bPanel, edge, kNr, 1.0f, 0.0f);
        for (int64_t i = 0; i < rows; ++i)
          foldRow(edge + i * kNr, cTile + i * P.ldc, cols, P.alpha, beta);
      }
    }
    // As in Gemm.cpp: the block's finished rows, in long row segments.
    if (epilogue) {
      int64_t i0 = ib * mr, j0 = jp0 * kNr;
      int64_t rows = std::min(ie * mr, P.m) - i0;
      int64_t cols = std::min(jp1 * kNr, ncur) - j0;
      epilogue->apply(i0, jc + j0, rows, cols, P.c + i0 * P.ldc + jc + j0,
                      P.ldc);
    }
  }
#if STRATA_BF16_X86
  if (P.path.amx)
    releaseTiles();
#endif
}

void scaleC(ThreadPool *pool, int64_t m, int64_t n, float beta, float *c,
            int64_t ldc) {
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float *row = c + i * ldc;
      if (beta == 0.0f)
        std::fill(row, row + n, 0.0f);
      else
        for (int64_t j = 0; j < n; ++j)
          row[j] *= beta;
    }
  };
  if (pool && m * n >= (1 << 16))
    pool->parallelFor(m, body);
  else
    body(0, m);
}

/// op(X) (rows x cols as stored) widened to f32 after rounding to bf16.
std::vector<float> widen(const Bf16Operand &x, int64_t rows, int64_t cols) {
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    float *d = out.data() + r * cols;
    if (x.isF32) {
      const float *s = static_cast<const float *>(x.data) + r * x.ld;
      for (int64_t c = 0; c < cols; ++c)
        d[c] = bf16ToF32(f32ToBf16(s[c]));
    } else {
      convertBf16ToF32(static_cast<const uint16_t *>(x.data) + r * x.ld, d,
                       cols);
    }
  }
  return out;
}

/// The f32 GEMM's tiling for a bf16 tiling `t`: `t` where the f32 GEMM has
/// its register tile, else its cache blocks on the default register tile.
GemmTiling fallbackTiling(const GemmTiling &t) {
  if (verifyGemmTiling(t).empty())
    return t;
  GemmTiling d;
  d.mc = std::max(d.mr, t.mc / d.mr * d.mr);
  d.nc = (t.nc + d.nr - 1) / d.nr * d.nr;
  d.kc = t.kc;
  return d;
}

void gemmFallback(ThreadPool *pool, bool transA, bool transB, int64_t m,
                  int64_t n, int64_t k, float alpha, const Bf16Operand &a,
                  const Bf16Operand &b, float beta, float *c, int64_t ldc,
                  const GemmTiling *tiling,
                  const detail::GemmEpilogue *epilogue) {
  int64_t aRows = transA ? k : m, aCols = transA ? m : k;
  int64_t bRows = transB ? n : k, bCols = transB ? k : n;
  std::vector<float> wa = widen(a, aRows, aCols);
  std::vector<float> wb = widen(b, bRows, bCols);
  detail::gemmWithIsa(detail::defaultGemmIsa(), pool,
                      tiling ? fallbackTiling(*tiling) : GemmTiling(), transA,
                      transB, m, n, k, alpha, wa.data(), aCols, wb.data(),
                      bCols, beta, c, ldc, epilogue);
}

Path pathFor(Bf16Isa isa) {
#if STRATA_BF16_X86
  if (isa == Bf16Isa::Amx)
    return Path{microAmx, 32, 32, 256, 2048, 1024, true};
  return Path{microAvx512Bf16<12>, 12, 2, 96, 2048, 512, false};
#else
  (void)isa;
  return Path{nullptr, 1, 2, 1, 1, 1, false};
#endif
}

/// `path` blocked by the cache blocks of `t`: mc rounded down to a multiple
/// of the path's mr (at least one), nc up to whole panels, kc up to the
/// path's k group.
Path withBlocking(Path path, const GemmTiling &t) {
  auto roundUp = [](int64_t x, int64_t g) { return (x + g - 1) / g * g; };
  path.mc = std::max(path.mr, t.mc / path.mr * path.mr);
  path.nc = roundUp(std::max<int64_t>(t.nc, 1), kNr);
  path.kc = roundUp(std::max<int64_t>(t.kc, 1), path.kGroup);
  return path;
}

template <int G> PackA packAFor(bool isF32) {
#if STRATA_BF16_X86
  return isF32 ? packAPanelF32<G> : packAPanelBf16<G>;
#else
  return isF32 ? packAPanel<G, float> : packAPanel<G, uint16_t>;
#endif
}

PackB packBFor(bool isF32) {
#if STRATA_BF16_X86
  return isF32 ? packBPanelsF32 : packBPanelsBf16;
#else
  return isF32 ? packBPanels<float> : packBPanels<uint16_t>;
#endif
}

/// The blocked driver for the AMX and AVX512-BF16 paths.
void gemmBlocked(Bf16Isa isa, ThreadPool *pool, bool transA, bool transB,
                 int64_t m, int64_t n, int64_t k, float alpha,
                 const Bf16Operand &a, const Bf16Operand &b, float beta,
                 float *c, int64_t ldc, const GemmTiling *tiling,
                 const detail::GemmEpilogue *epilogue) {
  Path path = tiling ? withBlocking(pathFor(isa), *tiling) : pathFor(isa);
  Problem P{path,
            path.kGroup == 32 ? packAFor<32>(a.isF32) : packAFor<2>(a.isF32),
            packBFor(b.isF32),
            transA,
            transB,
            m,
            alpha,
            a,
            b,
            c,
            ldc,
            epilogue};
  const int64_t mr = path.mr;
  const int64_t mPanels = (m + mr - 1) / mr;
  // Below about a microsecond of work per thread (AMX runs about 1 TFLOP/s
  // per core, AVX512-BF16 about 0.1), forking costs more than it saves (and
  // the bits are the same either way).
  const int64_t perThread = path.amx ? int64_t(1) << 19 : int64_t(1) << 16;
  if (pool && m * n * k < perThread * pool->size())
    pool = nullptr;
  const int threads = pool ? pool->size() : 1;
  auto roundUp = [](int64_t x, int64_t g) { return (x + g - 1) / g * g; };
  int64_t ncMax = std::min(path.nc, n);
  int64_t kcMax = roundUp(std::min(path.kc, k), path.kGroup);
  uint16_t *packedB = packedBScratch.get(roundUp(ncMax, kNr) * kcMax);

  for (int64_t jc = 0; jc < n; jc += path.nc) {
    int64_t ncur = std::min(path.nc, n - jc);
    int64_t nPanels = (ncur + kNr - 1) / kNr;
    for (int64_t pc = 0; pc < k; pc += path.kc) {
      int64_t kcur = std::min(path.kc, k - pc);
      int64_t kcPad = roundUp(kcur, path.kGroup);
      float betaNow = pc == 0 ? beta : 1.0f;
      bool last = pc + kcur == k;
      auto packB = [&](int64_t begin, int64_t end) {
        int64_t j0 = begin * kNr;
        P.packB(b.data, b.ld, transB, pc, kcur, kcPad, jc + j0,
                std::min(end * kNr, ncur) - j0, packedB + begin * kNr * kcPad);
      };
      auto computeRows = [&](int64_t begin, int64_t end) {
        computeBlock(P, packedB, jc, ncur, pc, kcur, kcPad, betaNow, begin, end,
                     0, nPanels, last);
      };
      auto computeCols = [&](int64_t begin, int64_t end) {
        computeBlock(P, packedB, jc, ncur, pc, kcur, kcPad, betaNow, 0, mPanels,
                     begin, end, last);
      };
      if (!pool || threads == 1) {
        packB(0, nPanels);
        computeRows(0, mPanels);
        continue;
      }
      pool->parallelFor(nPanels, packB);
      // Split the rows across threads when there are enough of them, else
      // the column panels (each thread then packs all of A).
      if (mPanels >= 4 * threads || mPanels >= nPanels)
        pool->parallelFor(mPanels, computeRows);
      else
        pool->parallelFor(nPanels, computeCols);
    }
  }
}

#if STRATA_BF16_X86
/// Asks Linux for the AMX tile data state (once per process).
bool amxGranted() {
  static const bool granted = [] {
    if (!__builtin_cpu_supports("amx-tile") ||
        !__builtin_cpu_supports("amx-bf16") ||
        !__builtin_cpu_supports("avx512f") ||
        !__builtin_cpu_supports("avx512bw"))
      return false;
#if defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false; // how other systems grant the tile state is not handled
#endif
  }();
  return granted;
}
#endif

} // namespace

namespace detail {

const char *bf16IsaName(Bf16Isa isa) {
  switch (isa) {
  case Bf16Isa::Fallback:
    return "fallback";
  case Bf16Isa::Avx512Bf16:
    return "avx512bf16";
  case Bf16Isa::Amx:
    return "amx";
  }
  return "unknown";
}

bool bf16IsaSupported(Bf16Isa isa) {
#if STRATA_BF16_X86
  switch (isa) {
  case Bf16Isa::Fallback:
    return true;
  case Bf16Isa::Avx512Bf16:
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16");
  case Bf16Isa::Amx:
    return amxGranted();
  }
  return false;
#else
  return isa == Bf16Isa::Fallback;
#endif
}

Bf16Isa defaultBf16Isa() {
  static const Bf16Isa isa = [] {
    Bf16Isa best = Bf16Isa::Fallback;
    for (Bf16Isa cand : {Bf16Isa::Amx, Bf16Isa::Avx512Bf16})
      if (best == Bf16Isa::Fallback && bf16IsaSupported(cand))
        best = cand;
    const char *env = std::getenv("STRATA_GEMM_BF16_ISA");
    if (!env)
      return best;
    for (Bf16Isa forced :
         {Bf16Isa::Fallback, Bf16Isa::Avx512Bf16, Bf16Isa::Amx})
      if (std::string(env) == bf16IsaName(forced) && bf16IsaSupported(forced) &&
          forced <= best)
        return forced;
    return best;
  }();
  return isa;
}

void gemmBf16WithIsa(Bf16Isa isa, ThreadPool *pool, bool transA, bool transB,
                     int64_t m, int64_t n, int64_t k, float alpha,
                     Bf16Operand a, Bf16Operand b, float beta, float *c,
                     int64_t ldc, const GemmTiling *tiling,
                     const GemmEpilogue *epilogue) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    scaleC(pool, m, n, beta, c, ldc);
    if (epilogue)
      epilogue->apply(0, 0, m, n, c, ldc);
    return;
  }
  if (tiling && !verifyGemmBf16Tiling(*tiling).empty())
    tiling = nullptr;
  if (isa == Bf16Isa::Fallback || !bf16IsaSupported(isa)) {
    gemmFallback(pool, transA, transB, m, n, k, alpha, a, b, beta, c, ldc,
                 tiling, epilogue);
    return;
  }
  gemmBlocked(isa, pool, transA, transB, m, n, k, alpha, a, b, beta, c, ldc,
              tiling, epilogue);
}

GemmTiling bf16DefaultTiling(Bf16Isa isa) {
  if (isa == Bf16Isa::Fallback)
    return GemmTiling();
  Path path = pathFor(isa);
  return GemmTiling{path.mc, path.nc, path.kc, path.mr, kNr};
}

} // namespace detail

std::string verifyGemmBf16Tiling(const GemmTiling &t) {
  if (t.mc <= 0 || t.nc <= 0 || t.kc <= 0 || t.mr <= 0 || t.nr <= 0)
    return verifyGemmTiling(t); // says which sizes
  bool bf16Tile = (t.mr == 32 || t.mr == 12) && t.nr == kNr;
  if (!bf16Tile && !detail::isGemmRegisterTile(t.mr, t.nr))
    return "unsupported bf16 gemm register tile mr x nr = " +
           std::to_string(t.mr) + "x" + std::to_string(t.nr) +
           " (supported: 32x32 (amx), 12x32 (avx512bf16), or an f32 gemm "
           "tile for the fallback)";
  return detail::verifyGemmBlocks(t);
}

void gemmBf16(ThreadPool &pool, bool transA, bool transB, int64_t m, int64_t n,
              int64_t k, float alpha, Bf16Operand a, Bf16Operand b, float beta,
              float *c, int64_t ldc, const GemmTiling *tiling) {
  detail::gemmBf16WithIsa(detail::defaultBf16Isa(), &pool, transA, transB, m, n,
                          k, alpha, a, b, beta, c, ldc, tiling);
}

} // namespace strata::rt
