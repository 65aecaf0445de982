//===- CudaKernelsTest.cpp - CUDA kernels against the CPU kernels ---------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every op of the CPU registry must have a CUDA kernel, and a table of
// representative instructions per op (odd sizes, transposes, batched and
// broadcast matmul, causal softmax, strided and padded convolution and
// pooling, ties in max pooling, repeated embedding ids, rows long enough
// for the block-per-row paths) must give the CPU kernel's results:
// |gpu - cpu| <= atol + rtol |cpu| with rtol = 1e-4 and atol = 1e-5 (1e-4
// for GEMM-based ops and 2e-4 for sums of hundreds of terms, which the two
// backends add in different orders; gathers, copies, selections and
// embedding_grad must match bitwise). cuBLAS runs in FP32 (TF32 off). Each
// instruction also runs twice (the bits must agree: no atomics), with too
// little scratch (the slower paths), and, for the GEMM-based ops, with
// Strata's own GEMM. strataGemm is compared with cuBLAS and a
// double-precision host reference for every compiled tiling and two legal
// uncompiled ones.
//
// Tests that need a device call GTEST_SKIP() when cudaGetDeviceCount fails
// or finds none; the registry, case-table and tiling tests run anywhere.
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"
#include "CudaBackend.h"
#include "CudaCompress.h"
#include "strata-rt/Compress.h"

#include "strata-rt/Kernels.h"
#include "strata-rt/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>

namespace strata::rt::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Device availability and RAII helpers
//===----------------------------------------------------------------------===//

/// Whether a CUDA device can run kernels; `why` says why not.
bool haveDevice(std::string &why) {
  static int state = -1;
  static std::string reason;
  if (state < 0) {
    // Without a driver cudaGetDeviceCount returns an error (35, insufficient
    // driver) and leaves the count alone.
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      reason = std::string("no usable CUDA device (cudaGetDeviceCount: ") +
               cudaGetErrorString(error) + "); skipping the GPU test";
      (void)cudaGetLastError();
      state = 0;
    } else if (count == 0) {
      reason = "no CUDA device found; skipping the GPU test";
      state = 0;
    } else {
      state = 1;
    }
  }
  why = reason;
  return state == 1;
}

#define SKIP_WITHOUT_DEVICE()                                                  \
  do {                                                                         \
    std::string why;                                                           \
    if (!haveDevice(why))                                                      \
      GTEST_SKIP() << why;                                                     \
  } while (0)

void check(cudaError_t error, const char *what) {
  if (error != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(error));
}

void check(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " +
                             cublasGetStatusString(status));
}

/// Owning device allocation.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes(bytes) {
    if (bytes)
      check(cudaMalloc(&ptr, bytes), "cudaMalloc");
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    std::swap(ptr, other.ptr);
    std::swap(bytes, other.bytes);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr)
      cudaFree(ptr);
  }
  void *get() const { return ptr; }
  size_t size() const { return bytes; }

private:
  void *ptr = nullptr;
  size_t bytes = 0;
};

/// A stream and a cuBLAS handle for the GPU tests.
struct Gpu {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  Gpu() {
    check(cudaStreamCreate(&stream), "cudaStreamCreate");
    check(cublasCreate(&cublas), "cublasCreate");
  }
  ~Gpu() {
    cublasDestroy(cublas);
    cudaStreamDestroy(stream);
  }
};

Gpu &gpu() {
  static Gpu instance;
  return instance;
}

//===----------------------------------------------------------------------===//
// Host tensors and random data
//===----------------------------------------------------------------------===//

struct HostTensor {
  TensorDesc desc;
  /// f32 or i32 elements, 4 bytes each.
  std::vector<uint32_t> bits;

  HostTensor() = default;
  HostTensor(Shape shape, DType dtype) {
    desc.shape = std::move(shape);
    desc.dtype = dtype;
    bits.assign(desc.numel(), 0);
  }
  float f(size_t i) const {
    float v;
    std::memcpy(&v, &bits[i], 4);
    return v;
  }
  int32_t i32(size_t i) const {
    int32_t v;
    std::memcpy(&v, &bits[i], 4);
    return v;
  }
  void setF(size_t i, float v) { std::memcpy(&bits[i], &v, 4); }
  void setI(size_t i, int32_t v) { std::memcpy(&bits[i], &v, 4); }
  Tensor view() {
    Tensor t;
    t.desc = desc;
    t.data = bits.data();
    return t;
  }
};

class Random {
public:
  explicit Random(uint32_t seed) : engine(seed) {}
  float uniform(float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(engine);
  }
  int32_t integer(int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(engine);
  }
  /// Uniform in [lo, hi], never exactly zero.
  HostTensor f32(Shape shape, float lo = -1.0f, float hi = 1.0f) {
    HostTensor t(std::move(shape), DType::F32);
    for (size_t i = 0; i < t.bits.size(); ++i) {
      float v;
      do
        v = uniform(lo, hi);
      while (v == 0.0f);
      t.setF(i, v);
    }
    return t;
  }
  /// Small integers in [-2, 2] as floats: many ties (max pooling).
  HostTensor ties(Shape shape) {
    HostTensor t(std::move(shape), DType::F32);
    for (size_t i = 0; i < t.bits.size(); ++i)
      t.setF(i, (float)integer(-2, 2));
    return t;
  }
  HostTensor ids(Shape shape, int32_t limit) {
    HostTensor t(std::move(shape), DType::I32);
    for (size_t i = 0; i < t.bits.size(); ++i)
      t.setI(i, integer(0, limit - 1));
    return t;
  }

private:
  std::mt19937 engine;
};

HostTensor scalarI32(int32_t v) {
  HostTensor t({}, DType::I32);
  t.setI(0, v);
  return t;
}

TensorDesc desc(Shape shape, DType dtype = DType::F32) {
  TensorDesc d;
  d.shape = std::move(shape);
  d.dtype = dtype;
  return d;
}

Attrs attrs(std::map<std::string, double> numbers = {},
            std::map<std::string, std::vector<int64_t>> lists = {}) {
  Attrs a;
  a.numbers = std::move(numbers);
  a.lists = std::move(lists);
  return a;
}

OpCode opCode(const std::string &name) {
  OpCode op;
  if (!lookupOpCode(name, op))
    throw std::invalid_argument("no op " + name);
  return op;
}

/// The attributes as the loader hands them to kernels.
OpAttrs typed(const std::string &op, const Attrs &a) {
  return decodeAttrsOrThrow(opCode(op), a);
}

size_t scratchBytes(const std::string &op, const std::vector<TensorDesc> &in,
                    const std::vector<TensorDesc> &out, const Attrs &a) {
  return cudaScratchBytes(opCode(op), in, out, typed(op, a));
}

//===----------------------------------------------------------------------===//
// The case table
//===----------------------------------------------------------------------===//

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;
/// GEMM-based ops, and reductions of hundreds of terms or more: the CPU and
/// the GPU add in different orders, and their rounding errors scale with
/// the partial sums (about sqrt(terms)), not with the result.
constexpr double kGemmAtol = 1e-4;
constexpr double kLongSumAtol = 2e-4;

/// One instruction to run on both backends.
struct Case {
  std::string op;
  std::string label;
  std::vector<HostTensor> inputs;
  std::vector<TensorDesc> outputs;
  Attrs attrs;
  double rtol = kRtol;
  double atol = kAtol;
  /// Results must match bitwise (gathers, copies, selections).
  bool exact = false;
  /// Run in evaluation mode (KernelContext::evaluation: batch_norm with its
  /// running statistics).
  bool evaluation = false;

  std::string name() const { return op + " (" + label + ")"; }
};

bool usesGemm(const std::string &op) {
  return op == "matmul" || op == "fused_matmul" || op == "conv2d" ||
         op == "conv2d_grad_input" || op == "conv2d_grad_filter";
}

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t p) {
  return (in + 2 * p - k) / s + 1;
}

