//===- TileSpace.cpp - The space of GEMM tiling states --------------------===//
//
// Part of strata_tune, the GEMM tiling search of strata-tune (not of the
// runtime library); like the runtime, it never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-tune/Tune.h"

#include "strata-rt/Bf16.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace strata::rt::tune {
namespace {

constexpr int64_t kPrimes[] = {2, 3, 5, 7};

bool isSmooth(int64_t x) {
  for (int64_t p : kPrimes)
    while (x % p == 0)
      x /= p;
  return x == 1;
}

/// The smallest 7-smooth multiple of `align` that is >= `dim`.
int64_t padDim(int64_t dim, int64_t align) {
  int64_t x = std::max<int64_t>(dim, align);
  x = (x + align - 1) / align * align;
  while (!isSmooth(x))
    x += align;
  return x;
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d)
      continue;
    result.push_back(d);
    if (d * d != n)
      result.push_back(n / d);
  }
  std::sort(result.begin(), result.end());
  return result;
}

/// Every ordered factorisation of `n` into `levels` factors.
void factorisations(int64_t n, int levels, std::vector<int64_t> &prefix,
                    std::vector<std::vector<int64_t>> &out) {
  if (levels == 1) {
    prefix.push_back(n);
    out.push_back(prefix);
    prefix.pop_back();
    return;
  }
  for (int64_t d : divisors(n)) {
    prefix.push_back(d);
    factorisations(n / d, levels - 1, prefix, out);
    prefix.pop_back();
  }
}

int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}

int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/// Product of the innermost `count` factors.
int64_t inner(const std::vector<int64_t> &f, int count) {
  int64_t p = 1;
  for (int i = 0; i < count && i < (int)f.size(); ++i)
    p *= f[f.size() - 1 - i];
  return p;
}

} // namespace

std::string TileState::str() const {
  static const char *names[] = {"m", "n", "k"};
  std::string s;
  for (int d = 0; d < 3; ++d) {
    if (d)
      s += " ";
    s += names[d];
    s += "[";
    for (size_t l = 0; l < factors[d].size(); ++l)
      s += (l ? "," : "") + std::to_string(factors[d][l]);
    s += "]";
  }
  return s;
}

CacheSizes CacheSizes::detect() {
  CacheSizes sizes;
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream levelFile(dir + "/level"), typeFile(dir + "/type"),
        sizeFile(dir + "/size");
    int level = 0;
    std::string type, size;
    if (!(levelFile >> level) || !(typeFile >> type) || !(sizeFile >> size))
      continue;
    if (type == "Instruction" || size.empty())
      continue;
    int64_t bytes = std::atoll(size.c_str());
    char unit = size.back();
    if (unit == 'K')
      bytes *= 1024;
    else if (unit == 'M')
      bytes *= 1024 * 1024;
    if (bytes <= 0)
      continue;
    if (level == 1)
      sizes.l1 = bytes;
    else if (level == 2)
      sizes.l2 = bytes;
    else if (level == 3)
      sizes.l3 = bytes;
  }
  return sizes;
}

std::string verifyCudaTiling(const CudaTiling &t) {
  auto str = [](int64_t v) { return std::to_string(v); };
  if (t.blockM <= 0 || t.blockN <= 0 || t.kStep <= 0 || t.threadM <= 0 ||
      t.threadN <= 0)
    return "cuda gemm tiling sizes must be positive";
  if (t.blockM % t.threadM || t.blockN % t.threadN)
    return "blockM/blockN must be multiples of threadM/threadN";
  int64_t threads = (t.blockM / t.threadM) * (t.blockN / t.threadN);
  if (threads % 32 || threads > 1024)
    return "threads per block " + str(threads) +
           " must be a multiple of 32 and at most 1024";
  if ((t.blockM + t.blockN) * t.kStep * 4 > 48 * 1024)
    return "shared-memory tiles of " +
           str((t.blockM + t.blockN) * t.kStep * 4) + " bytes exceed 48 KiB";
  if (t.threadM * t.threadN > 128)
    return "register tile " + str(t.threadM) + "x" + str(t.threadN) +
           " exceeds 128 accumulators";
  int64_t registers = cudaRegistersPerThread(t);
  if (threads * registers > 65536)
    return "block needs " + str(threads * registers) +
           " registers, more than the 65536 of an SM";
  return "";
}

