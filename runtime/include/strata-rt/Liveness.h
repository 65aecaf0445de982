//===- Liveness.h - Buffer lifetimes of a plan's programs -------*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header. The
// compiler's buffer planner (lib/Analysis/BufferLiveness) and the plan loader
// both derive lifetimes here, so the two cannot disagree on when a buffer is
// live: this file is the one definition of those rules.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_LIVENESS_H
#define STRATA_RT_LIVENESS_H

#include <cstdint>
#include <string>
#include <vector>

namespace strata::rt {

/// One instruction as liveness sees it: the buffer ids it reads and writes.
struct LiveInstruction {
  std::vector<int64_t> in;
  std::vector<int64_t> out;
  /// It updates buffers in place (an optimizer update): the runtime first
  /// completes every pending send (see `readsAfterReturn`).
  bool inPlace = false;
  /// It may still read its inputs after it returns, until the next in-place
  /// instruction of its program or the end of the step (a non-blocking send).
  bool readsAfterReturn = false;
};

/// The closed interval [first, last] of time steps in which a buffer must
/// keep its bytes; `first` < 0 for a buffer no program touches.
struct LiveInterval {
  int64_t first = -1;
  int64_t last = -1;
  bool live() const { return first >= 0; }
  bool overlaps(const LiveInterval &other) const {
    return live() && other.live() && first <= other.last && other.first <= last;
  }
};

/// Lifetimes of `numBuffers` buffers over `programs` (each distinct rank
/// program once). The programs are laid one after another on one time axis:
/// instruction i of program p is time step (sum of earlier programs' lengths
/// plus i). Every rank's arena has the same layout, and a rank touches only
/// its own program's buffers, so buffers of different programs whose
/// intervals do not meet may share bytes.
///
/// Rules:
/// - a buffer lives from the first to the last instruction that reads or
///   writes it (an in-place update's outputs are its inputs, so the update
///   extends the buffer's life; an asynchronous collective's wait names the
///   buffers of its start, so they live until the wait; likewise a
///   `swap_out_wait` names the buffer its `swap_out` copies to the host, so
///   that buffer lives until the copy is complete, and a `swap_in`'s output
///   lives from the `swap_in`, which starts writing it, to its last use);
/// - the input of a `readsAfterReturn` instruction lives until the next
///   in-place instruction of its program, or the program's end;
/// - `persistent` buffers (parameters, gradients, optimizer states, inputs
///   and the loss: the runtime reads or writes them outside the programs)
///   live over the whole axis.
/// Returns an empty vector when an id is out of range.
std::vector<LiveInterval>
computeLiveness(const std::vector<std::vector<LiveInstruction>> &programs,
                const std::vector<bool> &persistent);

/// The largest total of `bytes` (each rounded up to `alignment`) of buffers
/// live at one time step: no arena for these lifetimes can be smaller.
int64_t liveBytesLowerBound(const std::vector<LiveInterval> &intervals,
                            const std::vector<int64_t> &bytes,
                            int64_t alignment);

/// Checks that no two buffers live at the same time share a byte of
/// [offset, offset + bytes). Returns "" or a message naming both buffer ids,
/// their byte ranges and lifetimes. O(n log n) in the number of buffers.
std::string checkNoLiveOverlap(const std::vector<LiveInterval> &intervals,
                               const std::vector<int64_t> &offsets,
                               const std::vector<int64_t> &bytes);

} // namespace strata::rt

#endif // STRATA_RT_LIVENESS_H
