//===- RematTest.cpp - Keep / swap / recompute solvers --------------------===//

#include "strata/Analysis/Remat.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir::strata;

namespace {

/// A random problem of `n` candidates whose limit keeps about `fraction` of
/// their bytes; `copyScale` makes copies cheap (hidden) or expensive.
RematProblem randomProblem(std::mt19937 &rng, size_t n, double fraction,
                           double copyScale) {
  std::uniform_int_distribution<int64_t> bytes(1, 64);
  std::uniform_real_distribution<double> seconds(0.1, 2.0);
  RematProblem problem;
  double t = 0;
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    RematCandidate c;
    c.bytes = bytes(rng) * 1024;
    c.recomputeSeconds = seconds(rng);
    c.copySeconds = copyScale * static_cast<double>(c.bytes) / 65536.0;
    t += seconds(rng);
    c.outRelease = t;
    c.layer = static_cast<int64_t>(i / 2);
    total += c.bytes;
    problem.candidates.push_back(c);
  }
  problem.forwardSeconds = t + seconds(rng);
  // Backward: the reverse order, each needed after some compute.
  double b = 0;
  for (size_t i = n; i-- > 0;) {
    b += seconds(rng);
    problem.candidates[i].inDeadline = b;
  }
  problem.keptBytesLimit = static_cast<int64_t>(fraction * total);
  return problem;
}

TEST(Remat, EvaluateQueues) {
  RematProblem problem;
  problem.forwardSeconds = 10;
  // Two copies of 4 s released at 1 and 2: the queue ends at 1 + 4 + 4 = 9
  // (hidden); a third released at 8 ends at 13: 3 s exposed.
  for (double release : {1.0, 2.0, 8.0}) {
    RematCandidate c;
    c.bytes = 100;
    c.copySeconds = 4;
    c.outRelease = release;
    c.inDeadline = 100;
    problem.candidates.push_back(c);
  }
  using C = RematChoice;
  EXPECT_DOUBLE_EQ(
      evaluateRemat(problem, {C::Swap, C::Swap, C::Keep}).exposedCopySeconds,
      0.0);
  EXPECT_DOUBLE_EQ(
      evaluateRemat(problem, {C::Swap, C::Swap, C::Swap}).exposedCopySeconds,
      3.0);
  // Copies back: deadlines 5 and 6 for two 4 s copies: the second finishes
  // at 8, 2 s late.
  problem.candidates[0].inDeadline = 6;
  problem.candidates[1].inDeadline = 5;
  RematCost cost = evaluateRemat(problem, {C::Swap, C::Swap, C::Recompute});
  EXPECT_DOUBLE_EQ(cost.exposedCopySeconds, 2.0);
  EXPECT_EQ(cost.swappedBytes, 200);
  EXPECT_EQ(cost.keptBytes, 0);
  EXPECT_DOUBLE_EQ(cost.copySeconds, 16.0);
}

TEST(Remat, MilpMatchesBruteForce) {
  if (!haveRematMilp())
    GTEST_SKIP() << "built without COIN-OR CBC";
  std::mt19937 rng(7);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    size_t n = 3 + trial % 6;
    double fraction = 0.1 + 0.15 * (trial % 6);
    double copyScale = trial % 3 == 0 ? 0.2 : (trial % 3 == 1 ? 2.0 : 8.0);
    RematProblem problem = randomProblem(rng, n, fraction, copyScale);
    RematSolution exact = solveRematBruteForce(problem);
    RematOptions options;
    options.solver = RematSolver::Milp;
    RematSolution milp = solveRemat(problem, options);
    ASSERT_TRUE(exact.fits);
    ASSERT_TRUE(milp.error.empty()) << milp.error;
    ASSERT_TRUE(milp.fits) << "trial " << trial;
    EXPECT_TRUE(milp.optimal) << "trial " << trial;
    EXPECT_NEAR(milp.cost.added(), exact.cost.added(),
                1e-6 * std::max(1.0, exact.cost.added()))
        << "trial " << trial << " n " << n;
    ++checked;
  }
  EXPECT_EQ(checked, 60);
}

TEST(Remat, DpFitsAndIsNoBetterThanTheOptimum) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    RematProblem problem =
        randomProblem(rng, 4 + trial % 5, 0.1 + 0.1 * (trial % 8), 1.0);
    RematSolution exact = solveRematBruteForce(problem);
    RematOptions options;
    options.solver = RematSolver::Dp;
    RematSolution dp = solveRemat(problem, options);
    ASSERT_TRUE(dp.fits) << "trial " << trial;
    EXPECT_GE(dp.cost.added(), exact.cost.added() - 1e-9);
  }
}

TEST(Remat, NothingToDoKeepsEverything) {
  std::mt19937 rng(3);
  RematProblem problem = randomProblem(rng, 6, 1.0, 1.0);
  for (RematSolver solver : {RematSolver::Dp, RematSolver::Auto}) {
    RematOptions options;
    options.solver = solver;
    RematSolution solution = solveRemat(problem, options);
    ASSERT_TRUE(solution.fits);
    EXPECT_EQ(solution.cost.added(), 0.0);
    for (RematChoice choice : solution.choices)
      EXPECT_EQ(choice, RematChoice::Keep);
  }
}

TEST(Remat, ImpossibleLimit) {
  std::mt19937 rng(5);
  RematProblem problem = randomProblem(rng, 5, 0.5, 1.0);
  problem.keptBytesLimit = -1;
  RematOptions options;
  options.solver = RematSolver::Dp;
  EXPECT_FALSE(solveRemat(problem, options).fits);
  if (haveRematMilp()) {
    options.solver = RematSolver::Milp;
    RematSolution milp = solveRemat(problem, options);
    EXPECT_TRUE(!milp.error.empty() || !milp.fits);
  }
}

TEST(Remat, Baselines) {
  std::mt19937 rng(9);
  RematProblem problem = randomProblem(rng, 9, 1.0, 1.0);
  RematOptions options;
  options.solver = RematSolver::Sqrt;
  RematSolution sqrtSolution = solveRemat(problem, options);
  // sqrt(9) = 3: keep 0, 3, 6.
  for (size_t i = 0; i < 9; ++i)
    EXPECT_EQ(sqrtSolution.choices[i],
              i % 3 == 0 ? RematChoice::Keep : RematChoice::Recompute);
  options.solver = RematSolver::Layer;
  RematSolution layer = solveRemat(problem, options);
  // Layers of two candidates: keep 1, 3, 5, 7 and the last, 8.
  for (size_t i = 0; i < 9; ++i)
    EXPECT_EQ(layer.choices[i], (i % 2 == 1 || i == 8)
                                    ? RematChoice::Keep
                                    : RematChoice::Recompute);
}

} // namespace