std::vector<Case> makeCases() {
  Random rng(2024);
  std::vector<Case> cs;
  auto add = [&](std::string op, std::string label,
                 std::vector<HostTensor> inputs,
                 std::vector<TensorDesc> outputs, Attrs a = {}) -> Case & {
    Case c;
    c.op = std::move(op);
    c.label = std::move(label);
    c.inputs = std::move(inputs);
    c.outputs = std::move(outputs);
    c.attrs = std::move(a);
    if (usesGemm(c.op))
      c.atol = kGemmAtol;
    cs.push_back(std::move(c));
    return cs.back();
  };
  auto t = [&](Shape s) { return rng.f32(std::move(s)); };

  // matmul: odd sizes, every transpose, batched, broadcast (tall GEMM and
  // strided with stride 0), rank 4, several tiles with remainders.
  add("matmul", "7x13x5", {t({7, 13}), t({13, 5})}, {desc({7, 5})});
  add("matmul", "7x13x5 ta", {t({13, 7}), t({13, 5})}, {desc({7, 5})},
      attrs({{"transpose_a", 1}}));
  add("matmul", "7x13x5 tb", {t({7, 13}), t({5, 13})}, {desc({7, 5})},
      attrs({{"transpose_b", 1}}));
  add("matmul", "7x13x5 ta tb", {t({13, 7}), t({5, 13})}, {desc({7, 5})},
      attrs({{"transpose_a", 1}, {"transpose_b", 1}}));
  add("matmul", "batched", {t({3, 7, 13}), t({3, 13, 5})}, {desc({3, 7, 5})});
  add("matmul", "batched tb", {t({2, 9, 16}), t({2, 11, 16})},
      {desc({2, 9, 11})}, attrs({{"transpose_b", 1}}));
  add("matmul", "broadcast B", {t({3, 7, 13}), t({13, 5})}, {desc({3, 7, 5})});
  add("matmul", "broadcast B ta", {t({3, 13, 7}), t({13, 5})},
      {desc({3, 7, 5})}, attrs({{"transpose_a", 1}}));
  add("matmul", "rank 4", {t({2, 3, 33, 40}), t({2, 3, 40, 65})},
      {desc({2, 3, 33, 65})});
  add("matmul", "130x70x140", {t({130, 70}), t({70, 140})}, {desc({130, 140})});
  add("matmul", "CPU tiling attrs ignored", {t({9, 20}), t({20, 17})},
      {desc({9, 17})},
      attrs({{"mc", 48}, {"nc", 64}, {"kc", 32}, {"mr", 6}, {"nr", 16}}));
  // bf16 (--strata-mixed-precision): cuBLAS's bf16 tensor-core mode
  // against the CPU's bf16 GEMM. Both round the operands to bf16 and sum in
  // f32, in different orders; the tolerance also allows for a down-conversion
  // other than round-to-nearest-even (cuBLAS does not document it).
  for (auto [label, a, b, o, ta, tb] :
       {std::tuple{"bf16 130x70x140", Shape{130, 70}, Shape{70, 140},
                   Shape{130, 140}, 0, 0},
        std::tuple{"bf16 batched tb", Shape{2, 9, 16}, Shape{2, 11, 16},
                   Shape{2, 9, 11}, 0, 1},
        std::tuple{"bf16 broadcast B ta", Shape{3, 13, 7}, Shape{13, 5},
                   Shape{3, 7, 5}, 1, 0}}) {
    Case &c =
        add("matmul", label, {t(a), t(b)}, {desc(o)},
            attrs({{"bf16", 1}, {"transpose_a", ta}, {"transpose_b", tb}}));
    c.rtol = 1e-2;
    c.atol = 5e-2;
  }

  // The heads layout: a strided batched GEMM per outer index.
  add("matmul", "heads_a heads_b tb", {t({2, 9, 3, 8}), t({2, 9, 3, 8})},
      {desc({2, 3, 9, 9})},
      attrs({{"heads_a", 1}, {"heads_b", 1}, {"transpose_b", 1}}));
  add("matmul", "heads_b heads_c", {t({2, 3, 9, 9}), t({2, 9, 3, 8})},
      {desc({2, 9, 3, 8})}, attrs({{"heads_b", 1}, {"heads_c", 1}}));

  // fused_matmul: cuBLAS, then the epilogue kernel (the CPU applies the
  // epilogue per tile; both run the unfused kernels' element arithmetic).
  add("fused_matmul", "bias 130x70x140", {t({130, 70}), t({70, 140}), t({140})},
      {desc({130, 140})}, attrs({{"epilogue", 1}}));
  add("fused_matmul", "bias_relu + pre, broadcast B",
      {t({3, 7, 13}), t({13, 5}), t({5})}, {desc({3, 7, 5}), desc({3, 7, 5})},
      attrs({{"epilogue", 2}}));
  add("fused_matmul", "bias_gelu tb", {t({9, 20}), t({17, 20}), t({17})},
      {desc({9, 17})}, attrs({{"epilogue", 3}, {"transpose_b", 1}}));
  add("fused_matmul", "relu_grad tb", {t({9, 20}), t({17, 20}), t({9, 17})},
      {desc({9, 17})}, attrs({{"epilogue", 4}, {"transpose_b", 1}}));
  add("fused_matmul", "gelu_grad batched",
      {t({2, 9, 16}), t({2, 16, 11}), rng.f32({2, 9, 11}, -4, 4)},
      {desc({2, 9, 11})}, attrs({{"epilogue", 5}}));
  add("fused_matmul", "residual batched",
      {t({2, 9, 16}), t({2, 16, 11}), t({2, 9, 11})}, {desc({2, 9, 11})},
      attrs({{"epilogue", 6}}));
  add("fused_matmul", "bias_residual, broadcast B",
      {t({3, 7, 13}), t({13, 5}), t({5}), t({3, 7, 5})}, {desc({3, 7, 5})},
      attrs({{"epilogue", 7}}));

  // Element-wise.
  add("add", "7x13x5", {t({7, 13, 5}), t({7, 13, 5})}, {desc({7, 13, 5})});
  add("add", "1003 (vector + tail)", {t({1003}), t({1003})}, {desc({1003})});
  add("relu", "7x13x5", {t({7, 13, 5})}, {desc({7, 13, 5})}).exact = true;
  add("relu", "1024", {t({1024})}, {desc({1024})}).exact = true;
  add("relu_grad", "7x13x5", {t({7, 13, 5}), t({7, 13, 5})}, {desc({7, 13, 5})})
      .exact = true;
  add("gelu", "7x13x5", {rng.f32({7, 13, 5}, -4, 4)}, {desc({7, 13, 5})});
  add("gelu", "1027", {rng.f32({1027}, -4, 4)}, {desc({1027})});
  add("gelu_grad", "7x13x5", {t({7, 13, 5}), rng.f32({7, 13, 5}, -4, 4)},
      {desc({7, 13, 5})});
  add("fill", "f32", {}, {desc({7, 13})}, attrs({{"value", 0.5}})).exact = true;
  add("fill", "f32 zero", {}, {desc({7, 13})}, attrs({{"value", 0}})).exact =
      true;
  add("fill", "i32", {}, {desc({5}, DType::I32)}, attrs({{"value", 3}})).exact =
      true;

  // bias_add and its gradient, along every kind of axis.
  add("bias_add", "last axis", {t({7, 13}), t({13})}, {desc({7, 13})},
      attrs({{"axis", -1}}));
  add("bias_add", "last axis vector", {t({5, 12}), t({12})}, {desc({5, 12})});
  add("bias_add", "axis 1 inner 15", {t({4, 6, 5, 3}), t({6})},
      {desc({4, 6, 5, 3})}, attrs({{"axis", 1}}));
  add("bias_add", "axis 1 inner 16", {t({2, 8, 4, 4}), t({8})},
      {desc({2, 8, 4, 4})}, attrs({{"axis", 1}}));
  add("bias_add", "axis 0", {t({6, 7}), t({6})}, {desc({6, 7})},
      attrs({{"axis", 0}}));
  add("bias_add_grad", "last axis", {t({7, 13})}, {desc({13})},
      attrs({{"axis", -1}}));
  add("bias_add_grad", "300 rows (chunks)", {t({300, 40})}, {desc({40})}).atol =
      kLongSumAtol;
  add("bias_add_grad", "axis 1 inner 15", {t({4, 6, 5, 3})}, {desc({6})},
      attrs({{"axis", 1}}));
  add("bias_add_grad", "axis 1 outer 64", {t({64, 3, 50})}, {desc({3})},
      attrs({{"axis", 1}}))
      .atol = kLongSumAtol;

  // Layout.
  add("reshape", "f32", {t({6, 35})}, {desc({7, 30})}).exact = true;
  add("scale", "7x13", {t({7, 13})}, {desc({7, 13})}, attrs({{"factor", 0.25}}))
      .exact = true;
  add("micro_batch", "f32", {t({12, 5})}, {desc({3, 5})},
      attrs({{"index", 2}, {"count", 4}}))
      .exact = true;
  add("micro_batch", "i32", {rng.ids({8}, 100)}, {desc({4}, DType::I32)},
      attrs({{"index", 1}, {"count", 2}}))
      .exact = true;
  add("reshape", "i32", {rng.ids({4, 6}, 100)}, {desc({24}, DType::I32)})
      .exact = true;
  add("flatten", "3x4x5", {t({3, 4, 5})}, {desc({3, 20})}).exact = true;
  auto transpose = [&](Shape x, std::vector<int64_t> perm, DType dtype,
                       std::string label) {
    Shape y;
    for (int64_t p : perm)
      y.push_back(x[p]);
    HostTensor in = dtype == DType::F32 ? t(x) : rng.ids(x, 1000);
    add("transpose", std::move(label), {std::move(in)}, {desc(y, dtype)},
        attrs({}, {{"permutation", perm}}))
        .exact = true;
  };
  transpose({7, 13}, {1, 0}, DType::F32, "7x13 (tiles)");
  transpose({40, 70}, {1, 0}, DType::F32, "40x70 (several tiles)");
  transpose({2, 3, 4, 5}, {0, 2, 3, 1}, DType::F32, "batched 2-D");
  transpose({2, 3, 4, 5}, {3, 1, 0, 2}, DType::F32, "gather");
  transpose({2, 3, 4, 5, 2}, {4, 0, 3, 1, 2}, DType::F32, "rank 5 gather");
  transpose({4, 1, 6}, {2, 1, 0}, DType::F32, "unit dimension");
  transpose({2, 3}, {0, 1}, DType::F32, "identity");
  transpose({5, 3, 2}, {2, 0, 1}, DType::I32, "i32");

  // softmax and its gradient: warp and block rows, causal, scale.
  add("softmax", "7x13", {t({7, 13})}, {desc({7, 13})});
  add("softmax", "causal scaled", {rng.f32({2, 3, 9, 9}, -4, 4)},
      {desc({2, 3, 9, 9})}, attrs({{"causal", 1}, {"scale", 0.125}}));
  add("softmax", "rows of 1500", {rng.f32({4, 1500}, -4, 4)},
      {desc({4, 1500})});
  add("softmax", "causal 1100x1100", {rng.f32({1100, 1100}, -4, 4)},
      {desc({1100, 1100})}, attrs({{"causal", 1}}));
  add("softmax_grad", "7x13", {t({7, 13}), rng.f32({7, 13}, 0, 1)},
      {desc({7, 13})});
  add("softmax_grad", "causal scaled", {t({2, 9, 9}), rng.f32({2, 9, 9}, 0, 1)},
      {desc({2, 9, 9})}, attrs({{"causal", 1}, {"scale", 0.5}}));
  add("softmax_grad", "rows of 1500", {t({3, 1500}), rng.f32({3, 1500}, 0, 1)},
      {desc({3, 1500})});

  // layer_norm and its gradient.
  add("layer_norm", "7x13", {rng.f32({7, 13}, -2, 3), t({13}), t({13})},
      {desc({7, 13})}, attrs({{"epsilon", 1e-5}}));
  add("layer_norm", "rows of 1500",
      {rng.f32({3, 5, 1500}, -2, 3), t({1500}), t({1500})},
      {desc({3, 5, 1500})});
  add("layer_norm_grad", "7x13", {t({7, 13}), rng.f32({7, 13}, -2, 3), t({13})},
      {desc({7, 13}), desc({13}), desc({13})}, attrs({{"epsilon", 1e-5}}));
  add("layer_norm_grad", "300x64 (chunks)",
      {t({300, 64}), rng.f32({300, 64}, -2, 3), t({64})},
      {desc({300, 64}), desc({64}), desc({64})})
      .atol = kLongSumAtol;
  add("layer_norm_grad", "rows of 1500",
      {t({2, 1500}), rng.f32({2, 1500}, -2, 3), t({1500})},
      {desc({2, 1500}), desc({1500}), desc({1500})});

  // batch_norm (training and evaluation) and its gradient; the running
  // variance and inverse deviation are positive.
  add("batch_norm", "4x3x5x6",
      {rng.f32({4, 3, 5, 6}, -2, 3), t({3}), t({3}), t({3}),
       rng.f32({3}, 0.5, 2)},
      {desc({4, 3, 5, 6}), desc({3}), desc({3}), desc({3}), desc({3})},
      attrs({{"epsilon", 1e-5}, {"momentum", 0.1}}));
  add("batch_norm", "2x70 (rank 2)",
      {rng.f32({2, 70}, -2, 3), t({70}), t({70}), t({70}),
       rng.f32({70}, 0.5, 2)},
      {desc({2, 70}), desc({70}), desc({70}), desc({70}), desc({70})});
  add("batch_norm", "8x5x20x20 evaluation",
      {rng.f32({8, 5, 20, 20}, -2, 3), t({5}), t({5}), t({5}),
       rng.f32({5}, 0.5, 2)},
      {desc({8, 5, 20, 20}), desc({5}), desc({5}), desc({5}), desc({5})})
      .evaluation = true;
  add("batch_norm_grad", "4x3x5x6",
      {t({4, 3, 5, 6}), rng.f32({4, 3, 5, 6}, -2, 3), t({3}), t({3}),
       rng.f32({3}, 0.5, 2)},
      {desc({4, 3, 5, 6}), desc({3}), desc({3})});
  add("batch_norm_grad", "16x8x17x17",
      {t({16, 8, 17, 17}), rng.f32({16, 8, 17, 17}, -2, 3), t({8}), t({8}),
       rng.f32({8}, 0.5, 2)},
      {desc({16, 8, 17, 17}), desc({8}), desc({8})})
      .atol = kLongSumAtol;

  // slice, slice_grad and concat: pure copies, bit for bit.
  add("slice", "middle axis", {t({3, 10, 5})}, {desc({3, 4, 5})},
      attrs({{"axis", 1}, {"offset", 3}, {"size", 4}}))
      .exact = true;
  add("slice", "last axis", {t({6, 48})}, {desc({6, 16})},
      attrs({{"axis", 1}, {"offset", 32}, {"size", 16}}))
      .exact = true;
  add("slice_grad", "middle axis", {t({3, 4, 5})}, {desc({3, 10, 5})},
      attrs({{"axis", 1}, {"offset", 3}}))
      .exact = true;
  add("concat", "three inputs", {t({2, 3, 4}), t({2, 1, 4}), t({2, 5, 4})},
      {desc({2, 9, 4})}, attrs({{"axis", 1}}))
      .exact = true;

  // Embeddings.
  add("embedding", "h 12 (vector)", {t({17, 12}), rng.ids({3, 5}, 17)},
      {desc({3, 5, 12})})
      .exact = true;
  add("embedding", "h 7", {t({11, 7}), rng.ids({13}, 11)}, {desc({13, 7})})
      .exact = true;
  add("embedding_grad", "repeated ids", {t({3, 5, 12}), rng.ids({3, 5}, 6)},
      {desc({17, 12})});
  add("embedding_grad", "600 ids h 33", {t({600, 33}), rng.ids({600}, 50)},
      {desc({50, 33})});
  add("position_embedding", "h 12", {t({2, 5, 12}), t({9, 12})},
      {desc({2, 5, 12})});
  add("position_embedding", "h 7", {t({3, 4, 7}), t({4, 7})},
      {desc({3, 4, 7})});
  add("position_embedding_grad", "P > S", {t({2, 5, 12})}, {desc({9, 12})});
  add("position_embedding_grad", "P == S", {t({3, 4, 7})}, {desc({4, 7})});

  // Losses and their gradients.
  add("softmax_cross_entropy", "7x13",
      {rng.f32({7, 13}, -3, 3), rng.ids({7}, 13)}, {desc({})});
  add("softmax_cross_entropy", "300 rows (partials)",
      {rng.f32({300, 10}, -3, 3), rng.ids({300}, 10)}, {desc({})});
  add("softmax_cross_entropy", "classes 1500",
      {rng.f32({2, 3, 1500}, -3, 3), rng.ids({2, 3}, 1500)}, {desc({})});
  HostTensor dloss({}, DType::F32);
  dloss.setF(0, 1.3f);
  add("softmax_cross_entropy_grad", "7x13",
      {rng.f32({7, 13}, -3, 3), rng.ids({7}, 13), dloss}, {desc({7, 13})});
  add("softmax_cross_entropy_grad", "300 rows",
      {rng.f32({300, 10}, -3, 3), rng.ids({300}, 10), dloss},
      {desc({300, 10})});
  add("softmax_cross_entropy_grad", "classes 1500",
      {rng.f32({2, 1500}, -3, 3), rng.ids({2}, 1500), dloss},
      {desc({2, 1500})});
  add("mse_loss", "7x13", {t({7, 13}), t({7, 13})}, {desc({})});
  add("mse_loss", "100000 (partials)", {t({100000}), t({100000})}, {desc({})});
  add("mse_loss_grad", "7x13", {t({7, 13}), t({7, 13}), dloss},
      {desc({7, 13})});

  // Convolutions: padding, strides, non-square windows, 1x1 (identity and
  // strided).
  struct ConvConfig {
    std::string label;
    Shape x, w;
    std::vector<int64_t> strides, padding;
  };
  std::vector<ConvConfig> convs = {
      {"3x3 s1 p1", {2, 3, 9, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1}},
      {"3x2 s2 p0", {2, 3, 9, 8}, {5, 3, 3, 2}, {2, 2}, {0, 0}},
      {"5x5 s2x1 p2x0", {2, 2, 11, 9}, {3, 2, 5, 5}, {2, 1}, {2, 0}},
      {"1x1 identity", {3, 6, 7, 5}, {4, 6, 1, 1}, {1, 1}, {0, 0}},
      {"1x1 s2", {2, 6, 7, 5}, {4, 6, 1, 1}, {2, 2}, {0, 0}},
  };
  for (const ConvConfig &c : convs) {
    Shape y = {c.x[0], c.w[0],
               outSize(c.x[2], c.w[2], c.strides[0], c.padding[0]),
               outSize(c.x[3], c.w[3], c.strides[1], c.padding[1])};
    Attrs a = attrs({}, {{"strides", c.strides}, {"padding", c.padding}});
    add("conv2d", c.label, {t(c.x), t(c.w)}, {desc(y)}, a);
    add("conv2d_grad_input", c.label, {t(y), t(c.w)}, {desc(c.x)}, a);
    add("conv2d_grad_filter", c.label, {t(y), t(c.x)}, {desc(c.w)}, a);
  }
  // bf16 convolutions (--strata-mixed-precision) against the CPU's bf16
  // im2col GEMMs, with the bf16 matmuls' tolerance.
  for (const ConvConfig &c : {convs[0], convs[3]}) {
    Shape y = {c.x[0], c.w[0],
               outSize(c.x[2], c.w[2], c.strides[0], c.padding[0]),
               outSize(c.x[3], c.w[3], c.strides[1], c.padding[1])};
    Attrs a =
        attrs({{"bf16", 1}}, {{"strides", c.strides}, {"padding", c.padding}});
    // (add returns a reference into a growing vector: use it at once.)
    auto loosen = [](Case &bf16) {
      bf16.rtol = 1e-2;
      bf16.atol = 5e-2;
    };
    loosen(add("conv2d", "bf16 " + c.label, {t(c.x), t(c.w)}, {desc(y)}, a));
    loosen(add("conv2d_grad_input", "bf16 " + c.label, {t(y), t(c.w)},
               {desc(c.x)}, a));
    loosen(add("conv2d_grad_filter", "bf16 " + c.label, {t(y), t(c.x)},
               {desc(c.w)}, a));
  }

  // Pooling.
  struct PoolConfig {
    std::string label;
    Shape x;
    std::vector<int64_t> kernel, strides, padding;
    bool ties;
  };
  std::vector<PoolConfig> pools = {
      {"3x3 s2 p1", {2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, false},
      {"2x2 s2", {2, 3, 8, 6}, {2, 2}, {2, 2}, {0, 0}, false},
      {"3x3 s1 p1 ties", {2, 2, 7, 6}, {3, 3}, {1, 1}, {1, 1}, true},
      {"3x2 s1x2 p1x0 ties", {1, 3, 6, 7}, {3, 2}, {1, 2}, {1, 0}, true},
  };
  for (const PoolConfig &p : pools) {
    Shape y = {p.x[0], p.x[1],
               outSize(p.x[2], p.kernel[0], p.strides[0], p.padding[0]),
               outSize(p.x[3], p.kernel[1], p.strides[1], p.padding[1])};
    Attrs a = attrs(
        {},
        {{"kernel", p.kernel}, {"strides", p.strides}, {"padding", p.padding}});
    HostTensor x = p.ties ? rng.ties(p.x) : t(p.x);
    add("max_pool2d", p.label, {x}, {desc(y)}, a).exact = true;
    // Overlapping windows add several dy into one cell: same order as the
    // CPU, so the same bits.
    add("max_pool2d_grad", p.label, {t(y), x}, {desc(p.x)}, a).exact = true;
  }
  add("global_avg_pool", "5x7", {t({2, 3, 5, 7})}, {desc({2, 3})});
  add("global_avg_pool", "40x40 (block)", {t({2, 2, 40, 40})}, {desc({2, 2})});
  add("global_avg_pool_grad", "5x7", {t({2, 3})}, {desc({2, 3, 5, 7})});

  // Optimizers (in place).
  add("sgd_update", "momentum, decay", {t({7, 13}), t({7, 13}), t({7, 13})},
      {desc({7, 13}), desc({7, 13})},
      attrs({{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}}));
  add("adam_update", "AdamW step 3",
      {t({7, 13}), t({7, 13}), t({7, 13}), rng.f32({7, 13}, 0, 1),
       scalarI32(3)},
      {desc({7, 13}), desc({7, 13}), desc({7, 13})},
      attrs({{"lr", 1e-3},
             {"beta1", 0.9},
             {"beta2", 0.999},
             {"epsilon", 1e-8},
             {"weight_decay", 0.01},
             {"decoupled", 1}}));
  add("adam_update", "Adam update 1 of 3 in step 2",
      {t({7, 13}), t({7, 13}), t({7, 13}), rng.f32({7, 13}, 0, 1),
       scalarI32(2)},
      {desc({7, 13}), desc({7, 13}), desc({7, 13})},
      attrs({{"lr", 1e-3}, {"update", 1}, {"updates", 3}}));
  add("copy_into", "a kept weight version", {t({7, 13}), t({7, 13})},
      {desc({7, 13})})
      .exact = true;
  add("adam_update", "Adam L2 step 1",
      {t({1001}), t({1001}), t({1001}), rng.f32({1001}, 0, 1), scalarI32(1)},
      {desc({1001}), desc({1001}), desc({1001})},
      attrs({{"lr", 1e-2}, {"weight_decay", 0.1}}));

  // One rank: a copy.
  add("all_reduce", "one rank", {t({7, 13})}, {desc({7, 13})},
      attrs({{"replicas", 1}}))
      .exact = true;
  return cs;
}

const std::vector<Case> &cases() {
  static const std::vector<Case> all = makeCases();
  return all;
}

std::vector<TensorDesc> inputDescs(const Case &c) {
  std::vector<TensorDesc> d;
  for (const HostTensor &t : c.inputs)
    d.push_back(t.desc);
  return d;
}

//===----------------------------------------------------------------------===//
// Running a case
//===----------------------------------------------------------------------===//

const OpKernel &cpuKernel(const std::string &op) {
  const OpKernel *k = lookupKernel(op);
  if (!k)
    throw std::runtime_error("no CPU kernel " + op);
  return *k;
}

/// Output i of an in-place op is input inPlace[i].
std::vector<HostTensor> runCpu(const Case &c) {
  const OpKernel &kernel = cpuKernel(c.op);
  std::vector<HostTensor> inputs = c.inputs, outputs;
  for (const TensorDesc &d : c.outputs)
    outputs.emplace_back(d.shape, d.dtype);
  std::vector<Tensor> in, out;
  for (HostTensor &t : inputs)
    in.push_back(t.view());
  for (size_t i = 0; i < outputs.size(); ++i) {
    int updated = kernel.info().inPlaceInput(i);
    out.push_back(updated < 0 ? outputs[i].view() : in[updated]);
  }
  ThreadPool pool(2);
  KernelContext ctx{pool, GemmTiling{}};
  ctx.evaluation = c.evaluation;
  kernel.run(ctx, in, out, typed(c.op, c.attrs));
  for (size_t i = 0; i < outputs.size(); ++i)
    if (int updated = kernel.info().inPlaceInput(i); updated >= 0)
      outputs[i] = inputs[updated];
  return outputs;
}

struct GpuOptions {
  GemmEngine engine = GemmEngine::Cublas;
  CudaGemmTiling tiling;
  /// Scratch bytes; SIZE_MAX: what cudaScratchBytes asks for.
  size_t scratch = std::numeric_limits<size_t>::max();
};

std::vector<HostTensor> runGpu(const Case &c, const GpuOptions &options) {
  const OpKernel &kernel = cpuKernel(c.op);
  CudaKernelFn fn = lookupCudaKernel(c.op);
  if (!fn)
    throw std::runtime_error("no CUDA kernel " + c.op);
  std::vector<DeviceBuffer> buffers;
  std::vector<Tensor> in, out;
  for (const HostTensor &t : c.inputs) {
    buffers.emplace_back(t.bits.size() * 4);
    check(cudaMemcpy(buffers.back().get(), t.bits.data(), t.bits.size() * 4,
                     cudaMemcpyHostToDevice),
          "cudaMemcpy");
    in.push_back(Tensor{buffers.back().get(), t.desc});
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (int updated = kernel.info().inPlaceInput(i); updated >= 0) {
      out.push_back(in[updated]);
      continue;
    }
    size_t bytes = c.outputs[i].numel() * 4;
    buffers.emplace_back(bytes);
    // NaN (f32) / -1 (i32) everywhere, so unwritten elements show.
    check(cudaMemset(buffers.back().get(), 0xff, bytes), "cudaMemset");
    out.push_back(Tensor{buffers.back().get(), c.outputs[i]});
  }
  size_t wantedScratch =
      options.scratch == std::numeric_limits<size_t>::max()
          ? scratchBytes(c.op, inputDescs(c), c.outputs, c.attrs)
          : options.scratch;
  DeviceBuffer scratch(wantedScratch);
  CudaContext ctx;
  ctx.stream = gpu().stream;
  ctx.cublas = gpu().cublas;
  ctx.gemm = options.engine;
  ctx.tiling = options.tiling;
  ctx.scratch = scratch.get();
  ctx.scratchBytes = wantedScratch;
  ctx.evaluation = c.evaluation;
  fn(ctx, in, out, typed(c.op, c.attrs));
  check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  std::vector<HostTensor> results;
  for (size_t i = 0; i < out.size(); ++i) {
    results.emplace_back(c.outputs[i].shape, c.outputs[i].dtype);
    check(cudaMemcpy(results.back().bits.data(), out[i].data,
                     results.back().bits.size() * 4, cudaMemcpyDeviceToHost),
          "cudaMemcpy");
  }
  return results;
}

/// Expects `actual` to match `expected` within the case's tolerance (or
/// bitwise); reports the worst element.
void expectMatch(const Case &c, const std::vector<HostTensor> &actual,
                 const std::vector<HostTensor> &expected,
                 const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t o = 0; o < actual.size(); ++o) {
    const HostTensor &a = actual[o], &e = expected[o];
    ASSERT_EQ(a.bits.size(), e.bits.size());
    if (c.exact || a.desc.dtype == DType::I32) {
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < a.bits.size(); ++i)
        if (a.bits[i] != e.bits[i] && !bad++)
          first = i;
      EXPECT_EQ(bad, 0u) << what << ", output #" << o << ": " << bad << " of "
                         << a.bits.size()
                         << " elements differ bitwise; first at " << first
                         << ": got " << a.f(first) << ", expected "
                         << e.f(first);
      continue;
    }
    size_t bad = 0, worst = 0;
    double worstExcess = -1;
    for (size_t i = 0; i < a.bits.size(); ++i) {
      double got = a.f(i), want = e.f(i);
      double err = std::fabs(got - want);
      double allowed = c.atol + c.rtol * std::fabs(want);
      if (!(err <= allowed)) {
        ++bad;
        double excess = std::isnan(err) ? INFINITY : err - allowed;
        if (excess > worstExcess) {
          worstExcess = excess;
          worst = i;
        }
      }
    }
    EXPECT_EQ(bad, 0u) << what << ", output #" << o << ": " << bad << " of "
                       << a.bits.size() << " elements off by more than "
                       << c.atol << " + " << c.rtol << " |expected|; worst at "
                       << worst << ": got " << a.f(worst) << ", expected "
                       << e.f(worst);
  }
}

