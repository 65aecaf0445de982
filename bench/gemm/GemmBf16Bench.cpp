//===- GemmBf16Bench.cpp - Strata bf16 GEMM against its f32 GEMM ----------===//
//
// Times the runtime's gemmBf16() on every path this machine runs (AMX,
// AVX512-BF16, the f32 fallback) and its f32 gemm() on the same problems
// C = A B (beta = 0, A and B uniform in [-1, 1], bf16 copies for gemmBf16),
// in alternating blocks of calls, and prints GFLOP/s of the median and the
// fastest call. bench/gemm_bf16.py runs it beside PyTorch.
//
//   strata-gemm-bf16-bench [--shapes MxNxK[:nt],...] [--threads 1,2]
//                          [--min-time SECONDS] [--rounds N]
//                          [--paths amx,avx512bf16,fallback,f32] [--peak]
//
// A path named PATH-f32in (amx-f32in, ...) passes the f32 inputs to gemmBf16,
// which rounds them while packing.
//
// --peak also measures one core's peak with register-only loops: f32 FMA
// (vfmadd231ps zmm), vdpbf16ps zmm and AMX tdpbf16ps.
//
//===----------------------------------------------------------------------===//

#include "GemmBf16Internal.h"

#include "strata-rt/Kernels.h"
#include "strata-rt/ThreadPool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace strata::rt;
using detail::Bf16Isa;
using Clock = std::chrono::steady_clock;

namespace {

/// C[m x n] = op(A) op(B); ta / tb: A is stored k x m, B n x k.
struct GemmShape {
  int64_t m, n, k;
  bool ta = false, tb = false;
  int64_t lda() const { return ta ? m : k; }
  int64_t ldb() const { return tb ? k : n; }
};

std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty())
      items.push_back(item);
  return items;
}

/// "N" (square) or "MxNxK", optionally followed by ":nn", ":nt", ":tn" or
/// ":tt" (op(A), op(B): n as stored, t transposed).
GemmShape parseShape(const std::string &text) {
  std::vector<std::string> parts = split(text, ':');
  std::vector<std::string> d = split(parts[0], 'x');
  bool bad = d.size() != 1 && d.size() != 3;
  bad |= parts.size() > 2 || (parts.size() == 2 && parts[1].size() != 2);
  if (bad) {
    std::fprintf(stderr, "error: bad shape '%s' (MxNxK[:nt])\n", text.c_str());
    std::exit(2);
  }
  GemmShape s;
  s.m = std::stoll(d[0]);
  s.n = d.size() == 3 ? std::stoll(d[1]) : s.m;
  s.k = d.size() == 3 ? std::stoll(d[2]) : s.m;
  if (parts.size() == 2) {
    s.ta = parts[1][0] == 't';
    s.tb = parts[1][1] == 't';
  }
  return s;
}

double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Per-call times of `fn` for at least `minTime` (and 3 calls), after one
/// warm-up call.
void timeCalls(const std::function<void()> &fn, double minTime,
               std::vector<double> &times) {
  fn();
  auto start = Clock::now();
  for (int calls = 0; calls < 3 || seconds(start) < minTime; ++calls) {
    auto t0 = Clock::now();
    fn();
    times.push_back(seconds(t0));
  }
}

//===----------------------------------------------------------------------===//
// Peak loops (one core, registers only)
//===----------------------------------------------------------------------===//

__attribute__((target("avx512f"))) double peakFma(int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm512_set1_ps(float(i));
  __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
  auto t0 = Clock::now();
  for (int64_t it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[5]), "+v"(acc[11]));
  }
  double t = seconds(t0);
  float sink = 0;
  for (int i = 0; i < 12; ++i)
    sink += _mm512_reduce_add_ps(acc[i]);
  __asm__ volatile("" ::"r"(sink));
  return iters * 12.0 * 32 / t * 1e-9;
}

