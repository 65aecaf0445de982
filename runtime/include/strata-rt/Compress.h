//===- Compress.h - Activation compression codecs ---------------*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Packs f32 arrays into the compressed activation formats of
// ActivationFormat.h and back (docs/activation-formats.md gives the exact
// semantics: scales, rounding, non-finite and zero blocks). The fast kernels
// and the scalar reference produce identical bytes and values; both are
// deterministic for a given seed, whatever the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_COMPRESS_H
#define STRATA_RT_COMPRESS_H

#include "strata-rt/ActivationFormat.h"

#include <cstdint>

namespace strata::rt {

class ThreadPool;

/// Packs n f32 values into actPackedBytes(f, n) bytes at `out`. `seed` keys the
/// stochastic rounding (a counter-based hash of (seed, element index): the
/// same inputs and seed give the same bytes, whatever the thread count).
void compressActivations(ThreadPool &pool, const strata_plan::ActFormat &f,
                         const float *in, int64_t n, uint8_t *out,
                         uint64_t seed);
/// Unpacks n values.
void decompressActivations(ThreadPool &pool, const strata_plan::ActFormat &f,
                           const uint8_t *in, int64_t n, float *out);

/// The reference implementations: scalar, written straight from the format
/// definitions for clarity, one element at a time; the fast kernels produce
/// the identical bytes and values.
void compressActivationsReference(const strata_plan::ActFormat &f,
                                  const float *in, int64_t n, uint8_t *out,
                                  uint64_t seed);
void decompressActivationsReference(const strata_plan::ActFormat &f,
                                    const uint8_t *in, int64_t n, float *out);

/// The largest |x - decompress(compress(x))| the format allows for an element
/// of a block whose largest finite magnitude is `blockAmax` (outliers
/// excluded for bfp-outlier), under nearest rounding; used by tests and by
/// the compiler's error estimates. 0 for None; NaN for a non-finite or
/// negative blockAmax. Not covered: MX blocks whose scaled elements round
/// past FLT_MAX (amax within one element step of FLT_MAX), which decode to
/// +-Inf.
double actMaxAbsError(const strata_plan::ActFormat &f, double blockAmax);

} // namespace strata::rt

#endif // STRATA_RT_COMPRESS_H