void expectSameBits(const std::vector<HostTensor> &a,
                    const std::vector<HostTensor> &b, const std::string &what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o)
    EXPECT_TRUE(a[o].bits == b[o].bits) << what << ", output #" << o;
}

//===----------------------------------------------------------------------===//
// Tests that run anywhere
//===----------------------------------------------------------------------===//

TEST(CudaKernelRegistry, EveryCpuOpHasACudaKernel) {
  for (const OpKernel *k : allKernels())
    EXPECT_NE(lookupCudaKernel(k->op), nullptr)
        << "op '" << k->name() << "' has a CPU kernel but no CUDA kernel";
}

TEST(CudaKernelRegistry, NamesAreSortedAndResolve) {
  std::vector<std::string> names = cudaKernelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(),
            names.size());
  for (const std::string &name : names) {
    EXPECT_NE(lookupCudaKernel(name), nullptr) << name;
    EXPECT_NE(lookupKernel(name), nullptr)
        << "CUDA kernel '" << name << "' has no CPU kernel";
  }
  EXPECT_EQ(lookupCudaKernel("no_such_op"), nullptr);
  EXPECT_EQ(cudaScratchBytes(OpCode::Relu, {}, {}, {}), 0u);
}

TEST(CudaKernelCases, EveryOpHasACase) {
  std::set<std::string> covered;
  for (const Case &c : cases())
    covered.insert(c.op);
  // A start/wait pair only runs together: CudaAllReduceBucket tests it.
  covered.insert("all_reduce_start");
  covered.insert("all_reduce_wait");
  // Pipeline transfers need two ranks: strata-nccl-check and
  // test/Integration/gpu-pipeline.test run them.
  covered.insert("send");
  covered.insert("recv");
  // Swaps run only as start/wait pairs on slots the backend allocates from
  // a plan; they need a GPU and a plan (not covered here yet).
  for (const char *op :
       {"swap_out", "swap_out_wait", "swap_in", "swap_in_wait"})
    covered.insert(op);
  // Compress and decompress read the executor's sites; the codecs they run
  // are checked against the CPU's by CudaCompress.MatchesCpu.
  covered.insert("compress");
  covered.insert("decompress");
  for (const OpKernel *k : allKernels())
    EXPECT_TRUE(covered.count(k->name()))
        << "no test case for op '" << k->name() << "'";
}

