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
// non-transposed A do not conflict on banks. Each thread accumulates a
// TM x TN register tile; with TM (TN) a multiple of 4 its rows (columns) are
// TM/4 (TN/4) groups of 4 spread BM/(TM/4) apart, so that a quarter warp
// reads 32 consecutive floats of a shared row (no bank conflicts) and writes
// whole sectors of C. Bounds are checked on every load (zero fill) and
// store, so any m, n, k works; beta == 0 never reads C.
//
// Results are deterministic: each element of C is accumulated by one thread
// in k order.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include <climits>
#include <cmath>
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

template <int BM, int BN, int BK, int TM, int TN>
void launchTiling(cudaStream_t stream, bool ta, bool tb, const GemmArgs &g) {
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
    {{128, 128, 8, 8, 8}, launchTiling<128, 128, 8, 8, 8>},
    {{128, 64, 8, 8, 8}, launchTiling<128, 64, 8, 8, 8>},
    {{64, 128, 8, 8, 8}, launchTiling<64, 128, 8, 8, 8>},
    {{64, 64, 8, 4, 4}, launchTiling<64, 64, 8, 4, 4>},
    {{32, 32, 8, 2, 2}, launchTiling<32, 32, 8, 2, 2>},
};

bool sameTiling(const CudaGemmTiling &a, const CudaGemmTiling &b) {
  return a.blockM == b.blockM && a.blockN == b.blockN && a.kStep == b.kStep &&
         a.threadM == b.threadM && a.threadN == b.threadN;
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

std::string verifyCudaGemmTiling(const CudaGemmTiling &t) {
  auto text = [](const CudaGemmTiling &t) {
    return std::to_string(t.blockM) + "x" + std::to_string(t.blockN) + "x" +
           std::to_string(t.kStep) + "/" + std::to_string(t.threadM) + "x" +
           std::to_string(t.threadN);
  };
  if (t.blockM <= 0 || t.blockN <= 0 || t.kStep <= 0 || t.threadM <= 0 ||
      t.threadN <= 0)
    return "cuda gemm tiling " + text(t) + ": all sizes must be positive";
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
  return nearestCompiled(t).tiling;
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
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    throw std::invalid_argument("strataGemm: m, n and k must fit in 31 bits");
  GemmArgs args{(int)m, (int)n,  (int)k, alpha, a,   lda,     strideA, b,
                ldb,    strideB, beta,   c,     ldc, strideC, batch};
  nearestCompiled(tiling).launch(stream, transA, transB, args);
}

} // namespace strata::rt::cuda
