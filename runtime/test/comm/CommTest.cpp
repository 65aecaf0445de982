//===- CommTest.cpp - Unit tests of the communicators -------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Runs without mpirun (lit): the MPI tests then use a one-rank MPI
// communicator (MPI singleton); under `mpirun -np N` they run on N ranks.
// Built without MPI, they check the stub's error instead.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Comm.h"
#include "LinkOrder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using namespace strata::rt;

namespace {

/// An operation as the progress thread sees it (LinkOrder.h).
struct FakeOp {
  int id;
  bool pointToPoint = false, failed = false, transferred = false,
       linkTaken = false;
};

/// The ids that take the link, in order, when the progress thread polls
/// `ops` (issue order).
std::vector<int> takeLinks(std::vector<FakeOp *> &ops) {
  std::vector<int> taken;
  detail::takeLinksInIssueOrder(ops, [&](FakeOp &op) {
    op.linkTaken = true;
    taken.push_back(op.id);
  });
  return taken;
}

TEST(LinkOrderTest, CollectivesTakeTheLinkInIssueOrder) {
  // Buckets 1 and 2 finished their real transfers before bucket 0: none
  // takes the link until bucket 0 did, then all three in issue order.
  FakeOp b0{0}, b1{1}, b2{2};
  std::vector<FakeOp *> ops{&b0, &b1, &b2};
  b1.transferred = b2.transferred = true;
  EXPECT_EQ(takeLinks(ops), std::vector<int>{});
  b0.transferred = true;
  EXPECT_EQ(takeLinks(ops), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(takeLinks(ops), std::vector<int>{}); // each takes it once
}

TEST(LinkOrderTest, StopsAtTheFirstCollectiveStillTransferring) {
  FakeOp b0{0}, b1{1}, b2{2};
  std::vector<FakeOp *> ops{&b0, &b1, &b2};
  b0.transferred = b2.transferred = true;
  EXPECT_EQ(takeLinks(ops), std::vector<int>{0});
  b1.transferred = true;
  EXPECT_EQ(takeLinks(ops), (std::vector<int>{1, 2}));
}

TEST(LinkOrderTest, SendsReceivesAndFailuresDoNotHoldCollectivesBack) {
  // A receive still in flight and a failed collective before the buckets:
  // the buckets still take the link; neither of those does here.
  FakeOp recv{0}, failed{1}, b0{2};
  recv.pointToPoint = true;
  failed.failed = true;
  b0.transferred = true;
  std::vector<FakeOp *> ops{&recv, &failed, &b0};
  EXPECT_EQ(takeLinks(ops), std::vector<int>{2});
  EXPECT_FALSE(recv.linkTaken);
  EXPECT_FALSE(failed.linkTaken);
}

TEST(LinkEmulationTest, ParsesBothKeys) {
  LinkEmulation link;
  ASSERT_TRUE(LinkEmulation::parse("bandwidth=12.5,latency=100", link).ok());
  EXPECT_DOUBLE_EQ(link.bandwidthGBps, 12.5);
  EXPECT_DOUBLE_EQ(link.latencyUs, 100);
  EXPECT_TRUE(link.enabled());
}

TEST(LinkEmulationTest, KeysAreOptional) {
  LinkEmulation link;
  ASSERT_TRUE(LinkEmulation::parse(" latency = 5 ", link).ok());
  EXPECT_DOUBLE_EQ(link.latencyUs, 5);
  EXPECT_FALSE(link.enabled());
  ASSERT_TRUE(LinkEmulation::parse("", link).ok());
  EXPECT_FALSE(link.enabled());
  EXPECT_DOUBLE_EQ(link.latencyUs, 0);
}

TEST(LinkEmulationTest, RejectsBadText) {
  LinkEmulation link;
  link.bandwidthGBps = 3;
  for (const char *bad : {"bandwidth", "bandwidth=", "bandwidth=-1",
                          "bandwidth=1x", "speed=3", "latency=nan"}) {
    Status s = LinkEmulation::parse(bad, link);
    EXPECT_EQ(s.code(), Status::Code::Usage) << bad;
    EXPECT_FALSE(s.message().empty());
  }
  EXPECT_DOUBLE_EQ(link.bandwidthGBps, 3); // untouched on failure
}

TEST(LocalCommunicatorTest, CollectivesAreIdentities) {
  auto comm = createLocalCommunicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_STREQ(comm->engine(), "local");
  std::vector<float> data = {1, 2, 3};
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
    auto r = comm->startAllReduce(data.data(), 3, op);
    EXPECT_TRUE(r->test());
    EXPECT_TRUE(r->wait().ok());
  }
  EXPECT_EQ(data, (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(comm->startBroadcast(data.data(), 3, 0)->wait().ok());
  EXPECT_FALSE(comm->startBroadcast(data.data(), 3, 1)->wait().ok());
  std::vector<float> out(3);
  EXPECT_TRUE(
      comm->startReduceScatter(data.data(), out.data(), 3, ReduceOp::Mean)
          ->wait()
          .ok());
  EXPECT_EQ(out, data);
  std::vector<float> gathered(3);
  EXPECT_TRUE(
      comm->startAllGather(data.data(), gathered.data(), 3)->wait().ok());
  EXPECT_EQ(gathered, data);
  EXPECT_TRUE(comm->barrier().ok());
}

TEST(LocalCommunicatorTest, SendToSelfThenRecv) {
  auto comm = createLocalCommunicator();
  std::vector<float> a = {4, 5}, b(2);
  EXPECT_TRUE(comm->startSend(a.data(), 2, 0, 7)->wait().ok());
  EXPECT_TRUE(comm->startRecv(b.data(), 2, 0, 7)->wait().ok());
  EXPECT_EQ(a, b);
  // Nothing buffered: fails instead of blocking forever.
  EXPECT_FALSE(comm->startRecv(b.data(), 2, 0, 7)->wait().ok());
  EXPECT_FALSE(comm->startSend(a.data(), 2, 1, 7)->wait().ok());
}

TEST(CommTest, LaunchedByMpiReadsTheLauncherEnvironment) {
  const char *saved = std::getenv("OMPI_COMM_WORLD_SIZE");
  std::string value = saved ? saved : "";
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_TRUE(launchedByMpi());
  if (saved)
    setenv("OMPI_COMM_WORLD_SIZE", value.c_str(), 1);
  else
    unsetenv("OMPI_COMM_WORLD_SIZE");
}

/// One MPI communicator for the whole binary (MPI initialises once).
Communicator *mpiComm(Status &status) {
  static Status created;
  static std::unique_ptr<Communicator> comm = [] {
    std::unique_ptr<Communicator> c;
    created = createMpiCommunicator(LinkEmulation(), 30, c);
    return c;
  }();
  status = created;
  return comm.get();
}

class MpiTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveMpi())
      GTEST_SKIP() << "this runtime was built without MPI";
    Status s;
    comm = mpiComm(s);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  Communicator *comm = nullptr;
};

TEST(MpiStubTest, WithoutMpiCreationFailsClearly) {
  if (haveMpi())
    GTEST_SKIP() << "built with MPI";
  std::unique_ptr<Communicator> comm;
  Status s = createMpiCommunicator(LinkEmulation(), 10, comm);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("built without MPI"), std::string::npos);
  EXPECT_EQ(comm, nullptr);
}

