//===- Init.h - Counter-based random numbers and initialisers ----*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every random number of a run (parameters, synthetic data) is a pure
// function of (seed, key, index), so it depends neither on the order in which
// tensors are filled, nor on the thread count, nor on the platform:
//
//   bits(seed, key, index) = splitmix64(seed ^ (key + index))   (mod 2^64)
//   uniform(seed, key, index) = (bits >> 11) * 2^-53             in [0, 1)
//   normal(seed, key, i) = sqrt(-2 ln(1 - u(2i))) cos(2 pi u(2i + 1))
//
// where `key` is fnv1a64 of a name (a parameter's name for initialisation).
// This is docs/plan-format.md's `splitmix64(seed ^ fnv1a64(name) + index)`
// read with C precedence. Values are computed in double and rounded to f32.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_INIT_H
#define STRATA_RT_INIT_H

#include "strata-rt/Plan.h"
#include "strata-rt/Tensor.h"

#include <cstdint>
#include <string_view>

namespace strata::rt {

class ThreadPool;

/// The splitmix64 finaliser (Steele, Lea, Flood 2014), including its
/// golden-ratio increment: a bijective hash of a 64-bit counter.
uint64_t splitmix64(uint64_t x);

/// 64-bit FNV-1a of the bytes of `text`.
uint64_t fnv1a64(std::string_view text);

/// splitmix64(seed ^ (key + index)).
uint64_t randomBits(uint64_t seed, uint64_t key, uint64_t index);

/// Uniform in [0, 1) from the top 53 bits of randomBits.
double randomUniform(uint64_t seed, uint64_t key, uint64_t index);

/// Standard normal sample #index, by Box-Muller from uniforms 2i and 2i + 1.
double randomNormal(uint64_t seed, uint64_t key, uint64_t index);

/// Fills the f32 tensor `t` as `spec` says, keyed by (seed, fnv1a64(name)):
/// element i of a `uniform`/`xavier_uniform` tensor is
/// (2 u(i) - 1) * bound, of a `normal`/`kaiming_normal` tensor
/// normal(i) * std. `pool`, if given, splits the work; the result does not
/// depend on it.
void initializeTensor(const Tensor &t, const InitSpec &spec, uint64_t seed,
                      std::string_view name, ThreadPool *pool = nullptr);

/// The bound of a uniform init or the standard deviation of a normal one
/// (0 for zeros/ones).
double initScale(const InitSpec &spec);

} // namespace strata::rt

#endif // STRATA_RT_INIT_H
