//===- Kernels.cpp - Kernel registry and shared helpers -------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata::rt {
namespace detail {

std::string Operand::name() const {
  return std::string(input ? "input #" : "output #") + std::to_string(index);
}

bool Verifier::fail(const std::string &msg) {
  if (message.empty())
    message = msg;
  return false;
}

std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

static std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

bool Verifier::counts(size_t numInputs, size_t numOutputs) {
  if (!ok())
    return false;
  if (inputs.size() != numInputs)
    return fail("expected " + plural(numInputs, "input") + ", got " +
                std::to_string(inputs.size()));
  if (outputs.size() != numOutputs)
    return fail("expected " + plural(numOutputs, "output") + ", got " +
                std::to_string(outputs.size()));
  return true;
}

bool Verifier::dtypes(const std::vector<Operand> &i32Operands) {
  if (!ok())
    return false;
  auto check = [&](Operand op) {
    DType expected = DType::F32;
    for (Operand o : i32Operands)
      if (o.input == op.input && o.index == op.index)
        expected = DType::I32;
    if (desc(op).dtype != expected)
      return fail(op.name() + " must be " + dtypeName(expected) + ", got " +
                  dtypeName(desc(op).dtype));
    return true;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!check(in((int)i)))
      return false;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!check(out((int)i)))
      return false;
  return true;
}

bool Verifier::rank(Operand op, int64_t r) {
  if (!ok())
    return false;
  if ((int64_t)shape(op).size() != r)
    return fail(op.name() + " must have rank " + std::to_string(r) +
                ", got shape " + formatShape(shape(op)));
  return true;
}

bool Verifier::minRank(Operand op, int64_t r) {
  if (!ok())
    return false;
  if ((int64_t)shape(op).size() < r)
    return fail(op.name() + " must have rank at least " + std::to_string(r) +
                ", got shape " + formatShape(shape(op)));
  return true;
}

bool Verifier::hasShape(Operand op, const Shape &expected) {
  if (!ok())
    return false;
  if (shape(op) != expected)
    return fail(op.name() + " must have shape " + formatShape(expected) +
                ", got " + formatShape(shape(op)));
  return true;
}

bool Verifier::dimEquals(Operand op, int64_t dim, int64_t expected,
                         const std::string &what) {
  if (!ok())
    return false;
  int64_t actual = shape(op)[dim];
  if (actual != expected)
    return fail(op.name() + " dimension " + std::to_string(dim) + " (" + what +
                ") must be " + std::to_string(expected) + ", got " +
                std::to_string(actual));
  return true;
}

bool Verifier::number(const std::string &name, bool required, double &value,
                      double fallback) {
  if (!ok())
    return false;
  auto it = attrs.numbers.find(name);
  if (it == attrs.numbers.end()) {
    if (attrs.lists.count(name))
      return fail("attribute '" + name + "' must be a number, got a list");
    if (required)
      return fail("missing attribute '" + name + "'");
    value = fallback;
    return true;
  }
  value = it->second;
  if (!std::isfinite(value))
    return fail("attribute '" + name + "' must be finite");
  return true;
}

bool Verifier::positiveNumber(const std::string &name, bool required,
                              double &value, double fallback) {
  if (!number(name, required, value, fallback))
    return false;
  if (!(value > 0))
    return fail("attribute '" + name + "' must be positive, got " +
                formatNumber(value));
  return true;
}

bool Verifier::pair(const std::string &name, int64_t minValue,
                    std::vector<int64_t> &value) {
  if (!ok())
    return false;
  auto it = attrs.lists.find(name);
  if (it == attrs.lists.end()) {
    if (attrs.numbers.count(name))
      return fail("attribute '" + name + "' must be a list of 2 integers");
    return fail("missing attribute '" + name + "'");
  }
  value = it->second;
  if (value.size() != 2)
    return fail("attribute '" + name + "' must have 2 values, got " +
                formatShape(value));
  for (int64_t v : value)
    if (v < minValue)
      return fail("attribute '" + name + "' must be " +
                  (minValue == 1 ? "positive" : "non-negative") + ", got " +
                  formatShape(value));
  return true;
}

bool Verifier::axis(const std::string &name, int64_t rank, int64_t &value,
                    int64_t fallback) {
  double raw;
  if (!number(name, false, raw, (double)fallback))
    return false;
  if (!isInt64(raw) || raw < -rank || raw >= rank)
    return fail("attribute '" + name + "' must be an integer in [" +
                std::to_string(-rank) + ", " + std::to_string(rank) +
                "), got " + formatNumber(raw));
  int64_t a = static_cast<int64_t>(raw);
  value = a < 0 ? a + rank : a;
  return true;
}

void parallelFor(ThreadPool &pool, int64_t n, int64_t costPerItem,
                 const std::function<void(int64_t, int64_t)> &fn) {
  // Roughly 20k cheap operations amortise one fork-join.
  constexpr int64_t kMinParallelCost = 1 << 15;
  if (n <= 0)
    return;
  if (pool.size() == 1 || n == 1 || n * costPerItem < kMinParallelCost) {
    fn(0, n);
    return;
  }
  pool.parallelFor(n, fn);
}

} // namespace detail

namespace {
/// The kernels indexed by op code; every op has exactly one.
const std::vector<OpKernel> &registry() {
  static const std::vector<OpKernel> kernels = [] {
    std::vector<OpKernel> all;
    detail::appendDenseKernels(all);
    detail::appendNNKernels(all);
    detail::appendConvKernels(all);
    detail::appendOptimKernels(all);
    detail::appendCommKernels(all);
    detail::appendCopyKernels(all);
    detail::appendCompressKernels(all);
    detail::appendSliceKernels(all);
    std::sort(all.begin(), all.end(),
              [](const OpKernel &a, const OpKernel &b) { return a.op < b.op; });
    for (int i = 0; i < kNumOpCodes; ++i)
      if (i >= static_cast<int>(all.size()) ||
          all[i].op != static_cast<OpCode>(i)) {
        std::fprintf(stderr,
                     "strata runtime: op '%s' has no CPU kernel or "
                     "more than one\n",
                     opName(static_cast<OpCode>(i)));
        std::abort();
      }
    return all;
  }();
  return kernels;
}
} // namespace

const OpKernel &kernelFor(OpCode op) {
  return registry()[static_cast<size_t>(op)];
}

const OpKernel *lookupKernel(const std::string &name) {
  OpCode op;
  return lookupOpCode(name, op) ? &kernelFor(op) : nullptr;
}

std::vector<const OpKernel *> allKernels() {
  std::vector<const OpKernel *> result;
  for (const OpKernel &k : registry())
    result.push_back(&k);
  return result;
}

} // namespace strata::rt
