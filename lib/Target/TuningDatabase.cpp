//===- TuningDatabase.cpp - GEMM tuning databases -------------------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Target/TuningDatabase.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <tuple>

using namespace llvm;
using namespace mlir::strata;

static constexpr const char *kFormat = "strata-gemm-tuning";
static constexpr int64_t kVersion = 1;

bool GemmKey::operator<(const GemmKey &o) const {
  return std::make_tuple(dtype, m, n, k, batch, transA, transB) <
         std::make_tuple(o.dtype, o.m, o.n, o.k, o.batch, o.transA, o.transB);
}

bool GemmKey::operator==(const GemmKey &o) const {
  return dtype == o.dtype && GemmShape::operator==(o);
}

GemmKey mlir::strata::gemmKeyFor(StringRef dtype, int64_t batch, int64_t m,
                                 int64_t n, int64_t k, bool transA, bool transB,
                                 bool rhsIsMatrix) {
  GemmKey key;
  static_cast<::strata_plan::GemmShape &>(key) =
      ::strata_plan::gemmShapeFor(batch, m, n, k, transA, transB, rhsIsMatrix);
  key.dtype = dtype.str();
  return key;
}

const TuningEntry *TuningDatabase::find(const GemmKey &key) const {
  for (const TuningEntry &e : entries)
    if (e.key == key)
      return &e;
  return nullptr;
}

void TuningDatabase::insert(TuningEntry entry) {
  auto it = llvm::find_if(
      entries, [&](const TuningEntry &e) { return e.key == entry.key; });
  if (it != entries.end()) {
    *it = std::move(entry);
    return;
  }
  auto pos = llvm::upper_bound(
      entries, entry,
      [](const TuningEntry &a, const TuningEntry &b) { return a.key < b.key; });
  entries.insert(pos, std::move(entry));
}

