//===- Cost.cpp - Measured and modelled cost of a GEMM tiling -------------===//
//
// Part of strata_tune, the GEMM tiling search of strata-tune (not of the
// runtime library); like the runtime, it never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-tune/Tune.h"

#include "../cpu/GemmBf16Internal.h"
#include "../cpu/GemmInternal.h"
#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <thread>

namespace strata::rt::tune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

//===----------------------------------------------------------------------===//
// Measuring
//===----------------------------------------------------------------------===//

struct GemmMeasurer::Impl {
  GemmProblem problem;
  MeasureOptions options;
  ThreadPool pool;
  const OpKernel *kernel;
  std::vector<float> a, b, c;
  std::vector<TensorDesc> inDescs, outDescs;
  uint64_t stream;

  Impl(const GemmProblem &p, const MeasureOptions &o)
      : problem(p), options(o), pool(o.threads), kernel(lookupKernel("matmul")),
        stream(o.seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {
    Shape as = p.transA ? Shape{p.k, p.m} : Shape{p.m, p.k};
    Shape bs = p.transB ? Shape{p.n, p.k} : Shape{p.k, p.n};
    Shape cs = {p.m, p.n};
    if (p.batch != 1) {
      as.insert(as.begin(), p.batch);
      bs.insert(bs.begin(), p.batch);
      cs.insert(cs.begin(), p.batch);
    }
    inDescs = {TensorDesc{DType::F32, as}, TensorDesc{DType::F32, bs}};
    outDescs = {TensorDesc{DType::F32, cs}};
    a.resize(numElements(as));
    b.resize(numElements(bs));
    c.assign(numElements(cs), 1.0f);
  }

  /// Fresh values in [-1, -0.25] U [0.25, 1]: random, never zero.
  void refill(std::vector<float> &v) {
    uint64_t x = (stream += 0x9E3779B97F4A7C15ull);
    for (float &f : v) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      float u = (float)((x >> 40) * (1.0 / 16777216.0)); // [0, 1)
      f = (x & 1) ? 0.25f + 0.75f * u : -0.25f - 0.75f * u;
    }
  }
};

GemmMeasurer::GemmMeasurer(const GemmProblem &problem,
                           const MeasureOptions &options)
    : impl(std::make_unique<Impl>(problem, options)) {}

GemmMeasurer::~GemmMeasurer() = default;

int GemmMeasurer::threads() const { return impl->pool.size(); }