TEST(CudaKernelCases, CpuVerifyAcceptsEveryCase) {
  for (const Case &c : cases())
    EXPECT_EQ(cpuKernel(c.op).verify(inputDescs(c), c.outputs, c.attrs), "")
        << c.name();
}

TEST(CudaGemmTilingTest, Verify) {
  EXPECT_EQ(verifyCudaGemmTiling(CudaGemmTiling{}), "");
  EXPECT_EQ(verifyCudaGemmTiling({64, 64, 8, 4, 4}), "");
  EXPECT_EQ(verifyCudaGemmTiling({32, 32, 8, 2, 2}), "");
  EXPECT_NE(verifyCudaGemmTiling({0, 64, 8, 4, 4}), "");
  EXPECT_NE(verifyCudaGemmTiling({64, 64, 8, 3, 4}), "");    // 64 % 3
  EXPECT_NE(verifyCudaGemmTiling({64, 60, 8, 4, 8}), "");    // 60 % 8
  EXPECT_NE(verifyCudaGemmTiling({16, 16, 8, 4, 4}), "");    // 16 threads
  EXPECT_NE(verifyCudaGemmTiling({256, 256, 8, 4, 4}), "");  // 4096 threads
  EXPECT_NE(verifyCudaGemmTiling({128, 128, 64, 8, 8}), ""); // 64 KiB
  EXPECT_EQ(verifyCudaGemmTiling({128, 128, 16, 8, 8, 64}), "");
  EXPECT_NE(verifyCudaGemmTiling({128, 128, 16, 8, 8, 0}), "");
  EXPECT_NE(verifyCudaGemmTiling({128, 128, 16, 8, 8, 65}), "");
}

