//===- TimelineExport.cpp - Chrome traces and SVGs of a timeline ----------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/Timeline.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

using namespace mlir::strata::timeline;

/// `text` with the characters JSON and XML cannot hold as they are escaped.
static std::string escape(const std::string &text, bool xml) {
  std::string out;
  for (char c : text) {
    if (xml && (c == '<' || c == '>' || c == '&' || c == '"')) {
      out += c == '<'   ? "&lt;"
             : c == '>' ? "&gt;"
             : c == '&' ? "&amp;"
                        : "&quot;";
      continue;
    }
    if (!xml && (c == '"' || c == '\\')) {
      out += '\\';
      out += c;
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), xml ? " " : "\\u%04x", c);
      out += buffer;
      continue;
    }
    out += c;
  }
  return out;
}

static std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", value);
  return buffer;
}

std::string mlir::strata::timeline::toChromeTrace(const Result &result) {
  std::ostringstream os;
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  auto separator = [&] {
    os << (first ? "\n" : ",\n");
    first = false;
  };
  std::set<std::pair<int64_t, int>> rows;
  for (const Event &e : result.events)
    rows.insert({e.rank, static_cast<int>(e.stream)});
  for (int64_t r = 0; r < static_cast<int64_t>(result.ranks.size()); ++r) {
    separator();
    os << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << r
       << ", \"args\": {\"name\": \"rank " << r << "\"}}";
  }
  for (auto [rank, stream] : rows) {
    separator();
    os << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << rank
       << ", \"tid\": " << stream << ", \"args\": {\"name\": \""
       << getStreamName(static_cast<Stream>(stream)) << "\"}}";
  }
  for (const Event &e : result.events) {
    separator();
    os << "{\"name\": \"" << escape(e.name, false) << "\", \"cat\": \""
       << escape(e.category.empty() ? getStreamName(e.stream) : e.category,
                 false)
       << "\", \"ph\": \"X\", \"pid\": " << e.rank
       << ", \"tid\": " << static_cast<int>(e.stream)
       << ", \"ts\": " << number(e.start * 1e6)
       << ", \"dur\": " << number((e.end - e.start) * 1e6)
       << ", \"args\": {\"instruction\": " << e.label << "}}";
  }
  os << "\n]}\n";
  return os.str();
}

/// A fill colour per category (forward blue, backward orange, ...).
static const char *colourOf(const Event &e) {
  static const std::map<std::string, const char *> colours = {
      {"forward", "#4e79a7"}, {"backward", "#f28e2b"}, {"recompute", "#b07aa1"},
      {"update", "#59a14f"},  {"comm", "#e15759"},     {"copy", "#76b7b2"}};
  auto it = colours.find(e.category);
  if (it != colours.end())
    return it->second;
  if (e.stream == Stream::Comm)
    return "#e15759";
  if (e.stream == Stream::Copy)
    return "#76b7b2";
  return "#9c9c9c";
}

std::string mlir::strata::timeline::toSvg(const Result &result,
                                          const std::string &title) {
  std::map<std::pair<int64_t, int>, int> rowOf;
  for (const Event &e : result.events)
    rowOf[{e.rank, static_cast<int>(e.stream)}] = 0;
  int rows = 0;
  for (auto &[key, row] : rowOf)
    row = rows++;
  const double left = 140, width = 1000, rowHeight = 22, top = 40;
  double height = top + rowHeight * std::max(rows, 1) + 30;
  double scale = result.stepSeconds > 0 ? width / result.stepSeconds : 0;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << number(left + width + 20) << "\" height=\"" << number(height)
     << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  os << "<text x=\"10\" y=\"20\" font-size=\"14\">" << escape(title, true)
     << " (step " << number(result.stepSeconds * 1e3) << " ms)</text>\n";
  for (auto &[key, row] : rowOf) {
    double y = top + row * rowHeight;
    os << "<text x=\"10\" y=\"" << number(y + 15) << "\">rank " << key.first
       << " " << getStreamName(static_cast<Stream>(key.second)) << "</text>\n";
  }
  for (const Event &e : result.events) {
    double y = top + rowOf[{e.rank, static_cast<int>(e.stream)}] * rowHeight;
    double w = std::max((e.end - e.start) * scale, 0.5);
    os << "<rect x=\"" << number(left + e.start * scale) << "\" y=\""
       << number(y + 2) << "\" width=\"" << number(w) << "\" height=\""
       << number(rowHeight - 4) << "\" fill=\"" << colourOf(e) << "\"><title>"
       << escape(e.name, true) << " #" << e.label << " "
       << number((e.end - e.start) * 1e6) << " us</title></rect>\n";
  }
  double axis = top + rows * rowHeight + 15;
  os << "<text x=\"" << number(left) << "\" y=\"" << number(axis)
     << "\">0</text><text x=\"" << number(left + width - 60) << "\" y=\""
     << number(axis) << "\">" << number(result.stepSeconds * 1e3)
     << " ms</text>\n</svg>\n";
  return os.str();
}
