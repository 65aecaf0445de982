//===- Schedule.h - Learning-rate schedules ------------------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// A schedule scales the plan's learning rate (every optimizer update's `lr`
// attribute) per step; `strata-run --lr-schedule` applies it before each
// step. The factor depends only on the step number, so a resumed run
// continues the schedule exactly. Step s of a run (1-based, as strata-run
// prints) is PyTorch's scheduler index t = s - 1:
//
//   constant                      1
//   linear-warmup  warmup=W start=F  F + (1 - F) min(t, W) / W
//                                 (torch.optim.lr_scheduler.LinearLR with
//                                 start_factor F, total_iters W)
//   cosine         total=T min-lr=M  M/lr + (1 - M/lr) (1 + cos(pi min(t, T) /
//   T)) / 2
//                                 (CosineAnnealingLR with T_max T, eta_min M,
//                                 in its closed form; held at M after T,
//                                 where PyTorch's period turns back up)
//   warmup-cosine  warmup=W total=T min-lr=M
//                                 t < W: (t + 1) / W; then the cosine over
//                                 the remaining T - W steps
//   step           every=K gamma=G  G^floor(t / K)  (StepLR)
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_SCHEDULE_H
#define STRATA_RT_SCHEDULE_H

#include "strata-rt/Comm.h"
#include "strata-rt/Support.h"
#include "strata-rt/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::rt {

struct LrSchedule {
  enum class Kind { Constant, LinearWarmup, Cosine, WarmupCosine, Step };
  Kind kind = Kind::Constant;
  int64_t warmup = 0;
  int64_t total = 0;
  int64_t every = 0;
  double startFactor = 0;
  double gamma = 0.1;
  /// An absolute learning rate (cosine kinds); 0 by default.
  double minLr = 0;

  /// Parses "KIND[,key=value...]" (keys above); errors name the key and the
  /// allowed range, e.g. "--lr-schedule: warmup must be 1..1e9, got 0".
  static Status parse(const std::string &text, LrSchedule &schedule);
  /// The learning rate of step `step` (1-based) for a plan rate `baseLr`.
  double lr(double baseLr, int64_t step) const;
  /// "warmup-cosine (warmup 100, total 5000, min-lr 1e-05)".
  std::string describe() const;
};

/// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_:
/// when the L2 norm of the gradients exceeds `maxNorm`, scales `grads` (f32)
/// by maxNorm / (norm + 1e-6). With a communicator of several ranks the
/// squares are summed over all of them and divided by `replicas` (replicas
/// hold the same synchronised gradients; pipeline stages hold disjoint
/// ones), so `grads` are this rank's share. Returns the norm before
/// clipping, or a failed collective's status through `status`.
double clipGradientsByNorm(const std::vector<Tensor> &grads, double maxNorm,
                           Communicator *comm, int64_t replicas,
                           Status &status);

} // namespace strata::rt

#endif // STRATA_RT_SCHEDULE_H
