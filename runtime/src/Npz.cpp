//===- Npz.cpp - Labelled arrays from NumPy .npz files
//---------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// An .npz file (np.savez) is a ZIP archive of .npy files stored without
// compression. This reader takes the ZIP central directory (ZIP64 included,
// which np.savez writes), the stored members, and the .npy header
// (versions 1-3): little-endian f4/f8/i4/i8 arrays in C order. f8 becomes
// f32 and i8 i32 (NumPy's defaults are 64-bit), with a range check.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Data.h"

#include "strata-rt/Safetensors.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace strata::rt {

namespace {

/// Little-endian reads that never run past `bytes`.
struct Reader {
  const std::string &bytes;
  bool ok = true;
  uint64_t at(uint64_t offset, int width) {
    if (offset + width > bytes.size() || offset + width < offset) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i)
      v = v << 8 | static_cast<uint8_t>(bytes[offset + i]);
    return v;
  }
};

struct Member {
  std::string name;
  uint64_t offset = 0, size = 0;
  int method = 0;
};

Status bad(const std::string &path, const std::string &why) {
  return Status::invalid(path + ": " + why);
}

/// The ZIP64 extended-information fields that replace 0xFFFFFFFF ones.
void readZip64Extra(Reader &r, uint64_t extra, uint64_t length, Member &m,
                    bool sizeMissing, bool offsetMissing) {
  for (uint64_t p = extra; p + 4 <= extra + length;) {
    uint64_t id = r.at(p, 2), n = r.at(p + 2, 2), q = p + 4;
    if (id == 1) {
      if (sizeMissing) {
        m.size = r.at(q + 8, 8); // uncompressed, then compressed
        q += 16;
      }
      if (offsetMissing)
        m.offset = r.at(q, 8);
      return;
    }
    p += 4 + n;
  }
}

Status readMembers(const std::string &path, const std::string &bytes,
                   std::vector<Member> &members) {
  Reader r{bytes};
  // The end of central directory record: within the last 64 KiB + 22.
  int64_t eocd = -1;
  for (int64_t p = static_cast<int64_t>(bytes.size()) - 22;
       p >= 0 && p + 65557 >= static_cast<int64_t>(bytes.size()); --p)
    if (r.at(p, 4) == 0x06054b50) {
      eocd = p;
      break;
    }
  if (eocd < 0)
    return bad(path, "not an .npz file (no ZIP end of central directory)");
  uint64_t entries = r.at(eocd + 10, 2), cd = r.at(eocd + 16, 4);
  if ((entries == 0xFFFF || cd == 0xFFFFFFFF) && eocd >= 20 &&
      r.at(eocd - 20, 4) == 0x07064b50) {
    uint64_t z = r.at(eocd - 20 + 8, 8);
    if (r.at(z, 4) != 0x06064b50)
      return bad(path, "broken ZIP64 end of central directory");
    entries = r.at(z + 32, 8);
    cd = r.at(z + 48, 8);
  }
  for (uint64_t e = 0, p = cd; e < entries && r.ok; ++e) {
    if (r.at(p, 4) != 0x02014b50)
      return bad(path, "broken ZIP central directory");
    Member m;
    m.method = static_cast<int>(r.at(p + 10, 2));
    m.size = r.at(p + 20, 4);
    uint64_t nameLength = r.at(p + 28, 2), extra = r.at(p + 30, 2),
             comment = r.at(p + 32, 2);
    m.offset = r.at(p + 42, 4);
    if (!r.ok || p + 46 + nameLength > bytes.size())
      break;
    m.name = bytes.substr(p + 46, nameLength);
    readZip64Extra(r, p + 46 + nameLength, extra, m, m.size == 0xFFFFFFFF,
                   m.offset == 0xFFFFFFFF);
    // The data follows the member's local header.
    uint64_t local = m.offset;
    if (r.at(local, 4) != 0x04034b50)
      return bad(path, "broken ZIP local header of '" + m.name + "'");
    m.offset = local + 30 + r.at(local + 26, 2) + r.at(local + 28, 2);
    if (m.offset + m.size > bytes.size() || m.offset + m.size < m.offset)
      return bad(path, "member '" + m.name + "' runs past the end");
    members.push_back(m);
    p += 46 + nameLength + extra + comment;
  }
  if (!r.ok)
    return bad(path, "truncated ZIP central directory");
  return Status::success();
}

