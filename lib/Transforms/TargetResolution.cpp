//===- TargetResolution.cpp - The target a pass runs for ------------------===//

#include "strata/Transforms/TargetResolution.h"
#include "strata/Dialect/Strata/StrataOps.h"

using namespace mlir;
using namespace mlir::strata;

std::string mlir::strata::getTargetName(StringRef option, ModuleOp module) {
  if (!option.empty())
    return option.str();
  if (auto attr =
          module->getAttrOfType<StringAttr>(StrataDialect::getTargetAttrName()))
    return attr.getValue().str();
  return "";
}

FailureOr<TargetDescription>
mlir::strata::loadTarget(StringRef name,
                         function_ref<InFlightDiagnostic()> emitError) {
  llvm::Expected<TargetDescription> target =
      loadTargetDescription(name, getDefaultTargetSearchPath());
  if (!target)
    return emitError() << llvm::toString(target.takeError());
  return std::move(*target);
}
