//===- Gemm.cpp - Cache-blocked single-precision GEMM ---------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Goto/BLIS structure: for every nc-wide column block of C and every kc-deep
// slice of the product, B is packed into kc x nr micro-panels (shared by all
// threads), A into mr x kc micro-panels one mc-row block at a time (per
// thread), and an mr x nr micro-kernel accumulates a tile of C in registers.
// Transposes are absorbed by the packing; edge tiles are zero padded in the
// packed panels and written back through a small buffer.
//
// Determinism: every element of C is owned by one thread, which accumulates
// its k products in increasing k order (one fused multiply-add per product on
// the AVX paths) and folds each kc slice into C in slice order. The bits of
// the result therefore depend only on the instruction set and kc, never on
// the thread count, mc, nc or the register tile.
//
// The library is built without -march flags: the AVX2 and AVX-512 kernels are
// compiled for their targets with function attributes and picked at run time.
//
//===----------------------------------------------------------------------===//

#include "GemmInternal.h"

#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#define STRATA_GEMM_X86 1
#else
#define STRATA_GEMM_X86 0
#endif

namespace strata::rt {
namespace {

using detail::GemmIsa;

/// C[mr x nr] = alpha * A B + beta * C over one kc slice; beta == 0 never
/// reads C. `a` holds kc columns of mr values, `b` kc rows of nr values.
using MicroKernel = void (*)(int64_t kc, const float *a, const float *b,
                             float *c, int64_t ldc, float alpha, float beta);

//===----------------------------------------------------------------------===//
// Micro-kernels
//===----------------------------------------------------------------------===//

/// Portable kernel; the compiler vectorises it for the baseline ISA.
template <int MR, int NR>
void microScalar(int64_t kc, const float *__restrict a,
                 const float *__restrict b, float *c, int64_t ldc, float alpha,
                 float beta) {
  float acc[MR][NR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < MR; ++i) {
      float ai = a[p * MR + i];
      for (int j = 0; j < NR; ++j)
        acc[i][j] += ai * b[p * NR + j];
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float r = acc[i][j];
      if (alpha != 1.0f)
        r = alpha * r;
      if (beta != 0.0f) {
        float old = beta * c[i * ldc + j];
        r = r + old;
      }
      c[i * ldc + j] = r;
    }
  }
}

#if STRATA_GEMM_X86

/// AVX2 + FMA: an MR x (8 NV) block of a tile whose packed B rows are BS
/// floats apart.
template <int MR, int NV, int BS>
__attribute__((target("avx2,fma"))) inline void
blockAvx2(int64_t kc, const float *__restrict a, const float *__restrict b,
          float *c, int64_t ldc, float alpha, float beta) {
  __m256 acc[MR][NV];
#pragma unroll
  for (int i = 0; i < MR; ++i)
#pragma unroll
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m256 bv[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v)
      bv[v] = _mm256_loadu_ps(b + p * BS + 8 * v);
#pragma unroll
    for (int i = 0; i < MR; ++i) {
      __m256 ai = _mm256_broadcast_ss(a + p * MR + i);
#pragma unroll
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
  __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma unroll
  for (int i = 0; i < MR; ++i) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      float *ci = c + i * ldc + 8 * v;
      __m256 r = acc[i][v];
      if (alpha != 1.0f)
        r = _mm256_mul_ps(va, r);
      if (beta != 0.0f) {
        __m256 old = _mm256_mul_ps(vb, _mm256_loadu_ps(ci));
        r = _mm256_add_ps(r, old);
      }
      _mm256_storeu_ps(ci, r);
    }
  }
}

/// AVX2 tile: split into column groups of NVS vectors so the accumulators
/// fit in 16 ymm registers.
template <int MR, int NR, int NVS>
__attribute__((target("avx2,fma"))) void
microAvx2(int64_t kc, const float *__restrict a, const float *__restrict b,
          float *c, int64_t ldc, float alpha, float beta) {
  static_assert(NR % (8 * NVS) == 0, "bad column group");
  for (int g = 0; g < NR / (8 * NVS); ++g)
    blockAvx2<MR, NVS, NR>(kc, a, b + g * 8 * NVS, c + g * 8 * NVS, ldc, alpha,
                           beta);
}

