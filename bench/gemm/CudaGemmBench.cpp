//===- CudaGemmBench.cpp - strataGemm against cuBLAS SGEMM ---------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//
//
// strata-cuda-gemm-bench [--sizes 1024,2048,4096,8192] [--reps R]
//
// Times Strata's own CUDA GEMM against cublasSgemm (FP32, TF32 off; TF32
// in its own column) on square row-major products C = A B of random data,
// in the same process, with CUDA events (mean of R launches after two
// warm-ups): the tiling the runtime runs for the shape (cudaGemmTilingFor
// with the device's SM count), and every configuration of a grid: six
// vectorised and scalar tilings unsliced, and 128x128 and 128x64 with k in
// 2, 4 and 8 slices (split-K, sizes up to 2048). Checks each strataGemm
// result against cuBLAS's (max |diff| / max |C|; C is NaN-filled before
// each run, so an unwritten element fails) and exits 1 beyond 1e-4.
// Prints two Markdown tables (the summary and the grid). Exits 77 without a
// GPU (bench/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace strata::rt::cuda;

namespace {

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "strata-cuda-gemm-bench: %s: %s\n", what,
                 cudaGetErrorString(e));
    std::exit(1);
  }
}

void check(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "strata-cuda-gemm-bench: %s: cuBLAS status %d\n", what,
                 (int)s);
    std::exit(1);
  }
}

/// Mean milliseconds of `reps` calls of `f` after two warm-ups.
template <typename F> double timeMs(cudaStream_t stream, int reps, F f) {
  f();
  f();
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < reps; ++i)
    f();
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / reps;
}

