//===- TargetResolution.h - The target a pass runs for ----------*- C++ -*-===//
//
// The passes that need a hardware description (cost annotation, pipeline
// partitioning and scheduling, gradient-bucket sizing) find it the same way:
// their `target=` option, else the `strata.target` module attribute that
// `--strata-annotate-costs` writes; the name is then loaded from a file or
// the default search path.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TRANSFORMS_TARGETRESOLUTION_H
#define STRATA_TRANSFORMS_TARGETRESOLUTION_H

#include "strata/Target/TargetDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::strata {

/// Returns the target a pass uses: `option` (its `target=` option) when set,
/// else the module's `strata.target` attribute; empty when neither names
/// one.
std::string getTargetName(StringRef option, ModuleOp module);

/// Loads target `name` (a name on the default search path or a JSON file).
/// On failure reports the loader's message through `emitError` and fails.
FailureOr<TargetDescription>
loadTarget(StringRef name, function_ref<InFlightDiagnostic()> emitError);

} // namespace mlir::strata

#endif // STRATA_TRANSFORMS_TARGETRESOLUTION_H
