//===- Version.h - Strata runtime version -----------------------*- C++ -*-===//
//
// The runtime is a separate library with no MLIR dependency. Its plan loader
// and backends arrive with the training-step work; for now it reports the plan
// format version it will accept.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_VERSION_H
#define STRATA_RT_VERSION_H

namespace strata::rt {
/// Version string of the runtime library.
const char *getVersion();
} // namespace strata::rt

#endif // STRATA_RT_VERSION_H
