//===- FuzzCostTable.cpp - Fuzz the cost table reader ---------------------===//
//
// libFuzzer target `strata-fuzz-cost-table`: the input is a cost table
// (`strata-tune --save-cost-table`, runtime/include/strata-tune/Tune.h) for
// `parseCostTable`. A table it accepts, written back in the same format with
// every time printed exactly, must parse to the same table.
//
//===----------------------------------------------------------------------===//

#include "strata-tune/Tune.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace strata::rt::tune;

static constexpr size_t kMaxInputBytes = 256 * 1024;

static std::string print(const CostTable &table) {
  std::string text;
  char line[512];
  for (const auto &[gemm, times] : table)
    for (const auto &[t, seconds] : times) {
      std::string time = "inf";
      if (std::isfinite(seconds)) {
        std::snprintf(line, sizeof(line), "%.17g", seconds);
        time = line;
      }
      std::snprintf(line, sizeof(line), "%s %lld,%lld,%lld,%lld,%lld %s\n",
                    gemm.c_str(), (long long)t[0], (long long)t[1],
                    (long long)t[2], (long long)t[3], (long long)t[4],
                    time.c_str());
      text += line;
    }
  return text;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return -1;
  std::string text(reinterpret_cast<const char *>(data), size);
  CostTable table;
  if (!parseCostTable(text, table).empty())
    return 0;
  CostTable again;
  std::string printed = print(table);
  std::string error = parseCostTable(printed, again);
  if (!error.empty() || again != table) {
    std::fprintf(stderr,
                 "strata-fuzz-cost-table: a printed table does not read back "
                 "(%s):\n%s",
                 error.c_str(), printed.c_str());
    std::abort();
  }
  return 0;
}
