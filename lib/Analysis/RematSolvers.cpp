//===- RematSolvers.cpp - Keep, swap or recompute saved activations -------===//
//
// The model's cost (evaluateRemat), the dp, sqrt and layer solvers, the
// brute force the tests compare the MILP with, and the solver dispatch. The
// MILP is in RematMilp.cpp.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/Remat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir::strata;

/// Seconds the FIFO of copies to host runs past the end of the forward pass.
static double exposedOut(const RematProblem &problem,
                         const std::vector<RematChoice> &choices) {
  double t = 0;
  for (size_t i = 0; i < choices.size(); ++i)
    if (choices[i] == RematChoice::Swap) {
      const RematCandidate &c = problem.candidates[i];
      t = std::max(t, c.outRelease) + c.copySeconds;
    }
  return std::max(0.0, t - problem.forwardSeconds);
}

/// The largest lateness of the FIFO of copies back, in deadline order.
static double exposedIn(const RematProblem &problem,
                        const std::vector<RematChoice> &choices) {
  std::vector<size_t> order;
  for (size_t i = 0; i < choices.size(); ++i)
    if (choices[i] == RematChoice::Swap)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return problem.candidates[a].inDeadline < problem.candidates[b].inDeadline;
  });
  double t = 0, late = 0;
  for (size_t i : order) {
    t += problem.candidates[i].copySeconds;
    late = std::max(late, t - problem.candidates[i].inDeadline);
  }
  return late;
}

RematCost mlir::strata::evaluateRemat(const RematProblem &problem,
                                      const std::vector<RematChoice> &choices) {
  RematCost cost;
  for (size_t i = 0; i < choices.size(); ++i) {
    const RematCandidate &c = problem.candidates[i];
    switch (choices[i]) {
    case RematChoice::Keep:
      cost.keptBytes += c.bytes;
      break;
    case RematChoice::Swap:
      cost.swappedBytes += c.bytes;
      cost.copySeconds += 2 * c.copySeconds;
      break;
    case RematChoice::Recompute:
      cost.recomputeSeconds += c.recomputeSeconds;
      break;
    }
  }
  cost.exposedCopySeconds =
      exposedOut(problem, choices) + exposedIn(problem, choices);
  return cost;
}

static RematSolution finish(const RematProblem &problem,
                            std::vector<RematChoice> choices,
                            const char *solver) {
  RematSolution solution;
  solution.cost = evaluateRemat(problem, choices);
  solution.choices = std::move(choices);
  solution.solver = solver;
  solution.fits = solution.cost.keptBytes <= problem.keptBytesLimit;
  return solution;
}

/// Chen et al.'s sqrt(n) checkpoints: keep every ceil(sqrt(n))-th candidate,
/// recompute the others (the budget plays no part).
static RematSolution solveSqrt(const RematProblem &problem) {
  size_t n = problem.candidates.size();
  size_t k = std::max<size_t>(
      1, static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(n)))));
  std::vector<RematChoice> choices(n, RematChoice::Recompute);
  for (size_t i = 0; i < n; i += k)
    choices[i] = RematChoice::Keep;
  return finish(problem, std::move(choices), "sqrt");
}

/// Checkpoint every layer: keep the last candidate of each layer, recompute
/// the others.
static RematSolution solveLayer(const RematProblem &problem) {
  size_t n = problem.candidates.size();
  std::vector<RematChoice> choices(n, RematChoice::Recompute);
  for (size_t i = 0; i < n; ++i)
    if (i + 1 == n ||
        problem.candidates[i + 1].layer != problem.candidates[i].layer)
      choices[i] = RematChoice::Keep;
  return finish(problem, std::move(choices), "layer");
}

