//===- TargetDescriptionTest.cpp - Target description unit tests ----------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Target/TargetDescription.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <optional>

using namespace llvm;
using namespace mlir::strata;

#ifndef STRATA_TARGETS_SOURCE_DIR
#error "STRATA_TARGETS_SOURCE_DIR must name the repository's targets/ folder"
#endif

namespace {

/// The targets every checkout ships; each must load and validate.
constexpr const char *kShippedTargets[] = {
    "a100-sxm-8x",       "cpu-local",    "h100-sxm-8x",
    "h100-sxm-8x-4node", "v100-pcie-4x", "v100-pcie-4x-4node"};

/// A small valid description that the error tests mutate.
constexpr const char *kValidTarget = R"json({
  "name": "test-target",
  "description": "a valid target for unit tests",
  "nodes": 2,
  "devices_per_node": 4,
  "device": {
    "kind": "gpu",
    "name": "Test GPU",
    "peak_tflops": {"f32": 10, "bf16": 100},
    "memory_bandwidth_gb_per_s": 1000,
    "memory_capacity_gib": 16
  },
  "intra_node_link": {"bandwidth_gb_per_s": 100, "latency_us": 1.0},
  "inter_node_link": {"bandwidth_gb_per_s": 10, "latency_us": 5.0},
  "host_link": {"bandwidth_gb_per_s": 20, "latency_us": 0}
})json";

std::string sourceDir() { return STRATA_TARGETS_SOURCE_DIR; }

/// Returns kValidTarget after applying `edit` to its parsed form.
std::string mutated(const std::function<void(json::Object &)> &edit) {
  Expected<json::Value> value = json::parse(kValidTarget);
  if (!value) {
    ADD_FAILURE() << toString(value.takeError());
    return "";
  }
  edit(*value->getAsObject());
  std::string text;
  raw_string_ostream os(text);
  os << *value;
  return text;
}

/// Returns the `key` sub-object of `object`.
json::Object &sub(json::Object &object, StringRef key) {
  return *object.getObject(key);
}

/// Returns the error message of `result`, or nullopt when it succeeded.
std::optional<std::string> errorOf(Expected<TargetDescription> result) {
  if (result)
    return std::nullopt;
  return toString(result.takeError());
}

/// Parses `json` under the name "test.json" and returns the error message.
std::optional<std::string> parseError(StringRef json) {
  return errorOf(parseTargetDescription(json, "test.json"));
}

/// Writes `contents` to a new temporary file and returns its path.
std::string writeTempFile(StringRef prefix, StringRef contents) {
  int fd = -1;
  SmallString<128> path;
  std::error_code ec = sys::fs::createTemporaryFile(prefix, "json", fd, path);
  if (ec) {
    ADD_FAILURE() << "cannot create temporary file: " << ec.message();
    return "";
  }
  raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << contents;
  return std::string(path);
}

//===----------------------------------------------------------------------===//
// Shipped targets
//===----------------------------------------------------------------------===//

TEST(ShippedTargets, EveryFileLoadsAndValidates) {
  std::error_code ec;
  int count = 0;
  for (sys::fs::directory_iterator it(sourceDir(), ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string path = it->path();
    if (sys::path::extension(path) != ".json")
      continue;
    SCOPED_TRACE(path);
    ++count;
    Expected<TargetDescription> target = loadTargetDescription(path, {});
    ASSERT_TRUE(static_cast<bool>(target)) << toString(target.takeError());
    EXPECT_EQ(target->name, sys::path::stem(path).str());
    EXPECT_EQ(target->path, path);
    EXPECT_FALSE(target->description.empty());
    EXPECT_GE(target->numDevices(), 1);
    EXPECT_GT(target->peakFlops("f32"), 0);
    EXPECT_GT(target->memoryBandwidth(), 0);
    EXPECT_GT(target->memoryCapacity(), 0);
    EXPECT_GT(target->intraNode.bandwidth(), 0);
    EXPECT_GT(target->interNode.bandwidth(), 0);
    EXPECT_GT(target->host.bandwidth(), 0);
  }
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_GE(count, static_cast<int>(std::size(kShippedTargets)));
}

TEST(ShippedTargets, ListedOnceEachAndSorted) {
  std::string dir = sourceDir();
  // The same directory twice must not duplicate names.
  std::vector<std::string> names = listTargets({dir, dir, "/nonexistent"});
  EXPECT_TRUE(llvm::is_sorted(names));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const char *name : kShippedTargets)
    EXPECT_TRUE(llvm::is_contained(names, name)) << name;
}

