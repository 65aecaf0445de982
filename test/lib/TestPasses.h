//===- TestPasses.h - Strata test passes ------------------------*- C++ -*-===//

#ifndef STRATA_TEST_TESTPASSES_H
#define STRATA_TEST_TESTPASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::strata::test {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "TestPasses.h.inc"
} // namespace mlir::strata::test

#endif // STRATA_TEST_TESTPASSES_H