/// AVX-512: an MR x (16 NV) tile, all accumulators in zmm registers.
template <int MR, int NV>
__attribute__((target("avx512f,avx2,fma"))) void
microAvx512(int64_t kc, const float *__restrict a, const float *__restrict b,
            float *c, int64_t ldc, float alpha, float beta) {
  constexpr int NR = 16 * NV;
  __m512 acc[MR][NV];
#pragma unroll
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch(reinterpret_cast<const char *>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + i * ldc + NR - 1),
                 _MM_HINT_T0);
#pragma unroll
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_setzero_ps();
  }
#pragma unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v)
      bv[v] = _mm512_loadu_ps(b + p * NR + 16 * v);
#pragma unroll
    for (int i = 0; i < MR; ++i) {
      __m512 ai = _mm512_set1_ps(a[p * MR + i]);
#pragma unroll
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma unroll
  for (int i = 0; i < MR; ++i) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      float *ci = c + i * ldc + 16 * v;
      __m512 r = acc[i][v];
      if (alpha != 1.0f)
        r = _mm512_mul_ps(va, r);
      if (beta != 0.0f) {
        __m512 old = _mm512_mul_ps(vb, _mm512_loadu_ps(ci));
        r = _mm512_add_ps(r, old);
      }
      _mm512_storeu_ps(ci, r);
    }
  }
}

#endif // STRATA_GEMM_X86

struct TileKernels {
  int mr, nr;
  MicroKernel scalar, avx2, avx512;
};

#if STRATA_GEMM_X86
#define STRATA_TILE(MR, NR, NVS2, AVX512)                                      \
  {MR, NR, microScalar<MR, NR>, microAvx2<MR, NR, NVS2>, AVX512}
#else
#define STRATA_TILE(MR, NR, NVS2, AVX512)                                      \
  {MR, NR, microScalar<MR, NR>, nullptr, nullptr}
#endif

/// The supported register tiles. nr = 16 and 32 use zmm rows on AVX-512;
/// nr = 8 tiles use the (identical) ymm kernels there.
const TileKernels kTiles[] = {
    STRATA_TILE(4, 16, 2, (microAvx512<4, 1>)),
    STRATA_TILE(6, 16, 2, (microAvx512<6, 1>)),
    STRATA_TILE(8, 16, 1, (microAvx512<8, 1>)),
    STRATA_TILE(4, 32, 2, (microAvx512<4, 2>)),
    STRATA_TILE(6, 32, 2, (microAvx512<6, 2>)),
    STRATA_TILE(8, 32, 1, (microAvx512<8, 2>)),
    STRATA_TILE(12, 32, 1, (microAvx512<12, 2>)),
    STRATA_TILE(14, 32, 1, (microAvx512<14, 2>)),
    STRATA_TILE(8, 48, 1, (microAvx512<8, 3>)),
    STRATA_TILE(6, 48, 2, (microAvx512<6, 3>)),
    STRATA_TILE(4, 64, 2, (microAvx512<4, 4>)),
    STRATA_TILE(8, 8, 1, (microAvx2<8, 8, 1>)),
    STRATA_TILE(4, 8, 1, (microAvx2<4, 8, 1>)),
};
#undef STRATA_TILE

/// Upper bound of mr * nr over kTiles (checked in findTile).
constexpr int64_t kMaxTileElements = 1024;

const TileKernels *findTile(int64_t mr, int64_t nr) {
  for (const TileKernels &t : kTiles)
    if (t.mr == mr && t.nr == nr)
      return t.mr * t.nr <= kMaxTileElements ? &t : nullptr;
  return nullptr;
}

