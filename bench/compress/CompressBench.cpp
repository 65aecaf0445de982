//===- CompressBench.cpp - Activation codec throughput -------------------===//
//
// Times the runtime's activation codecs (strata-rt/Compress.h) on a 64 MiB
// f32 tensor (normal random values): compress and decompress GB/s, counting
// the f32 bytes, with 1 and 2 threads; the scalar reference's compress and
// decompress GB/s (one thread, on a 4 MiB slice: it is slow); and memcpy of
// the same 64 MiB buffer as the peer. Each figure is the best of `--reps`
// runs after a warm-up run (a shared machine is noisy).
//
//   strata-compress-bench [--mib 64] [--reps 5] [--threads 1,2]
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Compress.h"
#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace strata::rt;
using namespace strata_plan;

namespace {

/// Best GB/s of `reps` timed calls of fn (after one warm-up call) moving
/// `bytes` f32 bytes.
double bestGbps(int reps, double bytes, const std::function<void()> &fn) {
  fn();
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    best = std::max(best, bytes / s / 1e9);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int64_t mib = 64;
  int reps = 5;
  std::vector<int> threads = {1, 2};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mib") {
      mib = std::atoll(argv[i + 1]);
    } else if (a == "--reps") {
      reps = std::atoi(argv[i + 1]);
    } else if (a == "--threads") {
      threads.clear();
      for (const char *p = argv[i + 1]; *p;) {
        threads.push_back(std::atoi(p));
        while (*p && *p != ',')
          ++p;
        if (*p)
          ++p;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--mib N] [--reps N] [--threads 1,2]\n",
                   argv[0]);
      return 2;
    }
  }
  const int64_t n = mib * 1024 * 1024 / 4;
  const int64_t refN = std::min<int64_t>(n, 1024 * 1024); // 4 MiB
  std::vector<float> x(static_cast<size_t>(n)), y(x.size()), copy(x.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float &v : x)
    v = d(rng);

  const char *names[] = {"bf16",
                         "mxfp8",
                         "mxfp6",
                         "mxfp4",
                         "mxint8",
                         "bfp:m=4,block=32",
                         "bfp:m=8,block=32",
                         "bfp:m=4,block=32,round=stochastic",
                         "bfp-outlier:m=4,block=32,outliers=1",
                         "bfp-nu:m=3,block=32"};
  const double bytes = double(n) * 4;
  std::printf("%lld MiB f32 (%lld values), best of %d runs; GB/s of f32 "
              "bytes\n\n",
              (long long)mib, (long long)n, reps);
  std::printf("| format | ratio |");
  for (int t : threads)
    std::printf(" compress %dT | decompress %dT |", t, t);
  std::printf(" reference compress | reference decompress |\n|---|---|");
  for (size_t i = 0; i < threads.size(); ++i)
    std::printf("---|---|");
  std::printf("---|---|\n");
  for (const char *name : names) {
    ActFormat f;
    std::string err = parseActFormat(name, f);
    if (!err.empty()) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    std::vector<uint8_t> packed(static_cast<size_t>(actPackedBytes(f, n)));
    std::printf("| %s | %.2fx |", name, actCompressionRatio(f));
    for (int t : threads) {
      ThreadPool pool(t);
      double c = bestGbps(reps, bytes, [&] {
        compressActivations(pool, f, x.data(), n, packed.data(), 7);
      });
      double dd = bestGbps(reps, bytes, [&] {
        decompressActivations(pool, f, packed.data(), n, y.data());
      });
      std::printf(" %.2f | %.2f |", c, dd);
    }
    double rc = bestGbps(1, double(refN) * 4, [&] {
      compressActivationsReference(f, x.data(), refN, packed.data(), 7);
    });
    double rd = bestGbps(1, double(refN) * 4, [&] {
      decompressActivationsReference(f, packed.data(), refN, y.data());
    });
    std::printf(" %.3f | %.3f |\n", rc, rd);
    std::fflush(stdout);
  }
  double mc = bestGbps(
      reps, bytes, [&] { std::memcpy(copy.data(), x.data(), size_t(n) * 4); });
  std::printf("\nmemcpy of the same %lld MiB (1 thread): %.2f GB/s\n",
              (long long)mib, mc);
  return 0;
}
