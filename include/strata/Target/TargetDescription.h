//===- TargetDescription.h - Hardware target descriptions -------*- C++ -*-===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//
//
// A target description is a small JSON file (see `targets/`) that tells the
// cost model what a cluster looks like: how many nodes and devices it has, the
// peak compute and memory of one device (for a GPU, optionally its streaming
// multiprocessors, which the GEMM tuner's CUDA model needs), and the bandwidth
// and latency of the links between devices. The format is documented in
// README.md ("Targets"). This library parses and validates those files; it
// depends on LLVM Support only.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TARGET_TARGETDESCRIPTION_H
#define STRATA_TARGET_TARGETDESCRIPTION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::strata {

/// A point-to-point link, modelled as a fixed latency plus a bandwidth term.
struct LinkDescription {
  /// Bandwidth in GB/s (10^9 bytes per second), one direction.
  double bandwidthGBps = 0;
  /// Per-message latency in microseconds.
  double latencyUs = 0;

  /// Bandwidth in bytes per second.
  double bandwidth() const { return bandwidthGBps * 1e9; }
  /// Latency in seconds.
  double latency() const { return latencyUs * 1e-6; }
  /// Seconds to move `bytes` over this link (latency + bytes / bandwidth).
  double transferSeconds(double bytes) const;
};

/// One accelerator (or CPU socket) of the target.
struct DeviceDescription {
  /// "gpu" or "cpu".
  std::string kind;
  /// Marketing name, e.g. "NVIDIA H100 SXM5 80GB".
  std::string name;
  /// Dense peak TFLOP/s keyed by MLIR dtype name ("f32", "bf16", "f16",
  /// "tf32", "f64"); "f32" is always present.
  llvm::StringMap<double> peakTflops;
  /// Device memory bandwidth in GB/s (10^9 bytes per second).
  double memoryBandwidthGBps = 0;
  /// Device memory capacity in GiB (2^30 bytes).
  double memoryCapacityGiB = 0;
  /// Streaming multiprocessors of a GPU (`streaming_multiprocessors`, 1 to
  /// kMaxStreamingMultiprocessors); 0 when the description does not give
  /// them (optional: only the analytic model of the CUDA GEMM, strata-tune
  /// on a GPU target, needs them). A CPU device has none.
  int64_t streamingMultiprocessors = 0;
  static constexpr int64_t kMaxStreamingMultiprocessors = 1024;
};

/// A cluster of `nodes` identical nodes, each with `devicesPerNode` devices.
struct TargetDescription {
  std::string name;
  std::string description;
  /// The file this description was loaded from ("" if parsed from a string).
  std::string path;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;
  DeviceDescription device;
  /// Device to device within a node.
  LinkDescription intraNode;
  /// Device to device across nodes (per device).
  LinkDescription interNode;
  /// Device to host memory.
  LinkDescription host;
  /// Bytes one replica sends (and receives) in an all-reduce of B bytes over
  /// r replicas, as a multiple of (r - 1) / r * B: 2 for a ring (the
  /// default; `all_reduce_volume_factor`), 4 as PipeDream's optimizer
  /// charges a parameter server. Which is right for a link is measured.
  double allReduceVolumeFactor = 2.0;

  /// Total number of devices in the cluster.
  int64_t numDevices() const;
  /// Peak FLOP/s for an MLIR-style dtype name ("f32", "bf16", "f16", ...);
  /// falls back to f32 when the dtype is missing.
  double peakFlops(llvm::StringRef dtype) const;
  /// Device memory bandwidth in bytes/s.
  double memoryBandwidth() const;
  /// Device memory capacity in bytes.
  double memoryCapacity() const;

  /// Prints a short human-readable summary.
  void print(llvm::raw_ostream &os) const;
};

/// Parses and validates a target description; `sourceName` is used in error
/// messages.
llvm::Expected<TargetDescription>
parseTargetDescription(llvm::StringRef json, llvm::StringRef sourceName);

/// Loads a target description. `nameOrPath` is either an existing file path,
/// or a bare name NAME resolved as NAME.json in each of `searchDirs` in order.
/// A description loaded from a file must be named after the file's stem.
llvm::Expected<TargetDescription>
loadTargetDescription(llvm::StringRef nameOrPath,
                      llvm::ArrayRef<std::string> searchDirs);

/// The default search path: the entries of the environment variable
/// STRATA_TARGET_PATH (':'-separated), then the source tree's `targets/`
/// folder, then the installed `share/strata/targets` folder.
std::vector<std::string> getDefaultTargetSearchPath();

/// Names (file stems) of all targets found in `searchDirs`, sorted and
/// deduplicated.
std::vector<std::string> listTargets(llvm::ArrayRef<std::string> searchDirs);

} // namespace mlir::strata

#endif // STRATA_TARGET_TARGETDESCRIPTION_H
