//===- Safetensors.h - Reading and writing .safetensors files ----*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON header mapping each tensor name to {"dtype", "shape", "data_offsets"}
// (plus an optional "__metadata__" map of strings), then the tensor bytes,
// little-endian and row-major. Only "F32" and "I32" tensors are supported.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_SAFETENSORS_H
#define STRATA_RT_SAFETENSORS_H

#include "strata-rt/Support.h"
#include "strata-rt/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::rt {

/// A tensor read from a file; owns its bytes.
struct StoredTensor {
  std::string name;
  TensorDesc desc;
  std::vector<uint8_t> bytes;

  /// A view of the bytes (valid while this object lives and is unchanged).
  Tensor view() { return Tensor{bytes.data(), desc}; }
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  /// In file order (ascending data offset).
  std::vector<StoredTensor> tensors;

  const StoredTensor *find(const std::string &name) const;
};

/// A tensor to write: a name and a view of its data.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Parses a safetensors image already in memory; `path` is only used in
/// messages. Malformed input is `Status::Code::Invalid`.
Status parseSafetensors(const std::string &bytes, const std::string &path,
                        SafetensorsFile &file);

/// Reads `path`; a file that cannot be read is a `Failure`, a malformed one
/// `Invalid`.
Status readSafetensors(const std::string &path, SafetensorsFile &file);

/// The bytes of a safetensors file holding `tensors` (names must be unique
/// and not "__metadata__") in the given order.
Status serializeSafetensors(const std::vector<NamedTensor> &tensors,
                            const std::map<std::string, std::string> &metadata,
                            std::string &bytes);

/// Serialises and writes atomically (see writeFileAtomically).
Status writeSafetensors(const std::string &path,
                        const std::vector<NamedTensor> &tensors,
                        const std::map<std::string, std::string> &metadata);

} // namespace strata::rt

#endif // STRATA_RT_SAFETENSORS_H
