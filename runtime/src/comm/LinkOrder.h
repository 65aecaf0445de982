//===- LinkOrder.h - Which operations take the emulated link now -*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The MPI engine's progress thread (Mpi.cpp) gives each operation its
// emulated end when it takes the link. Collectives take it in issue order,
// each once its own real transfer and every earlier collective's completed:
// taken as MPI finished the transfers, in whatever order, a later bucket
// could take the link first, from its later start, and leave it idle before
// it. Sends and receives take it when their own transfer completed (their
// poll does), failed operations never. Header-only so the unit tests run the
// same code without MPI.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_COMM_LINKORDER_H
#define STRATA_RT_COMM_LINKORDER_H

namespace strata::rt::detail {

/// Calls `take(op)` for the collectives of `inflight` (issue order, pointers)
/// that take the emulated link now, in order: up to the first collective
/// still transferring. An op has pointToPoint, failed, transferred and
/// linkTaken; `take` sets linkTaken.
template <typename Ops, typename Take>
void takeLinksInIssueOrder(Ops &inflight, Take take) {
  for (auto &op : inflight) {
    if (op->pointToPoint || op->failed || op->linkTaken)
      continue;
    if (!op->transferred)
      return;
    take(*op);
  }
}

} // namespace strata::rt::detail

#endif // STRATA_RT_COMM_LINKORDER_H
