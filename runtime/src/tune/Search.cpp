//===- Search.cpp - G-BFS, N-A2C, random and exhaustive tiling search -----===//
//
// Part of strata_tune, the GEMM tiling search of strata-tune (not of the
// runtime library); like the runtime, it never includes an MLIR header.
//
// All searches go through one Evaluator, which prunes illegal states without
// measuring them, measures each kernel configuration at most once, keeps the
// best state and enforces the trial and time budget. Randomness comes from a
// seeded SplitMix64 generator with its own integer and real draws, so results
// do not depend on the standard library's distributions.
//
//===----------------------------------------------------------------------===//

#include "strata-tune/Tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <set>

namespace strata::rt::tune {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) { state = next(); }
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n).
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  /// Uniform in [0, 1).
  double real() { return (next() >> 11) * (1.0 / 9007199254740992.0); }

private:
  uint64_t state;
};

class Evaluator {
public:
  Evaluator(const TileSpace &space, const CostFunction &cost,
            const SearchOptions &options, SearchResult &result)
      : space(space), cost(cost), options(options), result(result),
        start(Clock::now()) {}

  double elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
  bool exhausted() const {
    if (options.maxTrials > 0 && result.trials >= options.maxTrials)
      return true;
    return options.maxSeconds > 0 && elapsed() >= options.maxSeconds;
  }
  /// The cost of `s`: +infinity when illegal (not measured), the remembered
  /// cost when its kernel configuration was measured, else a new trial.
  /// `fresh` says whether a trial was spent.
  double eval(const TileState &s, bool *fresh = nullptr) {
    if (fresh)
      *fresh = false;
    if (!space.isLegal(s))
      return kInf;
    std::array<int64_t, 5> key = space.key(s);
    auto it = memo.find(key);
    if (it != memo.end()) {
      ++result.cacheHits;
      return it->second;
    }
    if (exhausted())
      return kInf;
    double c = cost(s);
    if (std::isnan(c))
      c = kInf;
    memo[key] = c;
    ++result.trials;
    if (fresh)
      *fresh = true;
    if (c < kInf && (!result.found || c < result.bestCost)) {
      result.found = true;
      result.best = s;
      result.bestCost = c;
    }
    Trial trial{result.trials, c, result.found ? result.bestCost : kInf,
                elapsed(), s};
    result.history.push_back(trial);
    if (options.onTrial)
      options.onTrial(trial);
    return c;
  }
  bool measured(const TileState &s) const {
    return memo.count(space.key(s)) != 0;
  }

  const TileSpace &space;
  const CostFunction &cost;
  const SearchOptions &options;
  SearchResult &result;

private:
  Clock::time_point start;
  std::map<std::array<int64_t, 5>, double> memo;
};

/// A uniformly random legal state not in `visited` (rejection sampling);
/// false when none turned up in `attempts` draws.
bool randomLegal(const TileSpace &space, Rng &rng,
                 const std::set<TileState> &visited, int attempts,
                 TileState &out) {
  uint64_t size = space.size();
  for (int i = 0; i < attempts; ++i) {
    TileState s = space.stateAt(rng.below(size));
    if (!visited.count(s) && space.isLegal(s)) {
      out = s;
      return true;
    }
  }
  return false;
}

//===----------------------------------------------------------------------===//
// G-BFS
//===----------------------------------------------------------------------===//

/// Extension of the paper's neighbourhood (SearchOptions::gbfsTileMoves):
/// the legal states that differ from `s` only in how the innermost two
/// levels of m and of n split their product, i.e. every other register tile
/// (CPU mr x nr, CUDA threadM x threadN) with the same cache blocks (mc, nc,
/// kc; blockM, blockN, kStep). One such move can replace several prime moves
/// whose intermediate tiles are slow or not a kernel at all (8x32 -> 8x48
/// moves a 3 in and a 2 out; 8x32 -> 4x64 changes both dimensions).
std::vector<TileState> tileMoves(const TileSpace &space, const TileState &s) {
  std::vector<TileState> result;
  if (space.levels(0) < 2 || space.levels(1) < 2)
    return result;
  auto splits = [&](int d) {
    const std::vector<int64_t> &f = s.factors[d];
    int64_t block = f[f.size() - 2] * f.back();
    std::vector<int64_t> inner;
    for (int64_t x = 1; x <= block; ++x)
      if (block % x == 0)
        inner.push_back(x);
    return std::make_pair(block, inner);
  };
  auto [blockM, innerM] = splits(0);
  auto [blockN, innerN] = splits(1);
  for (int64_t a : innerM)
    for (int64_t b : innerN) {
      if (a == s.factors[0].back() && b == s.factors[1].back())
        continue;
      TileState t = s;
      t.factors[0].back() = a;
      t.factors[0][t.factors[0].size() - 2] = blockM / a;
      t.factors[1].back() = b;
      t.factors[1][t.factors[1].size() - 2] = blockN / b;
      if (space.isLegal(t))
        result.push_back(t);
    }
  return result;
}