TileSpace::TileSpace(const GemmProblem &problem, const SpaceOptions &options)
    : problem_(problem), options_(options) {
  levels_ = {std::max(2, options.levelsM), std::max(2, options.levelsN),
             std::max(1, options.levelsK)};
  bool cpu = options.target == TileTarget::Cpu;
  int64_t alignM = cpu ? 4 : 16, alignN = 16;
  if (cpu && options.bf16)
    bf16Tile_ = bf16TileRows();
  if (bf16Tile_) {
    alignM = bf16Tile_;
    alignN = 32;
  }
  padded_ = {padDim(problem.m, alignM), padDim(problem.n, alignN),
             padDim(problem.k, 1)};
  for (int d = 0; d < 3; ++d) {
    std::vector<int64_t> prefix;
    factorisations(padded_[d], levels_[d], prefix, dimStates_[d]);
  }
  for (int d = 0; d < 3; ++d)
    for (int from = 0; from < levels_[d]; ++from)
      for (int to = 0; to < levels_[d]; ++to)
        if (from != to)
          for (int64_t p : kPrimes)
            if (padded_[d] % p == 0)
              actions_.push_back(Move{d, from, to, p});
}

uint64_t TileSpace::size() const {
  return (uint64_t)dimStates_[0].size() * dimStates_[1].size() *
         dimStates_[2].size();
}

TileState TileSpace::stateAt(uint64_t index) const {
  TileState s;
  uint64_t nk = dimStates_[2].size(), nn = dimStates_[1].size();
  s.factors[2] = dimStates_[2][index % nk];
  index /= nk;
  s.factors[1] = dimStates_[1][index % nn];
  index /= nn;
  s.factors[0] = dimStates_[0][index];
  return s;
}

bool TileSpace::isValid(const TileState &s) const {
  for (int d = 0; d < 3; ++d) {
    if ((int)s.factors[d].size() != levels_[d])
      return false;
    for (int64_t f : s.factors[d])
      if (f < 1)
        return false;
    if (product(s.factors[d]) != padded_[d])
      return false;
  }
  return true;
}

GemmTiling TileSpace::cpuTiling(const TileState &s) const {
  GemmTiling t;
  t.mr = inner(s.factors[0], 1);
  t.nr = inner(s.factors[1], 1);
  // Blocks larger than the problem behave as the whole problem; clamping
  // keeps equal kernels equal (TileSpace::key).
  t.mc = std::min(inner(s.factors[0], 2), roundUp(problem_.m, t.mr));
  t.nc = std::min(inner(s.factors[1], 2), roundUp(problem_.n, t.nr));
  t.kc = std::min(inner(s.factors[2], 1), problem_.k);
  return t;
}

CudaTiling TileSpace::cudaTiling(const TileState &s) const {
  CudaTiling t;
  t.threadM = inner(s.factors[0], 1);
  t.threadN = inner(s.factors[1], 1);
  t.blockM = inner(s.factors[0], 2);
  t.blockN = inner(s.factors[1], 2);
  t.kStep = inner(s.factors[2], 1);
  return t;
}

std::array<int64_t, 5> TileSpace::key(const TileState &s) const {
  if (options_.target == TileTarget::Cpu) {
    GemmTiling t = cpuTiling(s);
    return {t.mc, t.nc, t.kc, t.mr, t.nr};
  }
  CudaTiling t = cudaTiling(s);
  return {t.blockM, t.blockN, t.kStep, t.threadM, t.threadN};
}

bool TileSpace::isLegal(const TileState &s, std::string *why) const {
  auto fail = [&](const std::string &reason) {
    if (why)
      *why = reason;
    return false;
  };
  if (!isValid(s))
    return fail("factors do not multiply to the padded dimensions");
  if (options_.target == TileTarget::Cuda) {
    std::string error = verifyCudaTiling(cudaTiling(s));
    return error.empty() ? true : fail(error);
  }
  GemmTiling t = cpuTiling(s);
  // The bf16 GEMM's paths have one register tile each (32 columns).
  std::string error = bf16Tile_
                          ? (t.mr == bf16Tile_ && t.nr == 32
                                 ? verifyGemmBf16Tiling(t)
                                 : "the bf16 gemm's register tile here is " +
                                       std::to_string(bf16Tile_) + "x32")
                          : verifyGemmTiling(t);
  if (!error.empty())
    return fail(error);
  if (t.kc < std::min(problem_.k, options_.minKc))
    return fail("kc=" + std::to_string(t.kc) + " below min(k, " +
                std::to_string(options_.minKc) + ")");
  const CacheSizes &c = options_.caches;
  const int64_t bytes = bf16Tile_ ? 2 : 4; // of a packed element
  if (t.kc * t.nr * bytes > c.l1)
    return fail("kc x nr panel of B exceeds L1");
  if (t.mc * t.kc * bytes > c.l2 / 2)
    return fail("mc x kc block of A exceeds half of L2");
  if (t.kc * t.nc * bytes > c.l3 / 2)
    return fail("kc x nc block of B exceeds half of L3");
  return true;
}

