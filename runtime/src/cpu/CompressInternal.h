//===- CompressInternal.h - ISA hooks of the activation codecs --*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header. For the
// tests and the benchmark: the fast codecs with an explicit instruction set.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CPU_COMPRESSINTERNAL_H
#define STRATA_RT_CPU_COMPRESSINTERNAL_H

#include "GemmInternal.h"

#include "strata-rt/Compress.h"

namespace strata::rt::detail {

/// compressActivations / decompressActivations compiled for `isa` (which
/// must be supported: gemmIsaSupported); with `pool == nullptr` everything
/// runs on the calling thread. Every ISA gives the same bytes and values.
void compressActivationsWithIsa(GemmIsa isa, ThreadPool *pool,
                                const strata_plan::ActFormat &f,
                                const float *in, int64_t n, uint8_t *out,
                                uint64_t seed);
void decompressActivationsWithIsa(GemmIsa isa, ThreadPool *pool,
                                  const strata_plan::ActFormat &f,
                                  const uint8_t *in, int64_t n, float *out);

} // namespace strata::rt::detail

#endif // STRATA_RT_CPU_COMPRESSINTERNAL_H
