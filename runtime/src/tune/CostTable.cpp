//===- CostTable.cpp - Reading strata-tune's cost tables ------------------===//
//
// Part of strata_tune, the GEMM tiling search of strata-tune (not of the
// runtime library); like the runtime, it never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-tune/Tune.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace strata::rt::tune {

static std::string trim(const std::string &s) {
  const char *space = " \t\n\v\f\r";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string::npos)
    return "";
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

/// Splits at `sep`, dropping empty fields when `keepEmpty` is false.
static std::vector<std::string> split(const std::string &s, char sep,
                                      bool keepEmpty) {
  std::vector<std::string> fields;
  size_t begin = 0;
  while (true) {
    size_t end = s.find(sep, begin);
    std::string field = s.substr(begin, end - begin);
    if (keepEmpty || !field.empty())
      fields.push_back(field);
    if (end == std::string::npos)
      return fields;
    begin = end + 1;
  }
}

/// A positive decimal integer that fills all of `text` (at most 18 digits,
/// so it cannot overflow).
static bool parsePositive(const std::string &text, int64_t &value) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  value = std::stoll(text);
  return value > 0;
}

/// A finite positive number of seconds that fills all of `text`, or "inf".
static bool parseSeconds(const std::string &text, double &seconds) {
  if (text == "inf") {
    seconds = HUGE_VAL;
    return true;
  }
  if (text.empty() || text.find_first_of(" \t\n\v\f\r") != std::string::npos)
    return false;
  errno = 0;
  char *end = nullptr;
  seconds = std::strtod(text.c_str(), &end);
  return errno == 0 && *end == '\0' && std::isfinite(seconds) && seconds > 0;
}

std::string parseCostTable(const std::string &text, CostTable &table) {
  const char *expected = " (expected 'GEMM mc,nc,kc,mr,nr SECONDS')";
  int64_t lineNo = 0;
  for (const std::string &rawLine : split(text, '\n', /*keepEmpty=*/true)) {
    ++lineNo;
    std::string line = trim(rawLine.substr(0, rawLine.find('#')));
    if (line.empty())
      continue;
    auto corrupt = [&](const std::string &why) {
      return "line " + std::to_string(lineNo) + ": " + why + expected;
    };
    std::vector<std::string> fields = split(line, ' ', /*keepEmpty=*/false);
    if (fields.size() != 3)
      return corrupt("expected three fields, got " +
                     std::to_string(fields.size()));
    GemmProblem problem;
    if (!parseGemmProblem(fields[0], problem).empty())
      return corrupt("invalid GEMM '" + fields[0] + "'");
    std::vector<std::string> numbers = split(fields[1], ',', true);
    std::array<int64_t, 5> key = {};
    if (numbers.size() != 5)
      return corrupt("invalid tiling '" + fields[1] + "'");
    for (int i = 0; i < 5; ++i)
      if (!parsePositive(numbers[i], key[i]))
        return corrupt("invalid tiling '" + fields[1] + "'");
    double seconds = 0;
    if (!parseSeconds(fields[2], seconds))
      return corrupt("invalid time '" + fields[2] + "'");
    // A tiling measured more than once (several exhaustive passes appended
    // to one table) keeps its least time.
    auto [it, inserted] = table[problem.str()].try_emplace(key, seconds);
    if (!inserted)
      it->second = std::min(it->second, seconds);
  }
  return "";
}

} // namespace strata::rt::tune
