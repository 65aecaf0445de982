//===- Safetensors.cpp - Reading and writing .safetensors files -----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; this host is not");

namespace strata::rt {

using json = nlohmann::json;

/// Headers larger than this are rejected (the reference implementation uses
/// the same limit).
static constexpr uint64_t kMaxHeaderBytes = 100u << 20;

const StoredTensor *SafetensorsFile::find(const std::string &name) const {
  for (const StoredTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

static const char *fileDTypeName(DType dtype) {
  return dtype == DType::F32 ? "F32" : dtype == DType::I32 ? "I32" : "I8";
}

static bool parseFileDType(const std::string &name, DType &dtype) {
  if (name == "F32")
    dtype = DType::F32;
  else if (name == "I32")
    dtype = DType::I32;
  else if (name == "I8")
    dtype = DType::I8;
  else
    return false;
  return true;
}

namespace {

/// Location of one tensor's bytes, relative to the start of the data.
struct Entry {
  std::string name;
  TensorDesc desc;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// Reads the header entry `name`; returns "" or what is wrong with it.
std::string parseEntry(const std::string &name, const json &value,
                       uint64_t dataBytes, Entry &entry) {
  entry.name = name;
  if (!value.is_object())
    return "must be an object";
  auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string())
    return "missing string field 'dtype'";
  if (!parseFileDType(dtype->get<std::string>(), entry.desc.dtype))
    return "unsupported dtype \"" + dtype->get<std::string>() +
           "\" (supported: F32, I32)";
  auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array())
    return "missing array field 'shape'";
  uint64_t numel = 1;
  for (const json &dim : *shape) {
    if (!dim.is_number_unsigned())
      return "shape must hold non-negative integers";
    uint64_t d = dim.get<uint64_t>();
    if (d > (uint64_t(1) << 40) || (d != 0 && numel > (uint64_t(1) << 60) / d))
      return "shape is too large";
    numel *= d;
    entry.desc.shape.push_back(static_cast<int64_t>(d));
  }
  auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    return "'data_offsets' must be two non-negative integers";
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  if (entry.begin > entry.end || entry.end > dataBytes)
    return "data_offsets [" + std::to_string(entry.begin) + ", " +
           std::to_string(entry.end) + "] lie outside the " +
           std::to_string(dataBytes) + " data bytes";
  if (entry.end - entry.begin != numel * 4)
    return "data_offsets cover " + std::to_string(entry.end - entry.begin) +
           " bytes but the shape needs " + std::to_string(numel * 4);
  return "";
}

std::string parseMetadata(const json &value,
                          std::map<std::string, std::string> &metadata) {
  if (!value.is_object())
    return "__metadata__ must be an object of strings";
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!it.value().is_string())
      return "__metadata__." + it.key() + " must be a string";
    metadata[it.key()] = it.value().get<std::string>();
  }
  return "";
}

} // namespace

static Status parseHeader(const std::string &text, uint64_t dataBytes,
                          const std::string &path, SafetensorsFile &file,
                          std::vector<Entry> &entries) {
  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return Status::invalid(path + ": the header is not a JSON object");
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      std::string problem = parseMetadata(it.value(), file.metadata);
      if (!problem.empty())
        return Status::invalid(path + ": " + problem);
      continue;
    }
    entries.emplace_back();
    std::string problem =
        parseEntry(it.key(), it.value(), dataBytes, entries.back());
    if (!problem.empty())
      return Status::invalid(path + ": tensor \"" + it.key() +
                             "\": " + problem);
  }
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < entries.size(); ++i)
    if (entries[i].begin < entries[i - 1].end)
      return Status::invalid(path + ": tensors \"" + entries[i - 1].name +
                             "\" and \"" + entries[i].name + "\" overlap");
  return Status::success();
}

static Status parseImage(const std::string &bytes, const std::string &path,
                         SafetensorsFile &file) {
  if (bytes.size() < 8)
    return Status::invalid(path + ": truncated safetensors file (" +
                           std::to_string(bytes.size()) + " bytes)");
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | static_cast<uint8_t>(bytes[i]);
  if (headerBytes > kMaxHeaderBytes || headerBytes > bytes.size() - 8)
    return Status::invalid(path + ": header length " +
                           std::to_string(headerBytes) +
                           " exceeds the file (truncated or not a "
                           "safetensors file)");
  uint64_t dataBytes = bytes.size() - 8 - headerBytes;
  std::vector<Entry> entries;
  Status status =
      parseHeader(bytes.substr(8, headerBytes), dataBytes, path, file, entries);
  if (!status.ok())
    return status;
  const char *data = bytes.data() + 8 + headerBytes;
  for (Entry &entry : entries) {
    StoredTensor tensor;
    tensor.name = std::move(entry.name);
    tensor.desc = std::move(entry.desc);
    tensor.bytes.assign(data + entry.begin, data + entry.end);
    file.tensors.push_back(std::move(tensor));
  }
  return Status::success();
}

Status parseSafetensors(const std::string &bytes, const std::string &path,
                        SafetensorsFile &file) {
  file = SafetensorsFile();
  try {
    return parseImage(bytes, path, file);
  } catch (const std::exception &e) {
    file = SafetensorsFile();
    return Status::invalid(path + ": cannot parse: " + e.what());
  }
}

Status readSafetensors(const std::string &path, SafetensorsFile &file) {
  std::string bytes;
  Status status = readFile(path, bytes);
  if (!status.ok())
    return status;
  return parseSafetensors(bytes, path, file);
}

Status serializeSafetensors(const std::vector<NamedTensor> &tensors,
                            const std::map<std::string, std::string> &metadata,
                            std::string &bytes) {
  json header = json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const NamedTensor &t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      return Status::failure("cannot save tensor \"" + t.name +
                             "\": duplicate or reserved name");
    uint64_t size = static_cast<uint64_t>(t.tensor.desc.bytes());
    header[t.name] = {{"dtype", fileDTypeName(t.tensor.desc.dtype)},
                      {"shape", t.tensor.desc.shape},
                      {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text =
      header.dump(-1, ' ', false, json::error_handler_t::replace);
  // Pad the header with spaces so the data starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  bytes.clear();
  bytes.reserve(8 + text.size() + offset);
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  bytes += text;
  for (const NamedTensor &t : tensors)
    if (t.tensor.desc.bytes() > 0)
      bytes.append(static_cast<const char *>(t.tensor.data),
                   static_cast<size_t>(t.tensor.desc.bytes()));
  return Status::success();
}

Status writeSafetensors(const std::string &path,
                        const std::vector<NamedTensor> &tensors,
                        const std::map<std::string, std::string> &metadata) {
  std::string bytes;
  Status status = serializeSafetensors(tensors, metadata, bytes);
  if (!status.ok())
    return Status::failure(path + ": " + status.message());
  return writeFileAtomically(path, bytes);
}

} // namespace strata::rt
