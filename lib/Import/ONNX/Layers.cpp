//===- Layers.cpp - Layer names from ONNX node names ----------------------===//
//
// torch.onnx.export names a node after the module scopes it was traced in,
// one '/'-separated component per scope, then the op:
// "/layer1/layer1.0/conv1/Conv". The importer groups nodes into one Strata
// layer per top-level block ("layer1.0", "h.1", "fc0") so that the pipeline
// partitioner sees the model's own structure.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;

std::string onnx_import::getModulePath(StringRef nodeName) {
  if (!nodeName.starts_with("/"))
    return "";
  SmallVector<StringRef> parts;
  nodeName.split(parts, '/', -1, /*KeepEmpty=*/false);
  if (parts.size() < 2)
    return "";
  parts.pop_back(); // the op ("Conv", "Gemm_1")
  // A scope is either a full dotted path ("layer1.0", extending the one
  // before it) or the attribute name of a child ("conv1").
  std::string path;
  for (StringRef part : parts) {
    if (!path.empty() && part.starts_with(path + "."))
      path = part.str();
    else if (path.empty())
      path = part.str();
    else
      path = (path + "." + part).str();
  }
  return path;
}

std::string onnx_import::getLayerName(StringRef modulePath) {
  SmallVector<StringRef> parts;
  modulePath.split(parts, '.', -1, /*KeepEmpty=*/false);
  if (parts.empty())
    return "";
  for (size_t i = 0; i < parts.size(); ++i)
    if (llvm::all_of(parts[i], llvm::isDigit))
      return llvm::join(ArrayRef<StringRef>(parts).take_front(i + 1), ".");
  return parts.front().str();
}

bool onnx_import::isBlockLayer(StringRef layerName) {
  SmallVector<StringRef> parts;
  layerName.split(parts, '.');
  return llvm::any_of(parts, [](StringRef part) {
    return !part.empty() && llvm::all_of(part, llvm::isDigit);
  });
}