/// Moves `take` elements chosen uniformly at random to the front of `v`
/// (partial Fisher-Yates).
void sampleFront(std::vector<TileState> &v, size_t take, Rng &rng) {
  for (size_t i = 0; i < take && i < v.size(); ++i)
    std::swap(v[i], v[i + rng.below(v.size() - i)]);
}

void searchGbfs(Evaluator &ev, Rng &rng) {
  const TileSpace &space = ev.space;
  const SearchOptions &opt = ev.options;
  struct Entry {
    double cost;
    int64_t order;
    TileState state;
    bool operator<(const Entry &o) const {
      // std::priority_queue pops the largest: least cost, then oldest.
      if (cost != o.cost)
        return cost > o.cost;
      return order > o.order;
    }
  };
  std::priority_queue<Entry> open;
  std::set<TileState> visited;
  int64_t order = 0;
  auto visit = [&](const TileState &s) {
    visited.insert(s);
    double c = ev.eval(s);
    if (c < kInf)
      open.push(Entry{c, order++, s});
  };
  bool found = false;
  TileState start = space.initialState(&found);
  if (!found)
    return;
  visit(start);
  // Extension: seeded random starting states besides the default one, so
  // that seeds can end in different basins.
  for (int i = 1; i < opt.gbfsStarts && !ev.exhausted(); ++i) {
    TileState s;
    if (randomLegal(space, rng, visited, 20000, s))
      visit(s);
  }
  int p = std::max(1, opt.gbfsSamples);
  while (!ev.exhausted()) {
    if (open.empty()) {
      // Every reachable state was expanded: restart somewhere new.
      TileState s;
      if (!randomLegal(space, rng, visited, 20000, s)) {
        ev.result.complete = true;
        return;
      }
      visit(s);
      continue;
    }
    Entry best = open.top();
    open.pop();
    std::vector<TileState> fresh;
    for (const Move &m : space.moves(best.state)) {
      TileState n = space.apply(best.state, m);
      if (!visited.count(n) && space.isLegal(n))
        fresh.push_back(n);
    }
    std::vector<TileState> tiles;
    if (opt.gbfsTileMoves > 0)
      for (TileState &n : tileMoves(space, best.state))
        if (!visited.count(n) &&
            std::find(fresh.begin(), fresh.end(), n) == fresh.end())
          tiles.push_back(std::move(n));
    // Sample p of the unvisited legal neighbours, and up to gbfsTileMoves of
    // the register-tile moves.
    size_t take = std::min<size_t>(p, fresh.size());
    size_t takeTiles =
        std::min<size_t>(std::max(0, opt.gbfsTileMoves), tiles.size());
    sampleFront(fresh, take, rng);
    sampleFront(tiles, takeTiles, rng);
    for (size_t i = 0; i < take && !ev.exhausted(); ++i)
      visit(fresh[i]);
    for (size_t i = 0; i < takeTiles && !ev.exhausted(); ++i)
      visit(tiles[i]);
    // A state with neighbours left stays in the queue.
    if (fresh.size() > take || tiles.size() > takeTiles)
      open.push(best);
  }
}

//===----------------------------------------------------------------------===//
// Random and exhaustive
//===----------------------------------------------------------------------===//

void searchRandom(Evaluator &ev, Rng &rng) {
  std::set<TileState> visited;
  while (!ev.exhausted()) {
    TileState s;
    if (!randomLegal(ev.space, rng, visited, 20000, s)) {
      ev.result.complete = true;
      return;
    }
    visited.insert(s);
    ev.eval(s);
  }
}

