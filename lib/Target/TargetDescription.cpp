//===- TargetDescription.cpp - Hardware target descriptions ---------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Target/TargetDescription.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

using namespace llvm;
using namespace mlir::strata;

//===----------------------------------------------------------------------===//
// Derived quantities
//===----------------------------------------------------------------------===//

double LinkDescription::transferSeconds(double bytes) const {
  if (bytes <= 0)
    return latency();
  if (bandwidthGBps <= 0)
    return std::numeric_limits<double>::infinity();
  return latency() + bytes / bandwidth();
}

int64_t TargetDescription::numDevices() const { return nodes * devicesPerNode; }

double TargetDescription::peakFlops(StringRef dtype) const {
  auto it = device.peakTflops.find(dtype);
  if (it == device.peakTflops.end())
    it = device.peakTflops.find("f32");
  if (it == device.peakTflops.end())
    return 0;
  return it->second * 1e12;
}

double TargetDescription::memoryBandwidth() const {
  return device.memoryBandwidthGBps * 1e9;
}

double TargetDescription::memoryCapacity() const {
  return device.memoryCapacityGiB * static_cast<double>(1ull << 30);
}

void TargetDescription::print(raw_ostream &os) const {
  auto num = [](double value) { return llvm::format("%g", value); };
  os << name << ": " << nodes << " node(s) x " << devicesPerNode << " "
     << device.kind << "(s) [" << device.name;
  if (device.streamingMultiprocessors > 0)
    os << ", " << device.streamingMultiprocessors << " SMs";
  os << "]\n";
  SmallVector<StringRef> dtypes;
  for (const auto &entry : device.peakTflops)
    dtypes.push_back(entry.getKey());
  llvm::sort(dtypes);
  os << "  peak TFLOP/s:";
  for (StringRef dtype : dtypes)
    os << " " << dtype << "=" << num(device.peakTflops.lookup(dtype));
  os << "\n  memory: " << num(device.memoryCapacityGiB) << " GiB at "
     << num(device.memoryBandwidthGBps) << " GB/s\n";
  auto printLink = [&](StringRef label, const LinkDescription &link) {
    os << "  " << label << ": " << num(link.bandwidthGBps) << " GB/s, "
       << num(link.latencyUs) << " us\n";
  };
  printLink("intra-node link", intraNode);
  printLink("inter-node link", interNode);
  printLink("host link", host);
}

//===----------------------------------------------------------------------===//
// Parsing and validation
//===----------------------------------------------------------------------===//

/// Dtypes accepted as keys of `device.peak_tflops`.
static constexpr StringRef kKnownDtypes[] = {"f64", "f32", "tf32", "bf16",
                                             "f16"};

namespace {
/// Reads one target description out of a parsed JSON document. Every error
/// names the source and the dotted path of the offending field.
class TargetReader {
public:
  explicit TargetReader(StringRef sourceName) : sourceName(sourceName) {}

  Expected<TargetDescription> read(const json::Value &root);

  Error error(const Twine &message) const {
    return createStringError(inconvertibleErrorCode(),
                             sourceName + ": " + message);
  }

private:
  static std::string join(StringRef prefix, StringRef key) {
    if (prefix.empty())
      return key.str();
    return (prefix + "." + key).str();
  }

  Error fieldError(StringRef path, const Twine &message) const {
    return error("field '" + path + "': " + message);
  }

  Error checkKnownKeys(const json::Object &object, StringRef prefix,
                       ArrayRef<StringRef> known) const;
  Expected<const json::Value &> getField(const json::Object &object,
                                         StringRef prefix, StringRef key) const;
  Expected<const json::Object &>
  readObject(const json::Object &object, StringRef prefix, StringRef key) const;
  Error readString(const json::Object &object, StringRef prefix, StringRef key,
                   std::string &out) const;
  Error readCount(const json::Object &object, StringRef prefix, StringRef key,
                  int64_t &out) const;
  Error readNumber(const json::Object &object, StringRef prefix, StringRef key,
                   bool allowZero, double &out) const;
  Error readNumber(const json::Value &value, StringRef path, bool allowZero,
                   double &out) const;
  Error readDevice(const json::Object &object, StringRef key,
                   DeviceDescription &out) const;
  Error readStreamingMultiprocessors(const json::Object &device,
                                     StringRef prefix,
                                     DeviceDescription &out) const;
  Error readLink(const json::Object &object, StringRef key,
                 LinkDescription &out) const;