/// Minimum total recompute seconds of a subset of `items` whose bytes sum to
/// at least `need` (a covering knapsack by dynamic programming over bytes
/// in units of need / 4096, each item's weight rounded down, so the chosen
/// bytes really cover `need`). Returns the chosen items; empty with `ok`
/// false when even all of them do not cover it.
static std::vector<size_t> coverKnapsack(const RematProblem &problem,
                                         const std::vector<size_t> &items,
                                         int64_t need, bool &ok) {
  ok = true;
  if (need <= 0)
    return {};
  int64_t total = 0;
  for (size_t i : items)
    total += problem.candidates[i].bytes;
  if (total < need) {
    ok = false;
    return {};
  }
  const int64_t kCells = 4096;
  int64_t unit = std::max<int64_t>(1, (need + kCells - 1) / kCells);
  int64_t target = (need + unit - 1) / unit;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  size_t n = items.size();
  // best[i][w]: least seconds over the first i items reaching weight >= w.
  std::vector<std::vector<double>> best(n + 1,
                                        std::vector<double>(target + 1, kInf));
  best[0][0] = 0;
  for (size_t i = 0; i < n; ++i) {
    const RematCandidate &c = problem.candidates[items[i]];
    int64_t w = c.bytes / unit;
    for (int64_t have = 0; have <= target; ++have) {
      double skip = best[i][have];
      if (skip == kInf)
        continue;
      best[i + 1][have] = std::min(best[i + 1][have], skip);
      int64_t next = std::min(target, have + w);
      best[i + 1][next] =
          std::min(best[i + 1][next], skip + c.recomputeSeconds);
    }
  }
  if (best[n][target] == kInf) {
    // Rounding every weight down lost the cover: take all of them.
    return items;
  }
  std::vector<size_t> chosen;
  int64_t have = target;
  for (size_t i = n; i-- > 0;) {
    // Which predecessor produced best[i + 1][have]?
    const RematCandidate &c = problem.candidates[items[i]];
    int64_t w = c.bytes / unit;
    if (best[i][have] == best[i + 1][have])
      continue;
    chosen.push_back(items[i]);
    // Find the weight it came from: any `from` with min(target, from + w)
    // == have and best[i][from] + cost == best[i + 1][have].
    int64_t from = have;
    for (int64_t f = std::max<int64_t>(0, have - w); f <= have; ++f)
      if (std::min(target, f + w) == have &&
          best[i][f] + c.recomputeSeconds == best[i + 1][have]) {
        from = f;
        break;
      }
    have = from;
  }
  return chosen;
}

/// Covering knapsack with costs `cost` (per candidate) over `items`: the
/// same dynamic program as coverKnapsack, on a copy of the problem whose
/// recompute seconds are `cost`.
static std::vector<size_t> coverWithCosts(const RematProblem &problem,
                                          const std::vector<double> &cost,
                                          const std::vector<size_t> &items,
                                          int64_t need, bool &ok) {
  RematProblem priced = problem;
  for (size_t i = 0; i < cost.size(); ++i)
    priced.candidates[i].recomputeSeconds = cost[i];
  return coverKnapsack(priced, items, need, ok);
}

/// Each dropped candidate priced alone: recompute, or both its copies fully
/// exposed (an upper bound of what swapping it adds); the cheapest cover,
/// each dropped candidate taking its cheaper way.
static std::vector<RematChoice> standaloneCover(const RematProblem &problem,
                                                int64_t need) {
  size_t n = problem.candidates.size();
  std::vector<double> cost(n);
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) {
    const RematCandidate &c = problem.candidates[i];
    cost[i] = std::min(c.recomputeSeconds, 2 * c.copySeconds);
    all[i] = i;
  }
  bool ok = true;
  std::vector<RematChoice> choices(n, RematChoice::Keep);
  for (size_t i : coverWithCosts(problem, cost, all, need, ok)) {
    const RematCandidate &c = problem.candidates[i];
    choices[i] = c.recomputeSeconds <= 2 * c.copySeconds
                     ? RematChoice::Recompute
                     : RematChoice::Swap;
  }
  return choices;
}

/// The fast solver, the better of two covers: (a) swap what the copy
/// queues can hide entirely (largest first), recompute the cheapest cover
/// of the rest (a knapsack) and keep again the swaps not needed; (b) a
/// knapsack over every candidate priced alone (standaloneCover).
static RematSolution solveDp(const RematProblem &problem);