__attribute__((target("avx512f,avx512bf16"))) double peakDpbf16(int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm512_set1_ps(float(i));
  __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80);
  __m512bh y = (__m512bh)_mm512_set1_epi16(0x3A80);
  auto t0 = Clock::now();
  for (int64_t it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[5]), "+v"(acc[11]));
  }
  double t = seconds(t0);
  float sink = 0;
  for (int i = 0; i < 12; ++i)
    sink += _mm512_reduce_add_ps(acc[i]);
  __asm__ volatile("" ::"r"(sink));
  return iters * 12.0 * 64 / t * 1e-9;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-bf16"))) double peakAmx(int64_t iters) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
  alignas(64) static uint16_t ones[16 * 32];
  std::fill(std::begin(ones), std::end(ones), uint16_t(0x3A80));
  for (int t = 0; t < 4; ++t)
    _tile_zero(0), _tile_zero(1), _tile_zero(2), _tile_zero(3);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  auto t0 = Clock::now();
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  double t = seconds(t0);
  alignas(64) static float out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  __asm__ volatile("" ::"r"(out[0]));
  return iters * 4.0 * 16 * 16 * 32 * 2 / t * 1e-9;
}

/// Best of five runs of a peak loop.
double bestOf(double (*loop)(int64_t), int64_t iters) {
  double best = 0;
  for (int r = 0; r < 5; ++r)
    best = std::max(best, loop(iters));
  return best;
}

void printPeaks() {
  std::printf("peak f32 FMA (vfmadd231ps zmm, 1 core): %.1f GFLOP/s\n",
              bestOf(peakFma, 20000000));
  if (detail::bf16IsaSupported(Bf16Isa::Avx512Bf16))
    std::printf("peak vdpbf16ps zmm (1 core): %.1f GFLOP/s\n",
                bestOf(peakDpbf16, 20000000));
  if (detail::bf16IsaSupported(Bf16Isa::Amx))
    std::printf("peak AMX tdpbf16ps (1 core): %.1f GFLOP/s\n",
                bestOf(peakAmx, 2000000));
}

//===----------------------------------------------------------------------===//
// GEMM timing
//===----------------------------------------------------------------------===//

struct Inputs {
  std::vector<float> a, b, c;
  std::vector<uint16_t> ah, bh;
};

Inputs makeInputs(const GemmShape &s) {
  Inputs in;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  in.a.resize(s.m * s.k);
  in.b.resize(s.k * s.n);
  in.c.assign(s.m * s.n, 0.0f);
  for (float &x : in.a)
    x = dist(rng);
  for (float &x : in.b)
    x = dist(rng);
  in.ah.resize(in.a.size());
  in.bh.resize(in.b.size());
  convertF32ToBf16(in.a.data(), in.ah.data(), in.a.size());
  convertF32ToBf16(in.b.data(), in.bh.data(), in.b.size());
  return in;
}

