//===- CudaGemm.cu - Strata's own tiled CUDA SGEMM ------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// C = alpha op(A) op(B) + beta C, row-major, batched. A thread block
// computes a BM x BN tile of C. It steps over k by BK: the threads load the
// next BM x BK slab of op(A) and BK x BN slab of op(B) into registers
// (coalesced along whichever dimension is contiguous in memory) while they
// multiply the current slabs from shared memory, then store them into the
// other half of a double-buffered shared tile (one barrier per step). The
// A slab is kept k-major (As[k][m]) so that a thread reads its TM rows as
// float4s; rows are padded by 4 floats so that the transposing stores of a
// non-transposed A do not conflict on banks (at BK = 8; the vectorised
// kernel's BK = 16 slabs of 128 rows meet 2-way conflicts on those stores,
// which are 8 per thread per slab against 1024 FMAs). Each thread accumulates a
// TM x TN register tile; with TM (TN) a multiple of 4 its rows (columns) are
// TM/4 (TN/4) groups of 4 spread BM/(TM/4) apart, so that a quarter warp
// reads 32 consecutive floats of a shared row (no bank conflicts) and writes
// whole sectors of C. Bounds are checked on every load (zero fill) and
// store, so any m, n, k works; beta == 0 never reads C.
//
// Operands 16-byte aligned, with leading dimensions and batch strides in
// whole float4s, take gemmKernelVec (float4 global loads and C stores) for
// register tiles in multiples of 4; the others take gemmKernel.
//
// Results are deterministic: each element of C is accumulated by one thread
// in k order, in either kernel. A split-K tiling (splitK > 1) runs the same
// kernels over k ranges as batch entries into a workspace, then
// splitKReduceKernel sums each element's slices in slice order.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace strata::rt::cuda {
namespace {

using detail::ceilDiv;

constexpr int kPad = 4;

/// Row (or column) of element i (of T) of a thread's register tile: groups
/// of V = 4 consecutive cells when T is a multiple of 4, else T consecutive
/// cells; `threads` threads along the dimension.
template <int T, int Threads>
__device__ __forceinline__ int tileIndex(int thread, int i) {
  constexpr int V = T % 4 == 0 ? 4 : T;
  return (i / V) * (Threads * V) + thread * V + i % V;
}

/// Reads T consecutive-by-group floats of one shared row into `out`.
template <int T, int Threads>
__device__ __forceinline__ void readFragment(const float *row, int thread,
                                             float (&out)[T]) {
  if constexpr (T % 4 == 0) {
#pragma unroll
    for (int g = 0; g < T / 4; ++g) {
      float4 v =
          *reinterpret_cast<const float4 *>(row + g * Threads * 4 + thread * 4);
      out[g * 4 + 0] = v.x;
      out[g * 4 + 1] = v.y;
      out[g * 4 + 2] = v.z;
      out[g * 4 + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < T; ++i)
      out[i] = row[thread * T + i];
  }
}

template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    gemmKernel(int m, int n, int k, float alpha, const float *__restrict__ A,
               int64_t lda, int64_t strideA, const float *__restrict__ B,
               int64_t ldb, int64_t strideB, float beta, float *__restrict__ C,
               int64_t ldc, int64_t strideC, int64_t batch) {
  constexpr int TX = BN / TN; // threads along n
  constexpr int TY = BM / TM; // threads along m
  constexpr int NT = TX * TY;
  constexpr int ALoads = (BM * BK + NT - 1) / NT;
  constexpr int BLoads = (BK * BN + NT - 1) / NT;
  __shared__ __align__(16) float As[2][BK][BM + kPad];
  __shared__ __align__(16) float Bs[2][BK][BN + kPad];

  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int row0 = blockIdx.x * BM, col0 = blockIdx.y * BN;
  const int numTiles = (k + BK - 1) / BK;

  float regA[ALoads], regB[BLoads];

  for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
    const float *Az = A + z * strideA;
    const float *Bz = B + z * strideB;
    float *Cz = C + z * strideC;

    // Slab `t` of op(A) and op(B) into registers, zero outside the matrices.
    auto load = [&](int t) {
      const int k0 = t * BK;
#pragma unroll
      for (int i = 0; i < ALoads; ++i) {
        const int l = tid + i * NT;
        // A is m x k (k contiguous), or k x m when transposed (m contiguous).
        const int mm = TA ? l % BM : l / BK, kk = TA ? l / BM : l % BK;
        const int gm = row0 + mm, gk = k0 + kk;
        float v = 0.0f;
        if ((BM * BK % NT == 0 || l < BM * BK) && gm < m && gk < k)
          v = TA ? Az[(int64_t)gk * lda + gm] : Az[(int64_t)gm * lda + gk];
        regA[i] = v;
      }
#pragma unroll
      for (int i = 0; i < BLoads; ++i) {
        const int l = tid + i * NT;
        // B is k x n (n contiguous), or n x k when transposed (k contiguous).
        const int nn = TB ? l / BK : l % BN, kk = TB ? l % BK : l / BN;
        const int gn = col0 + nn, gk = k0 + kk;
        float v = 0.0f;
        if ((BK * BN % NT == 0 || l < BK * BN) && gn < n && gk < k)
          v = TB ? Bz[(int64_t)gn * ldb + gk] : Bz[(int64_t)gk * ldb + gn];
        regB[i] = v;
      }
    };
    auto store = [&](int buf) {
#pragma unroll
      for (int i = 0; i < ALoads; ++i) {
        const int l = tid + i * NT;
        const int mm = TA ? l % BM : l / BK, kk = TA ? l / BM : l % BK;
        if (BM * BK % NT == 0 || l < BM * BK)
          As[buf][kk][mm] = regA[i];
      }
#pragma unroll
      for (int i = 0; i < BLoads; ++i) {
        const int l = tid + i * NT;
        const int nn = TB ? l / BK : l % BN, kk = TB ? l % BK : l / BN;
        if (BK * BN % NT == 0 || l < BK * BN)
          Bs[buf][kk][nn] = regB[i];
      }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j)
        acc[i][j] = 0.0f;

    if (numTiles > 0) {
      load(0);
      store(0);
      __syncthreads();
    }
    for (int t = 0; t < numTiles; ++t) {
      const int cur = t & 1;
      const bool more = t + 1 < numTiles;
      if (more)
        load(t + 1); // global loads in flight during the multiply
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        float a[TM], b[TN];
        readFragment<TM, TY>(As[cur][kk], ty, a);
        readFragment<TN, TX>(Bs[cur][kk], tx, b);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      if (more)
        store(cur ^ 1);
      // Everyone is done with `cur` (overwritten two steps on) and sees
      // `cur ^ 1`.
      __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int gm = row0 + tileIndex<TM, TY>(ty, i);
      if (gm >= m)
        continue;
      float *crow = Cz + (int64_t)gm * ldc;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int gn = col0 + tileIndex<TN, TX>(tx, j);
        if (gn >= n)
          continue;
        float v = alpha * acc[i][j];
        if (beta != 0.0f)
          v = fmaf(beta, crow[gn], v);
        crow[gn] = v;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// The vectorised kernel (aligned operands, register tiles of 4s)
//===----------------------------------------------------------------------===//

/// Loads 4 consecutive floats of `row` from `col`: one float4 when all four
/// are below `limit`, else element by element (zero beyond it). `row` +
/// `col` is 16-byte aligned whenever the whole float4 is in range (the
/// caller checked the leading dimension and the base pointer).
__device__ __forceinline__ float4 load4(const float *row, int col, int limit) {
  if (col + 3 < limit)
    return *reinterpret_cast<const float4 *>(row + col);
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (col < limit)
    v.x = row[col];
  if (col + 1 < limit)
    v.y = row[col + 1];
  if (col + 2 < limit)
    v.z = row[col + 2];
  return v;
}

/// Loads of one BK-deep slab of an operand, held in registers between the
/// global load and the shared store. `Outer` is the operand's extent along
/// the tile (m for A, n for B). A slab whose contiguous dimension is k
/// (`kContiguous`: A not transposed, B transposed) is read as float4s along
/// k and stored transposed (shared tiles are k-major); otherwise float4s
/// along the tile dimension are stored as they are.
template <int Outer, int BK, int NT, bool kContiguous> struct SlabLoader {
  static constexpr int Vecs = Outer * BK / 4 / NT;
  static_assert(Outer * BK % (4 * NT) == 0, "slab must split into float4s");
  float4 reg[Vecs];

  /// Element (o, kk) of the slab starting at k0 is src[o * ld + k0 + kk]
  /// (kContiguous) or src[(k0 + kk) * ld + o]; `o0` is the tile's first
  /// outer index, `outer` and `k` the operand's extents.
  __device__ __forceinline__ void load(const float *src, int64_t ld, int o0,
                                       int outer, int k0, int k, int tid) {
#pragma unroll
    for (int i = 0; i < Vecs; ++i) {
      const int f = tid + i * NT;
      if constexpr (kContiguous) {
        const int o = f / (BK / 4), kq = (f % (BK / 4)) * 4;
        reg[i] = o0 + o < outer
                     ? load4(src + (int64_t)(o0 + o) * ld, k0 + kq, k)
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        const int kr = f / (Outer / 4), oq = (f % (Outer / 4)) * 4;
        reg[i] = k0 + kr < k
                     ? load4(src + (int64_t)(k0 + kr) * ld, o0 + oq, outer)
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
  }

  /// Into the k-major shared slab `dst` (rows of Outer + kPad floats).
  __device__ __forceinline__ void store(float (*dst)[Outer + kPad], int tid) {
#pragma unroll
    for (int i = 0; i < Vecs; ++i) {
      const int f = tid + i * NT;
      if constexpr (kContiguous) {
        const int o = f / (BK / 4), kq = (f % (BK / 4)) * 4;
        dst[kq + 0][o] = reg[i].x;
        dst[kq + 1][o] = reg[i].y;
        dst[kq + 2][o] = reg[i].z;
        dst[kq + 3][o] = reg[i].w;
      } else {
        const int kr = f / (Outer / 4), oq = (f % (Outer / 4)) * 4;
        *reinterpret_cast<float4 *>(&dst[kr][oq]) = reg[i];
      }
    }
  }
};

/// C = alpha op(A) op(B) + beta C for operands whose leading dimensions,
/// batch strides and base pointers are multiples of 4 floats (16 bytes):
/// float4 global loads, BK-deep double-buffered k-major shared slabs, a
/// TM x TN register tile per thread as groups of 4 x 4 (as gemmKernel's),
/// float4 stores of C where `vectorC`. Each element of C is
/// accumulated by one thread in k order, as in gemmKernel.
template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
    gemmKernelVec(int m, int n, int k, float alpha, const float *__restrict__ A,
                  int64_t lda, int64_t strideA, const float *__restrict__ B,
                  int64_t ldb, int64_t strideB, float beta,
                  float *__restrict__ C, int64_t ldc, int64_t strideC,
                  int64_t batch, bool vectorC) {
  constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
  static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 register groups");
  __shared__ __align__(16) float As[2][BK][BM + kPad];
  __shared__ __align__(16) float Bs[2][BK][BN + kPad];
  SlabLoader<BM, BK, NT, !TA> loadA;
  SlabLoader<BN, BK, NT, TB> loadB;

  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int row0 = blockIdx.x * BM, col0 = blockIdx.y * BN;
  const int numTiles = (k + BK - 1) / BK;

  for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
    const float *Az = A + z * strideA;
    const float *Bz = B + z * strideB;
    float *Cz = C + z * strideC;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j)
        acc[i][j] = 0.0f;

    if (numTiles > 0) {
      loadA.load(Az, lda, row0, m, 0, k, tid);
      loadB.load(Bz, ldb, col0, n, 0, k, tid);
      loadA.store(As[0], tid);
      loadB.store(Bs[0], tid);
      __syncthreads();
    }
    for (int t = 0; t < numTiles; ++t) {
      const int cur = t & 1;
      const bool more = t + 1 < numTiles;
      if (more) { // global loads in flight during the multiply
        loadA.load(Az, lda, row0, m, (t + 1) * BK, k, tid);
        loadB.load(Bz, ldb, col0, n, (t + 1) * BK, k, tid);
      }
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        float a[TM], b[TN];
        readFragment<TM, TY>(As[cur][kk], ty, a);
        readFragment<TN, TX>(Bs[cur][kk], tx, b);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      if (more) {
        loadA.store(As[cur ^ 1], tid);
        loadB.store(Bs[cur ^ 1], tid);
      }
      __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int gm = row0 + tileIndex<TM, TY>(ty, i);
      if (gm >= m)
        continue;
      float *crow = Cz + (int64_t)gm * ldc;
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const int gn = col0 + tileIndex<TN, TX>(tx, g * 4);
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          v[j] = alpha * acc[i][g * 4 + j];
        if (vectorC && gn + 3 < n) {
          float4 *out = reinterpret_cast<float4 *>(crow + gn);
          if (beta != 0.0f) {
            float4 old = *out;
            v[0] = fmaf(beta, old.x, v[0]);
            v[1] = fmaf(beta, old.y, v[1]);
            v[2] = fmaf(beta, old.z, v[2]);
            v[3] = fmaf(beta, old.w, v[3]);
          }
          *out = make_float4(v[0], v[1], v[2], v[3]);
          continue;
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (gn + j >= n)
            continue;
          float out = v[j];
          if (beta != 0.0f)
            out = fmaf(beta, crow[gn + j], out);
          crow[gn + j] = out;
        }
      }
    }
  }
}

/// C = alpha (W[0] + ... + W[slices - 1]) + beta C for the m x n slices W[s]
/// (rows of n floats, `m * n` apart), summed in slice order.
__global__ void splitKReduceKernel(const float *__restrict__ work, int slices,
                                   int64_t m, int64_t n, float alpha,
                                   float beta, float *__restrict__ C,
                                   int64_t ldc) {
  const int64_t count = m * n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    float sum = work[i];
    for (int s = 1; s < slices; ++s)
      sum += work[s * count + i];
    float *out = C + (i / n) * ldc + i % n;
    float v = alpha * sum;
    if (beta != 0.0f)
      v = fmaf(beta, *out, v);
    *out = v;
  }
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

struct GemmArgs {
  int m, n, k;
  float alpha;
  const float *a;
  int64_t lda, strideA;
  const float *b;
  int64_t ldb, strideB;
  float beta;
  float *c;
  int64_t ldc, strideC, batch;
};

template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB>
void launchTiled(cudaStream_t stream, const GemmArgs &g) {
  constexpr int threads = (BM / TM) * (BN / TN);
  int64_t tilesM = ceilDiv(g.m, BM), tilesN = ceilDiv(g.n, BN);
  if (tilesN > 65535)
    throw std::runtime_error("strataGemm: n = " + std::to_string(g.n) +
                             " needs more than 65535 column tiles of " +
                             std::to_string(BN));
  dim3 grid((unsigned)tilesM, (unsigned)tilesN,
            (unsigned)std::min<int64_t>(g.batch, 65535));
  gemmKernel<BM, BN, BK, TM, TN, TA, TB><<<grid, threads, 0, stream>>>(
      g.m, g.n, g.k, g.alpha, g.a, g.lda, g.strideA, g.b, g.ldb, g.strideB,
      g.beta, g.c, g.ldc, g.strideC, g.batch);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// Whether every A and B access of the product is 16-byte aligned when
/// its float4 is in range (base pointers, leading dimensions and batch
/// strides in whole float4s).
bool alignedOperands(const GemmArgs &g) {
  auto aligned = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
  };
  return aligned(g.a) && aligned(g.b) && g.lda % 4 == 0 && g.ldb % 4 == 0 &&
         g.strideA % 4 == 0 && g.strideB % 4 == 0;
}

template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB>
void launchVec(cudaStream_t stream, const GemmArgs &g) {
  constexpr int threads = (BM / TM) * (BN / TN);
  int64_t tilesM = ceilDiv(g.m, BM), tilesN = ceilDiv(g.n, BN);
  if (tilesN > 65535)
    throw std::runtime_error("strataGemm: n = " + std::to_string(g.n) +
                             " needs more than 65535 column tiles of " +
                             std::to_string(BN));
  bool vectorC = reinterpret_cast<uintptr_t>(g.c) % 16 == 0 && g.ldc % 4 == 0 &&
                 g.strideC % 4 == 0;
  dim3 grid((unsigned)tilesM, (unsigned)tilesN,
            (unsigned)std::min<int64_t>(g.batch, 65535));
  gemmKernelVec<BM, BN, BK, TM, TN, TA, TB><<<grid, threads, 0, stream>>>(
      g.m, g.n, g.k, g.alpha, g.a, g.lda, g.strideA, g.b, g.ldb, g.strideB,
      g.beta, g.c, g.ldc, g.strideC, g.batch, vectorC);
  STRATA_CUDA_CHECK_LAUNCH();
}

template <int BM, int BN, int BK, int TM, int TN>
void launchTiling(cudaStream_t stream, bool ta, bool tb, const GemmArgs &g) {
  constexpr int threads = (BM / TM) * (BN / TN);
  if constexpr (TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 &&
                BM * BK % (4 * threads) == 0 && BN * BK % (4 * threads) == 0) {
    // Aligned operands take the vectorised kernel (same tiles, same
    // per-element k order, so the same bits) where its slabs split evenly
    // into float4s per thread.
    if (alignedOperands(g)) {
      if (ta && tb)
        launchVec<BM, BN, BK, TM, TN, true, true>(stream, g);
      else if (ta)
        launchVec<BM, BN, BK, TM, TN, true, false>(stream, g);
      else if (tb)
        launchVec<BM, BN, BK, TM, TN, false, true>(stream, g);
      else
        launchVec<BM, BN, BK, TM, TN, false, false>(stream, g);
      return;
    }
  }
  if (ta && tb)
    launchTiled<BM, BN, BK, TM, TN, true, true>(stream, g);
  else if (ta)
    launchTiled<BM, BN, BK, TM, TN, true, false>(stream, g);
  else if (tb)
    launchTiled<BM, BN, BK, TM, TN, false, true>(stream, g);
  else
    launchTiled<BM, BN, BK, TM, TN, false, false>(stream, g);
}

using Launcher = void (*)(cudaStream_t, bool, bool, const GemmArgs &);

struct Compiled {
  CudaGemmTiling tiling;
  Launcher launch;
};

/// The instantiated tilings, in order of preference on ties.
const Compiled kCompiled[] = {
    {{128, 128, 16, 8, 8}, launchTiling<128, 128, 16, 8, 8>},
    {{128, 64, 16, 8, 8}, launchTiling<128, 64, 16, 8, 8>},
    {{64, 64, 16, 8, 8}, launchTiling<64, 64, 16, 8, 8>},
    {{64, 64, 16, 4, 8}, launchTiling<64, 64, 16, 4, 8>},
    {{64, 64, 16, 4, 4}, launchTiling<64, 64, 16, 4, 4>},
    {{128, 128, 8, 8, 8}, launchTiling<128, 128, 8, 8, 8>},
    {{128, 64, 8, 8, 8}, launchTiling<128, 64, 8, 8, 8>},
    {{64, 128, 8, 8, 8}, launchTiling<64, 128, 8, 8, 8>},
    {{64, 64, 8, 4, 4}, launchTiling<64, 64, 8, 4, 4>},
    {{32, 32, 8, 2, 2}, launchTiling<32, 32, 8, 2, 2>},
};

/// Whether `a` and `b` run the same kernel (their k slicing aside).
bool sameTiling(const CudaGemmTiling &a, const CudaGemmTiling &b) {
  return a.blockM == b.blockM && a.blockN == b.blockN && a.kStep == b.kStep &&
         a.threadM == b.threadM && a.threadN == b.threadN;
}

/// The most workspace a split-K product takes; past it, it runs unsliced.
constexpr int64_t kSplitKWorkspaceBytes = int64_t{1} << 30;

/// C = alpha op(A) op(B) + beta C of one product with k sliced into ranges
/// of `slice` (a multiple of 4, below k) floats: the whole ranges as one
/// batched launch into a workspace, the rest as another, then the sum.
/// Returns false (nothing enqueued) when the workspace would pass
/// kSplitKWorkspaceBytes or cannot be had.
bool launchSplitK(cudaStream_t stream, Launcher launch, bool ta, bool tb,
                  const GemmArgs &g, int64_t slice) {
  const int64_t whole = g.k / slice, rest = g.k - whole * slice;
  const int64_t slices = whole + (rest > 0);
  const int64_t count = (int64_t)g.m * g.n;
  if (count > kSplitKWorkspaceBytes / (int64_t)sizeof(float) / slices)
    return false;
  float *work = nullptr;
  if (cudaMallocAsync(reinterpret_cast<void **>(&work),
                      (size_t)(slices * count) * sizeof(float),
                      stream) != cudaSuccess) {
    (void)cudaGetLastError(); // not sticky: run unsliced instead
    return false;
  }
  // Offsets of k element `kk` in op(A) and op(B).
  auto offA = [&](int64_t kk) { return ta ? kk * g.lda : kk; };
  auto offB = [&](int64_t kk) { return tb ? kk : kk * g.ldb; };
  try {
    launch(stream, ta, tb,
           GemmArgs{g.m, g.n, (int)slice, 1.0f, g.a, g.lda, offA(slice), g.b,
                    g.ldb, offB(slice), 0.0f, work, g.n, count, whole});
    if (rest > 0)
      launch(stream, ta, tb,
             GemmArgs{g.m, g.n, (int)rest, 1.0f, g.a + offA(whole * slice),
                      g.lda, 0, g.b + offB(whole * slice), g.ldb, 0, 0.0f,
                      work + whole * count, g.n, 0, 1});
    splitKReduceKernel<<<(unsigned)std::min<int64_t>(ceilDiv(count, 256),
                                                     65535),
                         256, 0, stream>>>(work, (int)slices, g.m, g.n, g.alpha,
                                           g.beta, g.c, g.ldc);
    STRATA_CUDA_CHECK_LAUNCH();
  } catch (...) {
    (void)cudaFreeAsync(work, stream);
    throw;
  }
  STRATA_CUDA_CHECK(cudaFreeAsync(work, stream));
  return true;
}

const Compiled &nearestCompiled(const CudaGemmTiling &t) {
  auto distance = [&](const CudaGemmTiling &c) {
    auto d = [](int asked, int have) {
      return std::fabs(std::log2((double)asked / (double)have));
    };
    return d(t.blockM, c.blockM) + d(t.blockN, c.blockN) + d(t.kStep, c.kStep) +
           d(t.threadM, c.threadM) + d(t.threadN, c.threadN);
  };
  const Compiled *best = &kCompiled[0];
  double bestDistance = distance(best->tiling);
  for (const Compiled &c : kCompiled) {
    if (sameTiling(c.tiling, t))
      return c;
    double dist = distance(c.tiling);
    if (dist < bestDistance) {
      best = &c;
      bestDistance = dist;
    }
  }
  return *best;
}

} // namespace

std::string cudaGemmTilingName(const CudaGemmTiling &t) {
  return std::to_string(t.blockM) + "x" + std::to_string(t.blockN) + "x" +
         std::to_string(t.kStep) + "/" + std::to_string(t.threadM) + "x" +
         std::to_string(t.threadN) +
         (t.splitK != 1 ? "/s" + std::to_string(t.splitK) : "");
}

std::string verifyCudaGemmTiling(const CudaGemmTiling &t) {
  auto text = cudaGemmTilingName;
  if (t.blockM <= 0 || t.blockN <= 0 || t.kStep <= 0 || t.threadM <= 0 ||
      t.threadN <= 0)
    return "cuda gemm tiling " + text(t) + ": all sizes must be positive";
  if (t.splitK < 1 || t.splitK > 64)
    return "cuda gemm tiling " + text(t) + ": " + std::to_string(t.splitK) +
           " k slices, must be from 1 to 64";
  if (t.blockM % t.threadM != 0)
    return "cuda gemm tiling " + text(t) +
           ": blockM must be a multiple of threadM";
  if (t.blockN % t.threadN != 0)
    return "cuda gemm tiling " + text(t) +
           ": blockN must be a multiple of threadN";
  int64_t threads =
      (int64_t)(t.blockM / t.threadM) * (int64_t)(t.blockN / t.threadN);
  if (threads % 32 != 0 || threads > 1024)
    return "cuda gemm tiling " + text(t) + ": " + std::to_string(threads) +
           " threads per block, must be a multiple of 32 and at most 1024";
  int64_t bytes = ((int64_t)t.blockM + t.blockN) * t.kStep * 4;
  if (bytes > 48 * 1024)
    return "cuda gemm tiling " + text(t) + ": shared tiles of " +
           std::to_string(bytes) + " bytes exceed 48 KiB";
  return "";
}

CudaGemmTiling compiledCudaGemmTiling(const CudaGemmTiling &t) {
  CudaGemmTiling compiled = nearestCompiled(t).tiling;
  compiled.splitK = t.splitK;
  return compiled;
}

CudaGemmTiling cudaGemmTilingFor(const CudaGemmTiling &asked, int64_t m,
                                 int64_t n, int64_t k, int64_t batch,
                                 int multiprocessors) {
  const CudaGemmTiling def{};
  if (!sameTiling(asked, def) || asked.splitK != def.splitK ||
      multiprocessors <= 0 || m <= 0 || n <= 0 || batch <= 0)
    return asked;
  auto blocks = [&](int bm, int bn) {
    return ceilDiv(m, bm) * ceilDiv(n, bn) * std::min<int64_t>(batch, 65535);
  };
  // A tiling is taken when its blocks fill three quarters of the SMs.
  auto fills = [&](int bm, int bn) {
    return 4 * blocks(bm, bn) >= 3 * (int64_t)multiprocessors;
  };
  if (fills(128, 128))
    return asked;
  // Slice k so that the 128x128 blocks fill two per SM (the kernel's
  // occupancy bound), each slice kCudaGemmMinSliceK deep at least.
  if (batch == 1) {
    int64_t split = std::min({2 * (int64_t)multiprocessors / blocks(128, 128),
                              k / kCudaGemmMinSliceK, (int64_t)64});
    if (split >= 2) {
      CudaGemmTiling t = asked;
      t.splitK = (int)split;
      return t;
    }
  }
  if (fills(128, 64))
    return {128, 64, 16, 8, 8};
  return {64, 64, 16, 8, 8};
}

void strataGemm(cudaStream_t stream, const CudaGemmTiling &tiling, bool transA,
                bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, int64_t strideA, const float *b,
                int64_t ldb, int64_t strideB, float beta, float *c, int64_t ldc,
                int64_t strideC, int64_t batch) {
  std::string error = verifyCudaGemmTiling(tiling);
  if (!error.empty())
    throw std::invalid_argument("strataGemm: " + error);
  if (m < 0 || n < 0 || k < 0 || batch < 0)
    throw std::invalid_argument("strataGemm: negative size");
  if (m == 0 || n == 0 || batch == 0)
    return;
  // Tile origins and the k loop's bound are int: keep them a tile below
  // INT_MAX.
  const int64_t limit = INT_MAX - 256;
  if (m > limit || n > limit || k > limit)
    throw std::invalid_argument("strataGemm: m, n and k must be below 2^31 - "
                                "256");
  GemmArgs args{(int)m, (int)n,  (int)k, alpha, a,   lda,     strideA, b,
                ldb,    strideB, beta,   c,     ldc, strideC, batch};
  Launcher launch = nearestCompiled(tiling).launch;
  if (tiling.splitK > 1 && batch == 1) {
    // Slices of whole float4s keep aligned operands aligned.
    int64_t slice = (ceilDiv(k, tiling.splitK) + 3) / 4 * 4;
    if (slice < k && launchSplitK(stream, launch, transA, transB, args, slice))
      return;
  }
  launch(stream, transA, transB, args);
}

} // namespace strata::rt::cuda
