//===- Tensor.h - Runtime tensor views ---------------------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_TENSOR_H
#define STRATA_RT_TENSOR_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace strata::rt {

/// I8 holds raw bytes: the packed formats of compressed activations.
enum class DType { F32, I32, I8 };

/// Bytes of one element.
inline int64_t dtypeSize(DType dtype) { return dtype == DType::I8 ? 1 : 4; }
/// "f32" / "i32" / "i8".
const char *dtypeName(DType dtype);
/// Parses "f32" / "i32" / "i8"; returns false for anything else.
bool parseDType(const std::string &name, DType &dtype);

using Shape = std::vector<int64_t>;

/// Product of the dimensions (1 for a scalar).
int64_t numElements(const Shape &shape);
/// "[2, 3, 4]".
std::string formatShape(const Shape &shape);

/// Shape and element type of a tensor, without data.
struct TensorDesc {
  DType dtype = DType::F32;
  Shape shape;
  int64_t numel() const { return numElements(shape); }
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
};

/// A non-owning view of a dense row-major tensor.
struct Tensor {
  void *data = nullptr;
  TensorDesc desc;

  float *f32() const { return static_cast<float *>(data); }
  int32_t *i32() const { return static_cast<int32_t *>(data); }
  uint8_t *bytes() const { return static_cast<uint8_t *>(data); }
  const Shape &shape() const { return desc.shape; }
  int64_t numel() const { return desc.numel(); }
  int64_t dim(int64_t i) const {
    return desc.shape[i < 0 ? i + (int64_t)desc.shape.size() : i];
  }
  int64_t rank() const { return (int64_t)desc.shape.size(); }
};

/// Whether `v` is an integer that int64_t holds exactly (finite, no fraction,
/// in range): check it before converting a plan's number to an integer.
inline bool isInt64(double v) {
  return v >= -0x1p63 && v < 0x1p63 && v == std::trunc(v);
}

/// Attributes of one plan instruction: numbers (ints, floats and booleans
/// are all stored as double) and integer lists.
struct Attrs {
  std::map<std::string, double> numbers;
  std::map<std::string, std::vector<int64_t>> lists;

  bool has(const std::string &name) const {
    return numbers.count(name) || lists.count(name);
  }
  double number(const std::string &name, double fallback = 0) const {
    auto it = numbers.find(name);
    return it == numbers.end() ? fallback : it->second;
  }
  /// The number truncated toward zero and saturated to the int64_t range
  /// (NaN reads as `fallback`): never an out-of-range conversion, whatever a
  /// plan holds. Verifiers check the exact value (isInt64) first.
  int64_t integer(const std::string &name, int64_t fallback = 0) const {
    double v = number(name, static_cast<double>(fallback));
    if (std::isnan(v))
      return fallback;
    if (v >= 0x1p63)
      return std::numeric_limits<int64_t>::max();
    if (v < -0x1p63)
      return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  }
  bool flag(const std::string &name) const { return number(name, 0) != 0; }
  const std::vector<int64_t> &list(const std::string &name) const;
};

} // namespace strata::rt

#endif // STRATA_RT_TENSOR_H