  StringRef sourceName;
};
} // namespace

Error TargetReader::checkKnownKeys(const json::Object &object, StringRef prefix,
                                   ArrayRef<StringRef> known) const {
  // json::Object is hashed; sort so that the reported key is deterministic.
  SmallVector<StringRef> unknown;
  for (const auto &entry : object) {
    StringRef key = entry.first;
    if (!llvm::is_contained(known, key))
      unknown.push_back(key);
  }
  if (unknown.empty())
    return Error::success();
  llvm::sort(unknown);
  return error("unknown field '" + join(prefix, unknown.front()) + "'");
}

Expected<const json::Value &> TargetReader::getField(const json::Object &object,
                                                     StringRef prefix,
                                                     StringRef key) const {
  const json::Value *value = object.get(key);
  if (!value)
    return error("missing required field '" + join(prefix, key) + "'");
  return *value;
}

Expected<const json::Object &>
TargetReader::readObject(const json::Object &object, StringRef prefix,
                         StringRef key) const {
  Expected<const json::Value &> value = getField(object, prefix, key);
  if (!value)
    return value.takeError();
  const json::Object *result = value->getAsObject();
  if (!result)
    return fieldError(join(prefix, key), "expected an object");
  return *result;
}

Error TargetReader::readString(const json::Object &object, StringRef prefix,
                               StringRef key, std::string &out) const {
  Expected<const json::Value &> value = getField(object, prefix, key);
  if (!value)
    return value.takeError();
  std::optional<StringRef> str = value->getAsString();
  if (!str || str->empty())
    return fieldError(join(prefix, key), "expected a non-empty string");
  out = str->str();
  return Error::success();
}

Error TargetReader::readCount(const json::Object &object, StringRef prefix,
                              StringRef key, int64_t &out) const {
  Expected<const json::Value &> value = getField(object, prefix, key);
  if (!value)
    return value.takeError();
  // Counts beyond this are certainly typos and would overflow numDevices().
  constexpr int64_t kMaxCount = int64_t(1) << 24;
  std::optional<int64_t> count = value->getAsInteger();
  if (!count || *count < 1 || *count > kMaxCount)
    return fieldError(join(prefix, key), "expected an integer >= 1");
  out = *count;
  return Error::success();
}

Error TargetReader::readNumber(const json::Value &value, StringRef path,
                               bool allowZero, double &out) const {
  std::optional<double> number = value.getAsNumber();
  if (!number || !std::isfinite(*number) || *number < 0 ||
      (*number == 0 && !allowZero))
    return fieldError(path, allowZero ? "expected a non-negative number"
                                      : "expected a positive number");
  out = *number;
  return Error::success();
}

Error TargetReader::readNumber(const json::Object &object, StringRef prefix,
                               StringRef key, bool allowZero,
                               double &out) const {
  Expected<const json::Value &> value = getField(object, prefix, key);
  if (!value)
    return value.takeError();
  return readNumber(*value, join(prefix, key), allowZero, out);
}