double GemmMeasurer::measure(const GemmTiling &tiling, std::string *error) {
  Impl &I = *impl;
  if (!I.kernel) {
    if (error)
      *error = "the runtime has no matmul kernel";
    return kInf;
  }
  Attrs attrs;
  attrs.numbers["transpose_a"] = I.problem.transA ? 1 : 0;
  attrs.numbers["transpose_b"] = I.problem.transB ? 1 : 0;
  if (I.options.bf16)
    attrs.numbers["bf16"] = 1;
  attrs.numbers["mc"] = (double)tiling.mc;
  attrs.numbers["nc"] = (double)tiling.nc;
  attrs.numbers["kc"] = (double)tiling.kc;
  attrs.numbers["mr"] = (double)tiling.mr;
  attrs.numbers["nr"] = (double)tiling.nr;
  std::string message = I.kernel->verify(I.inDescs, I.outDescs, attrs);
  if (!message.empty()) {
    if (error)
      *error = message;
    return kInf;
  }
  OpAttrs typed = decodeAttrsOrThrow(OpCode::Matmul, attrs);
  I.refill(I.a);
  I.refill(I.b);
  std::vector<Tensor> inputs = {Tensor{I.a.data(), I.inDescs[0]},
                                Tensor{I.b.data(), I.inDescs[1]}};
  std::vector<Tensor> outputs = {Tensor{I.c.data(), I.outDescs[0]}};
  KernelContext ctx{I.pool, GemmTiling(), nullptr};
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < I.options.warmup; ++i)
    I.kernel->run(ctx, inputs, outputs, typed);
  std::vector<double> times;
  auto start = Clock::now();
  int repeats = std::max(1, I.options.repeats);
  while ((int)times.size() < repeats ||
         std::chrono::duration<double>(Clock::now() - start).count() <
             I.options.minSeconds) {
    auto t0 = Clock::now();
    I.kernel->run(ctx, inputs, outputs, typed);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int64_t bf16TileRows() {
  detail::Bf16Isa isa = detail::defaultBf16Isa();
  return isa == detail::Bf16Isa::Fallback ? 0
                                          : detail::bf16DefaultTiling(isa).mr;
}

GemmTiling defaultCpuTiling(bool bf16) {
  return bf16 ? detail::bf16DefaultTiling(detail::defaultBf16Isa())
              : GemmTiling();
}

//===----------------------------------------------------------------------===//
// Analytic models
//===----------------------------------------------------------------------===//

double modelCpuSeconds(const GemmProblem &p, const GemmTiling &t,
                       const CacheSizes &caches, int threads, double peakGflops,
                       double bandwidthGBs) {
  if (!verifyGemmTiling(t).empty())
    return kInf;
  threads = std::max(1, threads);
  int64_t kc = std::min(t.kc, p.k);
  int64_t mc = std::min(t.mc, ceilDiv(p.m, t.mr) * t.mr);
  int64_t nc = std::min(t.nc, ceilDiv(p.n, t.nr) * t.nr);
  // Micro-kernel: per k step mr * nv vector FMAs against nv loads of B and
  // mr broadcasts of A, on two FMA and two load ports.
  double lanes = t.nr % 16 == 0 ? 16 : 8;
  double nv = t.nr / lanes;
  double fma = t.mr * nv / 2.0, loads = (t.mr + nv) / 2.0;
  double eff = fma / std::max(fma, loads) * (lanes / 16.0);
  double registers = t.mr * nv + nv + 1;
  if (registers > 32)
    eff *= 0.5;
  // Loading and storing the C tile around each kc slice.
  eff *= (double)kc / (kc + 2.0 * t.mr);
  // Cache fit of the B micro-panel (L1) and the A block (L2).
  if (kc * t.nr * 4 > caches.l1)
    eff *= 0.7;
  if (mc * kc * 4 > caches.l2)
    eff *= 0.8;
  // Edge tiles compute padded work.
  double mPad = (double)ceilDiv(p.m, t.mr) * t.mr;
  double nPad = (double)ceilDiv(p.n, t.nr) * t.nr;
  // Work split: whole products over threads for batches, else row panels
  // (or column panels when there are few row panels).
  double balance = 1.0;
  if (p.batch > 1) {
    balance = (double)p.batch / (ceilDiv(p.batch, threads) * threads);
  } else {
    int64_t mPanels = ceilDiv(p.m, t.mr), nPanels = ceilDiv(nc, t.nr);
    int64_t panels =
        (mPanels >= 4 * threads || mPanels >= nPanels)
            ? std::min(mPanels, ceilDiv(mc, t.mr) * ceilDiv(p.m, mc))
            : nPanels;
    panels = std::max<int64_t>(1, panels);
    balance = (double)panels / (ceilDiv(panels, threads) * threads);
  }
  double compute = 2.0 * p.batch * mPad * nPad * p.k /
                   (peakGflops * 1e9 * eff * threads * balance);
  // Traffic: A packed once per nc block, B once, C read and written once
  // per kc slice; a B block beyond half of L3 streams twice.
  double bytes = 4.0 * p.batch *
                 ((double)p.m * p.k * ceilDiv(p.n, nc) + (double)p.k * p.n +
                  2.0 * p.m * p.n * ceilDiv(p.k, kc));
  if (kc * nc * 4 > caches.l3 / 2)
    bytes *= 2;
  return compute + bytes / (bandwidthGBs * 1e9);
}

double modelCudaSeconds(const GemmProblem &p, const CudaTiling &t,
                        const GpuModel &gpu) {
  if (!verifyCudaTiling(t).empty())
    return kInf;
  int64_t threads = (t.blockM / t.threadM) * (t.blockN / t.threadN);
  int64_t shared = (t.blockM + t.blockN) * t.kStep * 4;
  int64_t registersPerThread = cudaRegistersPerThread(t);
  int64_t perSm =
      std::min<int64_t>(gpu.maxBlocksPerSm, gpu.maxThreadsPerSm / threads);
  perSm =
      std::min<int64_t>(perSm, gpu.sharedPerSm / std::max<int64_t>(1, shared));
  perSm = std::min<int64_t>(perSm, 65536 / (threads * registersPerThread));
  if (perSm < 1)
    return kInf;
  int64_t blocks = p.batch * ceilDiv(p.m, t.blockM) * ceilDiv(p.n, t.blockN);
  int64_t waves = ceilDiv(blocks, gpu.sms * perSm);
  // Arithmetic intensity of the register tile against shared-memory loads,
  // latency hiding from resident threads, and one barrier per k step.
  double eff = std::min(1.0, (double)(t.threadM * t.threadN) /
                                 (t.threadM + t.threadN) / 4.0);
  eff *= std::min(1.0, (double)(perSm * threads) / 512.0);
  eff *= (double)t.kStep / (t.kStep + 2.0);
  double kPad = (double)ceilDiv(p.k, t.kStep) * t.kStep;
  double blockFlops = 2.0 * t.blockM * t.blockN * kPad;
  double smFlops = gpu.peakTflops * 1e12 / gpu.sms;
  double compute = waves * (double)std::min<int64_t>(perSm, blocks) *
                   blockFlops / (smFlops * eff);
  double bytes =
      4.0 * p.batch *
      ((double)p.m * p.k * ceilDiv(p.n, t.blockN) +
       (double)p.k * p.n * ceilDiv(p.m, t.blockM) + (double)p.m * p.n);
  double memory = bytes / (gpu.bandwidthGBs * 1e9);
  return std::max(compute, memory) + 5e-6;
}

//===----------------------------------------------------------------------===//
// Machine identity
//===----------------------------------------------------------------------===//

std::string machineIdentity(int threads) {
  std::string cpu = "unknown cpu";
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("model name", 0) != 0)
      continue;
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      cpu = line.substr(colon + 1);
      cpu.erase(0, cpu.find_first_not_of(" \t"));
    }
    break;
  }
  if (threads <= 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  return cpu + " | " + detail::gemmIsaName(detail::defaultGemmIsa()) + " | " +
         std::to_string(threads) + " threads";
}

} // namespace strata::rt::tune