TEST_F(MpiTest, Identity) {
  EXPECT_STREQ(comm->engine(), "mpi");
  EXPECT_GE(comm->size(), 1);
  EXPECT_GE(comm->rank(), 0);
  EXPECT_LT(comm->rank(), comm->size());
  if (!launchedByMpi())
    EXPECT_EQ(comm->size(), 1);
}

TEST_F(MpiTest, AllReduceSumAndMean) {
  int p = comm->size(), me = comm->rank();
  std::vector<float> data(1000), mean(1000);
  for (int i = 0; i < 1000; ++i)
    data[i] = mean[i] = float(me + i);
  auto r1 = comm->startAllReduce(data.data(), 1000, ReduceOp::Sum);
  auto r2 = comm->startAllReduce(mean.data(), 1000, ReduceOp::Mean);
  ASSERT_TRUE(r2->wait().ok());
  EXPECT_TRUE(r1->test()); // completed in issue order
  ASSERT_TRUE(r1->wait().ok());
  float rankSum = p * (p - 1) / 2.0f;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FLOAT_EQ(data[i], rankSum + float(p) * i);
    EXPECT_FLOAT_EQ(mean[i], rankSum / p + i);
  }
}

// Out of place: the input stays as it was; in place through the same call;
// overlapping buffers are refused.
TEST_F(MpiTest, AllReduceInto) {
  int p = comm->size(), me = comm->rank();
  std::vector<float> in(300), out(300, -1.0f), same(300);
  for (int i = 0; i < 300; ++i)
    in[i] = same[i] = float(me + i);
  ASSERT_TRUE(
      comm->startAllReduceInto(in.data(), out.data(), 300, ReduceOp::Mean)
          ->wait()
          .ok());
  ASSERT_TRUE(
      comm->startAllReduceInto(same.data(), same.data(), 300, ReduceOp::Sum)
          ->wait()
          .ok());
  float rankSum = p * (p - 1) / 2.0f;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(in[i], float(me + i));
    EXPECT_FLOAT_EQ(out[i], rankSum / p + i);
    EXPECT_FLOAT_EQ(same[i], rankSum + float(p) * i);
  }
  Status s =
      comm->startAllReduceInto(in.data(), in.data() + 1, 10, ReduceOp::Sum)
          ->wait();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.message();
}