void searchExhaustive(Evaluator &ev, Rng &rng) {
  if (!ev.options.exhaustiveShuffle) {
    for (uint64_t i = 0, e = ev.space.size(); i < e; ++i) {
      if (ev.exhausted())
        return;
      TileState s = ev.space.stateAt(i);
      if (ev.space.isLegal(s))
        ev.eval(s);
    }
    ev.result.complete = true;
    return;
  }
  // The legal states in a seeded random order (Fisher-Yates), so that a
  // machine load drifting during the run is spread over the whole space
  // instead of following the enumeration order.
  std::vector<uint64_t> legal;
  for (uint64_t i = 0, e = ev.space.size(); i < e; ++i)
    if (ev.space.isLegal(ev.space.stateAt(i)))
      legal.push_back(i);
  for (size_t i = legal.size(); i > 1; --i)
    std::swap(legal[i - 1], legal[rng.below(i)]);
  for (uint64_t i : legal) {
    if (ev.exhausted())
      return;
    ev.eval(ev.space.stateAt(i));
  }
  ev.result.complete = true;
}

//===----------------------------------------------------------------------===//
// N-A2C
//===----------------------------------------------------------------------===//

/// A one-hidden-layer tanh network with a linear output layer, trained by
/// plain gradient steps.
class Mlp {
public:
  Mlp(int inputs, int hidden, int outputs, Rng &rng)
      : in(inputs), hid(hidden), out(outputs), w1(hidden * inputs),
        b1(hidden, 0.0), w2(outputs * hidden), b2(outputs, 0.0) {
    for (double &w : w1)
      w = (rng.real() * 2 - 1) / std::sqrt((double)inputs);
    for (double &w : w2)
      w = (rng.real() * 2 - 1) * 0.1 / std::sqrt((double)hidden);
  }
  /// Output of `x`; keeps the hidden activations for `step`.
  const std::vector<double> &forward(const std::vector<double> &x) {
    input = x;
    h.assign(hid, 0.0);
    for (int j = 0; j < hid; ++j) {
      double s = b1[j];
      for (int i = 0; i < in; ++i)
        s += w1[j * in + i] * x[i];
      h[j] = std::tanh(s);
    }
    y.assign(out, 0.0);
    for (int o = 0; o < out; ++o) {
      double s = b2[o];
      for (int j = 0; j < hid; ++j)
        s += w2[o * hid + j] * h[j];
      y[o] = s;
    }
    return y;
  }
  /// Moves the parameters by rate * d(sum_o g[o] * y[o]) for the last
  /// forward input (gradient ascent along `g`).
  void step(const std::vector<double> &g, double rate) {
    std::vector<double> dh(hid, 0.0);
    for (int o = 0; o < out; ++o) {
      if (g[o] == 0)
        continue;
      for (int j = 0; j < hid; ++j) {
        dh[j] += g[o] * w2[o * hid + j];
        w2[o * hid + j] += rate * g[o] * h[j];
      }
      b2[o] += rate * g[o];
    }
    for (int j = 0; j < hid; ++j) {
      double d = dh[j] * (1 - h[j] * h[j]);
      if (d == 0)
        continue;
      for (int i = 0; i < in; ++i)
        w1[j * in + i] += rate * d * input[i];
      b1[j] += rate * d;
    }
  }

private:
  int in, hid, out;
  std::vector<double> w1, b1, w2, b2;
  std::vector<double> input, h, y;
};

/// Features of a state: log(factor) / log(padded dim) per level, and a bias.
std::vector<double> features(const TileSpace &space, const TileState &s) {
  std::vector<double> x;
  for (int d = 0; d < 3; ++d) {
    double scale = std::log((double)space.paddedDim(d));
    for (int64_t f : s.factors[d])
      x.push_back(scale > 0 ? std::log((double)f) / scale : 0.0);
  }
  x.push_back(1.0);
  return x;
}

