//===- KernelTestUtil.h - Helpers for the CPU kernel tests -------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_TEST_CPU_KERNELTESTUTIL_H
#define STRATA_RT_TEST_CPU_KERNELTESTUTIL_H

#include "strata-rt/Kernels.h"
#include "strata-rt/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace strata::rt::test {

/// An owning host tensor: f32 data in `f`, i32 data in `i`.
struct HostTensor {
  TensorDesc desc;
  std::vector<float> f;
  std::vector<int32_t> i;

  HostTensor() = default;
  explicit HostTensor(Shape shape, DType dtype = DType::F32) {
    desc.shape = std::move(shape);
    desc.dtype = dtype;
    if (dtype == DType::F32)
      f.assign(desc.numel(), 0.0f);
    else
      i.assign(desc.numel(), 0);
  }
  Tensor view() {
    Tensor t;
    t.desc = desc;
    t.data = desc.dtype == DType::F32 ? (void *)f.data() : (void *)i.data();
    return t;
  }
  std::vector<double> asDouble() const {
    return std::vector<double>(f.begin(), f.end());
  }
};

inline HostTensor f32(Shape shape) { return HostTensor(std::move(shape)); }
inline HostTensor i32(Shape shape) {
  return HostTensor(std::move(shape), DType::I32);
}

/// Deterministic random source for the tests.
class Random {
public:
  explicit Random(uint32_t seed) : engine(seed) {}
  float uniform(float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(engine);
  }
  int32_t integer(int32_t lo, int32_t hi) { // [lo, hi]
    return std::uniform_int_distribution<int32_t>(lo, hi)(engine);
  }
  /// Uniform in [-scale, scale], never exactly zero.
  HostTensor tensor(Shape shape, float scale = 1.0f) {
    HostTensor t = f32(std::move(shape));
    fill(t, scale);
    return t;
  }
  void fill(HostTensor &t, float scale = 1.0f) {
    for (float &x : t.f) {
      do
        x = uniform(-scale, scale);
      while (x == 0.0f);
    }
  }
  /// Values with |x| in [gap, 1]: away from the kink of relu.
  HostTensor awayFromZero(Shape shape, float gap) {
    HostTensor t = f32(std::move(shape));
    for (float &x : t.f)
      x = (integer(0, 1) ? 1.0f : -1.0f) * uniform(gap, 1.0f);
    return t;
  }
  HostTensor ids(Shape shape, int32_t limit) {
    HostTensor t = i32(std::move(shape));
    for (int32_t &x : t.i)
      x = integer(0, limit - 1);
    return t;
  }

private:
  std::mt19937 engine;
};

/// Attrs from numbers and lists.
inline Attrs makeAttrs(std::map<std::string, double> numbers = {},
                       std::map<std::string, std::vector<int64_t>> lists = {}) {
  Attrs attrs;
  attrs.numbers = std::move(numbers);
  attrs.lists = std::move(lists);
  return attrs;
}

inline std::vector<TensorDesc> descs(const std::vector<HostTensor *> &ts) {
  std::vector<TensorDesc> result;
  for (HostTensor *t : ts)
    result.push_back(t->desc);
  return result;
}

/// Verifies and runs kernel `name` on a pool of `threads` threads.
inline void runKernel(const std::string &name,
                      const std::vector<HostTensor *> &inputs,
                      const std::vector<HostTensor *> &outputs,
                      const Attrs &attrs = {}, int threads = 1,
                      GemmTiling tiling = {}, bool evaluation = false) {
  const OpKernel *kernel = lookupKernel(name);
  ASSERT_NE(kernel, nullptr) << name;
  std::string error = kernel->verify(descs(inputs), descs(outputs), attrs);
  ASSERT_EQ(error, "") << name;
  std::vector<Tensor> in, out;
  for (HostTensor *t : inputs)
    in.push_back(t->view());
  for (HostTensor *t : outputs)
    out.push_back(t->view());
  OpAttrs typed;
  ASSERT_EQ(decodeAttrs(kernel->op, attrs, typed), "") << name;
  ThreadPool pool(threads);
  KernelContext ctx{pool, tiling};
  ctx.evaluation = evaluation;
  kernel->run(ctx, in, out, typed);
}

/// The verify message of kernel `name` for these operand descriptions.
inline std::string verifyMessage(const std::string &name,
                                 const std::vector<TensorDesc> &inputs,
                                 const std::vector<TensorDesc> &outputs,
                                 const Attrs &attrs = {}) {
  const OpKernel *kernel = lookupKernel(name);
  if (!kernel)
    return "no kernel " + name;
  return kernel->verify(inputs, outputs, attrs);
}

inline TensorDesc desc(Shape shape, DType dtype = DType::F32) {
  TensorDesc d;
  d.shape = std::move(shape);
  d.dtype = dtype;
  return d;
}

/// Expects |actual - expected| <= atol + rtol |expected| everywhere;
/// reports the worst element.
inline void expectClose(const std::vector<float> &actual,
                        const std::vector<double> &expected, double rtol,
                        double atol, const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t bad = 0, worst = 0;
  double worstExcess = 0;
  for (size_t k = 0; k < actual.size(); ++k) {
    double err = std::fabs((double)actual[k] - expected[k]);
    double allowed = atol + rtol * std::fabs(expected[k]);
    if (!(err <= allowed)) {
      ++bad;
      if (!(err - allowed <= worstExcess)) {
        worstExcess = err - allowed;
        worst = k;
      }
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << actual.size()
                     << " elements differ; worst at " << worst << ": got "
                     << actual[worst] << ", expected " << expected[worst];
}

/// Central finite differences, in double, of L(x) = sum_k w_k f(x)_k.
inline std::vector<double> numericGradient(
    const std::function<std::vector<double>(const std::vector<double> &)> &f,
    std::vector<double> x, const std::vector<double> &w, double eps = 1e-5) {
  std::vector<double> grad(x.size());
  auto loss = [&](const std::vector<double> &point) {
    std::vector<double> y = f(point);
    double l = 0;
    for (size_t k = 0; k < y.size(); ++k)
      l += w[k] * y[k];
    return l;
  };
  for (size_t j = 0; j < x.size(); ++j) {
    double saved = x[j];
    x[j] = saved + eps;
    double plus = loss(x);
    x[j] = saved - eps;
    double minus = loss(x);
    x[j] = saved;
    grad[j] = (plus - minus) / (2 * eps);
  }
  return grad;
}

inline bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace strata::rt::test

#endif // STRATA_RT_TEST_CPU_KERNELTESTUTIL_H