TEST(CudaGemmTilingTest, CompiledTilings) {
  auto same = [](const CudaGemmTiling &a, const CudaGemmTiling &b) {
    return a.blockM == b.blockM && a.blockN == b.blockN && a.kStep == b.kStep &&
           a.threadM == b.threadM && a.threadN == b.threadN;
  };
  for (CudaGemmTiling t :
       {CudaGemmTiling{128, 128, 16, 8, 8}, CudaGemmTiling{128, 64, 16, 8, 8},
        CudaGemmTiling{64, 64, 16, 8, 8}, CudaGemmTiling{64, 64, 16, 4, 8},
        CudaGemmTiling{64, 64, 16, 4, 4}, CudaGemmTiling{128, 128, 8, 8, 8},
        CudaGemmTiling{128, 64, 8, 8, 8}, CudaGemmTiling{64, 128, 8, 8, 8},
        CudaGemmTiling{64, 64, 8, 4, 4}, CudaGemmTiling{32, 32, 8, 2, 2}})
    EXPECT_TRUE(same(compiledCudaGemmTiling(t), t));
  EXPECT_TRUE(same(compiledCudaGemmTiling({64, 64, 32, 4, 4}),
                   CudaGemmTiling{64, 64, 16, 4, 4}));
  EXPECT_TRUE(same(compiledCudaGemmTiling({256, 128, 8, 8, 8}),
                   CudaGemmTiling{128, 128, 8, 8, 8}));
  EXPECT_TRUE(same(compiledCudaGemmTiling({32, 64, 8, 2, 2}),
                   CudaGemmTiling{32, 32, 8, 2, 2}));
  EXPECT_EQ(compiledCudaGemmTiling({256, 128, 8, 8, 8, 3}).splitK, 3);
}

TEST(CudaGemmTilingTest, Names) {
  EXPECT_EQ(cudaGemmTilingName(CudaGemmTiling{}), "128x128x16/8x8");
  EXPECT_EQ(cudaGemmTilingName({64, 32, 8, 4, 2, 3}), "64x32x8/4x2/s3");
}

TEST(CudaGemmTilingTest, SmallProductsRunSlicedOrSmallerTiles) {
  auto text = cudaGemmTilingName;
  CudaGemmTiling def;
  // 132 SMs (99 is three quarters, 264 two blocks each): 1024^2 has 64
  // tiles of 128x128 (4 slices fill 256 blocks), 768^2 36 (7 slices),
  // 512x1024 32 (8, but 1024 / 256 = 4 slices at most).
  EXPECT_EQ(text(cudaGemmTilingFor(def, 2048, 2048, 2048, 1, 132)),
            "128x128x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 1024, 1024, 1024, 2, 132)),
            "128x128x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 1024, 2048, 1024, 1, 132)),
            "128x128x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 1024, 1024, 1024, 1, 132)),
            "128x128x16/8x8/s4");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 768, 768, 8192, 1, 132)),
            "128x128x16/8x8/s7");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 512, 1024, 1024, 1, 132)),
            "128x128x16/8x8/s4");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 64, 64, 1 << 20, 1, 132)),
            "128x128x16/8x8/s64");
  // Too shallow to slice, or batched: smaller tiles.
  EXPECT_EQ(text(cudaGemmTilingFor(def, 1024, 1024, 256, 1, 132)),
            "128x64x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 512, 1024, 64, 1, 132)),
            "64x64x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 64, 64, 64, 1, 132)), "64x64x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 64, 64, 4096, 2, 132)), "64x64x16/8x8");
  // Unknown SM count, an empty product, or a tiling asked for: kept.
  EXPECT_EQ(text(cudaGemmTilingFor(def, 0, 64, 4096, 1, 132)),
            "128x128x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor(def, 64, 64, 4096, 1, 0)), "128x128x16/8x8");
  EXPECT_EQ(text(cudaGemmTilingFor({128, 128, 8, 8, 8}, 64, 64, 4096, 1, 132)),
            "128x128x8/8x8");
  EXPECT_EQ(
      text(cudaGemmTilingFor({128, 128, 16, 8, 8, 2}, 64, 64, 4096, 1, 132)),
      "128x128x16/8x8/s2");
}

TEST(CudaAllReduce, ReplicasMustMatchTheRun) {
  CudaKernelFn fn = lookupCudaKernel("all_reduce");
  ASSERT_NE(fn, nullptr);
  CudaContext ctx;
  Tensor t{nullptr, desc({4})};
  // Rejected before any device work, so these run without a GPU.
  EXPECT_THROW(fn(ctx, {t}, {t}, typed("all_reduce", attrs({{"replicas", 2}}))),
               std::runtime_error);
  // A group this rank is not a member of.
  ctx.groups = {nullptr};
  EXPECT_THROW(fn(ctx, {t}, {t},
                  typed("all_reduce", attrs({{"replicas", 1}, {"group", 0}}))),
               std::runtime_error);
  EXPECT_THROW(fn(ctx, {t}, {t},
                  typed("all_reduce", attrs({{"replicas", 1}, {"group", 3}}))),
               std::runtime_error);
}

TEST(CudaPointToPoint, PeerStageMustHaveARank) {
  CudaKernelFn send = lookupCudaKernel("send");
  CudaKernelFn recv = lookupCudaKernel("recv");
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  CudaContext ctx;
  Tensor t{nullptr, desc({4})};
  // Rejected before any device work, so these run without a GPU: no
  // communicator, then a stage outside the pipeline, then one no rank runs.
  EXPECT_THROW(
      send(ctx, {t}, {}, typed("send", attrs({{"peer", 1}, {"tag", 0}}))),
      std::runtime_error);
  std::unique_ptr<Communicator> local = createLocalCommunicator();
  ctx.comm = local.get();
  ctx.stageRanks = {0, -1};
  EXPECT_THROW(
      send(ctx, {t}, {}, typed("send", attrs({{"peer", 2}, {"tag", 0}}))),
      std::runtime_error);
  EXPECT_THROW(
      recv(ctx, {}, {t}, typed("recv", attrs({{"peer", 1}, {"tag", 0}}))),
      std::runtime_error);
  EXPECT_TRUE(ctx.pendingSends.empty());
}

/// A two-stage pipeline plan whose rank 0 and rank 1 run these ops; "send
/// T" and "recv T" carry tag T and name the other stage, "update" is an
/// op that updates in place.
Plan pipelinePlan(const std::vector<std::string> &stage0,
                  const std::vector<std::string> &stage1) {
  const OpKernel *update = nullptr;
  for (const OpKernel *k : allKernels())
    if (k->info().has(kInPlace))
      update = k;
  Plan plan;
  plan.stages = 2;
  for (int64_t stage : {0, 1}) {
    RankPlan rank;
    rank.rank = rank.programOf = rank.stage = stage;
    for (const std::string &text : stage == 0 ? stage0 : stage1) {
      Instruction inst;
      std::string op = text.substr(0, text.find(' '));
      inst.op = op == "update" ? update->op : opCode(op);
      inst.kernel = &kernelFor(inst.op);
      if (op != "update")
        inst.attrs =
            typed(op, attrs({{"peer", 1 - stage},
                             {"tag", std::stoi(text.substr(op.size()))}}));
      rank.program.push_back(inst);
    }
    plan.ranks.push_back(rank);
  }
  return plan;
}

TEST(CudaPointToPoint, SendsFollowTheReceiversOrder) {
  // Stage 1 receives tag 1 before tag 0 and tag 4 before tag 3: stage 0
  // holds send 0 back until send 1, and send 3 until send 4.
  Plan plan = pipelinePlan(
      {"send 0", "send 1", "send 2", "recv 5", "send 3", "send 4", "update"},
      {"recv 1", "recv 0", "send 5", "recv 2", "recv 4", "recv 3", "update"});
  std::vector<std::vector<size_t>> sendsAt;
  ASSERT_TRUE(orderPipelineSends(plan, plan.ranks[0].program, sendsAt).ok());
  std::vector<std::vector<size_t>> want = {{}, {1, 0}, {2}, {}, {}, {5, 4}, {}};
  EXPECT_EQ(sendsAt, want);
  ASSERT_TRUE(orderPipelineSends(plan, plan.ranks[1].program, sendsAt).ok());
  want = {{}, {}, {2}, {}, {}, {}, {}};
  EXPECT_EQ(sendsAt, want);
}