void searchNa2c(Evaluator &ev, Rng &rng) {
  const TileSpace &space = ev.space;
  const SearchOptions &opt = ev.options;
  bool found = false;
  TileState start = space.initialState(&found);
  if (!found)
    return;
  double startCost = ev.eval(start);
  const std::vector<Move> &actions = space.actions();
  int numFeatures = (int)features(space, start).size();
  int hidden = std::max(1, opt.a2cHidden);
  Mlp actor(numFeatures, hidden, (int)actions.size(), rng);
  Mlp critic(numFeatures, hidden, 1, rng);
  int stale = 0; // steps since the last new measurement
  const int kMaxStale = 2000;
  TileState best = start;
  double bestCost = startCost;
  while (!ev.exhausted() && stale < kMaxStale) {
    // Each episode explores the neighbourhood of the best state so far.
    if (ev.result.found) {
      best = ev.result.best;
      bestCost = ev.result.bestCost;
    }
    TileState s = best;
    double cs = bestCost;

    for (int t = 0; t < opt.a2cEpisodeSteps && !ev.exhausted(); ++t) {
      std::vector<double> x = features(space, s);
      // Valid actions lead to legal states.
      std::vector<int> valid;
      for (int a = 0; a < (int)actions.size(); ++a)
        if (space.applies(s, actions[a]) &&
            space.isLegal(space.apply(s, actions[a])))
          valid.push_back(a);
      if (valid.empty())
        break;
      const std::vector<double> &logits = actor.forward(x);
      double maxLogit = -kInf;
      for (int a : valid)
        maxLogit = std::max(maxLogit, logits[a]);
      std::vector<double> pi(actions.size(), 0.0);
      double z = 0;
      for (int a : valid)
        z += pi[a] = std::exp(logits[a] - maxLogit);
      for (int a : valid)
        pi[a] /= z;
      int chosen = valid.back();
      // Extension (a2cTileMoves): an exploring step may also take a
      // register-tile move, which is no action of the network's fixed set;
      // such a step trains only the critic.
      TileState tileNext;
      bool tileStep = false;
      if (rng.real() < opt.a2cEpsilon) {
        std::vector<TileState> tiles;
        if (opt.a2cTileMoves)
          tiles = tileMoves(space, s);
        if (tiles.empty() || rng.real() < 0.5) {
          chosen = valid[rng.below(valid.size())];
        } else {
          tileStep = true;
          tileNext = tiles[rng.below(tiles.size())];
        }
      } else {
        double u = rng.real(), acc = 0;
        for (int a : valid) {
          acc += pi[a];
          if (u < acc) {
            chosen = a;
            break;
          }
        }
      }
      TileState next = tileStep ? tileNext : space.apply(s, actions[chosen]);
      bool fresh = false;
      double cn = ev.eval(next, &fresh);
      stale = fresh ? 0 : stale + 1;
      bool terminal = !(cn < kInf);
      double reward = terminal ? -1.0 : std::log(cs / cn);
      reward = std::max(-1.0, std::min(1.0, reward));
      double vNext = terminal ? 0.0 : critic.forward(features(space, next))[0];
      double v = critic.forward(x)[0];
      double advantage = reward + opt.a2cDiscount * vNext - v;
      critic.step({1.0}, opt.a2cCriticRate * advantage);
      if (!tileStep) {
        // d log pi(chosen) / d logits = onehot(chosen) - pi over valid
        // actions.
        actor.forward(x);
        std::vector<double> g(actions.size(), 0.0);
        for (int a : valid)
          g[a] = -pi[a];
        g[chosen] += 1.0;
        actor.step(g, opt.a2cActorRate * advantage);
      }
      if (terminal || ev.exhausted())
        break;
      s = next;
      cs = cn;
    }
    if (!ev.result.found)
      break;
  }
  if (stale >= kMaxStale)
    ev.result.complete = true;
}

} // namespace

const char *algorithmName(Algorithm a) {
  switch (a) {
  case Algorithm::Gbfs:
    return "gbfs";
  case Algorithm::Na2c:
    return "na2c";
  case Algorithm::Random:
    return "random";
  case Algorithm::Exhaustive:
    return "exhaustive";
  }
  return "unknown";
}

bool parseAlgorithm(const std::string &name, Algorithm &a) {
  for (Algorithm x : {Algorithm::Gbfs, Algorithm::Na2c, Algorithm::Random,
                      Algorithm::Exhaustive})
    if (name == algorithmName(x)) {
      a = x;
      return true;
    }
  return false;
}

SearchResult search(const TileSpace &space, const CostFunction &cost,
                    const SearchOptions &options) {
  SearchResult result;
  Evaluator ev(space, cost, options, result);
  Rng rng(options.seed);
  switch (options.algorithm) {
  case Algorithm::Gbfs:
    searchGbfs(ev, rng);
    break;
  case Algorithm::Na2c:
    searchNa2c(ev, rng);
    break;
  case Algorithm::Random:
    searchRandom(ev, rng);
    break;
  case Algorithm::Exhaustive:
    searchExhaustive(ev, rng);
    break;
  }
  result.seconds = ev.elapsed();
  return result;
}

} // namespace strata::rt::tune