MicroKernel selectKernel(const TileKernels &t, GemmIsa isa) {
  switch (isa) {
  case GemmIsa::Avx512:
    return t.avx512;
  case GemmIsa::Avx2:
    return t.avx2;
  case GemmIsa::Scalar:
    return t.scalar;
  }
  return t.scalar;
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

/// A grow-only 64-byte aligned scratch buffer, one per thread and role.
class Scratch {
public:
  ~Scratch() { std::free(ptr); }
  float *get(int64_t floats) {
    if (floats > capacity) {
      std::free(ptr);
      int64_t bytes = (floats * 4 + 63) / 64 * 64;
      ptr = static_cast<float *>(std::aligned_alloc(64, bytes));
      capacity = bytes / 4;
    }
    return ptr;
  }

private:
  float *ptr = nullptr;
  int64_t capacity = 0;
};

thread_local Scratch packedAScratch;
thread_local Scratch packedBScratch;

/// Packs rows [i0, i0 + rows) and columns [p0, p0 + kc) of op(A) into one
/// micro-panel: dst[p * mr + i], zero padded to mr rows.
void packAPanel(const float *a, int64_t lda, bool transA, int64_t i0,
                int64_t rows, int64_t p0, int64_t kc, int64_t mr, float *dst) {
  if (transA) {
    // op(A)[i][p] = a[p * lda + i]: each p reads mr contiguous values.
    for (int64_t p = 0; p < kc; ++p) {
      const float *src = a + (p0 + p) * lda + i0;
      float *d = dst + p * mr;
      int64_t i = 0;
      for (; i < rows; ++i)
        d[i] = src[i];
      for (; i < mr; ++i)
        d[i] = 0.0f;
    }
    return;
  }
  for (int64_t i = 0; i < rows; ++i) {
    const float *src = a + (i0 + i) * lda + p0;
    for (int64_t p = 0; p < kc; ++p)
      dst[p * mr + i] = src[p];
  }
  for (int64_t i = rows; i < mr; ++i)
    for (int64_t p = 0; p < kc; ++p)
      dst[p * mr + i] = 0.0f;
}

/// Packs rows [p0, p0 + kc) and columns [j0, j0 + cols) of op(B) into one
/// micro-panel: dst[p * nr + j], zero padded to nr columns.
void packBPanel(const float *b, int64_t ldb, bool transB, int64_t p0,
                int64_t kc, int64_t j0, int64_t cols, int64_t nr, float *dst) {
  if (!transB) {
    for (int64_t p = 0; p < kc; ++p) {
      const float *src = b + (p0 + p) * ldb + j0;
      float *d = dst + p * nr;
      std::memcpy(d, src, cols * sizeof(float));
      for (int64_t j = cols; j < nr; ++j)
        d[j] = 0.0f;
    }
    return;
  }
  // op(B)[p][j] = b[j * ldb + p].
  for (int64_t j = 0; j < cols; ++j) {
    const float *src = b + (j0 + j) * ldb + p0;
    for (int64_t p = 0; p < kc; ++p)
      dst[p * nr + j] = src[p];
  }
  for (int64_t j = cols; j < nr; ++j)
    for (int64_t p = 0; p < kc; ++p)
      dst[p * nr + j] = 0.0f;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

struct Problem {
  MicroKernel kernel;
  int64_t mc, kc, mr, nr;
  bool transA, transB;
  int64_t m;
  float alpha;
  const float *a;
  int64_t lda;
  float *c;
  int64_t ldc;
  /// Applied to each tile after its last kc slice; nullptr: none.
  const detail::GemmEpilogue *epilogue;
};

/// Computes C[ic.., jc..] for row panels [ip0, ip1) and column panels
/// [jp0, jp1) of the current (jc, pc) block: packs A an mc block at a time
/// and runs the micro-kernel over it, column panels outer. `last`: this is
/// the last kc slice, after which each block of rows gets the epilogue.
void computeBlock(const Problem &P, const float *packedB, int64_t jc,
                  int64_t ncur, int64_t pc, int64_t kcur, float beta,
                  int64_t ip0, int64_t ip1, int64_t jp0, int64_t jp1,
                  bool last) {
  const int64_t mr = P.mr, nr = P.nr;
  const detail::GemmEpilogue *epilogue = last ? P.epilogue : nullptr;
  const int64_t panelsPerBlock = std::max<int64_t>(1, P.mc / mr);
  float *packedA = packedAScratch.get(panelsPerBlock * mr * kcur);
  alignas(64) float edge[kMaxTileElements];
  for (int64_t ib = ip0; ib < ip1; ib += panelsPerBlock) {
    int64_t ie = std::min(ip1, ib + panelsPerBlock);
    for (int64_t ip = ib; ip < ie; ++ip) {
      int64_t i0 = ip * mr;
      packAPanel(P.a, P.lda, P.transA, i0, std::min(mr, P.m - i0), pc, kcur, mr,
                 packedA + (ip - ib) * mr * kcur);
    }
    for (int64_t jp = jp0; jp < jp1; ++jp) {
      int64_t j0 = jp * nr;
      int64_t cols = std::min(nr, ncur - j0);
      const float *bPanel = packedB + jp * nr * kcur;
      for (int64_t ip = ib; ip < ie; ++ip) {
        int64_t i0 = ip * mr;
        int64_t rows = std::min(mr, P.m - i0);
        const float *aPanel = packedA + (ip - ib) * mr * kcur;
        float *cTile = P.c + i0 * P.ldc + jc + j0;
        if (rows == mr && cols == nr) {
          P.kernel(kcur, aPanel, bPanel, cTile, P.ldc, P.alpha, beta);
          continue;
        }
        // Edge tile: the same arithmetic through a buffer.
        P.kernel(kcur, aPanel, bPanel, edge, nr, 1.0f, 0.0f);
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            float r = edge[i * nr + j];
            if (P.alpha != 1.0f)
              r = P.alpha * r;
            if (beta != 0.0f) {
              float old = beta * cTile[i * P.ldc + j];
              r = r + old;
            }
            cTile[i * P.ldc + j] = r;
          }
        }
      }
    }
    // The block's rows are final over these columns: the epilogue runs on
    // them while they are still in cache, in long row segments.
    if (epilogue) {
      int64_t i0 = ib * mr, j0 = jp0 * nr;
      int64_t rows = std::min(ie * mr, P.m) - i0;
      int64_t cols = std::min(jp1 * nr, ncur) - j0;
      epilogue->apply(i0, jc + j0, rows, cols, P.c + i0 * P.ldc + jc + j0,
                      P.ldc);
    }
  }
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

} // namespace

