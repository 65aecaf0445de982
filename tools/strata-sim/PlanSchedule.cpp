//===- PlanSchedule.cpp - A runtime plan as a timeline schedule -----------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "PlanSchedule.h"

#include "strata-rt/MatmulLayout.h"
#include "strata-rt/Profile.h"

#include <algorithm>
#include <limits>

using namespace mlir::strata;
using namespace mlir::strata::sim;
namespace rt = ::strata::rt;

namespace {

/// Handles of host copies live above every bucket number.
constexpr int64_t kCopyHandleBase = int64_t(1) << 40;

const rt::TensorDesc &descOf(const rt::Plan &plan, int64_t id) {
  return plan.buffers[id].desc;
}

double numel(const rt::Plan &plan, int64_t id) {
  return static_cast<double>(descOf(plan, id).numel());
}

int64_t dimFromEnd(const rt::TensorDesc &desc, int64_t i) {
  int64_t rank = static_cast<int64_t>(desc.shape.size());
  return rank >= i ? desc.shape[rank - i] : 1;
}

/// 2 * outputs * C * KH * KW for a convolution whose filter is `filter` and
/// whose larger activation side (y or dy) is `activation`.
double convFlops(const rt::Plan &plan, int64_t activation, int64_t filter) {
  const rt::TensorDesc &w = descOf(plan, filter);
  double perOutput = 1;
  for (size_t i = 1; i < w.shape.size(); ++i)
    perOutput *= static_cast<double>(w.shape[i]);
  return 2.0 * numel(plan, activation) * perOutput;
}

} // namespace

bool sim::isCommunication(const rt::Instruction &inst) {
  return inst.has(rt::kCollective) || inst.has(rt::kPointToPoint) ||
         inst.has(rt::kCopyStart) || inst.has(rt::kCopyWait);
}

double sim::inputBytes(const rt::Plan &plan, const rt::Instruction &inst) {
  double bytes = 0;
  for (int64_t id : inst.in)
    bytes += static_cast<double>(plan.buffers[id].bytes);
  return bytes;
}

Work sim::getWork(const rt::Plan &plan, const rt::Instruction &inst) {
  Work work;
  if (isCommunication(inst))
    return work;
  double largest = 0;
  for (int64_t id : inst.in) {
    work.bytes += static_cast<double>(plan.buffers[id].bytes);
    largest = std::max(largest, numel(plan, id));
  }
  for (int64_t id : inst.out) {
    work.bytes += static_cast<double>(plan.buffers[id].bytes);
    largest = std::max(largest, numel(plan, id));
  }
  switch (inst.op) {
  case rt::OpCode::Matmul:
  case rt::OpCode::FusedMatmul: { // the epilogue's few flops are negligible
    // The logical shape of A (a matmul may read it in the heads layout).
    rt::TensorDesc a = descOf(plan, inst.in[0]);
    if (inst.op == rt::OpCode::Matmul)
      a.shape = rt::logicalMatmulShape(a.shape, inst.attrs.headsA);
    double k = static_cast<double>(inst.attrs.transposeA ? dimFromEnd(a, 2)
                                                         : dimFromEnd(a, 1));
    work.flops = 2.0 * numel(plan, inst.out[0]) * k;
    break;
  }
  case rt::OpCode::Conv2d:
    work.flops = convFlops(plan, inst.out[0], inst.in[1]);
    break;
  case rt::OpCode::Conv2dGradInput:
    work.flops = convFlops(plan, inst.in[0], inst.in[1]);
    break;
  case rt::OpCode::Conv2dGradFilter:
    work.flops = convFlops(plan, inst.in[0], inst.out[0]);
    break;
  case rt::OpCode::AdamUpdate:
  case rt::OpCode::SgdUpdate:
    work.flops = 10.0 * largest;
    break;
  case rt::OpCode::CopyInto:
    // Reads the source and writes the state (the output is its buffer).
    work.bytes = 2.0 * static_cast<double>(plan.buffers[inst.in[0]].bytes);
    work.flops = 0;
    break;
  default:
    // Element-wise and reductions: a few operations per element; the
    // roofline makes them memory-bound.
    work.flops = 4.0 * largest;
    break;
  }
  return work;
}

