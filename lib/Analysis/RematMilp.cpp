//===- RematMilp.cpp - The exact keep / swap / recompute choice -----------===//
//
// The model of Remat.h as a mixed-integer program, solved with COIN-OR CBC
// under a time limit and warm-started from the dp solution:
//
//   binary k_i, s_i, r_i (keep, swap, recompute), k_i + s_i + r_i = 1
//   sum_i bytes_i k_i <= keptBytesLimit
//   E_out >= sum_{j >= i} copy_j s_j - (forward - release_i)   for every i
//   E_in  >= sum_{j <= i} copy_j s_j - deadline_i   (deadline order), every i
//   minimise sum_i recompute_i r_i + E_out + E_in
//
// The FIFO with release times finishes at max_i (release_i + the copies from
// i on), and the lateness of the deadline-ordered FIFO is the largest prefix
// of copies minus its deadline; rows of candidates that are not swapped are
// implied by those of the next swapped one, so every row may be written.
// Checkmate (recompute variables) and POET (swap variables) use the same
// kind of formulation over a finer time grid.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/Remat.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#ifdef STRATA_HAVE_CBC
#include "CbcModel.hpp"
#include "CoinError.hpp"
#include "CoinModel.hpp"
#include "OsiClpSolverInterface.hpp"
#endif

using namespace mlir::strata;

#ifndef STRATA_HAVE_CBC
bool mlir::strata::haveRematMilp() { return false; }

RematSolution mlir::strata::detail::solveRematMilp(const RematProblem &,
                                                   double) {
  RematSolution solution;
  solution.solver = "milp";
  solution.error = "this build has no MILP solver (COIN-OR CBC was not found "
                   "when it was configured)";
  return solution;
}
#else
bool mlir::strata::haveRematMilp() { return true; }

namespace {
/// Column indices of the formulation.
struct Columns {
  size_t n;
  int keep(size_t i) const { return static_cast<int>(3 * i); }
  int swap(size_t i) const { return static_cast<int>(3 * i + 1); }
  int recompute(size_t i) const { return static_cast<int>(3 * i + 2); }
  int exposedOut() const { return static_cast<int>(3 * n); }
  int exposedIn() const { return static_cast<int>(3 * n + 1); }
  int count() const { return static_cast<int>(3 * n + 2); }
};
} // namespace

/// Builds the model with times divided by `timeScale` and bytes by
/// `byteScale` (CBC's tolerances are absolute).
static void buildModel(const RematProblem &problem, const Columns &cols,
                       double timeScale, double byteScale, CoinModel &model) {
  size_t n = cols.n;
  for (size_t i = 0; i < n; ++i) {
    const RematCandidate &c = problem.candidates[i];
    for (int col : {cols.keep(i), cols.swap(i), cols.recompute(i)}) {
      model.setColumnBounds(col, 0, 1);
      model.setInteger(col);
    }
    model.setObjective(cols.recompute(i), c.recomputeSeconds / timeScale);
  }
  for (int col : {cols.exposedOut(), cols.exposedIn()}) {
    model.setColumnBounds(col, 0, COIN_DBL_MAX);
    model.setObjective(col, 1.0);
  }
  // One choice per candidate.
  for (size_t i = 0; i < n; ++i) {
    int columns[3] = {cols.keep(i), cols.swap(i), cols.recompute(i)};
    double ones[3] = {1, 1, 1};
    model.addRow(3, columns, ones, 1, 1);
  }
  // The kept bytes fit (a hair tighter than the limit, so that the rounding
  // of the scaled row cannot admit a solution over it: the pass re-checks
  // exact bytes).
  {
    std::vector<int> columns;
    std::vector<double> bytes;
    for (size_t i = 0; i < n; ++i) {
      columns.push_back(cols.keep(i));
      bytes.push_back(static_cast<double>(problem.candidates[i].bytes) /
                      byteScale);
    }
    double limit = static_cast<double>(problem.keptBytesLimit) / byteScale;
    model.addRow(static_cast<int>(n), columns.data(), bytes.data(),
                 -COIN_DBL_MAX, limit - 1e-9 * std::max(1.0, limit));
  }
  // The out queue: suffix sums.
  for (size_t i = 0; i < n; ++i) {
    std::vector<int> columns;
    std::vector<double> seconds;
    for (size_t j = i; j < n; ++j) {
      columns.push_back(cols.swap(j));
      seconds.push_back(problem.candidates[j].copySeconds / timeScale);
    }
    columns.push_back(cols.exposedOut());
    seconds.push_back(-1.0);
    double slack =
        (problem.forwardSeconds - problem.candidates[i].outRelease) / timeScale;
    model.addRow(static_cast<int>(columns.size()), columns.data(),
                 seconds.data(), -COIN_DBL_MAX, slack);
  }
  // The in queue: prefix sums in deadline order.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return problem.candidates[a].inDeadline < problem.candidates[b].inDeadline;
  });
  for (size_t k = 0; k < n; ++k) {
    std::vector<int> columns;
    std::vector<double> seconds;
    for (size_t m = 0; m <= k; ++m) {
      columns.push_back(cols.swap(order[m]));
      seconds.push_back(problem.candidates[order[m]].copySeconds / timeScale);
    }
    columns.push_back(cols.exposedIn());
    seconds.push_back(-1.0);
    model.addRow(static_cast<int>(columns.size()), columns.data(),
                 seconds.data(), -COIN_DBL_MAX,
                 problem.candidates[order[k]].inDeadline / timeScale);
  }
}

