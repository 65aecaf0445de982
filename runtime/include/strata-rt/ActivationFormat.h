//===- ActivationFormat.h - Compressed activation formats -------*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header. The
// compiler's `--strata-compress-activations` pass and the dialect's
// `strata.compress` verifier include this header too, so the formats, their
// names, their plan codes and their packed sizes have exactly one definition
// (docs/compression.md; the codecs' exact semantics:
// docs/activation-formats.md).
//
// Formats (all in blocks of `block` consecutive elements of the flattened
// tensor, the last block zero-padded; all but bf16 block-scaled):
//   - bfp:m=M,block=B[,round=nearest|stochastic]: block floating point. One
//     shared 8-bit exponent per block, then per element a sign bit and an
//     M-bit magnitude (M in 1..8).
//   - bfp-outlier:m=M,block=B,outliers=K: as bfp, but the K largest
//     magnitudes of each block are kept as bf16 with their 8-bit index, and
//     the shared exponent is taken over the others.
//   - bfp-nu:m=M,block=B: bfp with a non-uniform (companded) M-bit magnitude
//     code: more levels near zero, fewer near the block maximum.
//   - mxfp8e4m3 (alias mxfp8), mxfp8e5m2, mxfp6e2m3 (alias mxfp6), mxfp6e3m2,
//     mxfp4 (E2M1), mxint8: OCP Microscaling v1.0, blocks of 32 with an E8M0
//     scale; `:scale=up` (default) or `:scale=spec` picks how the shared scale
//     is rounded (see ScaleRounding).
//   - bf16: each element's bfloat16 (round to nearest even, saturating at
//     the largest finite bf16), in blocks of 32 behind a flag byte that
//     marks a block holding a NaN or an Inf (as every format's scale byte
//     does); its own exponent per element, for values whose small elements
//     matter beside large ones (a layer norm's input, the keys and queries
//     a softmax is recomputed from).
//
// Header-only and dependency-free (the standard library only).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_ACTIVATIONFORMAT_H
#define STRATA_RT_ACTIVATIONFORMAT_H

#include "strata-rt/PlanFormat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace strata_plan {

enum class ActKind : uint8_t {
  None = 0,
  Bfp = 1,
  BfpOutlier = 2,
  BfpNonUniform = 3,
  Mx = 4,
  Bf16 = 5,
};

/// The element type of an MX format.
enum class MxElement : uint8_t {
  None = 0,
  Fp8E4M3 = 1,
  Fp8E5M2 = 2,
  Fp6E2M3 = 3,
  Fp6E3M2 = 4,
  Fp4E2M1 = 5,
  Int8 = 6,
};

/// How an element is rounded to its narrow code.
enum class ActRounding : uint8_t { NearestEven = 0, Stochastic = 1 };

/// How an MX block's shared E8M0 scale is chosen from the block's largest
/// magnitude `amax`:
///   - Up (the default): the smallest power of two with amax / scale <= the
///     element type's largest value, so no element of a block saturates.
///   - Spec: OCP MX v1.0 section 6.3, floor(log2(amax)) - emax(element), which
///     can push the largest elements of a block past the element's range
///     (they saturate). Published MXFP8 pre-training recipes (Mishra et al.,
///     "Recipes for Pre-training LLMs with MXFP8", 2025) found that this
///     clipping makes training diverge and round the scale up instead.
enum class ScaleRounding : uint8_t { Up = 0, Spec = 1 };

struct ActFormat {
  ActKind kind = ActKind::None;
  MxElement element = MxElement::None;
  /// Bfp*: magnitude bits per element (1..8), sign not included.
  int mantissaBits = 0;
  /// Elements per block: 16, 32 or 64 for Bfp*; 32 for Mx and Bf16.
  int block = 0;
  ActRounding rounding = ActRounding::NearestEven;
  ScaleRounding scale = ScaleRounding::Up;
  /// BfpOutlier: elements per block kept as bf16 (1..4).
  int outliers = 0;