/// Roofline seconds of every instruction of `program` (0 for
/// communication), or the profile's where it has them.
static std::vector<double>
kernelSeconds(const rt::Plan &plan, const std::vector<rt::Instruction> &program,
              const CostOptions &options) {
  std::vector<double> seconds(program.size(), 0);
  std::vector<bool> measured(program.size(), false);
  double measuredSum = 0, rooflineSum = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    const rt::Instruction &inst = program[i];
    if (isCommunication(inst))
      continue;
    Work work = getWork(plan, inst);
    seconds[i] = std::max(work.flops / options.peakFlops,
                          work.bytes / options.memoryBandwidth);
    if (!options.profile)
      continue;
    auto it = options.profile->find(rt::kernelSignature(plan, inst));
    if (it == options.profile->end())
      continue;
    rooflineSum += seconds[i];
    measuredSum += it->second;
    seconds[i] = it->second;
    measured[i] = true;
  }
  double ratio = rooflineSum > 0 ? measuredSum / rooflineSum : 1;
  // A multi-tensor group is one kernel: one dispatch, on its first member.
  std::vector<size_t> runs = rt::multiTensorRuns(program);
  for (size_t i = 0; i < program.size(); ++i) {
    if (isCommunication(program[i]))
      continue;
    if (options.profile && !measured[i])
      seconds[i] *= ratio;
    seconds[i] = seconds[i] * options.computeScale +
                 (runs[i] != 0 ? options.kernelOverhead : 0);
  }
  return seconds;
}

/// The timeline instruction of communication instruction `inst` of `rank`.
static timeline::Instruction communication(const rt::Plan &plan, int64_t rank,
                                           const rt::Instruction &inst) {
  using TI = timeline::Instruction;
  const rt::OpAttrs &a = inst.attrs;
  double inBytes = inputBytes(plan, inst);
  int64_t replica = plan.ranks[rank].replica;
  switch (inst.op) {
  case rt::OpCode::Send:
    return TI::send(plan.rankOf(a.peer, replica), a.tag, inBytes);
  case rt::OpCode::Recv:
    return TI::recv(plan.rankOf(a.peer, replica), a.tag);
  case rt::OpCode::AllReduce:
    return TI::collective(a.group, inBytes);
  case rt::OpCode::AllReduceStart:
    // Host accumulation moves every replica's bucket through one link, as
    // the compiler's estimate says.
    return TI::collectiveStart(a.group, a.host ? inBytes * a.replicas : inBytes,
                               a.bucket);
  case rt::OpCode::AllReduceWait:
    return TI::wait(a.bucket);
  case rt::OpCode::SwapOut:
    return TI::copyStart(inBytes, kCopyHandleBase + 2 * a.slot);
  case rt::OpCode::SwapOutWait:
    return TI::wait(kCopyHandleBase + 2 * a.slot);
  case rt::OpCode::SwapIn:
    return TI::copyStart(static_cast<double>(plan.buffers[inst.out[0]].bytes),
                         kCopyHandleBase + 2 * a.slot + 1);
  default:
    return TI::wait(kCopyHandleBase + 2 * a.slot + 1);
  }
}

/// The host copy before a bucketed all-reduce's transfer (`pack`, of its
/// start) or after it (`unpack`, of its wait): the bucket's bytes through
/// memory on the rank's compute thread, as the runtime's kernels copy them.
static timeline::Instruction hostCopy(const rt::Plan &plan,
                                      const rt::Instruction &inst, size_t index,
                                      bool unpack, const CostOptions &options) {
  double rate = options.hostCopyBytesPerSecond > 0
                    ? options.hostCopyBytesPerSecond
                    : options.memoryBandwidth / 2;
  if (unpack && options.hostUnpackBytesPerSecond > 0)
    rate = options.hostUnpackBytesPerSecond;
  timeline::Instruction copy = timeline::Instruction::compute(
      std::string(unpack ? "unpack" : "pack") + " bucket " +
          std::to_string(inst.attrs.bucket),
      inputBytes(plan, inst) / rate);
  copy.category = "comm";
  copy.label = static_cast<int64_t>(index);
  return copy;
}

static const char *categoryOf(const rt::Instruction &inst) {
  switch (inst.phase) {
  case rt::Phase::Backward:
    return "backward";
  case rt::Phase::Recompute:
    return "recompute";
  case rt::Phase::Update:
    return "update";
  default:
    return "forward";
  }
}

