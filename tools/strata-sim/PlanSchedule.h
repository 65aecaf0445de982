//===- PlanSchedule.h - A runtime plan as a timeline schedule --*- C++ -*-===//
//
// Part of the Strata project.
//
// strata-sim turns the programs of a loaded plan (strata-rt/Plan.h) into the
// per-rank instruction lists of the timeline model (strata/Analysis/
// Timeline.h), with each kernel's seconds from a roofline over the target
// (FLOPs / peak, bytes / memory bandwidth) or, with a measured profile, from
// the profile's per-kernel times.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TOOLS_STRATA_SIM_PLANSCHEDULE_H
#define STRATA_TOOLS_STRATA_SIM_PLANSCHEDULE_H

#include "strata-rt/Plan.h"
#include "strata/Analysis/Timeline.h"

#include <map>
#include <string>
#include <utility>

namespace mlir::strata::sim {

/// The work of one kernel.
struct Work {
  double flops = 0;
  /// Bytes read and written.
  double bytes = 0;
};

/// Whether `inst` is communication (a collective, point-to-point, or a
/// host copy's start or wait) rather than a kernel of the rank's thread.
bool isCommunication(const ::strata::rt::Instruction &inst);

/// The bytes of `inst`'s inputs (a bucket's tensors, a send's tensor).
double inputBytes(const ::strata::rt::Plan &plan,
                  const ::strata::rt::Instruction &inst);

/// FLOPs and bytes of `inst` (zero for communication and copies).
Work getWork(const ::strata::rt::Plan &plan,
             const ::strata::rt::Instruction &inst);

/// Measured seconds per kernel signature (strata-rt/Profile.h's
/// kernelSignature), the "kernels" of a strata-run --profile file.
using KernelTimes = std::map<std::string, double>;

struct CostOptions {
  /// Roofline: FLOP/s and bytes/s of one device.
  double peakFlops = 1e12;
  double memoryBandwidth = 1e11;
  /// Seconds every kernel (a multi-tensor group: once) costs on top of its
  /// own time: the executor's dispatch between kernels (or a launch).
  /// --calibrate measures it (the median gap between consecutive kernels of
  /// the program thread); --overhead-us sets it. Not scaled by what-if
  /// compute=...
  double kernelOverhead = 0;
  /// Seconds of each rank's step outside its instructions' span (the
  /// executor's work before the first and after the last);
  /// --calibrate measures it (the median over steps of rank 0's measured
  /// step time minus that span). A "step setup" instruction at the start of
  /// every rank's program.
  double stepOverhead = 0;
  /// Kernels take this many times as long (what-if compute=...).
  double computeScale = 1;
  /// Bytes per second of the host copies around a bucketed all-reduce: its
  /// start packs the bucket's tensors into one buffer and its wait unpacks
  /// the sums, each on the rank's compute thread (--calibrate measures it
  /// from the starts; 0: half the roofline's memory bandwidth, as a copy
  /// reads and writes every byte). Not scaled by what-if compute=...
  double hostCopyBytesPerSecond = 0;
  /// The unpacks' bytes per second when they were measured apart
  /// ("host_unpack": the waits that began once their transfer had
  /// completed; a start's copy also hands the bucket to the progress thread);
  /// 0: hostCopyBytesPerSecond's.
  double hostUnpackBytesPerSecond = 0;
  /// When set, measured kernel times: a kernel of the plan whose signature
  /// they lack takes its roofline time times the ratio of measured to
  /// roofline time over the kernels they have.
  const KernelTimes *profile = nullptr;
};

/// The timeline schedule of one step of `plan` on every rank; with `steps`
/// > 1, that many steps in a row, the first without the previous step's
/// instructions (a pipeline that carries micro-batches over between steps
/// starts empty). `firstOfStep`, when given, gets per rank the index in its
/// list where each step begins.
timeline::Schedule
buildSchedule(const ::strata::rt::Plan &plan, const CostOptions &options,
              int64_t steps = 1,
              std::vector<std::vector<size_t>> *firstOfStep = nullptr);

/// Whether `plan` carries micro-batches over from one step to the next
/// (has previous-step instructions): its step is a steady state.
bool carriesOver(const ::strata::rt::Plan &plan);

/// Replays a step of `plan`: one step, or for a plan that carries
/// micro-batches over the steady state, three steps in a row less two (the
/// events and figures of the third).
timeline::Result simulatePlan(const ::strata::rt::Plan &plan,
                              const CostOptions &options,
                              const timeline::System &system);

} // namespace mlir::strata::sim

#endif // STRATA_TOOLS_STRATA_SIM_PLANSCHEDULE_H