/// The columns of `choices`, both queues' exposed time set to the model's
/// total exposed time (feasible: each covers its own queue).
static std::vector<double> columnsOf(const RematProblem &problem,
                                     const Columns &cols,
                                     const std::vector<RematChoice> &choices,
                                     double timeScale) {
  std::vector<double> x(cols.count(), 0.0);
  for (size_t i = 0; i < cols.n; ++i)
    x[choices[i] == RematChoice::Keep   ? cols.keep(i)
      : choices[i] == RematChoice::Swap ? cols.swap(i)
                                        : cols.recompute(i)] = 1.0;
  double exposed = evaluateRemat(problem, choices).exposedCopySeconds;
  x[cols.exposedOut()] = exposed / timeScale;
  x[cols.exposedIn()] = exposed / timeScale;
  return x;
}
static RematSolution solveMilp(const RematProblem &problem,
                               double timeLimitSeconds) {
  RematSolution solution;
  solution.solver = "milp";
  size_t n = problem.candidates.size();
  Columns cols{n};
  double timeScale = std::max(problem.forwardSeconds, 1e-12);
  int64_t maxBytes = 1;
  for (const RematCandidate &c : problem.candidates) {
    timeScale = std::max({timeScale, c.recomputeSeconds, c.copySeconds});
    maxBytes = std::max(maxBytes, c.bytes);
  }
  double byteScale = static_cast<double>(maxBytes);

  CoinModel model;
  buildModel(problem, cols, timeScale, byteScale, model);
  OsiClpSolverInterface solver;
  solver.loadFromCoinModel(model);
  solver.messageHandler()->setLogLevel(0);
  solver.initialSolve();
  CbcModel cbc(solver);
  cbc.setLogLevel(0);
  cbc.messageHandler()->setLogLevel(0);
  cbc.setMaximumSeconds(std::max(0.01, timeLimitSeconds));
  // Warm start from the fast solver when it fits.
  RematOptions dpOptions;
  dpOptions.solver = RematSolver::Dp;
  RematSolution dp = solveRemat(problem, dpOptions);
  if (dp.fits) {
    std::vector<double> x = columnsOf(problem, cols, dp.choices, timeScale);
    double objective = dp.cost.recomputeSeconds / timeScale +
                       2 * dp.cost.exposedCopySeconds / timeScale;
    cbc.setBestSolution(x.data(), cols.count(), objective, true);
  }
  cbc.branchAndBound();

  const double *best = cbc.bestSolution();
  if (!best) {
    solution.timedOut = cbc.isSecondsLimitReached();
    solution.error = solution.timedOut
                         ? "the MILP found no solution within its time limit"
                         : "the MILP has no solution (the budget cannot be "
                           "met by any choice)";
    return solution;
  }
  solution.choices.assign(n, RematChoice::Keep);
  for (size_t i = 0; i < n; ++i) {
    if (best[cols.swap(i)] > 0.5)
      solution.choices[i] = RematChoice::Swap;
    else if (best[cols.recompute(i)] > 0.5)
      solution.choices[i] = RematChoice::Recompute;
  }
  solution.cost = evaluateRemat(problem, solution.choices);
  solution.fits = solution.cost.keptBytes <= problem.keptBytesLimit;
  solution.optimal = cbc.isProvenOptimal();
  solution.timedOut = cbc.isSecondsLimitReached();
  double objective = solution.cost.added() / timeScale;
  double bound = cbc.getBestPossibleObjValue();
  solution.gap =
      solution.optimal
          ? 0.0
          : (objective > 1e-12 ? std::max(0.0, (objective - bound) / objective)
                               : 0.0);
  return solution;
}
RematSolution mlir::strata::detail::solveRematMilp(const RematProblem &problem,
                                                   double timeLimitSeconds) {
  try {
    return solveMilp(problem, timeLimitSeconds);
  } catch (const CoinError &e) {
    RematSolution solution;
    solution.solver = "milp";
    solution.error = "CBC failed: " + e.message();
    return solution;
  }
}
#endif
