//===- Support.cpp - Status and file helpers of the runtime ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Support.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strata::rt {

static std::string errnoMessage() { return std::strerror(errno); }

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Status readFile(const std::string &path, std::string &contents) {
  return readFile(path, contents, UINT64_MAX);
}

Status readFile(const std::string &path, std::string &contents,
                uint64_t maxBytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::failure(path + ": cannot open: " + errnoMessage());
  struct stat st;
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    std::string why = S_ISDIR(st.st_mode) ? "is a directory" : errnoMessage();
    ::close(fd);
    return Status::failure(path + ": cannot read: " + why);
  }
  contents.clear();
  std::vector<char> chunk(1 << 16);
  while (true) {
    ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string why = errnoMessage();
      ::close(fd);
      return Status::failure(path + ": cannot read: " + why);
    }
    if (n == 0)
      break;
    if (static_cast<uint64_t>(n) > maxBytes - contents.size()) {
      ::close(fd);
      contents.clear();
      return Status::failure(path + ": cannot read: larger than the limit of " +
                             std::to_string(maxBytes) + " bytes");
    }
    contents.append(chunk.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return Status::success();
}

static std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

static bool writeAll(int fd, const std::string &contents) {
  const char *p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

namespace {
/// Blocks SIGXFSZ in the calling thread while it lives, so that a write past
/// the file size limit fails with EFBIG instead of killing the process; a
/// SIGXFSZ raised meanwhile is discarded before the mask is restored.
class BlockFileSizeSignal {
public:
  BlockFileSizeSignal() {
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    blocked = ::pthread_sigmask(SIG_BLOCK, &xfsz, &previous) == 0;
  }
  ~BlockFileSizeSignal() {
    if (!blocked)
      return;
    int savedErrno = errno;
    if (!sigismember(&previous, SIGXFSZ)) {
      struct timespec zero = {0, 0};
      while (::sigtimedwait(&xfsz, nullptr, &zero) == SIGXFSZ) {
      }
      ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    }
    errno = savedErrno;
  }
  BlockFileSizeSignal(const BlockFileSizeSignal &) = delete;
  BlockFileSizeSignal &operator=(const BlockFileSizeSignal &) = delete;

private:
  sigset_t xfsz;
  sigset_t previous;
  bool blocked = false;
};
} // namespace

Status writeFileAtomically(const std::string &path,
                           const std::string &contents) {
  BlockFileSizeSignal noSigxfsz;
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0)
    return Status::failure(
        path + ": cannot create a temporary file: " + errnoMessage());
  std::string tmp(name.data());
  auto fail = [&](const char *what) {
    std::string why = errnoMessage();
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::failure(path + ": cannot " + what + ": " + why);
  };
  // mkstemp creates the file 0600; give it the usual permissions.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0)
    return fail("set permissions");
  if (!writeAll(fd, contents))
    return fail("write");
  if (::fsync(fd) != 0)
    return fail("sync");
  if (::close(fd) != 0) {
    std::string why = errnoMessage();
    ::unlink(tmp.c_str());
    return Status::failure(path + ": cannot close: " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errnoMessage();
    ::unlink(tmp.c_str());
    return Status::failure(path + ": cannot rename the temporary file: " + why);
  }
  // Make the rename itself durable; failing to is not an error.
  int dir = ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::success();
}

} // namespace strata::rt