TEST_F(MpiTest, BroadcastGatherScatter) {
  int p = comm->size(), me = comm->rank();
  std::vector<float> b(10, float(me));
  ASSERT_TRUE(comm->startBroadcast(b.data(), 10, p - 1)->wait().ok());
  EXPECT_EQ(b, std::vector<float>(10, float(p - 1)));

  std::vector<float> in(4, float(me + 1)), all(4 * p);
  ASSERT_TRUE(comm->startAllGather(in.data(), all.data(), 4)->wait().ok());
  for (int r = 0; r < p; ++r)
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(all[r * 4 + i], float(r + 1));

  std::vector<float> blocks(3 * p, 1.0f), out(3);
  ASSERT_TRUE(
      comm->startReduceScatter(blocks.data(), out.data(), 3, ReduceOp::Sum)
          ->wait()
          .ok());
  EXPECT_EQ(out, std::vector<float>(3, float(p)));
  EXPECT_TRUE(comm->barrier().ok());
}

TEST_F(MpiTest, SendRecvRing) {
  int p = comm->size(), me = comm->rank();
  std::vector<float> out(100, float(me)), in(100, -1.0f);
  auto recv = comm->startRecv(in.data(), 100, (me + p - 1) % p, 3);
  auto send = comm->startSend(out.data(), 100, (me + 1) % p, 3);
  ASSERT_TRUE(send->wait().ok());
  ASSERT_TRUE(recv->wait().ok());
  EXPECT_EQ(in, std::vector<float>(100, float((me + p - 1) % p)));
}

TEST_F(MpiTest, BadArgumentsFailWithoutHanging) {
  float x = 0;
  EXPECT_FALSE(comm->startBroadcast(&x, 1, comm->size())->wait().ok());
  EXPECT_FALSE(comm->startSend(&x, 1, -1, 0)->wait().ok());
  EXPECT_FALSE(comm->startRecv(&x, -1, 0, 0)->wait().ok());
}

TEST_F(MpiTest, UnansweredRecvTimesOut) {
  std::unique_ptr<Communicator> fast;
  Status s = createMpiCommunicator(LinkEmulation(), 0.2, fast);
  ASSERT_TRUE(s.ok()) << s.message();
  float x = 0;
  auto start = std::chrono::steady_clock::now();
  s = fast->startRecv(&x, 1, fast->rank(), 42)->wait();
  double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank " + std::to_string(fast->rank()) +
                             ": no answer from the other ranks within 0.2 s"),
            std::string::npos)
      << s.message();
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 2.0);
  // Still usable.
  EXPECT_TRUE(fast->barrier().ok());
}

