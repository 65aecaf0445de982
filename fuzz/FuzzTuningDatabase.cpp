//===- FuzzTuningDatabase.cpp - Fuzz the tuning database reader -----------===//
//
// libFuzzer target `strata-fuzz-tuning-db`: the input is a tuning database
// (JSON, include/strata/Target/TuningDatabase.h) for `parseTuningDatabase`.
// A database it accepts must print (`printTuningDatabase`) to text that
// parses again and prints the same.
//
//===----------------------------------------------------------------------===//

#include "strata/Target/TuningDatabase.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>

using namespace mlir::strata;

static constexpr size_t kMaxInputBytes = 256 * 1024;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return -1;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<TuningDatabase> db = parseTuningDatabase(text, "fuzz.json");
  if (!db) {
    llvm::consumeError(db.takeError());
    return 0;
  }
  for (const TuningEntry &entry : db->entries)
    if (db->find(entry.key) == nullptr) {
      llvm::errs() << "strata-fuzz-tuning-db: entry " << entry.key.str()
                   << " is not found by its own key\n";
      std::abort();
    }
  std::string printed = printTuningDatabase(*db);
  llvm::Expected<TuningDatabase> again =
      parseTuningDatabase(printed, "printed.json");
  if (!again) {
    llvm::errs() << "strata-fuzz-tuning-db: a printed database does not "
                    "parse: "
                 << llvm::toString(again.takeError()) << "\n"
                 << printed << "\n";
    std::abort();
  }
  if (printTuningDatabase(*again) != printed) {
    llvm::errs() << "strata-fuzz-tuning-db: printing is not stable\n";
    std::abort();
  }
  return 0;
}
