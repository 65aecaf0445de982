//===- PlanFormat.h - Facts the compiler and the runtime share -*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header. The
// compiler's exporter and tuning database include this header too, so each
// fact of the plan format has exactly one definition: the format version,
// the buffer alignment, the CPU GEMM's default tiling and the key under
// which a GEMM is tuned (docs/plan-format.md, docs/tuning.md).
//
// Header-only and dependency-free (the standard library only). The namespace
// is `strata_plan`, not `strata::...`: compiler sources say `strata::` for
// `mlir::strata` under `using namespace mlir`, which a second top-level
// `strata` would make ambiguous.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_PLANFORMAT_H
#define STRATA_RT_PLANFORMAT_H

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace strata_plan {

/// The newest plan format version: the exporter writes it, the runtime reads
/// it (and version 1, whose plans have exactly one rank entry).
constexpr int64_t kFormatVersion = 2;

/// Alignment in bytes of every buffer offset in an arena.
constexpr int64_t kBufferAlignment = 64;

/// Blocking of the CPU GEMM: cache blocks (mc x kc panels of A, kc x nc
/// panels of B) and the register tile (mr x nr) of the micro-kernel. The
/// defaults suit AVX-512 cores with 48 KiB L1 and 2 MiB L2 (a kc x nr panel of
/// B stays in L1, an mc x kc block of A in L2); see bench/gemm.md. A matmul
/// instruction without tiling attributes runs the defaults.
struct GemmTiling {
  int64_t mc = 96;
  int64_t nc = 2048;
  int64_t kc = 256;
  int64_t mr = 12;
  int64_t nr = 32;
};

/// What a fused_matmul instruction does to each element of its product once
/// the element's k sum is complete (its `epilogue` attribute; the dialect's
/// `#strata` EpilogueKind has the same values). `aux` is the instruction's
/// last input when the epilogue reads a tensor of the product's shape.
enum class Epilogue : int64_t {
  /// + bias[column].
  Bias = 1,
  /// relu(+ bias[column]); a second output, when present, gets the sum.
  BiasRelu = 2,
  /// gelu(+ bias[column]); a second output, when present, gets the sum.
  BiasGelu = 3,
  /// relu_grad(product, aux): the product where aux > 0, else 0.
  ReluGrad = 4,
  /// gelu_grad(product, aux): the product times gelu'(aux).
  GeluGrad = 5,
  /// + aux (an add of a tensor of the product's shape).
  Residual = 6,
  /// (+ bias[column]) + aux: the bias is the third input, aux the fourth.
  BiasResidual = 7,
};
/// The largest Epilogue value.
constexpr int64_t kMaxEpilogue = 7;
/// "bias", "bias_relu", "bias_gelu", "relu_grad", "gelu_grad", "residual",
/// "bias_residual"; "" otherwise.
inline const char *epilogueName(int64_t code) {
  static const char *const names[] = {"",          "bias",         "bias_relu",
                                      "bias_gelu", "relu_grad",    "gelu_grad",
                                      "residual",  "bias_residual"};
  return code >= 1 && code <= kMaxEpilogue ? names[code] : "";
}
/// Whether the epilogue adds a bias (its third input is 1-D).
inline bool epilogueHasBias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::BiasRelu ||
         e == Epilogue::BiasGelu || e == Epilogue::BiasResidual;
}
/// Whether the epilogue adds a tensor of the product's shape (its last
/// input).
inline bool epilogueHasResidual(Epilogue e) {
  return e == Epilogue::Residual || e == Epilogue::BiasResidual;
}
/// Whether the epilogue may also write the pre-activation (a second output).
inline bool epilogueHasPreActivation(Epilogue e) {
  return e == Epilogue::BiasRelu || e == Epilogue::BiasGelu;
}

/// The names of GemmTiling's fields, in order: the matmul instruction's
/// tiling attributes and the CPU tuning database's keys.
inline constexpr const char *kGemmTilingNames[5] = {"mc", "nc", "kc", "mr",
                                                    "nr"};

/// One GEMM as the runtime's matmul kernel computes it: `batch` independent
/// products op(A)[m x k] op(B)[k x n]. This is the key of the tuning
/// database (with the element type beside it).
struct GemmShape {
  int64_t batch = 1;
  int64_t m = 1, n = 1, k = 1;
  bool transA = false, transB = false;

  double flops() const { return 2.0 * batch * m * n * k; }
  /// "128x768x768", with ":b12", ":ta", ":tb" when they apply.
  std::string str() const {
    std::string s =
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    if (batch != 1)
      s += ":b" + std::to_string(batch);
    if (transA)
      s += ":ta";
    if (transB)
      s += ":tb";
    return s;
  }
  auto tie() const { return std::tie(m, n, k, batch, transA, transB); }
  bool operator<(const GemmShape &o) const { return tie() < o.tie(); }
  bool operator==(const GemmShape &o) const { return tie() == o.tie(); }
  bool operator!=(const GemmShape &o) const { return !(*this == o); }
};

/// The GEMM the runtime runs for a matmul of `batch` products op(A)[m x k]
/// op(B)[k x n]: a linear layer (`rhsIsMatrix`, B of rank 2, without
/// transposed A) and an unbatched product are one GEMM of batch * m rows;
/// anything else runs `batch` separate products.
inline GemmShape gemmShapeFor(int64_t batch, int64_t m, int64_t n, int64_t k,
                              bool transA, bool transB, bool rhsIsMatrix) {
  GemmShape s;
  s.n = n;
  s.k = k;
  s.transA = transA;
  s.transB = transB;
  if (batch == 1 || (rhsIsMatrix && !transA)) {
    s.m = batch * m;
    return s;
  }
  s.batch = batch;
  s.m = m;
  return s;
}

namespace detail {
/// A positive decimal of at most 12 digits, or -1.
inline int64_t parsePositive(const std::string &text) {
  if (text.empty() || text.size() > 12 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  int64_t v = std::stoll(text);
  return v > 0 ? v : -1;
}
inline std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}
} // namespace detail

/// Parses GemmShape::str() syntax ("MxNxK[:bB][:ta][:tb]"); returns an error
/// message, empty on success (`shape` is then set).
inline std::string parseGemmShape(const std::string &text, GemmShape &shape) {
  std::string bad =
      "invalid GEMM shape '" + text +
      "' (expected MxNxK[:bBATCH][:ta][:tb], e.g. 128x768x3072:tb)";
  std::vector<std::string> parts = detail::split(text, ':');
  std::vector<std::string> dims = detail::split(parts[0], 'x');
  if (dims.size() != 3)
    return bad;
  GemmShape s;
  s.m = detail::parsePositive(dims[0]);
  s.n = detail::parsePositive(dims[1]);
  s.k = detail::parsePositive(dims[2]);
  if (s.m < 0 || s.n < 0 || s.k < 0)
    return bad;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &q = parts[i];
    if (q == "ta") {
      s.transA = true;
    } else if (q == "tb") {
      s.transB = true;
    } else if (q.size() > 1 && q[0] == 'b') {
      s.batch = detail::parsePositive(q.substr(1));
      if (s.batch < 0)
        return bad;
    } else {
      return bad;
    }
  }
  shape = s;
  return "";
}

} // namespace strata_plan

#endif // STRATA_RT_PLANFORMAT_H