  bool isNone() const { return kind == ActKind::None; }
  bool operator==(const ActFormat &o) const {
    return kind == o.kind && element == o.element &&
           mantissaBits == o.mantissaBits && block == o.block &&
           rounding == o.rounding && scale == o.scale && outliers == o.outliers;
  }
  bool operator!=(const ActFormat &o) const { return !(*this == o); }
};

/// Bits of one element code of an MX element type (8, 6, 4 or 8).
inline int mxElementBits(MxElement e) {
  switch (e) {
  case MxElement::Fp8E4M3:
  case MxElement::Fp8E5M2:
  case MxElement::Int8:
    return 8;
  case MxElement::Fp6E2M3:
  case MxElement::Fp6E3M2:
    return 6;
  case MxElement::Fp4E2M1:
    return 4;
  case MxElement::None:
    break;
  }
  return 0;
}

/// Bits of one element's code in the packed payload.
inline int actElementBits(const ActFormat &f) {
  if (f.kind == ActKind::Mx)
    return mxElementBits(f.element);
  if (f.kind == ActKind::Bf16)
    return 16;
  return f.mantissaBits + 1;
}

/// Bytes of one packed block: the shared scale byte, the element codes packed
/// least-significant bit first and padded to a byte, and for BfpOutlier K
/// (index byte, bf16 value) triples. Layout, per block in order:
///   [scale: 1 byte][codes: ceil(block * bits / 8) bytes]
///   [outliers: K x (1 byte index, 2 bytes bf16 little-endian)]
inline int64_t actBlockBytes(const ActFormat &f) {
  if (f.isNone())
    return 0;
  int64_t codes = (int64_t(f.block) * actElementBits(f) + 7) / 8;
  return 1 + codes + int64_t(f.outliers) * 3;
}

/// Bytes that `numel` f32 values take in format `f` (4 * numel for None), or
/// -1 when numel is negative or the size would pass 2^62.
inline int64_t actPackedBytes(const ActFormat &f, int64_t numel) {
  if (numel < 0 || numel > (int64_t(1) << 58))
    return -1;
  if (f.isNone())
    return numel * 4;
  if (f.block <= 0)
    return -1;
  int64_t blocks = (numel + f.block - 1) / f.block;
  return blocks * actBlockBytes(f);
}

/// Whether the fields form a format this header defines; the reason in
/// `error` otherwise.
inline bool actFormatValid(const ActFormat &f, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = why;
    return false;
  };
  switch (f.kind) {
  case ActKind::None:
    return true;
  case ActKind::Bfp:
  case ActKind::BfpOutlier:
  case ActKind::BfpNonUniform:
    if (f.element != MxElement::None)
      return fail("a bfp format has no MX element type");
    if (f.mantissaBits < 1 || f.mantissaBits > 8)
      return fail("m must be in 1..8, got " + std::to_string(f.mantissaBits));
    if (f.block != 16 && f.block != 32 && f.block != 64)
      return fail("block must be 16, 32 or 64, got " + std::to_string(f.block));
    if (f.kind == ActKind::BfpOutlier && (f.outliers < 1 || f.outliers > 4))
      return fail("outliers must be in 1..4, got " +
                  std::to_string(f.outliers));
    if (f.kind != ActKind::BfpOutlier && f.outliers != 0)
      return fail("only bfp-outlier keeps outliers");
    if (f.kind == ActKind::BfpNonUniform &&
        f.rounding != ActRounding::NearestEven)
      return fail("bfp-nu rounds to the nearest level only");
    return true;
  case ActKind::Mx:
    if (mxElementBits(f.element) == 0)
      return fail("an mx format needs an element type");
    if (f.block != 32)
      return fail("mx blocks are 32 elements");
    if (f.mantissaBits != 0 || f.outliers != 0)
      return fail("an mx format has no m or outliers");
    if (f.rounding != ActRounding::NearestEven)
      return fail("mx elements round to nearest even");
    return true;
  case ActKind::Bf16:
    if (f.element != MxElement::None || f.mantissaBits != 0 ||
        f.outliers != 0 || f.block != 32 ||
        f.rounding != ActRounding::NearestEven || f.scale != ScaleRounding::Up)
      return fail("bf16 takes no parameters");
    return true;
  }
  return fail("unknown format kind " + std::to_string(int(f.kind)));
}