TEST(CudaPointToPoint, SendsAreNotHeldPastAnUpdate) {
  Plan plan = pipelinePlan({"send 0", "update", "send 1"},
                           {"recv 1", "recv 0", "update"});
  std::vector<std::vector<size_t>> sendsAt;
  Status status = orderPipelineSends(plan, plan.ranks[0].program, sendsAt);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("instruction #0 (send to stage 1, tag 0)"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("past instruction #1"), std::string::npos)
      << status.message();
  // Nor past the end of the step.
  plan = pipelinePlan({"send 0", "send 1"}, {"recv 1"});
  EXPECT_FALSE(orderPipelineSends(plan, plan.ranks[0].program, sendsAt).ok());
}

//===----------------------------------------------------------------------===//
// Tests that need a device
//===----------------------------------------------------------------------===//

/// One rank: all_reduce_start then all_reduce_wait of a two-tensor bucket
/// hands back the inputs bit for bit.
TEST(CudaAllReduceBucket, OneRankStartThenWaitIsACopy) {
  SKIP_WITHOUT_DEVICE();
  CudaKernelFn start = lookupCudaKernel("all_reduce_start");
  CudaKernelFn wait = lookupCudaKernel("all_reduce_wait");
  ASSERT_NE(start, nullptr);
  ASSERT_NE(wait, nullptr);
  Random rng(11);
  std::vector<HostTensor> host = {rng.f32({7, 13}), rng.f32({5})};
  std::vector<DeviceBuffer> buffers;
  std::vector<Tensor> in, out;
  for (const HostTensor &t : host) {
    buffers.emplace_back(t.bits.size() * 4);
    check(cudaMemcpy(buffers.back().get(), t.bits.data(), t.bits.size() * 4,
                     cudaMemcpyHostToDevice),
          "cudaMemcpy");
    in.push_back(Tensor{buffers.back().get(), t.desc});
  }
  for (const HostTensor &t : host) {
    buffers.emplace_back(t.bits.size() * 4);
    check(cudaMemset(buffers.back().get(), 0xff, t.bits.size() * 4),
          "cudaMemset");
    out.push_back(Tensor{buffers.back().get(), t.desc});
  }
  CudaContext ctx;
  ctx.stream = gpu().stream;
  ctx.cublas = gpu().cublas;
  Attrs a = attrs({{"replicas", 1}, {"bucket", 0}, {"mean", 1}});
  start(ctx, in, {}, typed("all_reduce_start", a));
  wait(ctx, in, out, typed("all_reduce_wait", a));
  check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  for (size_t i = 0; i < host.size(); ++i) {
    HostTensor got(host[i].desc.shape, DType::F32);
    check(cudaMemcpy(got.bits.data(), out[i].data, got.bits.size() * 4,
                     cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    EXPECT_EQ(got.bits, host[i].bits) << "output #" << i;
  }
}

TEST(CudaKernels, MatchCpu) {
  SKIP_WITHOUT_DEVICE();
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name());
    std::vector<HostTensor> want = runCpu(c);
    expectMatch(c, runGpu(c, {}), want, c.name());
  }
}

TEST(CudaKernels, MatchCpuWithStrataGemm) {
  SKIP_WITHOUT_DEVICE();
  for (const Case &c : cases()) {
    if (!usesGemm(c.op))
      continue;
    std::vector<HostTensor> want = runCpu(c);
    for (CudaGemmTiling tiling :
         {CudaGemmTiling{}, CudaGemmTiling{64, 64, 8, 4, 4},
          CudaGemmTiling{32, 32, 8, 2, 2}}) {
      GpuOptions options;
      options.engine = GemmEngine::Strata;
      options.tiling = tiling;
      std::string what = c.name() + " with strataGemm " +
                         std::to_string(tiling.blockM) + "x" +
                         std::to_string(tiling.blockN);
      SCOPED_TRACE(what);
      expectMatch(c, runGpu(c, options), want, what);
    }
  }
}

TEST(CudaKernels, Deterministic) {
  SKIP_WITHOUT_DEVICE();
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name());
    expectSameBits(runGpu(c, {}), runGpu(c, {}), c.name());
  }
}

/// Every op that asks for scratch still runs, and still matches the CPU,
/// with half of it, with 1 KiB and with none (conv ops and layer_norm_grad
/// may refuse sizes below their documented minimum, with a message).
TEST(CudaKernels, LessScratch) {
  SKIP_WITHOUT_DEVICE();
  for (const Case &c : cases()) {
    size_t wanted = scratchBytes(c.op, inputDescs(c), c.outputs, c.attrs);
    if (wanted == 0)
      continue;
    std::vector<HostTensor> want = runCpu(c);
    int ran = 0;
    for (size_t bytes : {wanted / 2, size_t(1024), size_t(0)}) {
      std::string what =
          c.name() + " with " + std::to_string(bytes) + " bytes of scratch";
      SCOPED_TRACE(what);
      GpuOptions options;
      options.scratch = bytes;
      std::vector<HostTensor> got;
      try {
        got = runGpu(c, options);
      } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("scratch"), std::string::npos)
            << e.what();
        continue;
      }
      ++ran;
      expectMatch(c, got, want, what);
    }
    EXPECT_GT(ran, 0) << c.name() << " ran with no reduced scratch size";
  }
}

/// The sorted and the scanning embedding_grad add the same rows in the same
/// order: the same bits, and the CPU's.
TEST(CudaKernels, EmbeddingGradPathsAgreeBitwise) {
  SKIP_WITHOUT_DEVICE();
  for (const Case &c : cases()) {
    if (c.op != "embedding_grad")
      continue;
    GpuOptions scan;
    scan.scratch = 0;
    std::vector<HostTensor> sorted = runGpu(c, {}), scanned = runGpu(c, scan);
    expectSameBits(sorted, scanned, c.name());
    expectSameBits(sorted, runCpu(c), c.name() + " vs CPU");
  }
}

/// A multi-tensor group launch (three tensors, one over a block's chunk)
/// against one launch per tensor, bitwise. The members count different
/// updates (update 0 of 3, update 2 of 3, none): each uses its own t.
TEST(CudaKernels, MultiTensorGroupMatchesOneUpdatePerTensor) {
  SKIP_WITHOUT_DEVICE();
  Random rng(17);
  std::vector<Case> members;
  const int64_t update[] = {0, 2, -1};
  int j = 0;
  for (Shape s : {Shape{70000}, Shape{33, 7}, Shape{1}}) {
    Case c;
    c.op = "adam_update";
    c.label = "group member";
    c.inputs = {rng.f32(s), rng.f32(s), rng.f32(s), rng.f32(s, 0, 1),
                scalarI32(4)};
    c.outputs = {desc(s), desc(s), desc(s)};
    c.attrs = attrs({{"lr", 1e-3}, {"weight_decay", 0.1}, {"decoupled", 1}});
    if (update[j] >= 0)
      c.attrs = attrs({{"lr", 1e-3},
                       {"weight_decay", 0.1},
                       {"decoupled", 1},
                       {"update", (double)update[j]},
                       {"updates", 3}});
    ++j;
    members.push_back(std::move(c));
  }
  CudaGroupKernelFn group = lookupCudaGroupKernel(OpCode::AdamUpdate);
  ASSERT_NE(group, nullptr);
  std::vector<std::vector<DeviceBuffer>> buffers(members.size());
  std::vector<OpAttrs> typedAttrs;
  std::vector<CudaKernelCall> calls(members.size());
  for (size_t j = 0; j < members.size(); ++j)
    typedAttrs.push_back(typed("adam_update", members[j].attrs));
  for (size_t j = 0; j < members.size(); ++j) {
    for (const HostTensor &t : members[j].inputs) {
      buffers[j].emplace_back(t.bits.size() * 4);
      check(cudaMemcpy(buffers[j].back().get(), t.bits.data(),
                       t.bits.size() * 4, cudaMemcpyHostToDevice),
            "cudaMemcpy");
      calls[j].inputs.push_back(Tensor{buffers[j].back().get(), t.desc});
    }
    calls[j].outputs = {calls[j].inputs[0], calls[j].inputs[2],
                        calls[j].inputs[3]};
    calls[j].attrs = &typedAttrs[j];
  }
  CudaContext ctx;
  ctx.stream = gpu().stream;
  ctx.cublas = gpu().cublas;
  group(ctx, calls);
  check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  for (size_t j = 0; j < members.size(); ++j) {
    std::vector<HostTensor> alone = runGpu(members[j], {});
    for (int o = 0; o < 3; ++o) {
      HostTensor got(members[j].outputs[o].shape, DType::F32);
      check(cudaMemcpy(got.bits.data(), calls[j].outputs[o].data,
                       got.bits.size() * 4, cudaMemcpyDeviceToHost),
            "cudaMemcpy");
      EXPECT_TRUE(got.bits == alone[o].bits)
          << "tensor " << j << " output " << o;
    }
  }
}

TEST(CudaKernels, AdamStepBelowOneChangesNothing) {
  SKIP_WITHOUT_DEVICE();
  Random rng(5);
  Case c;
  c.op = "adam_update";
  c.label = "step 0";
  c.inputs = {rng.f32({33}), rng.f32({33}), rng.f32({33}), rng.f32({33}, 0, 1),
              scalarI32(0)};
  c.outputs = {desc({33}), desc({33}), desc({33})};
  c.attrs = attrs({{"lr", 0.1}});
  std::vector<HostTensor> got = runGpu(c, {});
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(got[i].bits == c.inputs[i == 0 ? 0 : i + 1].bits);
}

//===----------------------------------------------------------------------===//
// strataGemm against cuBLAS and a double-precision reference
//===----------------------------------------------------------------------===//

struct GemmShape {
  int64_t m, n, k, batch;
  bool ta, tb;
  bool broadcastB;
  float alpha, beta;
};