Error TargetReader::readDevice(const json::Object &parent, StringRef key,
                               DeviceDescription &out) const {
  Expected<const json::Object &> object = readObject(parent, "", key);
  if (!object)
    return object.takeError();
  if (Error err = checkKnownKeys(
          *object, key,
          {"kind", "name", "peak_tflops", "memory_bandwidth_gb_per_s",
           "memory_capacity_gib", "streaming_multiprocessors"}))
    return err;

  if (Error err = readString(*object, key, "kind", out.kind))
    return err;
  if (out.kind != "gpu" && out.kind != "cpu")
    return fieldError(join(key, "kind"), "expected \"gpu\" or \"cpu\"");
  if (Error err = readString(*object, key, "name", out.name))
    return err;

  std::string peakPath = join(key, "peak_tflops");
  Expected<const json::Object &> peak = readObject(*object, key, "peak_tflops");
  if (!peak)
    return peak.takeError();
  if (Error err = checkKnownKeys(*peak, peakPath, kKnownDtypes))
    return err;
  if (!peak->get("f32"))
    return error("missing required field '" + join(peakPath, "f32") + "'");
  // Visit dtypes in a fixed order so that errors are deterministic.
  for (StringRef dtype : kKnownDtypes) {
    const json::Value *value = peak->get(dtype);
    if (!value)
      continue;
    double tflops = 0;
    if (Error err = readNumber(*value, join(peakPath, dtype),
                               /*allowZero=*/false, tflops))
      return err;
    out.peakTflops[dtype] = tflops;
  }

  if (Error err = readNumber(*object, key, "memory_bandwidth_gb_per_s",
                             /*allowZero=*/false, out.memoryBandwidthGBps))
    return err;
  if (Error err = readNumber(*object, key, "memory_capacity_gib",
                             /*allowZero=*/false, out.memoryCapacityGiB))
    return err;
  return readStreamingMultiprocessors(*object, key, out);
}

Error TargetReader::readStreamingMultiprocessors(const json::Object &device,
                                                 StringRef prefix,
                                                 DeviceDescription &out) const {
  const json::Value *value = device.get("streaming_multiprocessors");
  if (!value)
    return Error::success();
  std::string path = join(prefix, "streaming_multiprocessors");
  if (out.kind != "gpu")
    return fieldError(path, "only a gpu device has streaming multiprocessors");
  constexpr int64_t kMax = DeviceDescription::kMaxStreamingMultiprocessors;
  std::optional<int64_t> count = value->getAsInteger();
  if (!count || *count < 1 || *count > kMax)
    return fieldError(path, "expected an integer from 1 to " + Twine(kMax));
  out.streamingMultiprocessors = *count;
  return Error::success();
}

Error TargetReader::readLink(const json::Object &parent, StringRef key,
                             LinkDescription &out) const {
  Expected<const json::Object &> object = readObject(parent, "", key);
  if (!object)
    return object.takeError();
  if (Error err =
          checkKnownKeys(*object, key, {"bandwidth_gb_per_s", "latency_us"}))
    return err;
  if (Error err = readNumber(*object, key, "bandwidth_gb_per_s",
                             /*allowZero=*/false, out.bandwidthGBps))
    return err;
  return readNumber(*object, key, "latency_us", /*allowZero=*/true,
                    out.latencyUs);
}

Expected<TargetDescription> TargetReader::read(const json::Value &root) {
  const json::Object *object = root.getAsObject();
  if (!object)
    return error("expected a JSON object at the top level");
  if (Error err =
          checkKnownKeys(*object, "",
                         {"name", "description", "nodes", "devices_per_node",
                          "device", "intra_node_link", "inter_node_link",
                          "host_link", "all_reduce_volume_factor"}))
    return err;

  TargetDescription target;
  if (Error err = readString(*object, "", "name", target.name))
    return err;
  if (Error err = readString(*object, "", "description", target.description))
    return err;
  if (Error err = readCount(*object, "", "nodes", target.nodes))
    return err;
  if (Error err =
          readCount(*object, "", "devices_per_node", target.devicesPerNode))
    return err;
  if (Error err = readDevice(*object, "device", target.device))
    return err;
  if (Error err = readLink(*object, "intra_node_link", target.intraNode))
    return err;
  if (Error err = readLink(*object, "inter_node_link", target.interNode))
    return err;
  if (Error err = readLink(*object, "host_link", target.host))
    return err;
  if (const json::Value *factor = object->get("all_reduce_volume_factor")) {
    if (Error err =
            readNumber(*factor, "all_reduce_volume_factor",
                       /*allowZero=*/false, target.allReduceVolumeFactor))
      return err;
    if (target.allReduceVolumeFactor > 16)
      return fieldError("all_reduce_volume_factor",
                        "expected a number in (0, 16]");
  }
  return target;
}

