//===- strata-pack.cpp - Pack buffers with fixed lifetimes ----------------===//
//
// Runs the buffer packing of static memory planning on a MiniMalloc CSV
// (`id,lower,upper,size[,alignment]`: buffer `id` needs `size` bytes during
// [lower, upper)) and reports the peak against the lower bound.
//
//   strata-pack A.csv --capacity 1048576
//   strata-pack A.csv --strategy greedy-size --print-offsets
//   strata-pack A.csv --strategy exact --time-limit 5 --json
//
// With --capacity, the exit status says whether the packing fits.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/BufferPacking.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <set>

using namespace llvm;
using namespace mlir::strata;

static cl::OptionCategory category("strata-pack options");
static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<buffers.csv>"), cl::cat(category));
static cl::opt<std::string>
    strategyName("strategy",
                 cl::desc("auto, fixed-structure, greedy-size, best-fit or "
                          "exact"),
                 cl::init("auto"), cl::cat(category));
static cl::opt<int64_t>
    capacity("capacity",
             cl::desc("Bytes available: exit 1 unless the packing fits "
                      "(0: minimise the peak)"),
             cl::init(0), cl::cat(category));
static cl::opt<double> timeLimit("time-limit",
                                 cl::desc("Seconds for the exact search"),
                                 cl::init(10), cl::cat(category));
static cl::opt<int64_t> alignment("alignment",
                                  cl::desc("Alignment of every offset and "
                                           "size in bytes"),
                                  cl::init(1), cl::cat(category));
static cl::opt<bool> printOffsets("print-offsets",
                                  cl::desc("Print every buffer's offset"),
                                  cl::cat(category));
static cl::opt<bool> jsonOutput("json", cl::desc("Print the report as JSON"),
                                cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "strata-pack") << message << "\n";
  return 1;
}

namespace {
/// The CSV's columns, by position.
struct CsvColumns {
  int id = -1, lower = -1, upper = -1, size = -1, alignment = -1;
};
} // namespace

/// Maps the header's names to columns; an error message or "".
static std::string parseHeader(StringRef line, CsvColumns &columns,
                               size_t &count) {
  SmallVector<StringRef> names;
  line.split(names, ',');
  count = names.size();
  for (auto [index, raw] : llvm::enumerate(names)) {
    StringRef name = raw.trim();
    int *column = StringSwitch<int *>(name)
                      .Case("id", &columns.id)
                      .Case("lower", &columns.lower)
                      .Case("upper", &columns.upper)
                      .Case("size", &columns.size)
                      .Case("alignment", &columns.alignment)
                      .Default(nullptr);
    if (!column)
      return formatv("unknown column '{0}' (expected id, lower, upper, "
                     "size and optionally alignment)",
                     name);
    if (*column >= 0)
      return formatv("column '{0}' appears twice", name);
    *column = int(index);
  }
  for (auto [column, name] :
       {std::pair(columns.id, "id"), std::pair(columns.lower, "lower"),
        std::pair(columns.upper, "upper"), std::pair(columns.size, "size")})
    if (column < 0)
      return formatv("missing column '{0}' (the header must name id, lower, "
                     "upper and size)",
                     name);
  return "";
}

/// Parses one data row; an error message or "".
static std::string parseRow(StringRef line, const CsvColumns &columns,
                            size_t count, PackBuffer &buffer) {
  SmallVector<StringRef> fields;
  line.split(fields, ',');
  if (fields.size() != count)
    return formatv("expected {0} fields, found {1}", count, fields.size());
  auto field = [&](int column, StringRef name, int64_t &value) -> std::string {
    StringRef text = fields[column].trim();
    if (text.getAsInteger(10, value))
      return formatv("{0} '{1}' is not a 64-bit integer", name, text);
    return "";
  };
  std::string error = field(columns.id, "id", buffer.id);
  if (error.empty())
    error = field(columns.lower, "lower", buffer.start);
  if (error.empty())
    error = field(columns.upper, "upper", buffer.end);
  if (error.empty())
    error = field(columns.size, "size", buffer.size);
  if (error.empty() && columns.alignment >= 0)
    error = field(columns.alignment, "alignment", buffer.alignment);
  if (!error.empty())
    return error;
  if (buffer.size < 0)
    return formatv("negative size {0}", buffer.size);
  if (buffer.start >= buffer.end)
    return formatv("lower {0} is not below upper {1}", buffer.start,
                   buffer.end);
  if (buffer.alignment < 1)
    return formatv("alignment {0} is not positive", buffer.alignment);
  return "";
}

