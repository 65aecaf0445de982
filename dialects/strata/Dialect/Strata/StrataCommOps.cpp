//===- StrataCommOps.cpp - Asynchronous collectives -----------------------===//
//
// Verifiers, type inference and costs of `all_reduce_start` and
// `all_reduce_wait` (StrataCommOps.td).
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Target/TargetDescription.h"

using namespace mlir;
using namespace mlir::strata;

double
mlir::strata::estimateRingAllReduceSeconds(int64_t bytes, int64_t replicas,
                                           const TargetDescription &target) {
  if (replicas <= 1)
    return 0.0;
  double p = static_cast<double>(replicas);
  const LinkDescription &link =
      replicas <= target.devicesPerNode ? target.intraNode : target.interNode;
  return 2.0 * (p - 1.0) / p * static_cast<double>(bytes) / link.bandwidth() +
         2.0 * (p - 1.0) * link.latency();
}

/// Checks that a bucket is not empty and holds one element type.
static LogicalResult verifyBucket(Operation *op, ValueRange inputs) {
  if (inputs.empty())
    return op->emitOpError("expects at least one tensor in the bucket");
  Type element =
      cast<RankedTensorType>(inputs.front().getType()).getElementType();
  for (auto [i, input] : llvm::enumerate(inputs))
    if (cast<RankedTensorType>(input.getType()).getElementType() != element)
      return op->emitOpError()
             << "expects every tensor of the bucket to have element type "
             << element << ", but #" << i << " has "
             << cast<RankedTensorType>(input.getType()).getElementType();
  return success();
}

static int64_t getBucketBytes(ValueRange inputs) {
  int64_t bytes = 0;
  for (Value input : inputs)
    bytes += getTensorBytes(input.getType());
  return bytes;
}

//===----------------------------------------------------------------------===//
// AllReduceStartOp
//===----------------------------------------------------------------------===//

LogicalResult AllReduceStartOp::verify() {
  if (getHost() && getStaleness().value_or(0) > 0)
    return emitOpError("cannot combine host accumulation with staleness > 0");
  if (getStaleness().value_or(0) > 0 && !getMean())
    return emitOpError("with staleness > 0 must average (mean)");
  return verifyBucket(*this, getInputs());
}

/// Bytes one rank sends (and receives) in a ring all-reduce of the bucket.
static double ringBytes(AllReduceStartOp op) {
  double p = static_cast<double>(op.getReplicas());
  return 2.0 * (p - 1.0) / p *
         static_cast<double>(getBucketBytes(op.getInputs()));
}

int64_t AllReduceStartOp::getFlops() {
  int64_t elements = 0;
  for (Value input : getInputs())
    elements += cast<RankedTensorType>(input.getType()).getNumElements();
  int64_t p = getReplicas();
  return elements * (p - 1) / std::max<int64_t>(p, 1);
}
int64_t AllReduceStartOp::getBytesRead() {
  return static_cast<int64_t>(ringBytes(*this));
}
int64_t AllReduceStartOp::getBytesWritten() {
  return static_cast<int64_t>(ringBytes(*this));
}
double AllReduceStartOp::estimateSeconds(const TargetDescription &target) {
  int64_t bytes = getBucketBytes(getInputs());
  // Host accumulation moves 2 (p - 1) bytes per bucket byte through the
  // host's link: what a ring all-reduce of p times the bucket moves.
  if (getHost())
    bytes *= getReplicas();
  return estimateRingAllReduceSeconds(bytes, getReplicas(), target);
}

//===----------------------------------------------------------------------===//
// AllReduceWaitOp
//===----------------------------------------------------------------------===//

LogicalResult AllReduceWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferredReturnTypes) {
  for (Value operand : operands)
    inferredReturnTypes.push_back(operand.getType());
  return success();
}

LogicalResult AllReduceWaitOp::verify() {
  return verifyBucket(*this, getInputs());
}

int64_t AllReduceWaitOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// SendOp / RecvOp
//===----------------------------------------------------------------------===//

/// Seconds to move `bytes` between two pipeline stages: taken as the
/// intra-node link (the partitioner places stages; the op does not know
/// where its peer is).
static double estimateTransferSeconds(int64_t bytes,
                                      const TargetDescription &target) {
  const LinkDescription &link = target.intraNode;
  return static_cast<double>(bytes) / link.bandwidth() + link.latency();
}

int64_t SendOp::getFlops() { return 0; }
int64_t SendOp::getBytesRead() { return getTensorBytes(getInput().getType()); }
int64_t SendOp::getBytesWritten() { return 0; }
double SendOp::estimateSeconds(const TargetDescription &target) {
  return estimateTransferSeconds(getTensorBytes(getInput().getType()), target);
}

int64_t RecvOp::getFlops() { return 0; }
int64_t RecvOp::getBytesRead() { return 0; }
double RecvOp::estimateSeconds(const TargetDescription &target) {
  return target.intraNode.latency();
}
