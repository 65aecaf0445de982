//===- FuzzOnnx.cpp - Fuzz the ONNX importer ------------------------------===//
//
// libFuzzer target `strata-fuzz-onnx` (built when the ONNX importer is): the
// input is an ONNX file for `importOnnx`. A file it accepts must give a
// module that verifies; every other outcome must be a reported error.
// Diagnostics are swallowed; no weights file is written. Seeds in
// corpus/onnx/ (test/Import/make_invalid_onnx.py writes them).
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Import/ONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;

static constexpr size_t kMaxInputBytes = 1 << 20;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return 0;
  MLIRContext context;
  context.loadDialect<strata::StrataDialect, func::FuncDialect>();
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  strata::OnnxImportOptions options;
  OwningOpRef<ModuleOp> module = strata::importOnnx(
      &context, StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.onnx", options);
  if (module && failed(verify(*module))) {
    std::fprintf(stderr, "strata-fuzz-onnx: an imported module does not "
                         "verify\n");
    std::abort();
  }
  return 0;
}