static RematSolution solveHiddenSwapsFirst(const RematProblem &problem) {
  size_t n = problem.candidates.size();
  int64_t total = 0;
  for (const RematCandidate &c : problem.candidates)
    total += c.bytes;
  int64_t need = total - problem.keptBytesLimit;
  std::vector<RematChoice> choices(n, RematChoice::Keep);
  if (need <= 0)
    return finish(problem, std::move(choices), "dp");

  std::vector<size_t> bySize(n);
  std::iota(bySize.begin(), bySize.end(), 0);
  std::stable_sort(bySize.begin(), bySize.end(), [&](size_t a, size_t b) {
    return problem.candidates[a].bytes > problem.candidates[b].bytes;
  });
  int64_t swapped = 0;
  for (size_t i : bySize) {
    if (swapped >= need)
      break;
    choices[i] = RematChoice::Swap;
    if (evaluateRemat(problem, choices).exposedCopySeconds > 0)
      choices[i] = RematChoice::Keep;
    else
      swapped += problem.candidates[i].bytes;
  }
  std::vector<size_t> rest;
  for (size_t i = 0; i < n; ++i)
    if (choices[i] == RematChoice::Keep)
      rest.push_back(i);
  bool ok = true;
  for (size_t i : coverKnapsack(problem, rest, need - swapped, ok))
    choices[i] = RematChoice::Recompute;
  // Swaps that the recomputes made unnecessary go back to keep, smallest
  // first.
  int64_t dropped = total - evaluateRemat(problem, choices).keptBytes;
  for (auto it = bySize.rbegin(); it != bySize.rend(); ++it)
    if (choices[*it] == RematChoice::Swap &&
        dropped - problem.candidates[*it].bytes >= need) {
      choices[*it] = RematChoice::Keep;
      dropped -= problem.candidates[*it].bytes;
    }
  return finish(problem, std::move(choices), "dp");
}

static RematSolution solveDp(const RematProblem &problem) {
  RematSolution first = solveHiddenSwapsFirst(problem);
  int64_t total = 0;
  for (const RematCandidate &c : problem.candidates)
    total += c.bytes;
  int64_t need = total - problem.keptBytesLimit;
  if (need <= 0)
    return first;
  RematSolution second = finish(problem, standaloneCover(problem, need), "dp");
  if (!first.fits)
    return second;
  if (second.fits && second.cost.added() < first.cost.added())
    return second;
  return first;
}

RematSolution mlir::strata::solveRematBruteForce(const RematProblem &problem) {
  size_t n = problem.candidates.size();
  std::vector<RematChoice> choices(n, RematChoice::Keep);
  RematSolution best;
  best.solver = "brute-force";
  double bestAdded = std::numeric_limits<double>::infinity();
  while (true) {
    RematCost cost = evaluateRemat(problem, choices);
    if (cost.keptBytes <= problem.keptBytesLimit && cost.added() < bestAdded) {
      bestAdded = cost.added();
      best.choices = choices;
      best.cost = cost;
      best.fits = true;
      best.optimal = true;
      best.gap = 0;
    }
    size_t i = 0;
    for (; i < n; ++i) {
      if (choices[i] != RematChoice::Recompute) {
        choices[i] = static_cast<RematChoice>(static_cast<int>(choices[i]) + 1);
        break;
      }
      choices[i] = RematChoice::Keep;
    }
    if (i == n)
      break;
  }
  return best;
}

RematSolution mlir::strata::solveRemat(const RematProblem &problem,
                                       const RematOptions &options) {
  switch (options.solver) {
  case RematSolver::Sqrt:
    return solveSqrt(problem);
  case RematSolver::Layer:
    return solveLayer(problem);
  case RematSolver::Dp:
    return solveDp(problem);
  case RematSolver::Milp:
    return detail::solveRematMilp(problem, options.timeLimitSeconds);
  case RematSolver::Auto:
    if (haveRematMilp() && static_cast<int64_t>(problem.candidates.size()) <=
                               options.autoMilpCandidates) {
      RematSolution milp =
          detail::solveRematMilp(problem, options.timeLimitSeconds);
      if (milp.error.empty())
        return milp;
    }
    return solveDp(problem);
  }
  return solveDp(problem);
}