std::vector<std::string> mlir::strata::tilingParameterNames(StringRef kind) {
  if (kind == "gpu")
    return {"block_m", "block_n", "k_step", "thread_m", "thread_n"};
  return {"mc", "nc", "kc", "mr", "nr"};
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {
/// Reads fields of one object, remembering the first error with its path.
class Reader {
public:
  Reader(StringRef source) : source(source) {}

  Error fail(const Twine &where, const Twine &message) {
    return createStringError(inconvertibleErrorCode(),
                             source + ": " +
                                 (where.isTriviallyEmpty()
                                      ? message
                                      : "field '" + where + "': " + message));
  }

  Error string(const json::Object &o, StringRef name, const Twine &where,
               std::string &out) {
    std::optional<StringRef> v = o.getString(name);
    if (!v)
      return fail(where + name, "expected a string");
    out = v->str();
    return Error::success();
  }
  Error integer(const json::Object &o, StringRef name, const Twine &where,
                int64_t &out, int64_t min) {
    std::optional<int64_t> v = o.getInteger(name);
    if (!v || *v < min)
      return fail(where + name, "expected an integer >= " + Twine(min).str());
    out = *v;
    return Error::success();
  }
  Error number(const json::Object &o, StringRef name, const Twine &where,
               double &out, bool optional) {
    const json::Value *v = o.get(name);
    if (!v && optional)
      return Error::success();
    std::optional<double> d = v ? v->getAsNumber() : std::nullopt;
    if (!d || !std::isfinite(*d) || *d < 0)
      return fail(where + name, "expected a non-negative number");
    // -0 (or a negative number that underflows to it) reads as 0, so that
    // the database prints as it reads.
    out = *d + 0.0;
    return Error::success();
  }
  Error boolean(const json::Object &o, StringRef name, const Twine &where,
                bool &out) {
    std::optional<bool> v = o.getBoolean(name);
    if (!v)
      return fail(where + name, "expected true or false");
    out = *v;
    return Error::success();
  }

private:
  std::string source;
};
} // namespace

Expected<TuningDatabase>
mlir::strata::parseTuningDatabase(StringRef text, StringRef sourceName) {
  Reader r(sourceName);
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return r.fail("", "not valid JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return r.fail("", "expected a JSON object");
  TuningDatabase db;
  std::string format;
  if (Error e = r.string(*root, "format", "", format))
    return std::move(e);
  if (format != kFormat)
    return r.fail("format", "expected \"" + Twine(kFormat) + "\"");
  int64_t version;
  if (Error e = r.integer(*root, "version", "", version, 1))
    return std::move(e);
  if (version != kVersion)
    return r.fail("version", "unsupported version " + Twine(version));
  if (Error e = r.string(*root, "target", "", db.target))
    return std::move(e);
  if (Error e = r.string(*root, "kind", "", db.kind))
    return std::move(e);
  if (db.kind != "cpu" && db.kind != "gpu")
    return r.fail("kind", "expected \"cpu\" or \"gpu\"");
  if (Error e = r.string(*root, "machine", "", db.machine))
    return std::move(e);
  if (Error e = r.string(*root, "kernel", "", db.kernel))
    return std::move(e);
  if (Error e = r.string(*root, "cost", "", db.cost))
    return std::move(e);
  if (db.cost != "measured" && db.cost != "model")
    return r.fail("cost", "expected \"measured\" or \"model\"");
  const json::Array *entries = root->getArray("entries");
  if (!entries)
    return r.fail("entries", "expected an array");
  std::vector<std::string> params = tilingParameterNames(db.kind);
  for (auto [i, value] : llvm::enumerate(*entries)) {
    std::string where = "entries[" + std::to_string(i) + "].";
    const json::Object *o = value.getAsObject();
    if (!o)
      return r.fail(where.substr(0, where.size() - 1), "expected an object");
    TuningEntry e;
    if (Error err = r.string(*o, "dtype", where, e.key.dtype))
      return std::move(err);
    if (Error err = r.integer(*o, "batch", where, e.key.batch, 1))
      return std::move(err);
    if (Error err = r.integer(*o, "m", where, e.key.m, 1))
      return std::move(err);
    if (Error err = r.integer(*o, "n", where, e.key.n, 1))
      return std::move(err);
    if (Error err = r.integer(*o, "k", where, e.key.k, 1))
      return std::move(err);
    if (Error err = r.boolean(*o, "transpose_a", where, e.key.transA))
      return std::move(err);
    if (Error err = r.boolean(*o, "transpose_b", where, e.key.transB))
      return std::move(err);
    const json::Object *tiling = o->getObject("tiling");
    if (!tiling)
      return r.fail(where + "tiling", "expected an object");
    for (const std::string &p : params) {
      int64_t v;
      if (Error err = r.integer(*tiling, p, where + "tiling.", v, 1))
        return std::move(err);
      e.tiling[p] = v;
    }
    if (tiling->size() != params.size())
      return r.fail(where + "tiling",
                    "expected exactly the keys " + llvm::join(params, ", "));
    if (Error err = r.number(*o, "seconds", where, e.seconds, false))
      return std::move(err);
    if (Error err =
            r.number(*o, "default_seconds", where, e.defaultSeconds, true))
      return std::move(err);
    if (std::optional<StringRef> a = o->getString("algorithm"))
      e.algorithm = a->str();
    if (std::optional<int64_t> t = o->getInteger("trials"))
      e.trials = *t;
    if (std::optional<int64_t> s = o->getInteger("seed"))
      e.seed = *s;
    if (db.find(e.key))
      return r.fail(where.substr(0, where.size() - 1),
                    "duplicate entry for " + e.key.dtype + " " + e.key.str());
    db.insert(std::move(e));
  }
  return db;
}

Expected<TuningDatabase> mlir::strata::loadTuningDatabase(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(buffer.getError(),
                             "cannot read tuning database '" + path +
                                 "': " + buffer.getError().message());
  return parseTuningDatabase((*buffer)->getBuffer(), path);
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string mlir::strata::printTuningDatabase(const TuningDatabase &db) {
  std::string text;
  raw_string_ostream os(text);
  auto str = [](StringRef s) { return json::Value(s.str()); };
  os << "{\n";
  os << "  \"format\": " << str(kFormat) << ",\n";
  os << "  \"version\": " << kVersion << ",\n";
  os << "  \"target\": " << str(db.target) << ",\n";
  os << "  \"kind\": " << str(db.kind) << ",\n";
  os << "  \"machine\": " << str(db.machine) << ",\n";
  os << "  \"kernel\": " << str(db.kernel) << ",\n";
  os << "  \"cost\": " << str(db.cost) << ",\n";
  os << "  \"entries\": [";
  for (auto [i, e] : llvm::enumerate(db.entries)) {
    json::Object tiling;
    for (const auto &[name, value] : e.tiling)
      tiling[name] = value;
    json::Object o{{"dtype", e.key.dtype},
                   {"batch", e.key.batch},
                   {"m", e.key.m},
                   {"n", e.key.n},
                   {"k", e.key.k},
                   {"transpose_a", e.key.transA},
                   {"transpose_b", e.key.transB},
                   {"tiling", std::move(tiling)},
                   {"seconds", e.seconds},
                   {"algorithm", e.algorithm},
                   {"trials", e.trials},
                   {"seed", (int64_t)e.seed}};
    if (e.defaultSeconds >= 0)
      o["default_seconds"] = e.defaultSeconds;
    os << (i ? ",\n    " : "\n    ") << json::Value(std::move(o));
  }
  os << (db.entries.empty() ? "]\n" : "\n  ]\n") << "}\n";
  return text;
}

Error mlir::strata::writeTuningDatabase(const TuningDatabase &db,
                                        StringRef path) {
  SmallString<256> temp(path);
  temp += ".tmp";
  {
    std::error_code ec;
    raw_fd_ostream os(temp, ec, sys::fs::OF_Text);
    if (ec)
      return createStringError(ec,
                               "cannot write '" + temp + "': " + ec.message());
    os << printTuningDatabase(db);
    os.close();
    if (os.has_error())
      return createStringError(os.error(), "cannot write '" + temp + "'");
  }
  if (std::error_code ec = sys::fs::rename(temp, path))
    return createStringError(ec, "cannot rename '" + temp + "' to '" + path +
                                     "': " + ec.message());
  return Error::success();
}