/// Copies the rows x cols matrices of `dense` (`count` of them, packed)
/// into rows of `ld` floats, the padding NaN.
std::vector<float> padRows(const std::vector<float> &dense, int64_t count,
                           int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(count * rows * ld, NAN);
  for (int64_t i = 0; i < count * rows; ++i)
    std::copy_n(dense.begin() + i * cols, cols, out.begin() + i * ld);
  return out;
}

/// Runs C = alpha op(A) op(B) + beta C for one shape on the device with
/// strataGemm (`tiling`) or cuBLAS (tiling == nullptr); returns C. The
/// operands start `offset` floats into their buffers (1: not 16-byte
/// aligned, so strataGemm takes its scalar kernel). With `pad`, every
/// matrix's rows are `pad` floats longer than its width (leading dimensions
/// and batch strides grow; A's and B's padding is NaN, C's must come back
/// untouched).
std::vector<float> deviceGemm(const GemmShape &s, const std::vector<float> &a,
                              const std::vector<float> &b,
                              const std::vector<float> &c,
                              const CudaGemmTiling *tiling, int offset = 0,
                              int64_t pad = 0) {
  const int64_t rowsA = s.ta ? s.k : s.m, colsA = s.ta ? s.m : s.k;
  const int64_t rowsB = s.tb ? s.n : s.k, colsB = s.tb ? s.k : s.n;
  const int64_t lda = colsA + pad, ldb = colsB + pad, ldc = s.n + pad;
  const int64_t countB = s.broadcastB ? 1 : s.batch;
  std::vector<float> ha = padRows(a, s.batch, rowsA, colsA, lda);
  std::vector<float> hb = padRows(b, countB, rowsB, colsB, ldb);
  std::vector<float> hc = padRows(c, s.batch, s.m, s.n, ldc);
  DeviceBuffer da((ha.size() + offset) * 4), db((hb.size() + offset) * 4),
      dc((hc.size() + offset) * 4);
  float *pa = static_cast<float *>(da.get()) + offset;
  float *pb = static_cast<float *>(db.get()) + offset;
  float *pc = static_cast<float *>(dc.get()) + offset;
  check(cudaMemcpy(pa, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice),
        "cudaMemcpy");
  check(cudaMemcpy(pb, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice),
        "cudaMemcpy");
  check(cudaMemcpy(pc, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice),
        "cudaMemcpy");
  int64_t strideA = rowsA * lda, strideB = s.broadcastB ? 0 : rowsB * ldb,
          strideC = s.m * ldc;
  if (tiling) {
    strataGemm(gpu().stream, *tiling, s.ta, s.tb, s.m, s.n, s.k, s.alpha, pa,
               lda, strideA, pb, ldb, strideB, s.beta, pc, ldc, strideC,
               s.batch);
  } else {
    cublasHandle_t h = gpu().cublas;
    check(cublasSetStream(h, gpu().stream), "cublasSetStream");
    check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cublasSgemmStridedBatched(h, s.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    s.ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)s.n,
                                    (int)s.m, (int)s.k, &s.alpha, pb, (int)ldb,
                                    strideB, pa, (int)lda, strideA, &s.beta, pc,
                                    (int)ldc, strideC, (int)s.batch),
          "cublasSgemmStridedBatched");
  }
  check(cudaStreamSynchronize(gpu().stream), "cudaStreamSynchronize");
  std::vector<float> padded(hc.size());
  check(cudaMemcpy(padded.data(), pc, hc.size() * 4, cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  std::vector<float> result(c.size());
  size_t touched = 0;
  for (int64_t i = 0; i < s.batch * s.m; ++i) {
    std::copy_n(padded.begin() + i * ldc, s.n, result.begin() + i * s.n);
    for (int64_t j = s.n; j < ldc; ++j)
      touched += !std::isnan(padded[i * ldc + j]);
  }
  EXPECT_EQ(touched, 0u) << "C's row padding was written";
  return result;
}

std::vector<double> referenceGemm(const GemmShape &s,
                                  const std::vector<float> &a,
                                  const std::vector<float> &b,
                                  const std::vector<float> &c,
                                  std::vector<double> &magnitude) {
  std::vector<double> result(c.size());
  magnitude.assign(c.size(), 0.0);
  int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  for (int64_t z = 0; z < s.batch; ++z) {
    const float *az = a.data() + z * s.m * s.k;
    const float *bz = b.data() + (s.broadcastB ? 0 : z * s.k * s.n);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0, mag = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          double x = s.ta ? az[p * lda + i] : az[i * lda + p];
          double y = s.tb ? bz[j * ldb + p] : bz[p * ldb + j];
          acc += x * y;
          mag += std::fabs(x * y);
        }
        size_t e = z * s.m * s.n + i * s.n + j;
        result[e] = s.alpha * acc + s.beta * (double)c[e];
        magnitude[e] =
            std::fabs(s.alpha) * mag + std::fabs(s.beta * (double)c[e]);
      }
  }
  return result;
}

/// Aligned shapes (leading dimensions in whole float4s): strataGemm's
/// vectorised kernel, with partial tiles in m, n and k, every transpose,
/// batches, a broadcast B and beta.
std::vector<GemmShape> alignedGemmShapes() {
  return {
      {260, 132, 36, 1, false, false, false, 1.0f, 0.0f},
      {132, 68, 44, 2, true, false, false, 1.0f, 0.5f},
      {68, 260, 20, 2, false, true, false, -1.0f, 0.0f},
      {196, 76, 52, 3, true, true, true, 0.5f, 1.0f},
  };
}

struct GemmOperands {
  std::vector<float> a, b, c;
};

/// A, B and C of shape `s`, uniform in [-1, 1].
GemmOperands randomOperands(const GemmShape &s, Random &rng) {
  GemmOperands o{std::vector<float>(s.batch * s.m * s.k),
                 std::vector<float>((s.broadcastB ? 1 : s.batch) * s.k * s.n),
                 std::vector<float>(s.batch * s.m * s.n)};
  for (std::vector<float> *v : {&o.a, &o.b, &o.c})
    for (float &x : *v)
      x = rng.uniform(-1, 1);
  return o;
}

TEST(StrataGemm, MatchesCublasAndReference) {
  SKIP_WITHOUT_DEVICE();
  std::vector<GemmShape> shapes = {
      {1, 1, 1, 1, false, false, false, 1.0f, 0.0f},
      {7, 13, 5, 1, false, false, false, 1.0f, 0.0f},
      {7, 13, 5, 1, true, false, false, 1.0f, 0.0f},
      {7, 13, 5, 1, false, true, false, 1.0f, 0.0f},
      {7, 13, 5, 1, true, true, false, 1.0f, 0.0f},
      {128, 128, 8, 1, false, false, false, 1.0f, 0.0f},
      {130, 70, 140, 1, false, true, false, 0.5f, 0.25f},
      {33, 65, 257, 3, true, false, false, 1.0f, 1.0f},
      {40, 50, 60, 4, false, false, true, 1.0f, 0.0f},
      {17, 300, 9, 2, true, true, true, -2.0f, 0.5f},
      {257, 129, 100, 1, false, false, false, 1.0f, 0.0f},
      // Single products deep enough for k slices of every transpose, with
      // a shorter last slice.
      {64, 96, 301, 1, true, false, false, 1.0f, 1.0f},
      {72, 40, 517, 1, true, true, false, -1.0f, 0.25f},
      {128, 64, 1000, 1, false, true, false, 1.0f, 0.0f},
      // Aligned (the vectorised kernel); alignedGemmShapes() too.
      {256, 256, 64, 1, false, false, false, 1.0f, 0.0f},
      {8, 4, 4, 1, false, false, false, 1.0f, 0.0f},
  };
  std::vector<CudaGemmTiling> tilings = {
      {128, 128, 16, 8, 8},
      {128, 64, 16, 8, 8},
      {64, 64, 16, 8, 8},
      {64, 64, 16, 4, 8},
      {64, 64, 16, 4, 4},
      {128, 128, 8, 8, 8},
      {128, 64, 8, 8, 8},
      {64, 128, 8, 8, 8},
      {64, 64, 8, 4, 4},
      {32, 32, 8, 2, 2},
      // Legal but not compiled: run the nearest compiled tiling.
      {64, 32, 8, 4, 2},
      {256, 128, 16, 16, 8},
      // Split-K (batch 1 only; more slices than k allows are fewer).
      {128, 128, 16, 8, 8, 2},
      {128, 128, 16, 8, 8, 4},
      {128, 64, 16, 8, 8, 3},
      {64, 64, 16, 4, 4, 5},
      {32, 32, 8, 2, 2, 3},
      {64, 64, 8, 4, 4, 64}};
  Random rng(7);
  for (const GemmShape &s : alignedGemmShapes())
    shapes.push_back(s);
  for (const GemmShape &s : shapes) {
    auto [a, b, c] = randomOperands(s, rng);
    std::vector<double> magnitude;
    std::vector<double> want = referenceGemm(s, a, b, c, magnitude);
    std::vector<float> cublas = deviceGemm(s, a, b, c, nullptr);
    std::string shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                        std::to_string(s.k) + " batch " +
                        std::to_string(s.batch) + (s.ta ? " ta" : "") +
                        (s.tb ? " tb" : "") +
                        (s.broadcastB ? " broadcast" : "");
    for (const CudaGemmTiling &t : tilings) {
      ASSERT_EQ(verifyCudaGemmTiling(t), "");
      std::vector<float> got = deviceGemm(s, a, b, c, &t);
      std::string what = shape + " tiling " + cudaGemmTilingName(t);
      size_t bad = 0, badCublas = 0, worst = 0;
      for (size_t e = 0; e < got.size(); ++e) {
        // FP32 accumulation over k terms: error well below k 2^-24 times
        // the sum of |terms|.
        double allowed = 1e-6 + 4.0 * (double)s.k * 6e-8 * magnitude[e];
        if (!(std::fabs(got[e] - want[e]) <= allowed) && !bad++)
          worst = e;
        if (!(std::fabs(got[e] - cublas[e]) <= 2 * allowed))
          ++badCublas;
      }
      EXPECT_EQ(bad, 0u) << what << ": first bad element " << worst << ": got "
                         << got[worst] << ", expected " << want[worst];
      EXPECT_EQ(badCublas, 0u) << what << ": differs from cuBLAS";
    }
  }
}