TEST_F(MpiTest, LinkEmulationDelaysTransfers) {
  if (comm->size() < 2)
    GTEST_SKIP() << "one rank has no link to emulate";
  LinkEmulation link;
  ASSERT_TRUE(LinkEmulation::parse("bandwidth=1,latency=20000", link).ok());
  std::unique_ptr<Communicator> slow;
  ASSERT_TRUE(createMpiCommunicator(link, 30, slow).ok());
  float x = 1;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(slow->startAllReduce(&x, 1, ReduceOp::Sum)->wait().ok());
  double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_GE(took, 0.02);
}

/// Nanoseconds of std::chrono::steady_clock (one clock for the processes of
/// a machine).
static int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Under link emulation a message leaves the emulated link latency + bytes /
// bandwidth after its send started: a receive posted after that completes at
// once (it was charged the whole link again before), one posted at once ends
// no sooner (checked against the sender's start time, which rank 0 sends
// over the unemulated communicator), and the send itself completes no
// sooner. Ranks 0 and 1 run on one machine here (one clock).
TEST_F(MpiTest, LinkEmulationCountsFromTheSend) {
  if (comm->size() < 2)
    GTEST_SKIP() << "one rank has no link to emulate";
  LinkEmulation link;
  ASSERT_TRUE(LinkEmulation::parse("bandwidth=1,latency=30000", link).ok());
  std::unique_ptr<Communicator> slow;
  ASSERT_TRUE(createMpiCommunicator(link, 30, slow).ok());
  constexpr int64_t kLatencyNs = 30'000'000;
  float x = 3;
  // A receive posted 90 ms after the send (60 ms after the message left the
  // emulated link).
  ASSERT_TRUE(comm->barrier().ok());
  if (slow->rank() == 0) {
    int64_t start = steadyNs();
    ASSERT_TRUE(slow->startSend(&x, 1, 1, 7)->wait().ok());
    EXPECT_GE(steadyNs() - start, kLatencyNs);
  } else if (slow->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(90));
    float y = 0;
    int64_t start = steadyNs();
    ASSERT_TRUE(slow->startRecv(&y, 1, 0, 7)->wait().ok());
    EXPECT_LT(steadyNs() - start, kLatencyNs / 2);
    EXPECT_EQ(y, 3);
  }
  // Receives posted at once, from rank 0 and from any rank.
  for (int tag : {8, 9}) {
    ASSERT_TRUE(comm->barrier().ok());
    if (slow->rank() == 0) {
      int64_t start = steadyNs();
      ASSERT_TRUE(slow->startSend(&x, 1, 1, tag)->wait().ok());
      float bits[2];
      std::memcpy(bits, &start, sizeof(start));
      ASSERT_TRUE(comm->startSend(bits, 2, 1, tag)->wait().ok());
    } else if (slow->rank() == 1) {
      float y = 0, bits[2];
      ASSERT_TRUE(
          slow->startRecv(&y, 1, tag == 8 ? 0 : kAnySource, tag)->wait().ok());
      int64_t end = steadyNs(), start = 0;
      ASSERT_TRUE(comm->startRecv(bits, 2, 0, tag)->wait().ok());
      std::memcpy(&start, bits, sizeof(start));
      EXPECT_GE(end - start, kLatencyNs) << "tag " << tag;
      EXPECT_EQ(y, 3);
    }
  }
  EXPECT_TRUE(comm->barrier().ok());
}

// A request records when its transfer completed, at or before the caller saw
// it.
TEST_F(MpiTest, RequestsRecordWhenTheyCompleted) {
  float x = 1;
  auto before = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  std::unique_ptr<Request> r = comm->startAllReduce(&x, 1, ReduceOp::Sum);
  ASSERT_TRUE(r->wait().ok());
  auto after = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
  EXPECT_GE(r->completedNs(), before);
  EXPECT_LE(r->completedNs(), after);
}

} // namespace
