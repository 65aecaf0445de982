//===- Comm.h - Communicators for multi-rank plans ----------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// A Communicator connects the ranks of a run. Every operation is
// asynchronous: `start...` returns a Request at once and the transfer runs
// in the background (a progress thread on CPU engines), so communication
// overlaps computation; `Request::wait` completes it. Engines: `local` (one
// rank, no transfers) and `mpi` (OpenMPI; the CPU engine and the bootstrap
// of GPU engines).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_COMM_H
#define STRATA_RT_COMM_H

#include "strata-rt/Support.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::rt {

enum class ReduceOp { Sum, Mean };

/// startRecv's peer for a message from any rank.
constexpr int kAnySource = -1;

/// Delays every transfer to what a link of this bandwidth and latency would
/// take: a message of b bytes completes no sooner than latency + b /
/// bandwidth after it starts. Zero bandwidth means no emulation.
///
/// MPI engine model (GB = 1e9 bytes; one rank has no link, so no delay): a
/// collective completes no sooner than latency + b / bandwidth after its
/// `start...` call (with every rank on one machine, see below: after the
/// last rank's call, as a real transfer cannot begin before), where b is what
/// this rank moves over its link for n bytes of payload: all-reduce 2(p-1)/p *
/// n (a ring), reduce-scatter and all-gather (p-1) * n with n the per-rank
/// block, reduce, broadcast n, barrier 0 (latency only). A send of n bytes
/// takes the sender's link for latency + n / bandwidth from its `startSend`
/// call and completes no sooner; where every rank of the communicator emulates
/// a link and runs on one machine (one monotonic clock; and MPI_TAG_UB >=
/// 65535), it tells the receiver when the message leaves the emulated link, and
/// the receive completes no sooner than that (a receive posted after it
/// completes at once: it does not pay for the link again); otherwise a receive
/// takes latency + n / bandwidth from its own `startRecv` call. Operations of
/// one communicator that are in flight together take the link one after another
/// (an operation's latency + b / bandwidth starts when the previous one's
/// ended; a stamped send takes it when it starts, a collective once its
/// transfer and every earlier collective's completed (in issue order), any
/// other operation when its transfer completed; stamped receives do not take
/// it). Stamping, and
/// counting a collective from the last rank's call, need every rank to
/// emulate, one machine and MPI_TAG_UB >= 65535.
struct LinkEmulation {
  double bandwidthGBps = 0;
  double latencyUs = 0;
  bool enabled() const { return bandwidthGBps > 0; }
  /// Parses "bandwidth=GB/s,latency=us" (either key may be omitted).
  static Status parse(const std::string &text, LinkEmulation &link);
};

class Request {
public:
  virtual ~Request();
  /// Blocks until the operation completed; returns its status (a failed or
  /// timed-out peer is a Failure naming the rank).
  virtual Status wait() = 0;
  /// True once wait() would not block.
  virtual bool test() = 0;
  /// When the transfer completed, in nanoseconds of std::chrono::
  /// steady_clock, once test() or wait() saw it complete; 0 where the engine
  /// does not record it (the caller's own first sight is the best it has).
  virtual int64_t completedNs() const { return 0; }
};

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Engine name: "local" or "mpi".
  virtual const char *engine() const = 0;

  /// In place over `count` floats; Mean divides the sum by size().
  virtual std::unique_ptr<Request> startAllReduce(float *data, int64_t count,
                                                  ReduceOp op) = 0;
  /// `input`'s `count` floats reduced into `output` (the same buffer, or one
  /// that does not overlap it). The default copies host memory, then
  /// reduces in place; the MPI engine reduces out of place (no copy).
  virtual std::unique_ptr<Request> startAllReduceInto(const float *input,
                                                      float *output,
                                                      int64_t count,
                                                      ReduceOp op);
  /// In place over `count` floats: `root` receives the sum (Mean: divided
  /// by size()) of every rank's data; other ranks' buffers are left as they
  /// were. The default says the engine cannot.
  virtual std::unique_ptr<Request> startReduce(float *data, int64_t count,
                                               ReduceOp op, int root);
  /// `count` floats from `root` to every rank, in place.
  virtual std::unique_ptr<Request> startBroadcast(float *data, int64_t count,
                                                  int root) = 0;
  virtual std::unique_ptr<Request> startSend(const float *data, int64_t count,
                                             int peer, int tag) = 0;
  /// `peer` may be kAnySource: the first message with `tag` from any rank
  /// (receives posted in order match messages in the order they arrive).
  virtual std::unique_ptr<Request> startRecv(float *data, int64_t count,
                                             int peer, int tag) = 0;
  /// `input` holds size() * count floats; rank r receives the reduction of
  /// block r of every rank's input in `output` (count floats).
  virtual std::unique_ptr<Request> startReduceScatter(const float *input,
                                                      float *output,
                                                      int64_t count,
                                                      ReduceOp op) = 0;
  /// Every rank contributes `count` floats; `output` receives size() * count
  /// floats, rank r's block at r * count.
  virtual std::unique_ptr<Request>
  startAllGather(const float *input, float *output, int64_t count) = 0;
  /// Blocks until every rank arrived.
  virtual Status barrier() = 0;

  /// A communicator over `ranks` (distinct ranks of this communicator,
  /// ascending), numbered in that order. Every rank of this communicator
  /// calls it with the same list; ranks outside it get nullptr. The default
  /// says the engine cannot.
  virtual Status createGroup(const std::vector<int> &ranks,
                             std::unique_ptr<Communicator> &group);
};

/// A single-rank communicator (collectives are identities).
std::unique_ptr<Communicator> createLocalCommunicator();

/// Whether this runtime was built with MPI.
bool haveMpi();
/// Whether the process was started by an MPI launcher (mpirun sets
/// OMPI_COMM_WORLD_SIZE / PMI_SIZE).
bool launchedByMpi();
/// Initialises MPI (once per process) and returns a communicator over
/// MPI_COMM_WORLD. `timeoutSeconds` bounds how long a wait may block before
/// the peer is declared dead.
Status createMpiCommunicator(const LinkEmulation &link, double timeoutSeconds,
                             std::unique_ptr<Communicator> &comm);

} // namespace strata::rt

#endif // STRATA_RT_COMM_H
