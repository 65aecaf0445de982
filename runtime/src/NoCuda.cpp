//===- NoCuda.cpp - The device entry points without the CUDA backend ------===//
//
// Part of the Strata runtime, which never includes an MLIR header. Built
// instead of src/cuda/ where nvcc was not found.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Device.h"

#include "strata-rt/Comm.h"

namespace strata::rt {

static const char *const kNoCuda =
    "this runtime was built without the CUDA backend (no nvcc was found; "
    "rebuild on a machine with the CUDA toolkit, or with "
    "-DSTRATA_ENABLE_CUDA=ON)";

bool haveCudaBackend() { return false; }

int cudaDeviceCount(std::string *why) {
  if (why)
    *why = kNoCuda;
  return 0;
}

Status createCudaBackend(const DeviceOptions &,
                         std::unique_ptr<DeviceBackend> &backend) {
  backend.reset();
  return Status::failure(std::string("--device=cuda: ") + kNoCuda);
}

Status createNcclCommunicator(Communicator &, DeviceBackend &,
                              std::unique_ptr<Communicator> &comm) {
  comm.reset();
  return Status::failure(std::string("nccl: ") + kNoCuda);
}

Status openNcclLinks(Communicator &, const std::vector<std::pair<int, int>> &) {
  return Status::failure(std::string("nccl: ") + kNoCuda);
}

} // namespace strata::rt
