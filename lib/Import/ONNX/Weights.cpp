//===- Weights.cpp - The initializers as a .safetensors file --------------===//
//
// The file `strata-run --init` loads: one F32 tensor per parameter, named as
// the parameter. Written to a temporary file beside the target and renamed
// over it, so a failed import never leaves a partial file.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;

static std::string buildHeader(ArrayRef<WeightTensor> weights) {
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const WeightTensor &w : weights) {
    uint64_t bytes = static_cast<uint64_t>(w.value->numel()) * sizeof(float);
    llvm::json::Array shape;
    for (int64_t d : w.shape)
      shape.push_back(d);
    header[w.name] = llvm::json::Object{
        {"dtype", "F32"},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(header));
  // The data starts 8-byte aligned.
  while ((text.size() + 8) % 8 != 0)
    text.push_back(' ');
  return text;
}

static void writeBody(llvm::raw_ostream &os, ArrayRef<WeightTensor> weights) {
  for (const WeightTensor &w : weights)
    for (double v : w.value->data) {
      float f = static_cast<float>(v);
      os.write(reinterpret_cast<const char *>(&f), sizeof(f));
    }
}

std::string onnx_import::writeWeights(StringRef path,
                                      ArrayRef<WeightTensor> weights) {
  std::string header = buildHeader(weights);
  SmallString<256> temp;
  int fd;
  SmallString<256> model(path);
  model += ".tmp-%%%%%%";
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, temp))
    return "cannot create " + temp.str().str() + ": " + ec.message();
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
      os << static_cast<char>((n >> (8 * i)) & 0xff);
    os << header;
    writeBody(os, weights);
    os.close();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return "cannot write " + path.str() + ": " + message;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return "cannot write " + path.str() + ": " + ec.message();
  }
  return "";
}
