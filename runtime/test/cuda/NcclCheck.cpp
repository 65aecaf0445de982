//===- NcclCheck.cpp - strata-nccl-check: the NCCL engine under mpirun ----===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Run as `mpirun -np N strata-nccl-check` on a machine with N GPUs (each rank
// takes the GPU of its local rank). Every NCCL operation (all-reduce sum and
// mean, broadcast, send/recv, reduce-scatter, all-gather) runs on random
// device data and is checked against a host reference: every rank
// regenerates every rank's data from (rank, check). Tolerance: sums of N
// floats in a different order, 1e-5 relative + 1e-6 absolute. Sends and
// receives run on point-to-point links (openNcclLinks, one per direction
// between ring neighbours), as pipelines on GPUs do: a ring, and crossed
// transfers (each of two partners sends before it receives, the pattern of
// activations forward and gradients backward) that would deadlock on one
// FIFO stream once a send blocks until its receive is posted. Rank 0 prints
// one line per check; the exit code is non-zero on any failure, 77 when no
// GPU is usable (skipped).
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Comm.h"
#include "strata-rt/Device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace strata::rt;

namespace {

std::vector<float> dataOf(int rank, int check, int64_t count) {
  std::seed_seq seq{7u, static_cast<unsigned>(rank),
                    static_cast<unsigned>(check)};
  std::mt19937 rng(seq);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> data(count);
  for (float &x : data)
    x = dist(rng);
  return data;
}

struct Device {
  float *ptr = nullptr;
  explicit Device(int64_t count) {
    if (cudaMalloc(&ptr, std::max<int64_t>(count, 1) * sizeof(float)) !=
        cudaSuccess)
      ptr = nullptr;
  }
  ~Device() { cudaFree(ptr); }
  void put(const std::vector<float> &v) {
    cudaMemcpy(ptr, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
  }
  std::vector<float> get(int64_t count) {
    std::vector<float> v(count);
    cudaDeviceSynchronize();
    cudaMemcpy(v.data(), ptr, count * sizeof(float), cudaMemcpyDeviceToHost);
    return v;
  }
};

int gFailures = 0;

void expectClose(Communicator &comm, const std::string &name,
                 const std::vector<float> &got, const std::vector<float> &want,
                 const Status &status) {
  double worst = 0;
  bool ok = status.ok() && got.size() == want.size();
  for (size_t i = 0; ok && i < got.size(); ++i) {
    double err = std::fabs(got[i] - want[i]);
    worst = std::max(worst, err);
    if (err > 1e-6 + 1e-5 * std::fabs(want[i]))
      ok = false;
  }
  if (!ok)
    ++gFailures;
  if (comm.rank() == 0 || !ok)
    std::printf("rank %d: %s %s (max abs error %.3g)%s%s\n", comm.rank(),
                ok ? "PASS" : "FAIL", name.c_str(), worst,
                status.ok() ? "" : ": ", status.message().c_str());
}

} // namespace

int main() {
  std::string why;
  if (cudaDeviceCount(&why) == 0) {
    std::printf("nccl-check: skipped: %s\n", why.c_str());
    return 77;
  }
  // Without a launcher, one rank: a local communicator bootstraps a
  // single-rank NCCL communicator (one GPU cannot host two NCCL ranks).
  std::unique_ptr<Communicator> mpi;
  Status status = Status::success();
  if (launchedByMpi())
    status = createMpiCommunicator(LinkEmulation(), 60, mpi);
  else
    mpi = createLocalCommunicator();
  if (!status.ok()) {
    std::fprintf(stderr, "nccl-check: %s\n", status.message().c_str());
    return 1;
  }
  std::unique_ptr<DeviceBackend> device;
  DeviceOptions options;
  options.timeoutSeconds = 60;
  status = createCudaBackend(options, device);
  std::unique_ptr<Communicator> nccl;
  if (status.ok())
    status = createNcclCommunicator(*mpi, *device, nccl);
  if (!status.ok()) {
    std::fprintf(stderr, "nccl-check: %s\n", status.message().c_str());
    return 1;
  }
  Communicator &c = *nccl;
  int p = c.size(), r = c.rank();
  // Links both ways between ring neighbours (the same list on every rank).
  std::vector<std::pair<int, int>> links;
  for (int q = 0; q < p && p >= 2; ++q) {
    links.push_back({q, (q + 1) % p});
    links.push_back({(q + 1) % p, q});
  }
  if (!links.empty())
    status = openNcclLinks(c, links);
  if (!status.ok()) {
    std::fprintf(stderr, "nccl-check: %s\n", status.message().c_str());
    return 1;
  }
  int check = 0;
  for (int64_t n : {1, 1000, 1 << 20}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
      ++check;
      std::vector<float> want(n, 0.0f);
      for (int q = 0; q < p; ++q) {
        std::vector<float> d = dataOf(q, check, n);
        for (int64_t i = 0; i < n; ++i)
          want[i] += d[i];
      }
      if (op == ReduceOp::Mean)
        for (float &x : want)
          x /= static_cast<float>(p);
      Device buf(n);
      buf.put(dataOf(r, check, n));
      Status s = c.startAllReduce(buf.ptr, n, op)->wait();
      expectClose(*mpi,
                  "all-reduce " +
                      std::string(op == ReduceOp::Sum ? "sum" : "mean") +
                      " of " + std::to_string(n),
                  buf.get(n), want, s);
    }
    ++check;
    {
      int root = p - 1;
      Device buf(n);
      buf.put(dataOf(r, check, n));
      Status s = c.startBroadcast(buf.ptr, n, root)->wait();
      expectClose(*mpi,
                  "broadcast of " + std::to_string(n) + " from " +
                      std::to_string(root),
                  buf.get(n), dataOf(root, check, n), s);
    }
    ++check;
    {
      Device in(n * p), out(n);
      in.put(dataOf(r, check, n * p));
      std::vector<float> want(n, 0.0f);
      for (int q = 0; q < p; ++q) {
        std::vector<float> d = dataOf(q, check, n * p);
        for (int64_t i = 0; i < n; ++i)
          want[i] += d[r * n + i];
      }
      Status s =
          c.startReduceScatter(in.ptr, out.ptr, n, ReduceOp::Sum)->wait();
      expectClose(*mpi, "reduce-scatter of " + std::to_string(n), out.get(n),
                  want, s);
    }
    ++check;
    {
      Device in(n), out(n * p);
      in.put(dataOf(r, check, n));
      std::vector<float> want;
      for (int q = 0; q < p; ++q) {
        std::vector<float> d = dataOf(q, check, n);
        want.insert(want.end(), d.begin(), d.end());
      }
      Status s = c.startAllGather(in.ptr, out.ptr, n)->wait();
      expectClose(*mpi, "all-gather of " + std::to_string(n), out.get(n * p),
                  want, s);
    }
    ++check;
    if (p >= 2) {
      // A ring: every rank sends to the next and receives from the previous.
      Device send(n), recv(n);
      send.put(dataOf(r, check, n));
      auto rs = c.startRecv(recv.ptr, n, (r + p - 1) % p, 0);
      auto ss = c.startSend(send.ptr, n, (r + 1) % p, 0);
      Status s = ss->wait();
      if (s.ok())
        s = rs->wait();
      expectClose(*mpi, "send/recv ring of " + std::to_string(n), recv.get(n),
                  dataOf((r + p - 1) % p, check, n), s);
    }
    ++check;
    if (p >= 2) {
      // Crossed: partners r and r ^ 1 (the last rank of an odd count sits
      // out). The even one sends two blocks, then receives one; the odd one
      // sends one, then receives two. Sends are waited for last, as the
      // executor does (before the next update and at the end of the step).
      int partner = r ^ 1;
      bool even = r % 2 == 0;
      Device out0(n), out1(n), in0(n), in1(n);
      Status s = Status::success();
      if (partner < p) {
        out0.put(dataOf(r, check, n));
        out1.put(dataOf(r + p, check, n));
        std::vector<std::unique_ptr<Request>> sends;
        sends.push_back(c.startSend(out0.ptr, n, partner, 0));
        if (even)
          sends.push_back(c.startSend(out1.ptr, n, partner, 1));
        s = c.startRecv(in0.ptr, n, partner, 0)->wait();
        if (s.ok() && !even)
          s = c.startRecv(in1.ptr, n, partner, 1)->wait();
        for (auto &send : sends)
          if (Status sent = send->wait(); s.ok())
            s = sent;
        std::vector<float> got = in0.get(n), want = dataOf(partner, check, n);
        if (!even) {
          std::vector<float> second = in1.get(n);
          std::vector<float> wantSecond = dataOf(partner + p, check, n);
          got.insert(got.end(), second.begin(), second.end());
          want.insert(want.end(), wantSecond.begin(), wantSecond.end());
        }
        expectClose(*mpi, "crossed send/recv of " + std::to_string(n), got,
                    want, s);
      }
    }
  }
  // Combine the verdicts over MPI (host buffers).
  float failures = static_cast<float>(gFailures);
  Status s = mpi->startAllReduce(&failures, 1, ReduceOp::Sum)->wait();
  if (r == 0)
    std::printf("nccl-check: %d ranks, %s\n", p,
                s.ok() && failures == 0 ? "all passed" : "FAILURES");
  return s.ok() && failures == 0 ? 0 : 1;
}