/// The format's code in a plan (an integer below 2^24, exact as a JSON
/// number): kind | element << 4 | m << 8 | log2(block) << 12 |
/// rounding << 16 | scale << 17 | outliers << 18.
inline int64_t encodeActFormat(const ActFormat &f) {
  int64_t log2Block = 0;
  while (f.block > 0 && (int64_t(1) << log2Block) < f.block)
    ++log2Block;
  return int64_t(f.kind) | int64_t(f.element) << 4 |
         int64_t(f.mantissaBits) << 8 | log2Block << 12 |
         int64_t(f.rounding) << 16 | int64_t(f.scale) << 17 |
         int64_t(f.outliers) << 18;
}

/// Decodes a plan's format code; false (with the reason) for a code that is
/// not encodeActFormat of a valid format.
inline bool decodeActFormat(int64_t code, ActFormat &f, std::string &error) {
  if (code < 0 || code >= (int64_t(1) << 22)) {
    error = "format code " + std::to_string(code) + " is out of range";
    return false;
  }
  ActFormat g;
  g.kind = ActKind(code & 15);
  g.element = MxElement((code >> 4) & 15);
  g.mantissaBits = int((code >> 8) & 15);
  int log2Block = int((code >> 12) & 15);
  g.block = log2Block ? 1 << log2Block : 0;
  g.rounding = ActRounding((code >> 16) & 1);
  g.scale = ScaleRounding((code >> 17) & 1);
  g.outliers = int((code >> 18) & 15);
  if (!actFormatValid(g, error) || encodeActFormat(g) != code) {
    error = "format code " + std::to_string(code) + " is not a valid format" +
            (error.empty() ? "" : ": " + error);
    return false;
  }
  f = g;
  return true;
}

/// The canonical name: "none", "bf16", "mxfp8e4m3", "mxfp4:scale=spec",
/// "bfp:m=4,block=32", "bfp:m=4,block=32,round=stochastic",
/// "bfp-outlier:m=4,block=32,outliers=2", "bfp-nu:m=3,block=32".
inline std::string actFormatName(const ActFormat &f) {
  switch (f.kind) {
  case ActKind::None:
    return "none";
  case ActKind::Bf16:
    return "bf16";
  case ActKind::Mx: {
    static const char *const names[] = {"",          "mxfp8e4m3", "mxfp8e5m2",
                                        "mxfp6e2m3", "mxfp6e3m2", "mxfp4",
                                        "mxint8"};
    int e = int(f.element);
    std::string name = e >= 1 && e <= 6 ? names[e] : "mx?";
    if (f.scale == ScaleRounding::Spec)
      name += ":scale=spec";
    return name;
  }
  case ActKind::Bfp:
  case ActKind::BfpOutlier:
  case ActKind::BfpNonUniform:
    break;
  }
  std::string name = f.kind == ActKind::Bfp          ? "bfp"
                     : f.kind == ActKind::BfpOutlier ? "bfp-outlier"
                                                     : "bfp-nu";
  name += ":m=" + std::to_string(f.mantissaBits) +
          ",block=" + std::to_string(f.block);
  if (f.kind == ActKind::BfpOutlier)
    name += ",outliers=" + std::to_string(f.outliers);
  if (f.rounding == ActRounding::Stochastic)
    name += ",round=stochastic";
  return name;
}

