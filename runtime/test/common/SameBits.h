//===- SameBits.h - Bit-for-bit comparison in runtime tests -----*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_TEST_COMMON_SAMEBITS_H
#define STRATA_RT_TEST_COMMON_SAMEBITS_H

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace strata::rt::test {

/// Bit-for-bit equality of float vectors (EXPECT_EQ would accept -0 == 0
/// and reject NaN == NaN).
inline ::testing::AssertionResult sameBits(const std::vector<float> &a,
                                           const std::vector<float> &b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure()
           << "sizes " << a.size() << " vs " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

} // namespace strata::rt::test

#endif // STRATA_RT_TEST_COMMON_SAMEBITS_H
