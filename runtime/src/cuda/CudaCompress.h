//===- CudaCompress.h - Activation codecs on the GPU ------------*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header. Only the
// CUDA backend (built where nvcc is found) includes this header.
//
// The GPU versions of compressActivations / decompressActivations
// (strata-rt/Compress.h): the same bytes and values as the CPU codecs (they
// share the per-element math of cpu/CompressCodec.h). Pointers are device
// pointers; the work is enqueued on `stream` and the host returns at once.
// Throws std::runtime_error when a launch fails.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CUDA_CUDACOMPRESS_H
#define STRATA_RT_CUDA_CUDACOMPRESS_H

#include "strata-rt/ActivationFormat.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace strata::rt::cuda {

/// Packs n f32 values into actPackedBytes(f, n) bytes at `out`; `seed` keys
/// the stochastic rounding exactly as on the CPU.
void compressActivations(cudaStream_t stream, const strata_plan::ActFormat &f,
                         const float *in, int64_t n, uint8_t *out,
                         uint64_t seed);
/// Unpacks n values.
void decompressActivations(cudaStream_t stream, const strata_plan::ActFormat &f,
                           const uint8_t *in, int64_t n, float *out);

} // namespace strata::rt::cuda

#endif // STRATA_RT_CUDA_CUDACOMPRESS_H
