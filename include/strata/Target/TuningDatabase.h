//===- TuningDatabase.h - GEMM tuning databases -----------------*- C++ -*-===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//
//
// A tuning database is the JSON file `strata-tune` writes and
// `--strata-tile-gemm` reads: for one target on one machine and one kernel
// version, the tiling chosen for each distinct GEMM (dtype, batch, m, n, k,
// transposes) and its measured (or modelled) time. Depends on LLVM Support
// only. Format:
//
//   {"format": "strata-gemm-tuning", "version": 1,
//    "target": "cpu", "kind": "cpu", "machine": "<cpu model> | avx512 | 2
//    threads", "kernel": "strata-cpu-gemm-1", "cost": "measured",
//    "entries": [
//      {"dtype": "f32", "batch": 1, "m": 128, "n": 768, "k": 768,
//       "transpose_a": false, "transpose_b": true,
//       "tiling": {"mc": 64, "nc": 768, "kc": 384, "mr": 8, "nr": 32},
//       "seconds": 1.1e-3, "default_seconds": 1.3e-3, "algorithm": "gbfs",
//       "trials": 40, "seed": 0}, ...]}
//
// CPU tilings have the keys mc, nc, kc, mr, nr (GemmTiling of the runtime);
// GPU tilings block_m, block_n, k_step, thread_m, thread_n (the CUDA GEMM).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TARGET_TUNINGDATABASE_H
#define STRATA_TARGET_TUNINGDATABASE_H

#include "strata-rt/PlanFormat.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir::strata {

/// One GEMM as the runtime's matmul kernel computes it (the shape and its
/// `str()` syntax are the runtime's, PlanFormat.h) and its element type.
struct GemmKey : ::strata_plan::GemmShape {
  std::string dtype = "f32";

  bool operator<(const GemmKey &o) const;
  bool operator==(const GemmKey &o) const;
};

/// The GEMM the runtime runs for a matmul of `batch` products op(A)[m x k]
/// op(B)[k x n] (strata_plan::gemmShapeFor) of element type `dtype`.
GemmKey gemmKeyFor(llvm::StringRef dtype, int64_t batch, int64_t m, int64_t n,
                   int64_t k, bool transA, bool transB, bool rhsIsMatrix);

struct TuningEntry {
  GemmKey key;
  /// Parameter name -> value (mc, nc, kc, mr, nr on CPU targets).
  std::map<std::string, int64_t> tiling;
  double seconds = 0;
  /// Time of the runtime's default tiling, or < 0 when not measured.
  double defaultSeconds = -1;
  std::string algorithm;
  int64_t trials = 0;
  uint64_t seed = 0;
};

struct TuningDatabase {
  /// "cpu", or the name of a target description.
  std::string target = "cpu";
  /// "cpu" or "gpu".
  std::string kind = "cpu";
  std::string machine;
  std::string kernel;
  /// "measured" or "model".
  std::string cost = "measured";
  /// In key order.
  std::vector<TuningEntry> entries;

  const TuningEntry *find(const GemmKey &key) const;
  /// Adds `entry`, replacing one with the same key.
  void insert(TuningEntry entry);
};

/// The tiling parameter names of a database kind, in order.
std::vector<std::string> tilingParameterNames(llvm::StringRef kind);

/// Parses and validates a database; errors name `sourceName`.
llvm::Expected<TuningDatabase> parseTuningDatabase(llvm::StringRef json,
                                                   llvm::StringRef sourceName);
/// Reads and parses the file at `path`.
llvm::Expected<TuningDatabase> loadTuningDatabase(llvm::StringRef path);
/// The JSON text of `db` (one line per entry).
std::string printTuningDatabase(const TuningDatabase &db);
/// Writes `db` to `path` through a temporary file and a rename, so a reader
/// never sees half a file.
llvm::Error writeTuningDatabase(const TuningDatabase &db, llvm::StringRef path);

} // namespace mlir::strata

#endif // STRATA_TARGET_TUNINGDATABASE_H
