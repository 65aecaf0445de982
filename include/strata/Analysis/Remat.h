//===- Remat.h - Keep, swap or recompute saved activations ------*- C++ -*-===//
//
// The decision problem of --strata-remat, free of MLIR: every activation a
// training step saves for its backward pass is kept in device memory,
// swapped to host memory and back, or dropped and recomputed from what is
// still available, so that the kept bytes fit a budget at the least added
// time. The model (one definition, `evaluateRemat`, that every solver and
// test shares):
//
// - Keeping candidate i costs nothing and holds `bytes` until its backward
//   use; the solvers keep at most `keptBytesLimit` bytes of candidates.
// - Recomputing it costs `recomputeSeconds`: the forward ops from the
//   nearest available values (function arguments and other candidates,
//   whatever their choice) to it, cloned into the backward pass.
// - Swapping it costs only the copy time the compute cannot hide. The
//   copies to host form one FIFO queue on the host link, in forward order,
//   each released when its producer finishes (`outRelease` seconds into the
//   forward pass, which takes `forwardSeconds`); whatever of the queue is
//   left when the forward pass ends is exposed. The copies back form a
//   second queue, in the order the backward pass needs them, starting when
//   it starts, each due `inDeadline` seconds into it; the largest lateness
//   is exposed. Each copy takes `copySeconds`.
//
// added seconds = sum of recomputeSeconds of recomputed candidates
//               + exposed seconds of the out queue + of the in queue.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_REMAT_H
#define STRATA_ANALYSIS_REMAT_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::strata {

enum class RematChoice : uint8_t { Keep, Swap, Recompute };

struct RematCandidate {
  int64_t bytes = 0;
  double recomputeSeconds = 0;
  double copySeconds = 0;
  /// Seconds into the forward pass when its producer finishes.
  double outRelease = 0;
  /// Seconds into the backward pass when it is first needed.
  double inDeadline = 0;
  /// Model layer of its producer (-1: none); the `layer` baseline keeps
  /// the last candidate of each layer.
  int64_t layer = -1;
};

/// Candidates in forward (program) order.
struct RematProblem {
  std::vector<RematCandidate> candidates;
  double forwardSeconds = 0;
  int64_t keptBytesLimit = 0;
};

struct RematCost {
  double recomputeSeconds = 0;
  double copySeconds = 0;
  double exposedCopySeconds = 0;
  int64_t keptBytes = 0;
  int64_t swappedBytes = 0;
  double added() const { return recomputeSeconds + exposedCopySeconds; }
};

/// The model's cost of `choices` (one per candidate).
RematCost evaluateRemat(const RematProblem &problem,
                        const std::vector<RematChoice> &choices);

enum class RematSolver : uint8_t { Auto, Milp, Dp, Sqrt, Layer };

struct RematOptions {
  RematSolver solver = RematSolver::Auto;
  /// The MILP's time limit.
  double timeLimitSeconds = 10;
  /// `auto` runs the MILP up to this many candidates, else dp.
  int64_t autoMilpCandidates = 400;
};

struct RematSolution {
  std::vector<RematChoice> choices;
  RematCost cost;
  /// "milp", "dp", "sqrt" or "layer".
  std::string solver;
  /// Whether the choices keep at most keptBytesLimit.
  bool fits = false;
  /// MILP: proven optimal under the model.
  bool optimal = false;
  /// MILP: relative gap between the solution and the best bound when the
  /// time limit stopped it; 0 when optimal; -1 when unknown.
  double gap = -1;
  bool timedOut = false;
  /// Non-empty when the solver failed (e.g. the MILP found no solution).
  std::string error;
};

RematSolution solveRemat(const RematProblem &problem,
                         const RematOptions &options);

/// The exact optimum by enumerating all 3^n choices (tests; n <= 13).
RematSolution solveRematBruteForce(const RematProblem &problem);

/// Whether this build has the MILP solver (COIN-OR CBC).
bool haveRematMilp();

namespace detail {
RematSolution solveRematMilp(const RematProblem &problem,
                             double timeLimitSeconds);
} // namespace detail

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_REMAT_H