std::string verifyGemmTiling(const GemmTiling &t) {
  if (t.mc <= 0 || t.nc <= 0 || t.kc <= 0 || t.mr <= 0 || t.nr <= 0)
    return "gemm tiling sizes must be positive, got mc=" +
           std::to_string(t.mc) + " nc=" + std::to_string(t.nc) +
           " kc=" + std::to_string(t.kc) + " mr=" + std::to_string(t.mr) +
           " nr=" + std::to_string(t.nr);
  if (!findTile(t.mr, t.nr)) {
    std::string supported;
    for (const TileKernels &k : kTiles) {
      if (!supported.empty())
        supported += ", ";
      supported += std::to_string(k.mr) + "x" + std::to_string(k.nr);
    }
    return "unsupported gemm register tile mr x nr = " + std::to_string(t.mr) +
           "x" + std::to_string(t.nr) + " (supported: " + supported + ")";
  }
  return detail::verifyGemmBlocks(t);
}

namespace detail {

bool isGemmRegisterTile(int64_t mr, int64_t nr) {
  return findTile(mr, nr) != nullptr;
}

std::string verifyGemmBlocks(const GemmTiling &t) {
  if (t.mc % t.mr != 0)
    return "gemm tiling mc=" + std::to_string(t.mc) +
           " must be a multiple of mr=" + std::to_string(t.mr);
  if (t.nc % t.nr != 0)
    return "gemm tiling nc=" + std::to_string(t.nc) +
           " must be a multiple of nr=" + std::to_string(t.nr);
  return "";
}

const char *gemmIsaName(GemmIsa isa) {
  switch (isa) {
  case GemmIsa::Scalar:
    return "scalar";
  case GemmIsa::Avx2:
    return "avx2";
  case GemmIsa::Avx512:
    return "avx512";
  }
  return "unknown";
}

bool gemmIsaSupported(GemmIsa isa) {
#if STRATA_GEMM_X86
  switch (isa) {
  case GemmIsa::Scalar:
    return true;
  case GemmIsa::Avx2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case GemmIsa::Avx512:
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  return false;
#else
  return isa == GemmIsa::Scalar;
#endif
}

GemmIsa defaultGemmIsa() {
  static const GemmIsa isa = [] {
    GemmIsa best = GemmIsa::Scalar;
    if (gemmIsaSupported(GemmIsa::Avx512))
      best = GemmIsa::Avx512;
    else if (gemmIsaSupported(GemmIsa::Avx2))
      best = GemmIsa::Avx2;
    const char *env = std::getenv("STRATA_GEMM_ISA");
    if (!env)
      return best;
    for (GemmIsa forced : {GemmIsa::Scalar, GemmIsa::Avx2, GemmIsa::Avx512})
      if (std::string(env) == gemmIsaName(forced) && gemmIsaSupported(forced) &&
          forced <= best)
        return forced;
    return best;
  }();
  return isa;
}

void gemmWithIsa(GemmIsa isa, ThreadPool *pool, const GemmTiling &tiling,
                 bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc,
                 const GemmEpilogue *epilogue) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    scaleC(pool, m, n, beta, c, ldc);
    if (epilogue)
      epilogue->apply(0, 0, m, n, c, ldc);
    return;
  }
  const TileKernels *tile = findTile(tiling.mr, tiling.nr);
  GemmTiling t = tiling;
  if (!tile || !verifyGemmTiling(t).empty()) {
    t = GemmTiling();
    tile = findTile(t.mr, t.nr);
  }
  if (!gemmIsaSupported(isa))
    isa = GemmIsa::Scalar;
  Problem P{selectKernel(*tile, isa),
            t.mc,
            t.kc,
            t.mr,
            t.nr,
            transA,
            transB,
            m,
            alpha,
            a,
            lda,
            c,
            ldc,
            epilogue};
  const int64_t mr = t.mr, nr = t.nr;
  const int64_t mPanels = (m + mr - 1) / mr;
  // Below about a microsecond of work per thread, forking costs more than it
  // saves (and the bits are the same either way).
  if (pool && m * n * k < (int64_t(1) << 16) * pool->size())
    pool = nullptr;
  const int threads = pool ? pool->size() : 1;