Expected<TargetDescription>
mlir::strata::parseTargetDescription(StringRef json, StringRef sourceName) {
  TargetReader reader(sourceName);
  Expected<json::Value> root = json::parse(json);
  if (!root)
    return reader.error("invalid JSON: " + toString(root.takeError()));
  return reader.read(*root);
}

//===----------------------------------------------------------------------===//
// Files and search paths
//===----------------------------------------------------------------------===//

/// Loads the file at `path` and checks that the target is named after it.
static Expected<TargetDescription> loadTargetFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(
        buffer.getError(),
        path + ": cannot read file: " + buffer.getError().message());
  Expected<TargetDescription> target =
      parseTargetDescription((*buffer)->getBuffer(), path);
  if (!target)
    return target.takeError();
  StringRef stem = sys::path::stem(path);
  if (target->name != stem)
    return createStringError(inconvertibleErrorCode(),
                             path + ": field 'name': '" + target->name +
                                 "' does not match the file name '" + stem +
                                 "'");
  target->path = path.str();
  return target;
}

/// Joins `items` with ", ", or returns "none" when there are none.
static std::string joinOrNone(ArrayRef<std::string> items) {
  if (items.empty())
    return "none";
  return llvm::join(items, ", ");
}

Expected<TargetDescription>
mlir::strata::loadTargetDescription(StringRef nameOrPath,
                                    ArrayRef<std::string> searchDirs) {
  if (nameOrPath.empty())
    return createStringError(inconvertibleErrorCode(), "empty target name");
  // An existing file, or something that looks like a path, is read directly;
  // a missing path is reported as such rather than as an unknown target.
  if (sys::fs::is_regular_file(nameOrPath) || nameOrPath.ends_with(".json") ||
      sys::path::has_parent_path(nameOrPath))
    return loadTargetFile(nameOrPath);

  for (const std::string &dir : searchDirs) {
    SmallString<256> candidate(dir);
    sys::path::append(candidate, nameOrPath + ".json");
    if (sys::fs::is_regular_file(candidate))
      return loadTargetFile(candidate);
  }
  return createStringError(inconvertibleErrorCode(),
                           "unknown target '" + nameOrPath + "' (searched: " +
                               joinOrNone(searchDirs) + "; known targets: " +
                               joinOrNone(listTargets(searchDirs)) + ")");
}

std::vector<std::string> mlir::strata::getDefaultTargetSearchPath() {
  std::vector<std::string> dirs;
  auto add = [&](StringRef dir) {
    if (!dir.empty() && !llvm::is_contained(dirs, dir))
      dirs.push_back(dir.str());
  };
  if (const char *env = std::getenv("STRATA_TARGET_PATH")) {
    SmallVector<StringRef> entries;
    StringRef(env).split(entries, ':', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    for (StringRef entry : entries)
      add(entry);
  }
#ifdef STRATA_TARGETS_SOURCE_DIR
  add(STRATA_TARGETS_SOURCE_DIR);
#endif
#ifdef STRATA_TARGETS_INSTALL_DIR
  add(STRATA_TARGETS_INSTALL_DIR);
#endif
  return dirs;
}

std::vector<std::string>
mlir::strata::listTargets(ArrayRef<std::string> searchDirs) {
  std::vector<std::string> names;
  for (const std::string &dir : searchDirs) {
    std::error_code ec;
    for (sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      StringRef path = it->path();
      if (sys::path::extension(path) != ".json")
        continue;
      if (!sys::fs::is_regular_file(path))
        continue;
      names.push_back(sys::path::stem(path).str());
    }
  }
  llvm::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}
