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