TEST(ShippedTargets, LoadByNameUsesSearchPathInOrder) {
  Expected<TargetDescription> target =
      loadTargetDescription("h100-sxm-8x", {"/nonexistent", sourceDir()});
  ASSERT_TRUE(static_cast<bool>(target)) << toString(target.takeError());
  SmallString<256> expected(sourceDir());
  sys::path::append(expected, "h100-sxm-8x.json");
  EXPECT_EQ(target->path, std::string(expected));
}

TEST(ShippedTargets, H100Numbers) {
  Expected<TargetDescription> target =
      loadTargetDescription("h100-sxm-8x", {sourceDir()});
  ASSERT_TRUE(static_cast<bool>(target)) << toString(target.takeError());
  EXPECT_EQ(target->nodes, 1);
  EXPECT_EQ(target->devicesPerNode, 8);
  EXPECT_EQ(target->numDevices(), 8);
  EXPECT_EQ(target->device.kind, "gpu");
  EXPECT_EQ(target->device.name, "NVIDIA H100 SXM5 80GB");
  EXPECT_DOUBLE_EQ(target->peakFlops("bf16"), 989.4e12);
  EXPECT_DOUBLE_EQ(target->peakFlops("f16"), 989.4e12);
  EXPECT_DOUBLE_EQ(target->peakFlops("tf32"), 494.7e12);
  EXPECT_DOUBLE_EQ(target->peakFlops("f32"), 67e12);
  EXPECT_DOUBLE_EQ(target->memoryBandwidth(), 3350e9);
  EXPECT_DOUBLE_EQ(target->memoryCapacity(), 80.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(target->intraNode.bandwidthGBps, 450);
  EXPECT_DOUBLE_EQ(target->intraNode.latencyUs, 2.0);
  EXPECT_DOUBLE_EQ(target->interNode.bandwidthGBps, 50);
  EXPECT_DOUBLE_EQ(target->host.bandwidthGBps, 64);

  std::string summary;
  raw_string_ostream os(summary);
  target->print(os);
  EXPECT_NE(summary.find("h100-sxm-8x: 1 node(s) x 8 gpu(s)"),
            std::string::npos)
      << summary;
}

TEST(ShippedTargets, MultiNodeDeviceCounts) {
  Expected<TargetDescription> h100 =
      loadTargetDescription("h100-sxm-8x-4node", {sourceDir()});
  ASSERT_TRUE(static_cast<bool>(h100)) << toString(h100.takeError());
  EXPECT_EQ(h100->numDevices(), 32);
  Expected<TargetDescription> v100 =
      loadTargetDescription("v100-pcie-4x-4node", {sourceDir()});
  ASSERT_TRUE(static_cast<bool>(v100)) << toString(v100.takeError());
  EXPECT_EQ(v100->numDevices(), 16);
  EXPECT_DOUBLE_EQ(v100->interNode.bandwidthGBps, 1.25);
}

// The analytic CUDA GEMM model (strata-tune) reads the SM count from here.
TEST(ShippedTargets, GpusGiveStreamingMultiprocessors) {
  for (const char *name : kShippedTargets) {
    SCOPED_TRACE(name);
    Expected<TargetDescription> target =
        loadTargetDescription(name, {sourceDir()});
    ASSERT_TRUE(static_cast<bool>(target)) << toString(target.takeError());
    if (target->device.kind == "gpu")
      EXPECT_GT(target->device.streamingMultiprocessors, 0);
    else
      EXPECT_EQ(target->device.streamingMultiprocessors, 0);
  }
  Expected<TargetDescription> h100 =
      loadTargetDescription("h100-sxm-8x", {sourceDir()});
  ASSERT_TRUE(static_cast<bool>(h100)) << toString(h100.takeError());
  EXPECT_EQ(h100->device.streamingMultiprocessors, 132);
  std::string summary;
  raw_string_ostream os(summary);
  h100->print(os);
  EXPECT_NE(summary.find("[NVIDIA H100 SXM5 80GB, 132 SMs]"), std::string::npos)
      << summary;
  Expected<TargetDescription> a100 =
      loadTargetDescription("a100-sxm-8x", {sourceDir()});
  ASSERT_TRUE(static_cast<bool>(a100)) << toString(a100.takeError());
  EXPECT_EQ(a100->device.streamingMultiprocessors, 108);
  Expected<TargetDescription> v100 =
      loadTargetDescription("v100-pcie-4x", {sourceDir()});
  ASSERT_TRUE(static_cast<bool>(v100)) << toString(v100.takeError());
  EXPECT_EQ(v100->device.streamingMultiprocessors, 80);
}

TEST(ShippedTargets, PeakFlopsFallsBackToF32) {
  Expected<TargetDescription> v100 =
      loadTargetDescription("v100-pcie-4x", {sourceDir()});
  ASSERT_TRUE(static_cast<bool>(v100)) << toString(v100.takeError());
  // V100 has no bf16 units; the description omits it.
  EXPECT_DOUBLE_EQ(v100->peakFlops("bf16"), 14e12);
  EXPECT_DOUBLE_EQ(v100->peakFlops("f8E4M3FN"), 14e12);
  EXPECT_DOUBLE_EQ(v100->peakFlops("f16"), 112e12);
}

//===----------------------------------------------------------------------===//
// Derived quantities
//===----------------------------------------------------------------------===//

TEST(LinkDescription, TransferSeconds) {
  LinkDescription link;
  link.bandwidthGBps = 10;
  link.latencyUs = 5;
  EXPECT_DOUBLE_EQ(link.transferSeconds(1e9), 5e-6 + 0.1);
  EXPECT_DOUBLE_EQ(link.transferSeconds(0), 5e-6);
  EXPECT_DOUBLE_EQ(link.transferSeconds(2e9) - link.transferSeconds(1e9), 0.1);
}

TEST(TargetDescription, ParsedFromStringHasNoPath) {
  Expected<TargetDescription> target =
      parseTargetDescription(kValidTarget, "<string>");
  ASSERT_TRUE(static_cast<bool>(target)) << toString(target.takeError());
  EXPECT_EQ(target->path, "");
  EXPECT_EQ(target->numDevices(), 8);
  EXPECT_DOUBLE_EQ(target->host.latencyUs, 0);
  EXPECT_DOUBLE_EQ(target->peakFlops("f64"), 10e12);
}

TEST(TargetDescription, DefaultSearchPathStartsWithEnvironment) {
  const char *old = std::getenv("STRATA_TARGET_PATH");
  std::optional<std::string> saved;
  if (old)
    saved = old;
  ::setenv("STRATA_TARGET_PATH", "/first::/second", /*overwrite=*/1);
  std::vector<std::string> dirs = getDefaultTargetSearchPath();
  if (saved)
    ::setenv("STRATA_TARGET_PATH", saved->c_str(), 1);
  else
    ::unsetenv("STRATA_TARGET_PATH");

  ASSERT_GE(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], "/first");
  EXPECT_EQ(dirs[1], "/second");
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(TargetErrors, BaseDescriptionIsValid) {
  EXPECT_EQ(parseError(kValidTarget), std::nullopt);
  // Latency may be zero; round-tripping through json::Value keeps it valid.
  EXPECT_EQ(parseError(mutated([](json::Object &) {})), std::nullopt);
}

TEST(TargetErrors, InvalidJSON) {
  std::optional<std::string> err = parseError("{\"name\": ");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->rfind("test.json: invalid JSON: ", 0), 0u) << *err;
}

