//===- GemmBench.cpp - Strata gemm() against OpenBLAS sgemm ---------------===//
//
// Times the runtime's GEMM and OpenBLAS cblas_sgemm on the same square fp32
// problems in one process, with the same thread counts, and prints GFLOP/s
// and their ratio (optionally as a markdown table). C = A B with beta = 0,
// A and B uniform in [-1, 1]. Each library runs in three alternating blocks
// of calls (min-time / 3 each, after a warm-up call); GFLOP/s come from the
// median call and from the fastest one, since a shared machine is noisy.
//
//   strata-gemm-bench [--sizes 256,512,1024,2048] [--threads 1,2]
//                     [--min-time SECONDS] [--tiling mc,nc,kc,mr,nr]
//                     [--markdown FILE] [--no-openblas]
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Kernels.h"
#include "strata-rt/ThreadPool.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int);
extern "C" char *openblas_get_config(void);
extern "C" char *openblas_get_corename(void);

using namespace strata::rt;

namespace {

/// Alternating blocks of calls per library and problem.
constexpr int kRounds = 3;

std::vector<int64_t> parseList(const char *text) {
  std::vector<int64_t> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    values.push_back(std::stoll(item));
  return values;
}

/// Per-call times in seconds of `fn`, repeated until `minTime` has passed
/// (at least 3 calls), after one warm-up call.
void timeCalls(const std::function<void()> &fn, double minTime,
               std::vector<double> &times) {
  using Clock = std::chrono::steady_clock;
  fn();
  auto start = Clock::now();
  for (int calls = 0;
       calls < 3 ||
       std::chrono::duration<double>(Clock::now() - start).count() < minTime;
       ++calls) {
    auto t0 = Clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
}

/// The upper median (strata::rt::median averages the middle two).
double upperMedian(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double best(const std::vector<double> &v) {
  return *std::min_element(v.begin(), v.end());
}

/// GFLOP/s from the median and the fastest call.
struct Row {
  int64_t size;
  int threads;
  double strata, openblas, strataBest, openblasBest;
  double maxRelDiff;
};

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> sizes = {256, 512, 1024, 2048};
  std::vector<int64_t> threadCounts = {1, 2};
  double minTime = 1.0;
  bool useOpenBlas = true;
  std::string markdown;
  GemmTiling tiling;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--sizes") {
      sizes = parseList(next());
    } else if (arg == "--threads") {
      threadCounts = parseList(next());
    } else if (arg == "--min-time") {
      minTime = std::atof(next());
    } else if (arg == "--markdown") {
      markdown = next();
    } else if (arg == "--no-openblas") {
      useOpenBlas = false;
    } else if (arg == "--tiling") {
      std::vector<int64_t> t = parseList(next());
      if (t.size() != 5) {
        std::fprintf(stderr, "error: --tiling takes mc,nc,kc,mr,nr\n");
        return 2;
      }
      tiling = GemmTiling{t[0], t[1], t[2], t[3], t[4]};
    } else {
      std::fprintf(stderr,
                   "usage: %s [--sizes 256,512,...] [--threads 1,2] "
                   "[--min-time S] [--tiling mc,nc,kc,mr,nr] [--markdown FILE] "
                   "[--no-openblas]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string error = verifyGemmTiling(tiling);
  if (!error.empty()) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 2;
  }
  std::printf("tiling mc=%lld nc=%lld kc=%lld mr=%lld nr=%lld\n",
              (long long)tiling.mc, (long long)tiling.nc, (long long)tiling.kc,
              (long long)tiling.mr, (long long)tiling.nr);
  if (useOpenBlas)
    std::printf("openblas: %s (core %s)\n", openblas_get_config(),
                openblas_get_corename());
  std::printf("GFLOP/s of the median call (med) and of the fastest (best)\n");
  std::printf("%6s %7s %10s %10s %10s %10s %7s %7s %9s\n", "size", "threads",
              "strata", "strata", "openblas", "openblas", "ratio", "ratio",
              "max rel");
  std::printf("%6s %7s %10s %10s %10s %10s %7s %7s %9s\n", "", "", "med",
              "best", "med", "best", "med", "best", "diff");

  std::vector<Row> rows;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t n : sizes) {
    std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f), ref(n * n, 0.0f);
    for (float &x : a)
      x = dist(rng);
    for (float &x : b)
      x = dist(rng);
    double flops = 2.0 * n * n * n;
    for (int64_t threads : threadCounts) {
      ThreadPool pool((int)threads);
      if (useOpenBlas)
        openblas_set_num_threads((int)threads);
      // Alternate blocks of each library, pausing between them so that idle
      // worker threads (OpenBLAS's spin for a while after a call) have gone
      // to sleep before the other library runs.
      std::vector<double> strataTimes, blasTimes;
      for (int round = 0; round < kRounds; ++round) {
        timeCalls(
            [&] {
              gemm(pool, tiling, false, false, n, n, n, 1.0f, a.data(), n,
                   b.data(), n, 0.0f, c.data(), n);
            },
            minTime / kRounds, strataTimes);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        if (!useOpenBlas)
          continue;
        timeCalls(
            [&] {
              cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n,
                          1.0f, a.data(), n, b.data(), n, 0.0f, ref.data(), n);
            },
            minTime / kRounds, blasTimes);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
      double maxRel = 0;
      if (useOpenBlas) {
        double scale = 0;
        for (int64_t i = 0; i < n * n; ++i)
          scale = std::max(scale, (double)std::fabs(ref[i]));
        for (int64_t i = 0; i < n * n; ++i)
          maxRel = std::max(maxRel, std::fabs((double)c[i] - ref[i]) / scale);
      }
      Row row{n,
              (int)threads,
              flops / upperMedian(strataTimes) * 1e-9,
              useOpenBlas ? flops / upperMedian(blasTimes) * 1e-9 : 0.0,
              flops / best(strataTimes) * 1e-9,
              useOpenBlas ? flops / best(blasTimes) * 1e-9 : 0.0,
              maxRel};
      std::printf(
          "%6lld %7d %10.1f %10.1f %10.1f %10.1f %7.2f %7.2f %9.1e\n",
          (long long)n, row.threads, row.strata, row.strataBest, row.openblas,
          row.openblasBest, useOpenBlas ? row.strata / row.openblas : 0.0,
          useOpenBlas ? row.strataBest / row.openblasBest : 0.0, maxRel);
      std::fflush(stdout);
      rows.push_back(row);
    }
  }
  if (!markdown.empty()) {
    std::ofstream out(markdown);
    out << "| size | threads | Strata GFLOP/s (median) | OpenBLAS GFLOP/s "
           "(median) | ratio (median) | Strata best | OpenBLAS best | ratio "
           "(best) |\n";
    out << "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    char line[256];
    for (const Row &r : rows) {
      std::snprintf(line, sizeof(line),
                    "| %lld | %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f |\n",
                    (long long)r.size, r.threads, r.strata, r.openblas,
                    r.openblas > 0 ? r.strata / r.openblas : 0.0, r.strataBest,
                    r.openblasBest,
                    r.openblasBest > 0 ? r.strataBest / r.openblasBest : 0.0);
      out << line;
    }
  }
  return 0;
}
