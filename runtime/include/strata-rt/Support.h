//===- Support.h - Status and file helpers of the runtime --------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The runtime's public functions never throw: they return a `Status` whose
// code doubles as the exit code of `strata-run`.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_SUPPORT_H
#define STRATA_RT_SUPPORT_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::rt {

/// Success, or an error with a message. The code values are the exit codes
/// of `strata-run`.
class Status {
public:
  enum class Code {
    Ok = 0,
    /// A run-time failure: I/O, an out-of-range id, a non-finite loss.
    Failure = 1,
    /// A bad command line.
    Usage = 2,
    /// An invalid plan, checkpoint or data file.
    Invalid = 3,
  };

  Status() = default;
  static Status success() { return Status(); }
  static Status failure(std::string message) {
    return Status(Code::Failure, std::move(message));
  }
  static Status usage(std::string message) {
    return Status(Code::Usage, std::move(message));
  }
  static Status invalid(std::string message) {
    return Status(Code::Invalid, std::move(message));
  }

  bool ok() const { return code_ == Code::Ok; }
  Code code() const { return code_; }
  int exitCode() const { return static_cast<int>(code_); }
  const std::string &message() const { return message_; }

private:
  Status(Code code, std::string message)
      : code_(code), message_(std::move(message)) {}

  Code code_ = Code::Ok;
  std::string message_;
};

/// Nanoseconds of std::chrono::steady_clock (CLOCK_MONOTONIC on Linux: one
/// clock for the processes of a machine): the runtime's timestamps (traces,
/// bucket transfers, request completions, emulated links).
int64_t steadyNowNs();

/// The median of `values` (the mean of the middle two for an even count; 0
/// for none).
double median(std::vector<double> values);

/// Reads a whole file. A file that cannot be opened or read is a `Failure`.
Status readFile(const std::string &path, std::string &contents);
/// As readFile, but a file longer than `maxBytes` (or a device or pipe that
/// yields more) is a `Failure` naming the limit, read no further.
Status readFile(const std::string &path, std::string &contents,
                uint64_t maxBytes);

/// Writes `contents` to `path` atomically: a temporary file in the same
/// directory is written, flushed with fsync and renamed over `path`. On any
/// failure the temporary file is removed and `path` is left as it was.
/// Exceeding the file size limit (RLIMIT_FSIZE) is such a failure ("File too
/// large"), not a SIGXFSZ that kills the process and leaves the temporary
/// file behind: the signal is blocked in the calling thread while it writes.
Status writeFileAtomically(const std::string &path,
                           const std::string &contents);

} // namespace strata::rt

#endif // STRATA_RT_SUPPORT_H