TEST(TargetErrors, TopLevelMustBeObject) {
  std::optional<std::string> err = parseError("[1, 2]");
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: expected a JSON object at the top level");
}

TEST(TargetErrors, MissingField) {
  std::optional<std::string> err = parseError(mutated(
      [](json::Object &o) { sub(o, "device").erase("memory_capacity_gib"); }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err,
            "test.json: missing required field 'device.memory_capacity_gib'");

  err = parseError(mutated([](json::Object &o) { o.erase("host_link"); }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: missing required field 'host_link'");
}

TEST(TargetErrors, MissingF32Peak) {
  std::optional<std::string> err = parseError(mutated([](json::Object &o) {
    sub(sub(o, "device"), "peak_tflops").erase("f32");
  }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: missing required field 'device.peak_tflops.f32'");
}

TEST(TargetErrors, WrongType) {
  std::optional<std::string> err =
      parseError(mutated([](json::Object &o) { o["name"] = 5; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'name': expected a non-empty string");

  err = parseError(mutated([](json::Object &o) { o["device"] = "gpu"; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'device': expected an object");

  err = parseError(mutated([](json::Object &o) {
    sub(o, "intra_node_link")["bandwidth_gb_per_s"] = "fast";
  }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'intra_node_link.bandwidth_gb_per_s': "
                  "expected a positive number");
}

TEST(TargetErrors, NegativeNumber) {
  std::optional<std::string> err = parseError(mutated([](json::Object &o) {
    sub(o, "device")["memory_bandwidth_gb_per_s"] = -1;
  }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'device.memory_bandwidth_gb_per_s': "
                  "expected a positive number");

  err = parseError(mutated([](json::Object &o) {
    sub(sub(o, "device"), "peak_tflops")["bf16"] = 0;
  }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'device.peak_tflops.bf16': "
                  "expected a positive number");

  err = parseError(
      mutated([](json::Object &o) { sub(o, "host_link")["latency_us"] = -2; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'host_link.latency_us': "
                  "expected a non-negative number");
}

TEST(TargetErrors, NonIntegerCounts) {
  std::optional<std::string> err =
      parseError(mutated([](json::Object &o) { o["nodes"] = 1.5; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'nodes': expected an integer >= 1");

  err = parseError(mutated([](json::Object &o) { o["devices_per_node"] = 0; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err,
            "test.json: field 'devices_per_node': expected an integer >= 1");
}

TEST(TargetDescription, StreamingMultiprocessorsAreOptional) {
  Expected<TargetDescription> target =
      parseTargetDescription(kValidTarget, "<string>");
  ASSERT_TRUE(static_cast<bool>(target)) << toString(target.takeError());
  EXPECT_EQ(target->device.streamingMultiprocessors, 0);

  target =
      parseTargetDescription(mutated([](json::Object &o) {
                               sub(o, "device")["streaming_multiprocessors"] =
                                   132;
                             }),
                             "<string>");
  ASSERT_TRUE(static_cast<bool>(target)) << toString(target.takeError());
  EXPECT_EQ(target->device.streamingMultiprocessors, 132);
}

TEST(TargetErrors, BadStreamingMultiprocessors) {
  const std::string expected =
      "test.json: field 'device.streaming_multiprocessors': expected an "
      "integer from 1 to 1024";
  for (json::Value bad : {json::Value(0), json::Value(-8), json::Value(1.5),
                          json::Value(1025), json::Value("132")}) {
    std::optional<std::string> err = parseError(mutated([&](json::Object &o) {
      sub(o, "device")["streaming_multiprocessors"] = bad;
    }));
    ASSERT_TRUE(err);
    EXPECT_EQ(*err, expected);
  }

  std::optional<std::string> err = parseError(mutated([](json::Object &o) {
    json::Object &device = sub(o, "device");
    device["kind"] = "cpu";
    device["streaming_multiprocessors"] = 2;
  }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: field 'device.streaming_multiprocessors': only "
                  "a gpu device has streaming multiprocessors");
}

TEST(TargetErrors, BadStreamingMultiprocessorsNameTheFile) {
  std::string path =
      writeTempFile("strata-target", mutated([](json::Object &o) {
                      sub(o, "device")["streaming_multiprocessors"] = 0;
                    }));
  ASSERT_FALSE(path.empty());
  std::optional<std::string> err = errorOf(loadTargetDescription(path, {}));
  sys::fs::remove(path);
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, path + ": field 'device.streaming_multiprocessors': "
                         "expected an integer from 1 to 1024");
}

TEST(TargetErrors, UnknownDeviceKind) {
  std::optional<std::string> err = parseError(
      mutated([](json::Object &o) { sub(o, "device")["kind"] = "tpu"; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err,
            "test.json: field 'device.kind': expected \"gpu\" or \"cpu\"");
}

TEST(TargetErrors, UnknownField) {
  std::optional<std::string> err =
      parseError(mutated([](json::Object &o) { o["node"] = 1; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: unknown field 'node'");

  err = parseError(mutated([](json::Object &o) {
    json::Object &device = sub(o, "device");
    device["peak_tflop"] = json::Object{{"f32", 1}};
  }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: unknown field 'device.peak_tflop'");

  err = parseError(mutated([](json::Object &o) {
    sub(sub(o, "device"), "peak_tflops")["fp16"] = 20;
  }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: unknown field 'device.peak_tflops.fp16'");

  err = parseError(mutated(
      [](json::Object &o) { sub(o, "inter_node_link")["latency_ms"] = 1; }));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "test.json: unknown field 'inter_node_link.latency_ms'");
}

TEST(TargetErrors, NameMustMatchFileStem) {
  std::string path = writeTempFile("strata-target", kValidTarget);
  ASSERT_FALSE(path.empty());
  std::optional<std::string> err = errorOf(loadTargetDescription(path, {}));
  sys::fs::remove(path);
  ASSERT_TRUE(err);
  std::string stem = sys::path::stem(path).str();
  EXPECT_EQ(*err, path +
                      ": field 'name': 'test-target' does not match the "
                      "file name '" +
                      stem + "'");
}

TEST(TargetErrors, FileErrorsNameTheFile) {
  std::string path = writeTempFile("strata-target", "{ not json");
  ASSERT_FALSE(path.empty());
  std::optional<std::string> err = errorOf(loadTargetDescription(path, {}));
  sys::fs::remove(path);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->rfind(path + ": invalid JSON: ", 0), 0u) << *err;

  err = errorOf(loadTargetDescription("/nonexistent/dir/foo.json", {}));
  ASSERT_TRUE(err);
  EXPECT_EQ(err->rfind("/nonexistent/dir/foo.json: cannot read file: ", 0), 0u)
      << *err;
}

TEST(TargetErrors, UnknownTargetListsKnownTargets) {
  std::string dir = sourceDir();
  std::optional<std::string> err =
      errorOf(loadTargetDescription("h100", {"/nonexistent", dir}));
  ASSERT_TRUE(err);
  std::string known = llvm::join(listTargets({dir}), ", ");
  EXPECT_EQ(*err, "unknown target 'h100' (searched: /nonexistent, " + dir +
                      "; known targets: " + known + ")");
  EXPECT_NE(err->find("h100-sxm-8x"), std::string::npos);

  err = errorOf(loadTargetDescription("h100", {}));
  ASSERT_TRUE(err);
  EXPECT_EQ(*err, "unknown target 'h100' (searched: none; known targets: "
                  "none)");
}

} // namespace
