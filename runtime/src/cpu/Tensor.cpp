//===- Tensor.cpp - Runtime tensor helpers --------------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Tensor.h"

namespace strata::rt {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  }
  return "unknown";
}

bool parseDType(const std::string &name, DType &dtype) {
  if (name == "f32") {
    dtype = DType::F32;
    return true;
  }
  if (name == "i32") {
    dtype = DType::I32;
    return true;
  }
  if (name == "i8") {
    dtype = DType::I8;
    return true;
  }
  return false;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShape(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

const std::vector<int64_t> &Attrs::list(const std::string &name) const {
  static const std::vector<int64_t> empty;
  auto it = lists.find(name);
  return it == lists.end() ? empty : it->second;
}

} // namespace strata::rt