/// Parses one .npy member into a tensor of `name`.
Status readNpy(const std::string &path, const std::string &name,
               const std::string &data, StoredTensor &tensor) {
  std::string where = path + ": " + name + ".npy";
  Reader r{data};
  if (data.compare(0, 6, "\x93NUMPY") != 0 || data.size() < 10)
    return Status::invalid(where + ": not a .npy array");
  int major = static_cast<uint8_t>(data[6]);
  uint64_t headerLength = major == 1 ? r.at(8, 2) : r.at(8, 4);
  uint64_t start = (major == 1 ? 10 : 12) + headerLength;
  if (major < 1 || major > 3 || !r.ok || start > data.size())
    return Status::invalid(where + ": unsupported .npy header");
  std::string header = data.substr(major == 1 ? 10 : 12, headerLength);
  auto field = [&](const char *key) -> std::string {
    size_t k = header.find(std::string("'") + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descr = field("descr"), order = field("fortran_order"),
              shape = field("shape");
  if (order.find("False") != order.find_first_not_of(' '))
    return Status::invalid(where + ": Fortran-ordered arrays are not "
                                   "supported (use np.ascontiguousarray)");
  size_t quote = descr.find('\'');
  std::string type =
      quote == std::string::npos
          ? ""
          : descr.substr(quote + 1, descr.find('\'', quote + 1) - quote - 1);
  int width = 0;
  bool isFloat = false;
  if (type == "<f4" || type == "<f8" || type == "<i4" || type == "<i8") {
    width = type[2] - '0';
    isFloat = type[1] == 'f';
  } else {
    return Status::invalid(where + ": dtype '" + type +
                           "' is not supported (little-endian f4, f8, i4, "
                           "i8)");
  }
  Shape dims;
  size_t open = shape.find('('), close = shape.find(')');
  if (open == std::string::npos || close == std::string::npos)
    return Status::invalid(where + ": no shape in the .npy header");
  std::stringstream items(shape.substr(open + 1, close - open - 1));
  std::string item;
  uint64_t count = 1;
  while (std::getline(items, item, ',')) {
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos)
      continue;
    item = item.substr(b, e - b + 1);
    if (item.empty() || item.size() > 12 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return Status::invalid(where + ": bad shape '" + shape + "'");
    dims.push_back(std::stoll(item));
    count *= static_cast<uint64_t>(dims.back());
    if (count > kMaxDataFileBytes)
      return Status::invalid(where + ": too large");
  }
  if (data.size() - start < count * width)
    return Status::invalid(where + ": " + std::to_string(count) +
                           " elements declared, the data is shorter");
  tensor.name = name;
  tensor.desc.dtype = isFloat ? DType::F32 : DType::I32;
  tensor.desc.shape = dims;
  tensor.bytes.resize(count * 4);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t raw = r.at(start + i * width, width);
    if (isFloat) {
      float v;
      if (width == 4) {
        uint32_t bits = static_cast<uint32_t>(raw);
        std::memcpy(&v, &bits, 4);
      } else {
        double d;
        std::memcpy(&d, &raw, 8);
        v = static_cast<float>(d);
      }
      std::memcpy(&tensor.bytes[i * 4], &v, 4);
      continue;
    }
    int64_t value =
        width == 4 ? static_cast<int32_t>(raw) : static_cast<int64_t>(raw);
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max())
      return Status::invalid(where + ": element " + std::to_string(i) +
                             " does not fit in i32");
    auto v32 = static_cast<int32_t>(value);
    std::memcpy(&tensor.bytes[i * 4], &v32, 4);
  }
  return Status::success();
}

Status readNpz(const std::string &path, SafetensorsFile &file) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::failure("cannot read " + path);
  in.seekg(0, std::ios::end);
  auto size = static_cast<uint64_t>(in.tellg());
  if (size > kMaxDataFileBytes)
    return Status::invalid(path + ": larger than " +
                           std::to_string(kMaxDataFileBytes) + " bytes");
  std::string bytes(size, '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  std::vector<Member> members;
  if (Status status = readMembers(path, bytes, members); !status.ok())
    return status;
  for (const Member &m : members) {
    if (m.name.size() < 5 || m.name.compare(m.name.size() - 4, 4, ".npy"))
      continue;
    if (m.method != 0)
      return Status::invalid(path + ": '" + m.name +
                             "' is compressed (np.savez_compressed); write "
                             "the arrays with np.savez");
    StoredTensor tensor;
    std::string name = m.name.substr(0, m.name.size() - 4);
    if (Status status =
            readNpy(path, name, bytes.substr(m.offset, m.size), tensor);
        !status.ok())
      return status;
    file.tensors.push_back(std::move(tensor));
  }
  return Status::success();
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

bool isArrayFile(const std::string &path) {
  return endsWith(path, ".safetensors") || endsWith(path, ".npz");
}

Status readArrayFile(const std::string &path, SafetensorsFile &file) {
  file = SafetensorsFile();
  return endsWith(path, ".npz") ? readNpz(path, file)
                                : readSafetensors(path, file);
}

} // namespace strata::rt