std::vector<float> download(const float *d, int64_t count) {
  std::vector<float> h(count);
  check(cudaMemcpy(h.data(), d, count * 4, cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  return h;
}

double relDiff(const std::vector<float> &got, const std::vector<float> &want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i]))
      return INFINITY;
    diff = std::max(diff, (double)std::fabs(got[i] - want[i]));
    scale = std::max(scale, (double)std::fabs(want[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<int64_t> parseSizes(const std::string &text) {
  std::vector<int64_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 32768) {
      std::fprintf(stderr,
                   "strata-cuda-gemm-bench: --sizes: '%s' is not a size in "
                   "1..32768\n",
                   item.c_str());
      std::exit(2);
    }
    sizes.push_back(v);
  }
  return sizes;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> sizes = {1024, 2048, 4096, 8192};
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--sizes" && i + 1 < argc) {
      sizes = parseSizes(argv[++i]);
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1 || reps > 10000) {
        std::fprintf(stderr, "strata-cuda-gemm-bench: --reps in 1..10000\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--sizes 1024,2048,4096,8192] [--reps R]\n",
                   argv[0]);
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("strata-cuda-gemm-bench: skipped: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasHandle_t cublas;
  check(cublasCreate(&cublas), "cublasCreate");
  check(cublasSetStream(cublas, stream), "cublasSetStream");

  std::vector<CudaGemmTiling> grid = {
      {128, 128, 16, 8, 8}, {128, 64, 16, 8, 8}, {64, 64, 16, 8, 8},
      {64, 64, 16, 4, 8},   {64, 64, 16, 4, 4},  {128, 128, 8, 8, 8}};
  for (int split : {2, 4, 8})
    for (CudaGemmTiling t : {CudaGemmTiling{128, 128, 16, 8, 8},
                             CudaGemmTiling{128, 64, 16, 8, 8}}) {
      t.splitK = split;
      grid.push_back(t);
    }
  auto text = cudaGemmTilingName;
  std::printf("Device: %s (%d SMs). Square row-major C = A B, FP32, mean of "
              "%d launches after 2 warm-ups (CUDA events).\n\n",
              prop.name, prop.multiProcessorCount, reps);
  std::printf("| n | cuBLAS FP32 TFLOP/s | cuBLAS TF32 TFLOP/s | runtime's "
              "strataGemm TFLOP/s (tiling) | runtime's / cuBLAS FP32 | best "
              "strataGemm TFLOP/s (tiling) | best / cuBLAS FP32 | max rel diff "
              "|\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  bool ok = true;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // TFLOP/s of each grid configuration at each size (0: not run).
  std::vector<std::vector<double>> gridTflops(grid.size());
  for (int64_t n : sizes) {
    int64_t count = n * n;
    std::vector<float> host(count);
    float *a, *b, *c, *ref;
    check(cudaMalloc(&a, count * 4), "cudaMalloc");
    check(cudaMalloc(&b, count * 4), "cudaMalloc");
    check(cudaMalloc(&c, count * 4), "cudaMalloc");
    check(cudaMalloc(&ref, count * 4), "cudaMalloc");
    for (float &v : host)
      v = dist(rng);
    check(cudaMemcpy(a, host.data(), count * 4, cudaMemcpyHostToDevice), "h2d");
    for (float &v : host)
      v = dist(rng);
    check(cudaMemcpy(b, host.data(), count * 4, cudaMemcpyHostToDevice), "h2d");
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T.
    auto cublasRun = [&](float *out) {
      check(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n,
                        (int)n, &one, b, (int)n, a, (int)n, &zero, out, (int)n),
            "cublasSgemm");
    };
    double flop = 2.0 * n * n * n;
    check(cublasSetMathMode(cublas, CUBLAS_TF32_TENSOR_OP_MATH), "math");
    double tf32Ms = timeMs(stream, reps, [&] { cublasRun(ref); });
    check(cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH), "math");
    double cublasMs = timeMs(stream, reps, [&] { cublasRun(ref); });
    std::vector<float> want = download(ref, count);
    double worstDiff = 0;
    // Milliseconds of strataGemm with tiling `t` (result checked).
    auto timeStrata = [&](const CudaGemmTiling &t) {
      check(cudaMemset(c, 0xff, count * 4), "cudaMemset"); // NaNs
      double ms = 0;
      try {
        ms = timeMs(stream, reps, [&] {
          strataGemm(stream, t, false, false, n, n, n, 1.0f, a, n, 0, b, n, 0,
                     0.0f, c, n, 0, 1);
        });
      } catch (const std::exception &e) {
        std::fprintf(stderr, "strata-cuda-gemm-bench: %s\n", e.what());
        std::exit(1);
      }
      worstDiff = std::max(worstDiff, relDiff(download(c, count), want));
      return ms;
    };
    CudaGemmTiling chosen = cudaGemmTilingFor(CudaGemmTiling{}, n, n, n, 1,
                                              prop.multiProcessorCount);
    double chosenMs = timeStrata(chosen);
    double bestMs = 1e30;
    CudaGemmTiling best{};
    for (size_t i = 0; i < grid.size(); ++i) {
      gridTflops[i].push_back(0);
      if (grid[i].splitK > 1 && n > 2048)
        continue;
      double ms = timeStrata(grid[i]);
      gridTflops[i].back() = flop / ms * 1e-9;
      if (ms < bestMs) {
        bestMs = ms;
        best = grid[i];
      }
    }
    ok = ok && worstDiff <= 1e-4;
    std::printf("| %lld | %.1f | %.1f | %.1f (%s) | %.2f | %.1f (%s) | %.2f | "
                "%.1e |\n",
                (long long)n, flop / cublasMs * 1e-9, flop / tf32Ms * 1e-9,
                flop / chosenMs * 1e-9, text(chosen).c_str(),
                cublasMs / chosenMs, flop / bestMs * 1e-9, text(best).c_str(),
                cublasMs / bestMs, worstDiff);
    std::fflush(stdout);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(ref);
  }
  std::printf("\nEvery configuration, TFLOP/s (split-K up to n = 2048):\n\n| "
              "tiling |");
  for (int64_t n : sizes)
    std::printf(" %lld |", (long long)n);
  std::printf("\n| --- |");
  for (size_t j = 0; j < sizes.size(); ++j)
    std::printf(" --- |");
  std::printf("\n");
  for (size_t i = 0; i < grid.size(); ++i) {
    std::printf("| %s |", text(grid[i]).c_str());
    for (double v : gridTflops[i])
      v > 0 ? std::printf(" %.1f |", v) : std::printf(" |");
    std::printf("\n");
  }
  cublasDestroy(cublas);
  cudaStreamDestroy(stream);
  if (!ok)
    std::printf("\nFAIL: a strataGemm result differs from cuBLAS's by more "
                "than 1e-4 of its largest element\n");
  return ok ? 0 : 1;
}
