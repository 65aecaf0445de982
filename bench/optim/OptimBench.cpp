//===- OptimBench.cpp - adam_update's loop against the memory's speed -----===//
//
// Part of the Strata project.
//
// strata-optim-bench N [--repeat R]
//
// Times adam_update's element loop (detail::adamLoop, every instruction set
// this CPU has, in the kernel's 16K-element chunks) on N parameters, and an
// in-place add over the same four arrays (p += g, m += v: 24 bytes per
// element), each the best of R passes on one thread. Adam moves 28 bytes per
// parameter (p, g, m, v read; p, m, v written back in place), so its GB/s
// beside the add's says whether it runs at the memory's speed. Prints one
// line per loop: `NAME n N ms T ns_per_element E gbps B`.
//
//===----------------------------------------------------------------------===//

#include "OptimInternal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace strata::rt;
using namespace strata::rt::detail;

namespace {

struct Arrays {
  std::vector<float> p, g, m, v;
  explicit Arrays(int64_t n) : p(n), g(n), m(n), v(n) {
    for (int64_t i = 0; i < n; ++i) {
      p[i] = 0.01f * float(i % 97 - 48);
      g[i] = 1e-3f * float(i % 13 - 6);
      m[i] = 1e-4f * float(i % 7);
      v[i] = 1e-6f * float(i % 5);
    }
  }
};

/// The best time (seconds) of `repeat` calls of `pass`.
double best(int repeat, const std::function<void()> &pass) {
  double bestSeconds = 1e30;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    pass();
    std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    bestSeconds = std::min(bestSeconds, d.count());
  }
  return bestSeconds;
}

void report(const char *name, int64_t n, double seconds, double bytes) {
  std::printf("%s n %lld ms %.3f ns_per_element %.3f gbps %.1f\n", name,
              (long long)n, seconds * 1e3, seconds * 1e9 / double(n),
              bytes / seconds / 1e9);
}

/// AdamW at step 10 with PyTorch's defaults (the constants do not change
/// the work).
AdamConstants adamW() {
  AdamConstants k;
  k.lr = 1e-3f;
  k.epsilon = 1e-8f;
  k.decay = 0.01f;
  k.lrDecay = k.lr * k.decay;
  k.decoupled = true;
  k.b1 = 0.9f;
  k.b2 = 0.999f;
  k.c1 = 0.1f;
  k.c2 = 0.001f;
  k.invBc1 = 1.0f / (1.0f - 0.34867844f); // 1 / (1 - 0.9^10)
  k.invBc2 = 1.0f / (1.0f - 0.99004488f); // 1 / (1 - 0.999^10)
  return k;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: strata-optim-bench N [--repeat R]\n");
    return 2;
  }
  int64_t n = std::atoll(argv[1]);
  int repeat = 20;
  if (argc >= 4 && std::strcmp(argv[2], "--repeat") == 0)
    repeat = std::atoi(argv[3]);
  if (n <= 0 || repeat <= 0) {
    std::fprintf(stderr, "strata-optim-bench: N and R must be positive\n");
    return 2;
  }
  constexpr int64_t kChunk = 1 << 14; // as the kernel's multi-tensor loop
  Arrays a(n);
  double add = best(repeat, [&] {
    for (int64_t i = 0; i < n; ++i)
      a.p[i] += a.g[i];
    for (int64_t i = 0; i < n; ++i)
      a.m[i] += a.v[i];
  });
  report("inplace_add", n, add, 24.0 * double(n));
  AdamConstants k = adamW();
  for (GemmIsa isa : {GemmIsa::Scalar, GemmIsa::Avx2, GemmIsa::Avx512}) {
    if (!gemmIsaSupported(isa))
      continue;
    Arrays s(n);
    double t = best(repeat, [&] {
      for (int64_t b = 0; b < n; b += kChunk) {
        int64_t e = std::min(n, b + kChunk);
        adamLoop(isa, k, &s.p[b], &s.g[b], &s.m[b], &s.v[b], &s.p[b], &s.m[b],
                 &s.v[b], e - b);
      }
    });
    std::string name = std::string("adam_") + gemmIsaName(isa);
    report(name.c_str(), n, t, 28.0 * double(n));
  }
  return 0;
}