/// Parses a format name (actFormatName's syntax; also the aliases "mxfp8",
/// "mxfp6", and "scale=up", "round=nearest" spelled out). Returns an error
/// message, empty on success (`f` is then set).
inline std::string parseActFormat(const std::string &text, ActFormat &f) {
  std::string head = text, tail;
  size_t colon = text.find(':');
  if (colon != std::string::npos) {
    head = text.substr(0, colon);
    tail = text.substr(colon + 1);
  }
  auto bad = [&](const std::string &why) {
    return "invalid activation format '" + text + "': " + why;
  };
  ActFormat g;
  struct MxName {
    const char *name;
    MxElement element;
  };
  static const MxName mxNames[] = {
      {"mxfp8", MxElement::Fp8E4M3},     {"mxfp8e4m3", MxElement::Fp8E4M3},
      {"mxfp8e5m2", MxElement::Fp8E5M2}, {"mxfp6", MxElement::Fp6E2M3},
      {"mxfp6e2m3", MxElement::Fp6E2M3}, {"mxfp6e3m2", MxElement::Fp6E3M2},
      {"mxfp4", MxElement::Fp4E2M1},     {"mxint8", MxElement::Int8}};
  if (head == "none") {
    if (colon != std::string::npos)
      return bad("'none' takes no parameters");
    f = g;
    return "";
  }
  if (head == "bf16") {
    if (colon != std::string::npos)
      return bad("'bf16' takes no parameters");
    g.kind = ActKind::Bf16;
    g.block = 32;
    f = g;
    return "";
  }
  bool known = false;
  for (const MxName &m : mxNames) {
    if (head == m.name) {
      g.kind = ActKind::Mx;
      g.element = m.element;
      g.block = 32;
      known = true;
    }
  }
  if (head == "bfp" || head == "bfp-outlier" || head == "bfp-nu") {
    g.kind = head == "bfp"           ? ActKind::Bfp
             : head == "bfp-outlier" ? ActKind::BfpOutlier
                                     : ActKind::BfpNonUniform;
    known = true;
  }
  if (!known)
    return bad("unknown format '" + head +
               "' (expected none, bf16, bfp, bfp-outlier, bfp-nu, mxfp8, "
               "mxfp8e4m3, mxfp8e5m2, mxfp6, mxfp6e2m3, mxfp6e3m2, mxfp4 or "
               "mxint8)");
  if (colon != std::string::npos) {
    for (const std::string &item : detail::split(tail, ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos)
        return bad("expected KEY=VALUE, got '" + item + "'");
      std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      int64_t number = detail::parsePositive(value);
      if (key == "m" && g.kind != ActKind::Mx && number > 0 && number <= 64) {
        g.mantissaBits = int(number);
      } else if (key == "block" && g.kind != ActKind::Mx && number > 0 &&
                 number <= 4096) {
        g.block = int(number);
      } else if (key == "outliers" && g.kind == ActKind::BfpOutlier &&
                 number > 0 && number <= 64) {
        g.outliers = int(number);
      } else if (key == "round" && g.kind != ActKind::Mx &&
                 (value == "nearest" || value == "stochastic")) {
        g.rounding = value == "nearest" ? ActRounding::NearestEven
                                        : ActRounding::Stochastic;
      } else if (key == "scale" && g.kind == ActKind::Mx &&
                 (value == "up" || value == "spec")) {
        g.scale = value == "up" ? ScaleRounding::Up : ScaleRounding::Spec;
      } else {
        return bad("unexpected parameter '" + item + "' for " + head);
      }
    }
  }
  if (g.kind != ActKind::Mx) {
    if (g.mantissaBits == 0)
      return bad("missing m=BITS");
    if (g.block == 0)
      g.block = 32;
    if (g.kind == ActKind::BfpOutlier && g.outliers == 0)
      g.outliers = 1;
  }
  std::string why;
  if (!actFormatValid(g, why))
    return bad(why);
  f = g;
  return "";
}

/// Saved bytes per f32 byte: 4 * numel / actPackedBytes for a whole number of
/// blocks (1 for None).
inline double actCompressionRatio(const ActFormat &f) {
  if (f.isNone())
    return 1.0;
  return 4.0 * f.block / double(actBlockBytes(f));
}

} // namespace strata_plan

#endif // STRATA_RT_ACTIVATIONFORMAT_H
