//===- Comm.cpp - Link emulation parsing and the local communicator ------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The engine-independent half of Comm.h: `LinkEmulation::parse`, the virtual
// destructors, `launchedByMpi` and the single-rank `local` communicator. The
// MPI engine (and `haveMpi`) lives in Mpi.cpp.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Comm.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

namespace strata::rt {

Request::~Request() = default;
Communicator::~Communicator() = default;

Status Communicator::createGroup(const std::vector<int> &,
                                 std::unique_ptr<Communicator> &group) {
  group.reset();
  return Status::failure(std::string("the '") + engine() +
                         "' communicator cannot create groups");
}

namespace {
class FailedRequest final : public Request {
public:
  explicit FailedRequest(Status status) : status_(std::move(status)) {}
  Status wait() override { return status_; }
  bool test() override { return true; }

private:
  Status status_;
};
} // namespace

std::unique_ptr<Request> Communicator::startAllReduceInto(const float *input,
                                                          float *output,
                                                          int64_t count,
                                                          ReduceOp op) {
  if (count > 0 && input && output && input != output) {
    if (input < output + count && output < input + count)
      return std::make_unique<FailedRequest>(
          Status::failure("all-reduce: input and output overlap"));
    std::memcpy(output, input, static_cast<size_t>(count) * sizeof(float));
  }
  return startAllReduce(output, count, op);
}

std::unique_ptr<Request> Communicator::startReduce(float *, int64_t, ReduceOp,
                                                   int) {
  return std::make_unique<FailedRequest>(
      Status::failure(std::string("the '") + engine() +
                      "' communicator cannot reduce to a root"));
}

/// Checks a group's rank list against a communicator of `size` ranks.
static Status checkGroupRanks(const std::vector<int> &ranks, int size) {
  if (ranks.empty())
    return Status::failure("a group needs at least one rank");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size)
      return Status::failure("rank " + std::to_string(ranks[i]) +
                             " is not a rank of a " + std::to_string(size) +
                             "-rank communicator");
    if (i > 0 && ranks[i] <= ranks[i - 1])
      return Status::failure("group ranks must be distinct and ascending");
  }
  return Status::success();
}

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

bool parseNonNegative(const std::string &text, double &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() &&
         std::isfinite(value) && value >= 0;
}

} // namespace

Status LinkEmulation::parse(const std::string &text, LinkEmulation &link) {
  LinkEmulation result;
  std::string rest = text;
  while (!trim(rest).empty()) {
    size_t comma = rest.find(',');
    std::string item =
        trim(comma == std::string::npos ? rest : rest.substr(0, comma));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    if (item.empty())
      continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Status::usage("link emulation '" + text +
                           "': expected key=value, "
                           "got '" +
                           item + "'");
    std::string key = trim(item.substr(0, eq));
    std::string value = trim(item.substr(eq + 1));
    double number = 0;
    if (!parseNonNegative(value, number))
      return Status::usage("link emulation '" + text + "': '" + key +
                           "' needs a non-negative number, got '" + value +
                           "'");
    if (key == "bandwidth")
      result.bandwidthGBps = number;
    else if (key == "latency")
      result.latencyUs = number;
    else
      return Status::usage("link emulation '" + text + "': unknown key '" +
                           key + "' (expected bandwidth=GB/s,latency=us)");
  }
  link = result;
  return Status::success();
}

bool launchedByMpi() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    const char *value = std::getenv(name);
    if (value && *value)
      return true;
  }
  return false;
}

namespace {

/// A request that completed when it was created.
class DoneRequest final : public Request {
public:
  explicit DoneRequest(Status status) : status_(std::move(status)) {}
  Status wait() override { return status_; }
  bool test() override { return true; }

private:
  Status status_;
};

std::unique_ptr<Request> done(Status status = Status::success()) {
  return std::make_unique<DoneRequest>(std::move(status));
}

/// One rank: collectives are identities; a send to itself is buffered and a
/// later receive with the same tag takes it (a receive with nothing buffered
/// would wait forever and fails instead).
class LocalCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char *engine() const override { return "local"; }

  std::unique_ptr<Request> startAllReduce(float *data, int64_t count,
                                          ReduceOp) override {
    if (count < 0 || (count > 0 && !data))
      return done(Status::failure("local all-reduce: bad buffer"));
    return done();
  }
  std::unique_ptr<Request> startBroadcast(float *data, int64_t count,
                                          int root) override {
    if (root != 0)
      return done(Status::failure("local broadcast: root " +
                                  std::to_string(root) +
                                  " is not a rank of a 1-rank communicator"));
    if (count < 0 || (count > 0 && !data))
      return done(Status::failure("local broadcast: bad buffer"));
    return done();
  }
  std::unique_ptr<Request> startSend(const float *data, int64_t count, int peer,
                                     int tag) override {
    if (peer != 0)
      return done(Status::failure("local send: peer " + std::to_string(peer) +
                                  " is not a rank of a 1-rank communicator"));
    if (count < 0 || (count > 0 && !data))
      return done(Status::failure("local send: bad buffer"));
    mailbox_[tag].emplace_back(data, data + count);
    return done();
  }
  std::unique_ptr<Request> startRecv(float *data, int64_t count, int peer,
                                     int tag) override {
    if (peer != 0 && peer != kAnySource)
      return done(Status::failure("local recv: peer " + std::to_string(peer) +
                                  " is not a rank of a 1-rank communicator"));
    auto it = mailbox_.find(tag);
    if (it == mailbox_.end() || it->second.empty())
      return done(
          Status::failure("rank 0: local recv with tag " + std::to_string(tag) +
                          " has no matching send and would wait forever"));
    std::vector<float> message = std::move(it->second.front());
    it->second.pop_front();
    if (static_cast<int64_t>(message.size()) != count)
      return done(Status::failure("local recv: expected " +
                                  std::to_string(count) + " floats, got " +
                                  std::to_string(message.size())));
    if (count)
      std::memcpy(data, message.data(), count * sizeof(float));
    return done();
  }
  std::unique_ptr<Request> startReduceScatter(const float *input, float *output,
                                              int64_t count,
                                              ReduceOp) override {
    if (count < 0 || (count > 0 && (!input || !output)))
      return done(Status::failure("local reduce-scatter: bad buffer"));
    if (count && input != output)
      std::memmove(output, input, count * sizeof(float));
    return done();
  }
  std::unique_ptr<Request> startAllGather(const float *input, float *output,
                                          int64_t count) override {
    if (count < 0 || (count > 0 && (!input || !output)))
      return done(Status::failure("local all-gather: bad buffer"));
    if (count && input != output)
      std::memmove(output, input, count * sizeof(float));
    return done();
  }
  std::unique_ptr<Request> startReduce(float *data, int64_t count, ReduceOp,
                                       int root) override {
    if (count < 0 || (count > 0 && !data) || root != 0)
      return done(Status::failure("local reduce: bad buffer or root"));
    return done();
  }
  Status barrier() override { return Status::success(); }

  Status createGroup(const std::vector<int> &ranks,
                     std::unique_ptr<Communicator> &group) override {
    group.reset();
    if (Status status = checkGroupRanks(ranks, 1); !status.ok())
      return status;
    group = createLocalCommunicator();
    return Status::success();
  }

private:
  std::map<int, std::deque<std::vector<float>>> mailbox_;
};

} // namespace

std::unique_ptr<Communicator> createLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

} // namespace strata::rt