/// Strips a "-f32in" suffix (gemmBf16 on the f32 inputs, rounded while
/// packing); returns whether there was one.
bool stripF32In(std::string &path) {
  const std::string suffix = "-f32in";
  if (path.size() <= suffix.size() ||
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  path.resize(path.size() - suffix.size());
  return true;
}

/// The call of one path ("f32" is the f32 GEMM; "PATH-f32in" gemmBf16 on
/// the f32 inputs).
std::function<void()> callFor(std::string path, ThreadPool &pool,
                              const GemmShape &s, Inputs &in) {
  bool f32In = stripF32In(path);
  if (path == "f32")
    return [&pool, s, &in] {
      gemm(pool, GemmTiling(), s.ta, s.tb, s.m, s.n, s.k, 1.0f, in.a.data(),
           s.lda(), in.b.data(), s.ldb(), 0.0f, in.c.data(), s.n);
    };
  Bf16Isa isa = path == "amx"          ? Bf16Isa::Amx
                : path == "avx512bf16" ? Bf16Isa::Avx512Bf16
                                       : Bf16Isa::Fallback;
  Bf16Operand a = f32In ? Bf16Operand::f32(in.a.data(), s.lda())
                        : Bf16Operand::bf16(in.ah.data(), s.lda());
  Bf16Operand b = f32In ? Bf16Operand::f32(in.b.data(), s.ldb())
                        : Bf16Operand::bf16(in.bh.data(), s.ldb());
  return [&pool, s, &in, isa, a, b] {
    detail::gemmBf16WithIsa(isa, &pool, s.ta, s.tb, s.m, s.n, s.k, 1.0f, a, b,
                            0.0f, in.c.data(), s.n);
  };
}

std::vector<std::string> supportedPaths() {
  std::vector<std::string> paths;
  for (Bf16Isa isa : {Bf16Isa::Amx, Bf16Isa::Avx512Bf16, Bf16Isa::Fallback})
    if (detail::bf16IsaSupported(isa))
      paths.push_back(detail::bf16IsaName(isa));
  paths.push_back("f32");
  return paths;
}

/// Times every path on one shape and thread count; prints one line per path:
/// "gemm M N K trans threads path median_gflops best_gflops".
void runShape(const GemmShape &s, int threads,
              const std::vector<std::string> &paths, double minTime,
              int rounds) {
  Inputs in = makeInputs(s);
  ThreadPool pool(threads);
  std::map<std::string, std::vector<double>> times;
  for (int round = 0; round < rounds; ++round) {
    for (const std::string &path : paths) {
      timeCalls(callFor(path, pool, s, in), minTime / rounds, times[path]);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  double flops = 2.0 * s.m * s.n * s.k;
  for (const std::string &path : paths) {
    std::vector<double> &t = times[path];
    std::sort(t.begin(), t.end());
    std::printf("gemm %lld %lld %lld %c%c %d %s %.1f %.1f\n", (long long)s.m,
                (long long)s.n, (long long)s.k, s.ta ? 't' : 'n',
                s.tb ? 't' : 'n', threads, path.c_str(),
                flops / t[t.size() / 2] * 1e-9, flops / t[0] * 1e-9);
  }
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<GemmShape> shapes;
  std::vector<int> threadCounts = {1, 2};
  std::vector<std::string> paths = supportedPaths();
  double minTime = 1.0;
  int rounds = 3;
  bool peak = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--shapes") {
      for (const std::string &s : split(next(), ','))
        shapes.push_back(parseShape(s));
    } else if (arg == "--threads") {
      threadCounts.clear();
      for (const std::string &t : split(next(), ','))
        threadCounts.push_back(std::stoi(t));
    } else if (arg == "--paths") {
      paths = split(next(), ',');
    } else if (arg == "--min-time") {
      minTime = std::atof(next().c_str());
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::atoi(next().c_str()));
    } else if (arg == "--peak") {
      peak = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--shapes MxNxK,...] [--threads 1,2] "
                   "[--min-time S] [--rounds N] "
                   "[--paths amx,avx512bf16,fallback,f32] [--peak]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<std::string> supported = supportedPaths();
  for (const std::string &p : paths) {
    std::string base = p;
    bool f32In = stripF32In(base);
    if (std::find(supported.begin(), supported.end(), base) ==
            supported.end() ||
        (f32In && base == "f32")) {
      std::fprintf(stderr, "error: path '%s' is not available here\n",
                   p.c_str());
      return 2;
    }
  }
  std::printf("default bf16 path: %s\n",
              detail::bf16IsaName(detail::defaultBf16Isa()));
  if (peak)
    printPeaks();
  if (shapes.empty() && !peak)
    for (int64_t n : {256, 512, 1024, 2048})
      shapes.push_back(parseShape(std::to_string(n)));
  std::printf("gemm M N K trans threads path GFLOP/s(median) GFLOP/s(best)\n");
  for (const GemmShape &s : shapes)
    for (int threads : threadCounts)
      runShape(s, threads, paths, minTime, rounds);
  return 0;
}