timeline::Schedule
sim::buildSchedule(const rt::Plan &plan, const CostOptions &options,
                   int64_t steps,
                   std::vector<std::vector<size_t>> *firstOfStep) {
  timeline::Schedule schedule;
  for (const rt::CommGroup &group : plan.groups)
    schedule.groups.push_back(group.ranks);
  if (firstOfStep)
    firstOfStep->assign(plan.worldSize(), {});
  std::map<int64_t, std::vector<double>> secondsOf;
  for (int64_t rank = 0; rank < plan.worldSize(); ++rank) {
    const std::vector<rt::Instruction> &program = plan.programOf(rank);
    int64_t owner = plan.ranks[rank].programOf;
    if (!secondsOf.count(owner))
      secondsOf[owner] = kernelSeconds(plan, program, options);
    const std::vector<double> &seconds = secondsOf[owner];
    std::vector<timeline::Instruction> list;
    // The executor completes its sends before an in-place update (but a
    // local one: batch_norm, a local copy_into).
    std::vector<int64_t> pendingSends;
    for (int64_t step = 0; step < steps; ++step) {
      if (firstOfStep)
        (*firstOfStep)[rank].push_back(list.size());
      if (options.stepOverhead > 0) {
        timeline::Instruction setup =
            timeline::Instruction::compute("step setup", options.stepOverhead);
        setup.category = "step";
        setup.label = timeline::Instruction::kNotAnInstruction;
        list.push_back(std::move(setup));
      }
      for (size_t i = 0; i < program.size(); ++i) {
        const rt::Instruction &inst = program[i];
        // A run's first step has no previous step (its sends still complete
        // at the next in-place update).
        if (step == 0 && steps > 1 && inst.previousStep) {
          // Skipped, but the sends in flight still complete here.
          if (inst.waitsForSends() && !pendingSends.empty()) {
            timeline::Instruction wait =
                timeline::Instruction::compute("sends complete", 0);
            wait.category = "comm";
            wait.label = timeline::Instruction::kNotAnInstruction;
            wait.after = pendingSends;
            pendingSends.clear();
            list.push_back(std::move(wait));
          }
          continue;
        }
        timeline::Instruction ti =
            isCommunication(inst)
                ? communication(plan, rank, inst)
                : timeline::Instruction::compute(inst.name(), seconds[i]);
        ti.name = inst.name();
        ti.category = isCommunication(inst) ? "comm" : categoryOf(inst);
        ti.label = static_cast<int64_t>(i);
        if (inst.op == rt::OpCode::AllReduceStart)
          list.push_back(hostCopy(plan, inst, i, /*unpack=*/false, options));
        if (inst.op == rt::OpCode::Send)
          pendingSends.push_back(static_cast<int64_t>(list.size()));
        if (inst.waitsForSends()) {
          ti.after = pendingSends;
          pendingSends.clear();
        }
        list.push_back(std::move(ti));
        if (inst.op == rt::OpCode::AllReduceWait)
          list.push_back(hostCopy(plan, inst, i, /*unpack=*/true, options));
      }
    }
    schedule.ranks.push_back(std::move(list));
  }
  return schedule;
}

bool sim::carriesOver(const rt::Plan &plan) {
  for (const rt::RankPlan &rank : plan.ranks)
    for (const rt::Instruction &inst : rank.program)
      if (inst.previousStep)
        return true;
  return false;
}

timeline::Result sim::simulatePlan(const rt::Plan &plan,
                                   const CostOptions &options,
                                   const timeline::System &system) {
  if (!carriesOver(plan))
    return timeline::simulate(buildSchedule(plan, options), system);
  std::vector<std::vector<size_t>> first;
  timeline::Result three =
      timeline::simulate(buildSchedule(plan, options, 3, &first), system);
  if (!three.ok())
    return three;
  timeline::Result two =
      timeline::simulate(buildSchedule(plan, options, 2), system);
  if (!two.ok())
    return two;
  timeline::Result steady;
  steady.stepSeconds = three.stepSeconds - two.stepSeconds;
  for (size_t r = 0; r < three.ranks.size(); ++r) {
    timeline::RankStats s;
    s.busy = three.ranks[r].busy - two.ranks[r].busy;
    s.bubble = three.ranks[r].bubble - two.ranks[r].bubble;
    s.commWait = three.ranks[r].commWait - two.ranks[r].commWait;
    s.end = steady.stepSeconds;
    s.idle = steady.stepSeconds - s.busy;
    steady.ranks.push_back(s);
  }
  // The third step's events, from its first.
  double from = std::numeric_limits<double>::infinity();
  auto third = [&](const timeline::Event &e) {
    return static_cast<size_t>(e.index) >= first[e.rank][2];
  };
  for (const timeline::Event &e : three.events)
    if (third(e))
      from = std::min(from, e.start);
  for (timeline::Event e : three.events) {
    if (!third(e))
      continue;
    e.index -= static_cast<int64_t>(first[e.rank][2]);
    e.start -= from;
    e.end -= from;
    steady.events.push_back(std::move(e));
  }
  return steady;
}