bool TileSpace::applies(const TileState &s, const Move &move) const {
  if (move.dim < 0 || move.dim > 2)
    return false;
  const std::vector<int64_t> &f = s.factors[move.dim];
  if (move.from < 0 || move.to < 0 || move.from >= (int)f.size() ||
      move.to >= (int)f.size() || move.from == move.to || move.prime < 2)
    return false;
  return f[move.from] % move.prime == 0;
}

TileState TileSpace::apply(const TileState &s, const Move &move) const {
  TileState r = s;
  r.factors[move.dim][move.from] /= move.prime;
  r.factors[move.dim][move.to] *= move.prime;
  return r;
}

std::vector<Move> TileSpace::moves(const TileState &s) const {
  std::vector<Move> result;
  for (const Move &m : actions_)
    if (applies(s, m))
      result.push_back(m);
  return result;
}

TileState TileSpace::initialState(bool *found) const {
  std::array<int64_t, 5> target;
  if (options_.target == TileTarget::Cpu) {
    GemmTiling d = defaultCpuTiling(options_.bf16);
    target = {d.mc, d.nc, d.kc, d.mr, d.nr};
  } else {
    CudaTiling d;
    target = {d.blockM, d.blockN, d.kStep, d.threadM, d.threadN};
  }
  auto dist = [](int64_t a, int64_t b) {
    return std::fabs(std::log((double)a / (double)b));
  };
  // Per dimension, its states ordered by their share of the distance; then
  // the best combinations first.
  std::array<std::vector<std::pair<double, size_t>>, 3> ranked;
  for (int d = 0; d < 3; ++d) {
    for (size_t i = 0; i < dimStates_[d].size(); ++i) {
      const std::vector<int64_t> &f = dimStates_[d][i];
      double v = d == 2 ? dist(std::min(inner(f, 1), problem_.k), target[2])
                        : dist(inner(f, 2), target[d]) +
                              2 * dist(inner(f, 1), target[3 + d]);
      ranked[d].push_back({v, i});
    }
    std::sort(ranked[d].begin(), ranked[d].end());
  }
  double bestDist = std::numeric_limits<double>::infinity();
  TileState best;
  bool any = false;
  auto consider = [&](size_t im, size_t in, size_t ik) {
    TileState s;
    s.factors[0] = dimStates_[0][ranked[0][im].second];
    s.factors[1] = dimStates_[1][ranked[1][in].second];
    s.factors[2] = dimStates_[2][ranked[2][ik].second];
    double v = ranked[0][im].first + ranked[1][in].first + ranked[2][ik].first;
    if (v < bestDist && isLegal(s)) {
      bestDist = v;
      best = s;
      any = true;
    }
  };
  size_t limit = 48;
  for (int pass = 0; pass < 2 && !any; ++pass) {
    size_t lm = pass ? ranked[0].size() : std::min(limit, ranked[0].size());
    size_t ln = pass ? ranked[1].size() : std::min(limit, ranked[1].size());
    size_t lk = pass ? ranked[2].size() : std::min(limit, ranked[2].size());
    for (size_t im = 0; im < lm; ++im)
      for (size_t in = 0; in < ln; ++in)
        for (size_t ik = 0; ik < lk; ++ik)
          consider(im, in, ik);
  }
  if (found)
    *found = any;
  if (!any)
    return stateAt(0);
  return best;
}

uint64_t TileSpace::countLegal() const {
  uint64_t count = 0;
  for (uint64_t i = 0, e = size(); i < e; ++i)
    count += isLegal(stateAt(i));
  return count;
}

} // namespace strata::rt::tune
