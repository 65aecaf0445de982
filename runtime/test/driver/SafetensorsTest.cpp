//===- SafetensorsTest.cpp - Tests of safetensors I/O ---------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "strata-rt/Safetensors.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <random>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

using namespace strata::rt;
using namespace strata::rt::test;

namespace {

/// A small file image: an f32 [2, 3], an i32 [4] and an empty f32 [0].
struct Sample {
  std::vector<float> weights = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
  std::vector<int32_t> ids = {7, -1, 0, 2147483647};
  std::vector<NamedTensor> tensors() {
    return {{"layer.weight", Tensor{weights.data(), {DType::F32, {2, 3}}}},
            {"ids", Tensor{ids.data(), {DType::I32, {4}}}},
            {"empty", Tensor{nullptr, {DType::F32, {0}}}}};
  }
  std::map<std::string, std::string> metadata = {{"step", "5"}, {"note", "hi"}};
  std::string image() {
    std::string bytes;
    EXPECT_TRUE(serializeSafetensors(tensors(), metadata, bytes).ok());
    return bytes;
  }
};

/// A file image with the given header and data bytes.
std::string image(const std::string &header, const std::string &data) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  std::memcpy(&bytes[0], &n, 8);
  return bytes + header + data;
}

void expectInvalid(const std::string &bytes, const std::string &substring) {
  SafetensorsFile file;
  Status status = parseSafetensors(bytes, "ck.safetensors", file);
  ASSERT_FALSE(status.ok()) << "expected: " << substring;
  EXPECT_EQ(status.code(), Status::Code::Invalid);
  EXPECT_NE(status.message().find("ck.safetensors: " + substring),
            std::string::npos)
      << status.message();
}

} // namespace

TEST(Safetensors, RoundTrip) {
  TempDir dir;
  Sample sample;
  std::string path = dir.path("t.safetensors");
  ASSERT_TRUE(writeSafetensors(path, sample.tensors(), sample.metadata).ok());
  SafetensorsFile file;
  Status status = readSafetensors(path, file);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(file.metadata, sample.metadata);
  ASSERT_EQ(file.tensors.size(), 3u);
  const StoredTensor *w = file.find("layer.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->desc.dtype, DType::F32);
  EXPECT_EQ(w->desc.shape, (Shape{2, 3}));
  ASSERT_EQ(w->bytes.size(), 24u);
  EXPECT_EQ(std::memcmp(w->bytes.data(), sample.weights.data(), 24), 0);
  const StoredTensor *ids = file.find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->desc.dtype, DType::I32);
  EXPECT_EQ(std::memcmp(ids->bytes.data(), sample.ids.data(), 16), 0);
  EXPECT_EQ(file.find("empty")->bytes.size(), 0u);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"t.safetensors"});
}

TEST(Safetensors, LayoutFollowsTheFormat) {
  Sample sample;
  std::string bytes = sample.image();
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes.data(), 8);
  // The data starts 8-byte aligned and holds the tensors in order.
  EXPECT_EQ(headerBytes % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + headerBytes + 24 + 16);
  auto header = nlohmann::json::parse(bytes.substr(8, headerBytes));
  EXPECT_EQ(header["layer.weight"]["dtype"], "F32");
  EXPECT_EQ(header["layer.weight"]["data_offsets"],
            nlohmann::json::array({0, 24}));
  EXPECT_EQ(header["ids"]["dtype"], "I32");
  EXPECT_EQ(header["ids"]["data_offsets"], nlohmann::json::array({24, 40}));
  EXPECT_EQ(header["__metadata__"]["step"], "5");
}

TEST(Safetensors, ReadsHandWrittenFile) {
  // As another writer would lay it out: unpadded header, reversed order.
  float values[2] = {0.25f, -4.0f};
  int32_t index = 3;
  std::string data(reinterpret_cast<const char *>(&index), 4);
  data += std::string(reinterpret_cast<const char *>(values), 8);
  std::string bytes =
      image(R"({"b":{"dtype":"F32","shape":[1,2],"data_offsets":[4,12]},)"
            R"("a":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
            data);
  SafetensorsFile file;
  Status status = parseSafetensors(bytes, "x", file);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].name, "a");
  EXPECT_TRUE(file.tensors[0].desc.shape.empty());
  EXPECT_EQ(file.tensors[0].view().i32()[0], 3);
  EXPECT_EQ(file.tensors[1].view().f32()[1], -4.0f);
  EXPECT_TRUE(file.metadata.empty());
}