  int64_t ncMax = std::min(t.nc, n);
  int64_t kcMax = std::min(t.kc, k);
  float *packedB = packedBScratch.get((ncMax + nr - 1) / nr * nr * kcMax);

  for (int64_t jc = 0; jc < n; jc += t.nc) {
    int64_t ncur = std::min(t.nc, n - jc);
    int64_t nPanels = (ncur + nr - 1) / nr;
    for (int64_t pc = 0; pc < k; pc += t.kc) {
      int64_t kcur = std::min(t.kc, k - pc);
      float betaNow = pc == 0 ? beta : 1.0f;
      bool last = pc + kcur == k;
      auto packB = [&](int64_t begin, int64_t end) {
        for (int64_t jp = begin; jp < end; ++jp) {
          int64_t j0 = jp * nr;
          packBPanel(b, ldb, transB, pc, kcur, jc + j0, std::min(nr, ncur - j0),
                     nr, packedB + jp * nr * kcur);
        }
      };
      // Split the rows across threads when there are enough of them, else
      // the column panels (each thread then packs all of A).
      bool splitRows = mPanels >= 4 * threads || mPanels >= nPanels;
      auto computeRows = [&](int64_t begin, int64_t end) {
        computeBlock(P, packedB, jc, ncur, pc, kcur, betaNow, begin, end, 0,
                     nPanels, last);
      };
      auto computeCols = [&](int64_t begin, int64_t end) {
        computeBlock(P, packedB, jc, ncur, pc, kcur, betaNow, 0, mPanels, begin,
                     end, last);
      };
      if (!pool || threads == 1) {
        packB(0, nPanels);
        computeRows(0, mPanels);
        continue;
      }
      pool->parallelFor(nPanels, packB);
      if (splitRows)
        pool->parallelFor(mPanels, computeRows);
      else
        pool->parallelFor(nPanels, computeCols);
    }
  }
}

} // namespace detail

void gemm(ThreadPool &pool, const GemmTiling &tiling, bool transA, bool transB,
          int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c,
          int64_t ldc) {
  detail::gemmWithIsa(detail::defaultGemmIsa(), &pool, tiling, transA, transB,
                      m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

} // namespace strata::rt
