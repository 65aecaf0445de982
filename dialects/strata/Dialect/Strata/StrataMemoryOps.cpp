//===- StrataMemoryOps.cpp - Swapping and compressing activations ---------===//
//
// Verifiers and costs of `swap_out`, `swap_out_wait`, `swap_in` and
// `swap_in_wait` (StrataMemoryOps.td). The verifiers check each op against
// its partner in the same block; the plan loader checks the whole sequence
// of every slot. Then `compress` and `decompress`, whose packed sizes are
// strata-rt/ActivationFormat.h's.
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Target/TargetDescription.h"

#include <cmath>

using namespace mlir;
using namespace mlir::strata;

/// Whether `user` is a `Partner` op of slot `slot`.
template <typename Partner>
static bool isPartner(Operation *user, int64_t slot) {
  auto partner = dyn_cast<Partner>(user);
  return partner && partner.getSlot() == static_cast<uint64_t>(slot);
}

/// Seconds to copy `value` over the target's host link.
static double hostCopySeconds(Value value, const TargetDescription &target) {
  return target.host.transferSeconds(
      static_cast<double>(getTensorBytes(value.getType())));
}

//===----------------------------------------------------------------------===//
// SwapOutOp / SwapOutWaitOp
//===----------------------------------------------------------------------===//

LogicalResult SwapOutOp::verify() {
  int64_t slot = getSlot();
  for (Operation *user : getInput().getUsers())
    if (isPartner<SwapOutWaitOp>(user, slot) &&
        user->getBlock() == (*this)->getBlock() &&
        (*this)->isBeforeInBlock(user))
      return success();
  return emitOpError() << "of slot " << slot
                       << " has no strata.swap_out_wait of the same slot and "
                          "tensor after it in its block";
}

int64_t SwapOutOp::getFlops() { return 0; }
int64_t SwapOutOp::getBytesRead() {
  return getTensorBytes(getInput().getType());
}
int64_t SwapOutOp::getBytesWritten() { return 0; }
double SwapOutOp::estimateSeconds(const TargetDescription &target) {
  return hostCopySeconds(getInput(), target);
}

LogicalResult SwapOutWaitOp::verify() {
  int64_t slot = getSlot();
  for (Operation *user : getInput().getUsers())
    if (isPartner<SwapOutOp>(user, slot) &&
        user->getBlock() == (*this)->getBlock() && user->isBeforeInBlock(*this))
      return success();
  return emitOpError() << "of slot " << slot
                       << " waits for no strata.swap_out of the same slot "
                          "and tensor before it in its block";
}

int64_t SwapOutWaitOp::getFlops() { return 0; }
int64_t SwapOutWaitOp::getBytesRead() { return 0; }
int64_t SwapOutWaitOp::getBytesWritten() { return 0; }
double SwapOutWaitOp::estimateSeconds(const TargetDescription &) { return 0; }

//===----------------------------------------------------------------------===//
// SwapInOp / SwapInWaitOp
//===----------------------------------------------------------------------===//

LogicalResult SwapInOp::verify() {
  int64_t slot = getSlot();
  Operation *wait = nullptr;
  for (Operation *user : getResult().getUsers())
    if (isPartner<SwapInWaitOp>(user, slot) &&
        user->getBlock() == (*this)->getBlock()) {
      if (wait)
        return emitOpError() << "of slot " << slot
                             << " has more than one strata.swap_in_wait";
      wait = user;
    }
  if (!wait)
    return emitOpError() << "of slot " << slot
                         << " has no strata.swap_in_wait of the same slot in "
                            "its block";
  for (Operation *user : getResult().getUsers())
    if (user != wait &&
        (user->getBlock() != wait->getBlock() || user->isBeforeInBlock(wait)))
      return user->emitOpError()
             << "reads the result of the strata.swap_in of slot " << slot
             << " before its strata.swap_in_wait";
  return success();
}

int64_t SwapInOp::getFlops() { return 0; }
int64_t SwapInOp::getBytesRead() { return 0; }
int64_t SwapInOp::getBytesWritten() {
  return getTensorBytes(getResult().getType());
}
double SwapInOp::estimateSeconds(const TargetDescription &target) {
  return hostCopySeconds(getResult(), target);
}

LogicalResult SwapInWaitOp::verify() {
  auto start = getInput().getDefiningOp<SwapInOp>();
  if (!start || start.getSlot() != getSlot())
    return emitOpError() << "of slot " << getSlot()
                         << " must wait for the result of a strata.swap_in "
                            "of the same slot";
  return success();
}

int64_t SwapInWaitOp::getFlops() { return 0; }
int64_t SwapInWaitOp::getBytesRead() { return 0; }
int64_t SwapInWaitOp::getBytesWritten() { return 0; }
double SwapInWaitOp::estimateSeconds(const TargetDescription &) { return 0; }

//===----------------------------------------------------------------------===//
// CompressOp / DecompressOp
//===----------------------------------------------------------------------===//

SmallVector<ActFormatAttr> CompressOp::getCandidateFormats() {
  SmallVector<ActFormatAttr> formats;
  if (std::optional<ArrayAttr> candidates = getCandidates())
    for (Attribute attr : *candidates)
      formats.push_back(cast<ActFormatAttr>(attr));
  else
    formats.push_back(getFormat());
  return formats;
}

LogicalResult CompressOp::verify() {
  int64_t numel = getInput().getType().getNumElements();
  int64_t widest = 0;
  bool listed = false;
  for (ActFormatAttr format : getCandidateFormats()) {
    widest = std::max(widest, format.getPackedBytes(numel));
    listed |= format == getFormat();
  }
  if (!listed)
    return emitOpError() << "format " << getFormat()
                         << " must be one of its candidates";
  if (std::optional<ArrayAttr> candidates = getCandidates();
      candidates && candidates->empty())
    return emitOpError() << "candidates must not be empty";
  if (FloatAttr budget = getBudgetAttr()) {
    double value = budget.getValueAsDouble();
    if (!(value > 0 && std::isfinite(value)))
      return emitOpError() << "budget must be a positive number, got " << value;
  }
  int64_t bytes = getResult().getType().getNumElements();
  if (bytes != widest)
    return emitOpError() << "result must hold the " << widest
                         << " packed bytes of the widest candidate format, "
                            "got "
                         << bytes;
  return success();
}

int64_t CompressOp::getFlops() {
  return 4 * getInput().getType().getNumElements();
}

CompressOp DecompressOp::getCompress() {
  return getInput().getDefiningOp<CompressOp>();
}

LogicalResult DecompressOp::verify() {
  CompressOp compress = getCompress();
  if (!compress)
    return emitOpError() << "input must be the result of a strata.compress";
  if (compress.getInput().getType() != getResult().getType())
    return emitOpError() << "result type " << getResult().getType()
                         << " must be the compressed tensor's type "
                         << compress.getInput().getType();
  return success();
}

int64_t DecompressOp::getFlops() {
  return 2 * getResult().getType().getNumElements();
}

//===----------------------------------------------------------------------===//
// CopyIntoOp
//===----------------------------------------------------------------------===//

int64_t CopyIntoOp::getFlops() { return 0; }
int64_t CopyIntoOp::getBytesRead() {
  return getTensorBytes(getSource().getType());
}
bool CopyIntoOp::updatesRankLocalState() { return getLocal(); }

Value CopyIntoOp::getUpdatedOperand(unsigned index) {
  return index == 0 ? getDest() : Value();
}