TEST(Safetensors, RejectsCorruptFiles) {
  expectInvalid("abc", "truncated safetensors file (3 bytes)");
  expectInvalid(image("{}", "").substr(0, 9), "header length 2 exceeds");
  expectInvalid(image("{\"a\":", ""), "the header is not a JSON object");
  expectInvalid(
      image(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", "xx"),
      "tensor \"a\": unsupported dtype \"F16\"");
  expectInvalid(
      image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
            "1234"),
      "tensor \"a\": data_offsets [0, 8] lie outside the 4 data bytes");
  expectInvalid(
      image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
            "1234"),
      "tensor \"a\": data_offsets cover 4 bytes but the shape needs 8");
  expectInvalid(
      image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
            "1234"),
      "tensor \"a\": shape must hold non-negative integers");
  expectInvalid(
      image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
            "12345678"),
      "tensors \"a\" and \"b\" overlap");
  expectInvalid(image(R"({"__metadata__":{"step":5}})", ""),
                "__metadata__.step must be a string");
}

TEST(Safetensors, TruncationsAndFlipsNeverCrash) {
  Sample sample;
  std::string bytes = sample.image();
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    SafetensorsFile file;
    Status status = parseSafetensors(bytes.substr(0, cut), "x", file);
    EXPECT_EQ(status.code(), Status::Code::Invalid) << "cut at " << cut;
  }
  std::mt19937 rng(99);
  for (int round = 0; round < 3000; ++round) {
    std::string mutated = bytes;
    for (int f = 0; f <= round % 3; ++f)
      mutated[rng() % mutated.size()] = static_cast<char>(rng() & 0xff);
    SafetensorsFile file;
    Status status = parseSafetensors(mutated, "x", file);
    if (!status.ok())
      EXPECT_EQ(status.code(), Status::Code::Invalid);
  }
}

TEST(Safetensors, MissingFileIsAFailure) {
  SafetensorsFile file;
  Status status = readSafetensors("/nonexistent/x.safetensors", file);
  EXPECT_EQ(status.code(), Status::Code::Failure);
}

TEST(AtomicWrite, ReplacesAndLeavesNoTemporary) {
  TempDir dir;
  std::string path = dir.path("out.txt");
  ASSERT_TRUE(writeFileAtomically(path, "old").ok());
  ASSERT_TRUE(writeFileAtomically(path, "new contents").ok());
  EXPECT_EQ(readText(path), "new contents");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out.txt"});
}

TEST(AtomicWrite, FailureKeepsTheOldFile) {
  TempDir dir;
  std::string path = dir.path("out.safetensors");
  ASSERT_TRUE(writeFileAtomically(path, "old").ok());
  // Make the write fail half way: files may not grow past 1 KiB (this works
  // even for root, unlike permissions).
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Status status = writeFileAtomically(path, std::string(1 << 20, 'x'));
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_EQ(status.code(), Status::Code::Failure);
  EXPECT_NE(status.message().find(path + ": cannot write"), std::string::npos)
      << status.message();
  EXPECT_EQ(readText(path), "old");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out.safetensors"});
}

TEST(AtomicWrite, FileSizeLimitIsAnErrorNotASignal) {
  // As above with SIGXFSZ at its default disposition (terminate): the write
  // blocks the signal, fails with EFBIG and discards the pending signal, so
  // this process lives on and no temporary file is left.
  TempDir dir;
  std::string path = dir.path("big.safetensors");
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto oldHandler = std::signal(SIGXFSZ, SIG_DFL);
  rlimit small = saved;
  small.rlim_cur = 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Status status = writeFileAtomically(path, std::string(1 << 20, 'x'));
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_EQ(status.code(), Status::Code::Failure);
  EXPECT_NE(status.message().find(path + ": cannot write: File too large"),
            std::string::npos)
      << status.message();
  EXPECT_TRUE(dir.list().empty());
  // The signal mask is as it was.
  sigset_t mask;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &mask), 0);
  EXPECT_FALSE(sigismember(&mask, SIGXFSZ));
}

TEST(ReadFile, LimitIsAFailure) {
  TempDir dir;
  std::string path = dir.path("data.txt");
  ASSERT_TRUE(writeFileAtomically(path, std::string(100, 'x')).ok());
  std::string text;
  EXPECT_TRUE(readFile(path, text, 100).ok());
  EXPECT_EQ(text.size(), 100u);
  Status status = readFile(path, text, 99);
  EXPECT_EQ(status.code(), Status::Code::Failure);
  EXPECT_NE(status.message().find("larger than the limit of 99 bytes"),
            std::string::npos)
      << status.message();
  EXPECT_TRUE(text.empty());
  // A device that never ends stops at the limit.
  status = readFile("/dev/zero", text, 1 << 20);
  EXPECT_EQ(status.code(), Status::Code::Failure);
}

TEST(AtomicWrite, MissingDirectoryIsAFailure) {
  Status status = writeFileAtomically("/nonexistent/dir/x", "data");
  EXPECT_EQ(status.code(), Status::Code::Failure);
  EXPECT_NE(status.message().find("cannot create a temporary file"),
            std::string::npos);
}