/// Reads a MiniMalloc CSV; diagnostics name the file and line.
static std::optional<std::vector<PackBuffer>> readCsv(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> file =
      MemoryBuffer::getFileOrSTDIN(path);
  if (!file) {
    fail("cannot read '" + path + "': " + file.getError().message());
    return std::nullopt;
  }
  std::vector<PackBuffer> buffers;
  std::set<int64_t> ids;
  CsvColumns columns;
  size_t count = 0;
  bool sawHeader = false;
  SmallVector<StringRef> lines;
  (*file)->getBuffer().split(lines, '\n');
  for (auto [index, raw] : llvm::enumerate(lines)) {
    StringRef line = raw.rtrim("\r");
    if (line.trim().empty())
      continue;
    std::string error;
    PackBuffer buffer;
    if (!sawHeader) {
      error = parseHeader(line, columns, count);
      sawHeader = true;
    } else {
      error = parseRow(line, columns, count, buffer);
      if (error.empty() && !ids.insert(buffer.id).second)
        error = formatv("duplicate id {0}", buffer.id);
      buffers.push_back(buffer);
    }
    if (!error.empty()) {
      fail(formatv("{0}:{1}: {2}", path, index + 1, error));
      return std::nullopt;
    }
  }
  if (!sawHeader) {
    fail(path + ": empty file (expected the header id,lower,upper,size)");
    return std::nullopt;
  }
  return buffers;
}

static void printText(const std::vector<PackBuffer> &buffers,
                      const PackResult &result, raw_ostream &os) {
  double ratio = result.lowerBound > 0
                     ? double(result.peak) / double(result.lowerBound)
                     : 1.0;
  os << "buffers: " << buffers.size() << "\n";
  os << "lower bound: " << result.lowerBound << "\n";
  os << "peak: " << result.peak << "\n";
  os << formatv("peak / lower bound: {0:f4}\n", ratio);
  os << "strategy: " << result.strategy << " (requested " << strategyName
     << ")\n";
  os << "optimal: " << (result.optimal ? "yes" : "not proven") << "\n";
  os << "timed out: " << (result.timedOut ? "yes" : "no") << "\n";
  if (result.searchNodes > 0)
    os << "search nodes: " << result.searchNodes << "\n";
  if (!result.note.empty())
    os << "note: " << result.note << "\n";
  os << formatv("seconds: {0:f3}\n", result.seconds);
  if (capacity > 0)
    os << "capacity: " << capacity
       << (result.peak <= capacity ? " (fits)" : " (does not fit)") << "\n";
  if (!printOffsets)
    return;
  os << "offsets (id offset):\n";
  for (auto [buffer, offset] : llvm::zip(buffers, result.offsets))
    os << buffer.id << " " << offset << "\n";
}

static void printJson(const std::vector<PackBuffer> &buffers,
                      const PackResult &result, raw_ostream &os) {
  json::Object report{
      {"file", input},
      {"buffers", int64_t(buffers.size())},
      {"lower_bound", result.lowerBound},
      {"peak", result.peak},
      {"ratio", result.lowerBound > 0
                    ? double(result.peak) / double(result.lowerBound)
                    : 1.0},
      {"strategy", result.strategy},
      {"requested_strategy", strategyName},
      {"optimal", result.optimal},
      {"timed_out", result.timedOut},
      {"search_nodes", result.searchNodes},
      {"seconds", result.seconds},
  };
  if (!result.note.empty())
    report["note"] = result.note;
  if (capacity > 0) {
    report["capacity"] = int64_t(capacity);
    report["fits"] = result.peak <= capacity;
  }
  if (printOffsets) {
    json::Array offsets;
    for (auto [buffer, offset] : llvm::zip(buffers, result.offsets))
      offsets.push_back(json::Object{{"id", buffer.id}, {"offset", offset}});
    report["offsets"] = std::move(offsets);
  }
  os << formatv("{0:2}", json::Value(std::move(report))) << "\n";
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "Pack buffers with fixed lifetimes into one "
                              "arena (static memory planning)\n");
  std::optional<PackStrategy> strategy = parsePackStrategy(strategyName);
  if (!strategy)
    return fail("unknown strategy '" + strategyName +
                "' (expected auto, fixed-structure, greedy-size, best-fit or "
                "exact)");
  if (capacity < 0)
    return fail("--capacity must not be negative");
  if (!(timeLimit >= 0))
    return fail("--time-limit must not be negative");
  if (alignment < 1)
    return fail("--alignment must be positive");
  std::optional<std::vector<PackBuffer>> buffers = readCsv(input);
  if (!buffers)
    return 1;

  PackOptions options;
  options.strategy = *strategy;
  options.alignment = alignment;
  options.capacity = capacity;
  options.timeLimitSeconds = timeLimit;
  PackResult result = packBuffers(*buffers, options);
  if (!result.ok())
    return fail(input + ": " + result.error);
  if (jsonOutput)
    printJson(*buffers, result, outs());
  else
    printText(*buffers, result, outs());
  outs().flush();
  if (capacity > 0 && result.peak > capacity)
    return fail(formatv("peak {0} does not fit the capacity {1}", result.peak,
                        capacity));
  return 0;
}