/// The vectorised kernel (aligned operands) and the scalar one (the same
/// operands one float off alignment) sum every element in the same k order:
/// the same bits, for every transpose, partial tiles, batches and beta.
TEST(StrataGemm, VectorisedKernelEqualsScalarKernel) {
  SKIP_WITHOUT_DEVICE();
  std::vector<CudaGemmTiling> tilings = {{128, 128, 16, 8, 8},
                                         {128, 64, 16, 8, 8},
                                         {64, 64, 16, 4, 8},
                                         {64, 64, 16, 4, 4},
                                         {128, 128, 8, 8, 8}};
  Random rng(11);
  for (const GemmShape &s : alignedGemmShapes()) {
    auto [a, b, c] = randomOperands(s, rng);
    for (const CudaGemmTiling &t : tilings) {
      std::vector<float> vec = deviceGemm(s, a, b, c, &t, 0);
      std::vector<float> scalar = deviceGemm(s, a, b, c, &t, 1);
      size_t differ = 0;
      for (size_t e = 0; e < vec.size(); ++e)
        differ += std::memcmp(&vec[e], &scalar[e], 4) != 0;
      EXPECT_EQ(differ, 0u) << s.m << "x" << s.n << "x" << s.k << " tiling "
                            << cudaGemmTilingName(t);
    }
  }
}

/// Split-K sums each element's slices in slice order: the same bits run
/// after run and on the vectorised and the scalar kernels (aligned, and one
/// float off), for every transpose, with padded leading dimensions and a
/// shorter last slice; within the FP32 bound of the unsliced product, and
/// not its bits everywhere (so the slices really ran).
TEST(StrataGemm, SplitKIsDeterministic) {
  SKIP_WITHOUT_DEVICE();
  Random rng(13);
  for (int shape = 0; shape < 4; ++shape) {
    bool ta = shape & 1, tb = shape & 2;
    // k = 1500: slices of 376, the last 372.
    GemmShape s{200, 136, 1500, 1, ta, tb, false, 1.0f, 0.5f};
    auto [a, b, c] = randomOperands(s, rng);
    std::vector<double> magnitude;
    std::vector<double> want = referenceGemm(s, a, b, c, magnitude);
    for (int64_t pad : {0, 4}) {
      std::string what = std::string(ta ? "ta " : "") + (tb ? "tb " : "") +
                         "pad " + std::to_string(pad);
      CudaGemmTiling t{128, 128, 16, 8, 8, 4};
      std::vector<float> first = deviceGemm(s, a, b, c, &t, 0, pad);
      std::vector<float> again = deviceGemm(s, a, b, c, &t, 0, pad);
      std::vector<float> scalar = deviceGemm(s, a, b, c, &t, 1, pad);
      EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * 4), 0)
          << what << ": run to run";
      EXPECT_EQ(std::memcmp(first.data(), scalar.data(), first.size() * 4), 0)
          << what << ": vectorised against scalar";
      t.splitK = 1;
      std::vector<float> whole = deviceGemm(s, a, b, c, &t, 0, pad);
      size_t differ = 0, far = 0, wrong = 0;
      for (size_t e = 0; e < whole.size(); ++e) {
        double allowed = 1e-6 + 4.0 * s.k * 6e-8 * magnitude[e];
        differ += first[e] != whole[e];
        far += !(std::fabs(first[e] - whole[e]) <= 2 * allowed);
        wrong += !(std::fabs(first[e] - want[e]) <= allowed);
      }
      EXPECT_EQ(far, 0u) << what << ": sliced against unsliced";
      EXPECT_EQ(wrong, 0u) << what << ": against the double reference";
      EXPECT_GT(differ, 0u) << what
                            << ": no element differs from the "
                               "unsliced product (did k get sliced?)";
    }
  }
}

TEST(StrataGemm, ZeroKScalesC) {
  SKIP_WITHOUT_DEVICE();
  GemmShape s{5, 6, 0, 2, false, false, false, 1.0f, 0.5f};
  std::vector<float> a(1), b(1), c(s.batch * s.m * s.n);
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = (float)i;
  CudaGemmTiling t;
  std::vector<float> got = deviceGemm(s, a, b, c, &t);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(got[i], 0.5f * c[i]);
}

TEST(StrataGemm, RejectsIllegalTiling) {
  SKIP_WITHOUT_DEVICE();
  EXPECT_THROW(strataGemm(gpu().stream, {16, 16, 8, 4, 4}, false, false, 4, 4,
                          4, 1.0f, nullptr, 4, 0, nullptr, 4, 0, 0.0f, nullptr,
                          4, 0, 1),
               std::invalid_argument);
}

/// Not a check: prints strataGemm's and cuBLAS's speed on 1024^3 for the
/// record (see the test log).
TEST(StrataGemm, ReportSpeed) {
  SKIP_WITHOUT_DEVICE();
  const int64_t n = 1024;
  DeviceBuffer a(n * n * 4), b(n * n * 4), c(n * n * 4);
  check(cudaMemset(a.get(), 0, n * n * 4), "cudaMemset");
  check(cudaMemset(b.get(), 0, n * n * 4), "cudaMemset");
  auto gflops = [&](GemmEngine engine) {
    CudaContext ctx;
    ctx.stream = gpu().stream;
    ctx.cublas = gpu().cublas;
    ctx.gemm = engine;
    CudaKernelFn matmul = lookupCudaKernel("matmul");
    Tensor ta{a.get(), desc({n, n})}, tb{b.get(), desc({n, n})},
        tc{c.get(), desc({n, n})};
    matmul(ctx, {ta, tb}, {tc}, {});
    check(cudaStreamSynchronize(ctx.stream), "sync");
    auto start = std::chrono::steady_clock::now();
    const int reps = 10;
    for (int i = 0; i < reps; ++i)
      matmul(ctx, {ta, tb}, {tc}, {});
    check(cudaStreamSynchronize(ctx.stream), "sync");
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        reps;
    return 2.0 * n * n * n / s * 1e-9;
  };
  double strata = gflops(GemmEngine::Strata),
         cublas = gflops(GemmEngine::Cublas);
  std::printf("matmul 1024^3 FP32: strataGemm %.0f GFLOP/s, cuBLAS %.0f "
              "GFLOP/s\n",
              strata, cublas);
}

TEST(CudaScratch, Sizes) {
  SKIP_WITHOUT_DEVICE(); // embedding_grad asks CUB, which needs a device
  // conv2d 3x3 s1 p1 on [2, 3, 9, 8]: two images of 27 x 72 columns.
  Attrs conv = attrs({}, {{"strides", {1, 1}}, {"padding", {1, 1}}});
  EXPECT_EQ(scratchBytes("conv2d", {desc({2, 3, 9, 8}), desc({4, 3, 3, 3})},
                         {desc({2, 4, 9, 8})}, conv),
            (2u * 27 * 72 * 4 + 255) / 256 * 256);
  Attrs identity = attrs({}, {{"strides", {1, 1}}, {"padding", {0, 0}}});
  EXPECT_EQ(scratchBytes("conv2d", {desc({2, 3, 9, 8}), desc({4, 3, 1, 1})},
                         {desc({2, 4, 9, 8})}, identity),
            0u);
  EXPECT_EQ(scratchBytes("relu", {desc({4})}, {desc({4})}, {}), 0u);
  EXPECT_GT(scratchBytes("embedding_grad",
                         {desc({600, 33}), desc({600}, DType::I32)},
                         {desc({50, 33})}, {}),
            3u * 600 * 4);
}

/// The CUDA activation codecs write the CPU codecs' bytes and values
/// (strata-rt/Compress.h), for every kind of format, a partial last block,
/// and stochastic rounding with the same seed.
TEST(CudaCompress, MatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  const int64_t n = 4133;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> x(n);
  for (float &v : x)
    v = normal(gen);
  x[5] = 0;
  x[40] = 1e-40f;
  // Non-finite blocks (NaN, Inf) and values past bf16's and the MX
  // elements' ranges (saturation).
  x[1000] = std::numeric_limits<float>::quiet_NaN();
  x[2000] = -std::numeric_limits<float>::infinity();
  x[3000] = 3.4e38f;
  x[3001] = -3.39e38f;
  ThreadPool pool(1);
  for (const char *name :
       {"bf16", "mxfp8", "mxfp8e5m2", "mxfp6", "mxfp6e3m2", "mxfp4",
        "mxfp4:scale=spec", "mxint8", "bfp:m=4,block=32",
        "bfp:m=8,block=16,round=stochastic",
        "bfp-outlier:m=4,block=64,outliers=2", "bfp-nu:m=3,block=32"}) {
    SCOPED_TRACE(name);
    strata_plan::ActFormat f;
    ASSERT_EQ(strata_plan::parseActFormat(name, f), "");
    int64_t bytes = strata_plan::actPackedBytes(f, n);
    std::vector<uint8_t> want(bytes), got(bytes);
    std::vector<float> wantBack(n), gotBack(n);
    strata::rt::compressActivations(pool, f, x.data(), n, want.data(), 99);
    strata::rt::decompressActivations(pool, f, want.data(), n, wantBack.data());
    float *dx = nullptr, *dy = nullptr;
    uint8_t *dc = nullptr;
    ASSERT_EQ(cudaMalloc(&dx, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dy, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dc, bytes), cudaSuccess);
    cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice);
    cuda::compressActivations(nullptr, f, dx, n, dc, 99);
    cuda::decompressActivations(nullptr, f, dc, n, dy);
    cudaMemcpy(got.data(), dc, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(gotBack.data(), dy, n * 4, cudaMemcpyDeviceToHost);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dc);
    EXPECT_EQ(got, want);
    EXPECT_EQ(std::memcmp(gotBack.data(), wantBack.data(), n * 4), 0);
  }
}

} // namespace
} // namespace strata::rt::cuda
