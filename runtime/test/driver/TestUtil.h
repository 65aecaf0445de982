//===- TestUtil.h - Helpers of the runtime driver tests ----------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_TEST_DRIVER_TESTUTIL_H
#define STRATA_RT_TEST_DRIVER_TESTUTIL_H

#include "strata-rt/Kernels.h"
#include "strata-rt/Support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace strata::rt::test {

/// The directory of the test plans (runtime/test/driver/Inputs).
inline std::string inputPath(const std::string &name) {
  return std::string(STRATA_DRIVER_INPUTS) + "/" + name;
}

inline std::string readText(const std::string &path) {
  std::string text;
  Status status = readFile(path, text);
  return status.ok() ? text : std::string();
}

inline void writeText(const std::string &path, const std::string &text) {
  (void)writeFileAtomically(path, text);
}

/// A fresh directory, removed with its contents when this goes away.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") +
                       "/strata-driver-test.XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    if (::mkdtemp(name.data()))
      dir = name.data();
  }
  ~TempDir() {
    if (!dir.empty())
      std::system(("rm -rf '" + dir + "'").c_str());
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }
  /// Names of the entries in the directory, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    DIR *d = ::opendir(dir.c_str());
    if (!d)
      return names;
    while (dirent *entry = ::readdir(d)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  const std::string &root() const { return dir; }

private:
  std::string dir;
};

/// Why a plan cannot run here ("" when it can): an op with no kernel yet.
inline std::string missingKernels(const std::string &planPath) {
  auto plan = nlohmann::json::parse(readText(planPath), nullptr, false);
  if (plan.is_discarded())
    return "cannot parse " + planPath;
  std::string missing;
  for (const auto &inst : plan["ranks"][0]["program"]) {
    std::string op = inst["op"].get<std::string>();
    if (!lookupKernel(op) && missing.find(" " + op) == std::string::npos)
      missing += " " + op;
  }
  return missing.empty() ? "" : "no kernel yet for:" + missing;
}

/// Skips the test when a kernel of the plan does not exist yet.
#define STRATA_SKIP_WITHOUT_KERNELS(planPath)                                  \
  do {                                                                         \
    std::string why = ::strata::rt::test::missingKernels(planPath);            \
    if (!why.empty())                                                          \
      GTEST_SKIP() << why;                                                     \
  } while (0)

/// mlp.json (`mlp`, parsed) with activation swapping: relu0 (the hidden
/// activation, 4096 bytes) goes to host slot 0 right after the relu that
/// writes it and comes back, as the new buffer "relu0.swapped", for the
/// backward matmul that reads it. relu0, fc1.out (written while relu0 is in
/// host memory) and relu0.swapped share the same bytes of the arena, so the
/// step computes what mlp.json does only when the copies are right:
///   relu -> relu0; swap_out relu0; matmul(relu0); swap_out_wait relu0;
///   bias_add -> fc1.out; ...; softmax_cross_entropy_grad(fc1.out);
///   swap_in -> relu0.swapped; bias_add_grad; swap_in_wait relu0.swapped;
///   matmul(relu0.swapped, dlogits) -> fc1.weight.grad; ...
inline nlohmann::json mlpWithSwap(nlohmann::json mlp) {
  using json = nlohmann::json;
  json &buffers = mlp["buffers"];
  auto id = [&](const std::string &name) -> int64_t {
    for (const json &b : buffers)
      if (b["name"] == name)
        return b["id"].get<int64_t>();
    return -1;
  };
  int64_t relu0 = id("relu0"), fc1Out = id("fc1.out");
  int64_t swapped = static_cast<int64_t>(buffers.size());
  json copy = buffers[relu0];
  copy["id"] = swapped;
  copy["name"] = "relu0.swapped";
  buffers.push_back(copy);
  buffers[fc1Out]["offset"] = buffers[relu0]["offset"];
  auto op = [](const std::string &name, std::vector<int64_t> in,
               std::vector<int64_t> out, const std::string &phase) {
    return json{{"op", name}, {"in", in},
                {"out", out}, {"attrs", {{"slot", 0}}},
                {"layer", 0}, {"phase", phase}};
  };
  json program = json::array();
  for (const json &inst : mlp["ranks"][0]["program"]) {
    std::string name = inst["op"];
    bool readsRelu0 = inst["in"].size() > 0 && inst["in"][0] == relu0;
    // The backward matmul that reads relu0 reads it back from the host.
    if (readsRelu0 && inst["phase"] == "backward") {
      json read = inst;
      read["in"][0] = swapped;
      program.push_back(read);
      continue;
    }
    if (name == "bias_add_grad" && inst["layer"] == 1)
      program.push_back(op("swap_in", {}, {swapped}, "backward"));
    program.push_back(inst);
    if (name == "relu")
      program.push_back(op("swap_out", {relu0}, {}, "forward"));
    if (readsRelu0 && inst["phase"] == "forward")
      program.push_back(op("swap_out_wait", {relu0}, {}, "forward"));
    if (name == "bias_add_grad" && inst["layer"] == 1)
      program.push_back(op("swap_in_wait", {swapped}, {}, "backward"));
  }
  mlp["ranks"][0]["program"] = program;
  return mlp;
}

/// Runs `argv` (argv[0] is the program path) with stdout and stderr captured;
/// returns the exit code, or -1 if it did not exit normally.
inline int runProcess(const std::vector<std::string> &argv, std::string &out,
                      std::string &err, const TempDir &scratch) {
  std::string outPath = scratch.path("stdout.txt");
  std::string errPath = scratch.path("stderr.txt");
  // Everything the child needs is prepared before fork: between fork and
  // exec only async-signal-safe calls are allowed.
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  out = readText(outPath);
  err = readText(errPath);
  ::unlink(outPath.c_str());
  ::unlink(errPath.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace strata::rt::test

#endif // STRATA_RT_TEST_DRIVER_TESTUTIL_H
