//===- KernelsCompress.cpp - Compressed activations as plan instructions --===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `compress` packs its f32 input into its i8 output in the format its site
// uses now (Compression.h); `decompress` unpacks a site's bytes back into
// f32. Both take the site's `format`, `candidates` and `budget`; the output
// (compress) or input (decompress) holds exactly the packed bytes of the
// widest candidate. The codecs are Compress.h's. A site set `exact` (gradient
// calibration) keeps an f32 copy instead.
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include "strata-rt/Compress.h"
#include "strata-rt/Compression.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace strata::rt::detail {

namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;
using strata_plan::ActFormat;

/// Decodes format code `value` of attribute `name`; fails `v` otherwise.
bool decodeFormat(Verifier &v, const std::string &name, double value,
                  ActFormat &format) {
  std::string error;
  if (!isInt64(value) ||
      !strata_plan::decodeActFormat(static_cast<int64_t>(value), format, error))
    return v.fail("attribute '" + name + "': " +
                  (error.empty() ? "must be an integer format code" : error));
  if (format.isNone())
    return v.fail("attribute '" + name + "' must not be 'none'");
  return true;
}

/// Checks the format attributes; sets `bytes` to the packed bytes of the
/// widest candidate for `numel` elements.
bool verifyFormats(Verifier &v, const Attrs &attrs, int64_t numel,
                   int64_t &bytes) {
  double code = 0, budget = 0, site = 0;
  ActFormat format;
  if (!v.number("format", true, code) ||
      !decodeFormat(v, "format", code, format))
    return false;
  if (!v.number("site", true, site))
    return false;
  if (site < 0 || !isInt64(site))
    return v.fail("attribute 'site' must be a non-negative integer, got " +
                  formatNumber(site));
  if (!v.number("budget", false, budget) || budget < 0)
    return v.fail("attribute 'budget' must be >= 0, got " +
                  formatNumber(budget));
  std::vector<int64_t> codes = {static_cast<int64_t>(code)};
  if (attrs.lists.count("candidates")) {
    codes = attrs.list("candidates");
    bool listed = false;
    for (int64_t c : codes)
      listed |= c == static_cast<int64_t>(code);
    if (!listed)
      return v.fail("attribute 'format' must be one of 'candidates'");
  } else if (attrs.numbers.count("candidates")) {
    return v.fail("attribute 'candidates' must be a list of format codes");
  }
  bytes = 0;
  for (int64_t c : codes) {
    ActFormat candidate;
    if (!decodeFormat(v, "candidates", static_cast<double>(c), candidate))
      return false;
    bytes = std::max(bytes, strata_plan::actPackedBytes(candidate, numel));
  }
  return true;
}

bool packedOperand(Verifier &v, Operand op, int64_t bytes) {
  if (v.desc(op).dtype != DType::I8)
    return v.fail(op.name() + " must be i8, got " +
                  dtypeName(v.desc(op).dtype));
  return v.hasShape(op, {bytes});
}

bool f32Operand(Verifier &v, Operand op) {
  if (v.desc(op).dtype != DType::F32)
    return v.fail(op.name() + " must be f32, got " +
                  dtypeName(v.desc(op).dtype));
  return true;
}

/// compress (`packs`: f32 in, packed bytes out) or decompress (the
/// reverse): the element count is the f32 operand's.
std::string verifyCodec(const Descs &inputs, const Descs &outputs,
                        const Attrs &attrs, bool packs) {
  Verifier v(inputs, outputs, attrs);
  Operand values = packs ? in(0) : out(0), packed = packs ? out(0) : in(0);
  int64_t bytes = 0;
  if (v.counts(1, 1) && f32Operand(v, values) &&
      verifyFormats(v, attrs, v.desc(values).numel(), bytes))
    packedOperand(v, packed, bytes);
  return v.error();
}

std::string verifyCompress(const Descs &inputs, const Descs &outputs,
                           const Attrs &attrs) {
  return verifyCodec(inputs, outputs, attrs, /*packs=*/true);
}

std::string verifyDecompress(const Descs &inputs, const Descs &outputs,
                             const Attrs &attrs) {
  return verifyCodec(inputs, outputs, attrs, /*packs=*/false);
}

CompressionSite &siteOf(KernelContext &ctx, const OpAttrs &attrs,
                        const char *op) {
  if (!ctx.compression)
    throw std::runtime_error(std::string(op) +
                             ": the executor has no compression sites");
  return ctx.compression->site(attrs.site, op);
}

void runCompress(KernelContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &attrs) {
  CompressionSite &site = siteOf(ctx, attrs, "compress");
  if (site.exact) {
    const float *x = inputs[0].f32();
    site.stash.assign(x, x + inputs[0].numel());
    return;
  }
  uint64_t seed = ctx.compression->siteSeed(attrs.site);
  if (ctx.compression->isMeasuring() && site.budget > 0)
    ctx.compression->choose(attrs.site,
                            measureCandidates(ctx.pool, site, inputs[0].f32(),
                                              inputs[0].numel(), seed));
  compressActivations(ctx.pool, site.format(), inputs[0].f32(),
                      inputs[0].numel(), outputs[0].bytes(), seed);
}

void runDecompress(KernelContext &ctx, const Tensors &inputs,
                   const Tensors &outputs, const OpAttrs &attrs) {
  CompressionSite &site = siteOf(ctx, attrs, "decompress");
  if (site.exact) {
    if (static_cast<int64_t>(site.stash.size()) != outputs[0].numel())
      throw std::runtime_error("decompress: site " +
                               std::to_string(attrs.site) +
                               " holds no exact copy of its tensor");
    std::copy(site.stash.begin(), site.stash.end(), outputs[0].f32());
    return;
  }
  decompressActivations(ctx.pool, site.format(), inputs[0].bytes(),
                        outputs[0].numel(), outputs[0].f32());
}

} // namespace

void appendCompressKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::Compress, verifyCompress, runCompress});
  kernels.push_back({OpCode::Decompress, verifyDecompress, runDecompress});
}

} // namespace strata::rt::detail
