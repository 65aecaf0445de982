//===- KernelsInternal.h - Shared helpers of the CPU kernels ------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Operand checks for the kernels' verify functions, parallel-loop helpers,
// and the per-file kernel tables that Kernels.cpp gathers into the registry.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CPU_KERNELSINTERNAL_H
#define STRATA_RT_CPU_KERNELSINTERNAL_H

#include "strata-rt/Kernels.h"
#include "strata-rt/ThreadPool.h"

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace strata::rt::detail {

/// Names an operand of an instruction in messages: "input #1", "output #0".
struct Operand {
  bool input;
  int index;
  std::string name() const;
};
inline Operand in(int index) { return {true, index}; }
inline Operand out(int index) { return {false, index}; }

/// Accumulates the first problem of an instruction. Every check is a no-op
/// once one has failed, so checks can be chained; code that indexes operands
/// itself must first test ok() after counts().
class Verifier {
public:
  Verifier(const std::vector<TensorDesc> &inputs,
           const std::vector<TensorDesc> &outputs, const Attrs &attrs)
      : inputs(inputs), outputs(outputs), attrs(attrs) {}

  bool ok() const { return message.empty(); }
  const std::string &error() const { return message; }
  /// Records `msg` unless something failed already; returns false.
  bool fail(const std::string &msg);

  const TensorDesc &desc(Operand op) const {
    return op.input ? inputs[op.index] : outputs[op.index];
  }
  const Shape &shape(Operand op) const { return desc(op).shape; }

  bool counts(size_t numInputs, size_t numOutputs);
  /// Every operand f32 except those listed as i32.
  bool dtypes(const std::vector<Operand> &i32Operands = {});
  bool rank(Operand op, int64_t rank);
  bool minRank(Operand op, int64_t rank);
  bool hasShape(Operand op, const Shape &expected);
  bool sameShape(Operand op, Operand like) { return hasShape(op, shape(like)); }
  bool scalar(Operand op) { return hasShape(op, {}); }
  /// The dimension `dim` of `op` must equal `expected`; `what` explains it.
  bool dimEquals(Operand op, int64_t dim, int64_t expected,
                 const std::string &what);

  /// A number attribute; when `required` and absent, fails.
  bool number(const std::string &name, bool required, double &value,
              double fallback = 0);
  bool positiveNumber(const std::string &name, bool required, double &value,
                      double fallback = 0);
  /// A list attribute of `size` entries, each >= `minValue`.
  bool pair(const std::string &name, int64_t minValue,
            std::vector<int64_t> &value);
  /// Normalises `axis` (negative counts from the end) into [0, rank).
  bool axis(const std::string &name, int64_t rank, int64_t &value,
            int64_t fallback);

private:
  const std::vector<TensorDesc> &inputs;
  const std::vector<TensorDesc> &outputs;
  const Attrs &attrs;
  std::string message;
};

/// A number as messages print it ("%g": 2, 0.5, 1e-05).
std::string formatNumber(double value);

/// Runs fn(begin, end) over [0, n) on the pool when `n * costPerItem` is
/// large enough to amortise a fork-join, else on the calling thread. Kernels
/// only use it where each output is computed within one item, so results do
/// not depend on the split.
void parallelFor(ThreadPool &pool, int64_t n, int64_t costPerItem,
                 const std::function<void(int64_t, int64_t)> &fn);

/// Sum of n floats in a fixed order that depends only on n: eight
/// interleaved partial sums combined pairwise (faster and more accurate than
/// one running sum, and vectorisable without reassociation).
inline float sumFloats(const float *x, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += x[i + j];
  for (int j = 0; i < n; ++i, ++j)
    acc[j] += x[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/// Dot product of n floats in the order of sumFloats.
inline float dotFloats(const float *x, const float *y, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += x[i + j] * y[i + j];
  for (int j = 0; i < n; ++i, ++j)
    acc[j] += x[i] * y[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/// Largest of n floats (-inf for n == 0); eight interleaved partial maxima.
inline float maxFloats(const float *x, int64_t n) {
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  float acc[8] = {kLowest, kLowest, kLowest, kLowest,
                  kLowest, kLowest, kLowest, kLowest};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  for (int j = 0; i < n; ++i, ++j)
    acc[j] = x[i] > acc[j] ? x[i] : acc[j];
  float m = acc[0];
  for (int j = 1; j < 8; ++j)
    m = acc[j] > m ? acc[j] : m;
  return m;
}

/// Sum of n floats in double, in the fixed order of sumFloats.
inline double sumToDouble(const float *x, int64_t n) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += (double)x[i + j];
  for (int j = 0; i < n; ++i, ++j)
    acc[j] += (double)x[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/// Kernel tables of the individual files.
void appendDenseKernels(std::vector<OpKernel> &kernels);
void appendNNKernels(std::vector<OpKernel> &kernels);
void appendConvKernels(std::vector<OpKernel> &kernels);
void appendOptimKernels(std::vector<OpKernel> &kernels);
void appendCommKernels(std::vector<OpKernel> &kernels);
void appendCopyKernels(std::vector<OpKernel> &kernels);
void appendCompressKernels(std::vector<OpKernel> &kernels);
void appendSliceKernels(std::vector<OpKernel> &kernels);

} // namespace strata::rt::detail

#endif // STRATA_RT_CPU_KERNELSINTERNAL_H
