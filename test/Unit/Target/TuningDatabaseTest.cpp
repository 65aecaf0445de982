//===- TuningDatabaseTest.cpp - Reading and printing tuning databases -----===//

#include "strata/Target/TuningDatabase.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace mlir::strata;

static std::string database(const std::string &entry) {
  return R"({"format": "strata-gemm-tuning", "version": 1, "target": "cpu",
    "kind": "cpu", "machine": "m", "kernel": "strata-cpu-gemm-1",
    "cost": "model", "entries": [)" +
         entry + "]}";
}

static const char *kEntry =
    R"({"algorithm":"gbfs","batch":1,"dtype":"f32","k":8,"m":8,"n":8,)"
    R"("seconds":3e-06,"default_seconds":DEFAULT,"tiling":{"kc":8,"mc":4,)"
    R"("mr":4,"nc":16,"nr":16},"transpose_a":false,"transpose_b":true,)"
    R"("trials":8,"seed":0})";

static std::string entryWithDefault(const std::string &value) {
  std::string entry = kEntry;
  entry.replace(entry.find("DEFAULT"), 7, value);
  return entry;
}

TEST(TuningDatabase, PrintsWhatItReads) {
  llvm::Expected<TuningDatabase> db =
      parseTuningDatabase(database(entryWithDefault("4e-06")), "db.json");
  ASSERT_TRUE(static_cast<bool>(db)) << llvm::toString(db.takeError());
  std::string printed = printTuningDatabase(*db);
  llvm::Expected<TuningDatabase> again =
      parseTuningDatabase(printed, "printed.json");
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(printTuningDatabase(*again), printed);
  ASSERT_EQ(again->entries.size(), 1u);
  EXPECT_EQ(again->entries[0].defaultSeconds, 4e-6);
}

// Found by fuzzing: -0 (here a negative number that underflows to it) was
// kept, printed as -0 and read back as 0, so a database did not print as it
// read.
TEST(TuningDatabase, NegativeZeroReadsAsZero) {
  for (const char *value : {"-0.0", "-1e-400"}) {
    llvm::Expected<TuningDatabase> db =
        parseTuningDatabase(database(entryWithDefault(value)), "db.json");
    ASSERT_TRUE(static_cast<bool>(db)) << llvm::toString(db.takeError());
    ASSERT_EQ(db->entries.size(), 1u);
    EXPECT_FALSE(std::signbit(db->entries[0].defaultSeconds)) << value;
    std::string printed = printTuningDatabase(*db);
    llvm::Expected<TuningDatabase> again =
        parseTuningDatabase(printed, "printed.json");
    ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
    EXPECT_EQ(printTuningDatabase(*again), printed) << value;
  }
}

TEST(TuningDatabase, NegativeTimeIsAnError) {
  llvm::Expected<TuningDatabase> db =
      parseTuningDatabase(database(entryWithDefault("-1e-6")), "db.json");
  ASSERT_FALSE(static_cast<bool>(db));
  EXPECT_NE(llvm::toString(db.takeError()).find("default_seconds"),
            std::string::npos);
}
