//===- strata-tune.cpp - Build a GEMM tuning database ---------------------===//
//
//   strata-tune MODEL.mlir|SHAPE... [--db FILE] [--target cpu|NAME|FILE.json]
//               [--budget N|Ss|N,Ss] [--algorithm gbfs|na2c|random|exhaustive]
//               [--seed S] [--threads T] [--repeats R] [--samples P]
//               [--starts N] [--tile-moves N] [--a2c-steps N]
//               [--a2c-epsilon E] [--a2c-tile-moves[=false]]
//               [--levels M,N,K] [--cost measured|model] [--force]
//               [--history FILE] [--list] [--quiet]
//               [--save-cost-table FILE] [--cost-table FILE] [--shuffle]
//               [--dtype f32|bf16]
//
// Collects the distinct GEMMs of the models' matmuls (forward and backward
// of a training step alike; a SHAPE is MxNxK[:bB][:ta][:tb]) and searches the
// tiling space of each (runtime/include/strata-tune/Tune.h). On a CPU target
// the cost of a tiling is the measured time of the runtime's matmul kernel
// on this machine (the bf16 GEMM for a bf16 matmul, key dtype "bf16"); a GPU
// target uses the analytic model of Strata's CUDA GEMM (f32 GEMMs only).
// The database (JSON, include/strata/Target/TuningDatabase.h) is rewritten
// atomically after every GEMM, so an interrupted run keeps what it finished
// and a second run skips the GEMMs already in it.
//
// A cost table (--save-cost-table) keeps the time of every state a search
// measured, one line "GEMM mc,nc,kc,mr,nr SECONDS" per kernel configuration
// (the format --measure prints; '#' starts a comment; a tiling listed more
// than once counts with its least time, so passes of --shuffle exhaustive
// runs appended to one table give the minimum of repeated measurements of
// every state). --cost-table replays
// a search over such a table instead of measuring: every trial looks up the
// time of the state the search asks for, so different algorithms and seeds
// see exactly the same costs. A replay prints one result line per GEMM and
// writes no database; a state missing from the table is an error.
//
// Exit codes: 0 success, 1 tuning failure, 2 usage error, 3 unreadable or
// invalid model or database (or one tuned for another target or machine).
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Target/TargetDescription.h"
#include "strata/Target/TuningDatabase.h"
#include "strata/Transforms/TileGemm.h"

#include "strata-tune/Tune.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::strata;
namespace cl = llvm::cl;
namespace tune = ::strata::rt::tune;
using GemmTiling = ::strata::rt::GemmTiling;

static cl::OptionCategory category("strata-tune options");
static cl::list<std::string>
    inputs(cl::Positional, cl::desc("<model.mlir | MxNxK[:bB][:ta][:tb]>..."),
           cl::cat(category));
static cl::opt<std::string> dbPath("db", cl::desc("Tuning database (JSON)"),
                                   cl::value_desc("file"),
                                   cl::init("strata-tuning.json"),
                                   cl::cat(category));
static cl::opt<std::string>
    targetName("target",
               cl::desc("cpu (this machine), or a target description name or "
                        "file; GPU targets use the analytic CUDA model"),
               cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    budget("budget",
           cl::desc("Per GEMM: N trials, S seconds (\"30s\"), or both "
                    "(\"40,30s\"); 0 = no limit"),
           cl::init("40"), cl::cat(category));
static cl::opt<std::string>
    algorithm("algorithm", cl::desc("gbfs, na2c, random, exhaustive"),
              cl::init("gbfs"), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Search seed"), cl::init(0),
                              cl::cat(category));
// --threads N (threads of the measured kernel, 0: one per hardware thread)
// is read before cl parsing: libLLVM registers a `threads` option itself.
static int threads = 0;
static cl::opt<int> repeats("repeats", cl::desc("Timed calls per tiling"),
                            cl::init(5), cl::cat(category));
static cl::opt<int> samples("samples",
                            cl::desc("G-BFS: neighbours sampled per expansion"),
                            cl::init(8), cl::cat(category));
static cl::opt<int>
    starts("starts",
           cl::desc("G-BFS: starting states (the default one plus N-1 "
                    "drawn by --seed)"),
           cl::init(tune::SearchOptions().gbfsStarts), cl::cat(category));
static cl::opt<int> tileMovesOpt(
    "tile-moves",
    cl::desc("G-BFS: register-tile moves sampled per expansion besides "
             "--samples (0: only prime-factor moves)"),
    cl::init(tune::SearchOptions().gbfsTileMoves), cl::cat(category));
static cl::opt<int> a2cSteps("a2c-steps", cl::desc("N-A2C: steps per episode"),
                             cl::init(tune::SearchOptions().a2cEpisodeSteps),
                             cl::cat(category));
static cl::opt<double> a2cEpsilon("a2c-epsilon",
                                  cl::desc("N-A2C: exploration rate"),
                                  cl::init(tune::SearchOptions().a2cEpsilon),
                                  cl::cat(category));
static cl::opt<bool> a2cTileMovesOpt(
    "a2c-tile-moves",
    cl::desc("N-A2C: exploring steps may take register-tile moves"),
    cl::init(tune::SearchOptions().a2cTileMoves), cl::cat(category));
static cl::opt<std::string> levels("levels",
                                   cl::desc("Nested levels of m, n, k"),
                                   cl::init("3,3,2"), cl::cat(category));
static cl::opt<std::string>
    costKind("cost", cl::desc("measured or model (CPU targets)"),
             cl::init("measured"), cl::cat(category));
static cl::opt<bool> force("force", cl::desc("Retune GEMMs already in the db"),
                           cl::cat(category));
static cl::opt<std::string>
    historyPath("history",
                cl::desc("Append every trial as a JSON line to this file"),
                cl::value_desc("file"), cl::cat(category));
static cl::opt<bool> listOnly("list",
                              cl::desc("Print the distinct GEMMs and exit"),
                              cl::cat(category));
static cl::list<std::string>
    measureTilings("measure",
                   cl::desc("Only time these tilings (mc,nc,kc,mr,nr or "
                            "'default') on every GEMM, round robin, and "
                            "print the best median of each; no database"),
                   cl::value_desc("tiling"), cl::cat(category));
static cl::opt<int> rounds("rounds", cl::desc("--measure: round-robin passes"),
                           cl::init(3), cl::cat(category));
static cl::opt<std::string> saveCostTablePath(
    "save-cost-table",
    cl::desc("Append the time of every measured state to this cost table"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> costTablePath(
    "cost-table",
    cl::desc("Replay the search over this cost table instead of measuring; "
             "no database"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<bool> shuffle(
    "shuffle",
    cl::desc("Exhaustive: measure the legal states in an order shuffled by "
             "--seed (spreads a changing machine load over the space)"),
    cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress on stderr"),
                           cl::cat(category));
static cl::opt<std::string>
    shapeDtype("dtype",
               cl::desc("Arithmetic of the SHAPE inputs: f32, or bf16 (the "
                        "bf16 GEMM of a bf16 matmul)"),
               cl::init("f32"), cl::cat(category));

/// Spaces up to this many states have their legal states counted for the
/// progress report (about a second at the limit).
static constexpr uint64_t kCountLegalLimit = 5000000;

[[noreturn]] static void fail(int code, const llvm::Twine &message) {
  llvm::errs() << "strata-tune: error: " << message << "\n";
  std::exit(code);
}

/// Adds the GEMMs of every matmul and fused matmul in `path` to `keys`.
static void collectModel(MLIRContext &ctx, StringRef path,
                         std::map<GemmKey, int> &keys) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &error);
  if (!file)
    fail(3, "cannot read '" + path + "': " + error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    fail(3, "cannot parse '" + path + "'");
  module->walk([&](Operation *op) {
    if (auto matmul = dyn_cast<MatmulOp>(op))
      ++keys[getGemmKey(matmul)];
    else if (auto fused = dyn_cast<FusedMatmulOp>(op))
      ++keys[getGemmKey(fused)];
  });
}

/// A tiling (the five numbers of TileSpace::key) as "mc,nc,kc,mr,nr".
static std::string tilingText(const std::array<int64_t, 5> &key) {
  return llvm::formatv("{0},{1},{2},{3},{4}", key[0], key[1], key[2], key[3],
                       key[4])
      .str();
}

using tune::CostTable;

/// Reads a cost table written by --save-cost-table; exits with code 3 when
/// the file cannot be read or a line is malformed.
static CostTable loadCostTable(StringRef path) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &error);
  if (!file)
    fail(3, "cannot read cost table '" + path + "': " + error);
  CostTable table;
  std::string why = tune::parseCostTable(file->getBuffer().str(), table);
  if (!why.empty())
    fail(3, "corrupt cost table '" + path + "' " + why);
  return table;
}

static tune::GemmProblem toProblem(const GemmKey &key) {
  tune::GemmProblem p;
  p.batch = key.batch;
  p.m = key.m;
  p.n = key.n;
  p.k = key.k;
  p.transA = key.transA;
  p.transB = key.transB;
  return p;
}

static std::string ms(double seconds) {
  return llvm::formatv("{0:F3} ms", seconds * 1e3).str();
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// Parses the command line. --threads is taken out first (libLLVM registers
/// a `threads` option of its own); exits with code 2 on a usage error.
static void parseCommandLine(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  SmallVector<const char *> args;
  for (int i = 0; i < argc; ++i) {
    StringRef arg = argv[i];
    std::optional<StringRef> value;
    if ((arg == "--threads" || arg == "-threads") && i + 1 < argc)
      value = argv[++i];
    else if (arg.consume_front("--threads=") || arg.consume_front("-threads="))
      value = arg;
    else if (arg == "--threads" || arg == "-threads")
      fail(2, "--threads needs a value");
    if (!value) {
      args.push_back(argv[i]);
      continue;
    }
    if (value->getAsInteger(10, threads) || threads < 0)
      fail(2, "invalid --threads '" + *value + "'");
  }
  if (!cl::ParseCommandLineOptions(
          args.size(), args.data(),
          "Search GEMM tilings and write a tuning database\n\n"
          "  --threads N   threads of the measured kernel (default: one per "
          "hardware thread)\n",
          &llvm::errs()))
    std::exit(2);
  if (inputs.empty())
    fail(2, "no model or GEMM shape given");
}

/// The search of every GEMM: --algorithm, --seed, --budget and the options
/// of the algorithms.
static tune::SearchOptions readSearchOptions() {
  tune::SearchOptions search;
  if (!tune::parseAlgorithm(algorithm, search.algorithm))
    fail(2, "unknown --algorithm '" + algorithm +
                "' (gbfs, na2c, random, exhaustive)");
  search.seed = seed;
  search.gbfsSamples = samples;
  search.gbfsStarts = starts;
  search.gbfsTileMoves = tileMovesOpt;
  search.a2cEpisodeSteps = a2cSteps;
  search.a2cEpsilon = a2cEpsilon;
  search.a2cTileMoves = a2cTileMovesOpt;
  search.exhaustiveShuffle = shuffle;
  search.maxTrials = 0;
  for (StringRef part : llvm::split(StringRef(budget), ',')) {
    part = part.trim();
    bool seconds = part.consume_back("s");
    double value;
    if (part.getAsDouble(value) || value < 0 ||
        (!seconds && value != std::floor(value)))
      fail(2, "invalid --budget '" + budget + "' (N trials, Ss seconds)");
    if (seconds)
      search.maxSeconds = value;
    else
      search.maxTrials = (int64_t)value;
  }
  return search;
}

/// The tiling space's levels (--levels); the target and caches are set by
/// resolveTarget.
static tune::SpaceOptions readSpaceOptions() {
  tune::SpaceOptions space;
  SmallVector<StringRef> parts;
  StringRef(levels).split(parts, ',');
  int values[3];
  if (parts.size() != 3 || parts[0].getAsInteger(10, values[0]) ||
      parts[1].getAsInteger(10, values[1]) ||
      parts[2].getAsInteger(10, values[2]) || values[0] < 2 || values[1] < 2 ||
      values[2] < 1 || values[0] > 6 || values[1] > 6 || values[2] > 6)
    fail(2, "invalid --levels '" + levels +
                "' (M,N,K: 2-6 levels for m and n, 1-6 for k)");
  space.levelsM = values[0];
  space.levelsN = values[1];
  space.levelsK = values[2];
  return space;
}

/// Checks the options that only need a value check (--cost, --repeats).
static void checkCostOptions() {
  if (costKind != "measured" && costKind != "model")
    fail(2, "--cost must be 'measured' or 'model'");
  if (shapeDtype != "f32" && shapeDtype != "bf16")
    fail(2, "--dtype must be 'f32' or 'bf16'");
  if (repeats < 1)
    fail(2, "--repeats must be at least 1");
}

//===----------------------------------------------------------------------===//
// Target
//===----------------------------------------------------------------------===//

namespace {
/// What the tilings are tuned for and how a tiling's cost is obtained.
struct TuneTarget {
  /// The database this run writes, without entries: target, kind, machine,
  /// kernel version and cost kind.
  TuningDatabase header;
  /// Tilings of Strata's CUDA GEMM, costed by the analytic model of `gpu`.
  bool isGpu = false;
  /// CPU: the measured time of the runtime's kernel (else the CPU model).
  bool measured = false;
  tune::GpuModel gpu;
  /// The analytic CPU model's core.
  double cpuPeakGflops = 100, cpuBandwidthGBs = 20;
};
} // namespace

/// The analytic model of the GPU of `target`, from its description (exits
/// with code 3 when the description lacks what the model needs).
static tune::GpuModel gpuModelOf(const TargetDescription &target) {
  if (target.device.streamingMultiprocessors <= 0)
    fail(3, "target '" + target.name + "' (" + target.path +
                "): the CUDA GEMM model needs the GPU's "
                "'device.streaming_multiprocessors'");
  tune::GpuModel gpu;
  gpu.peakTflops = target.peakFlops("f32") / 1e12;
  gpu.bandwidthGBs = target.device.memoryBandwidthGBps;
  gpu.sms = static_cast<int>(target.device.streamingMultiprocessors);
  return gpu;
}

/// Loads --target ("cpu": this machine, measured unless --cost model) and
/// sets the space's kernel and caches to match.
static TuneTarget resolveTarget(tune::SpaceOptions &space) {
  TuneTarget t;
  t.header.target = "cpu";
  t.header.kind = "cpu";
  if (targetName != "cpu") {
    llvm::Expected<TargetDescription> target =
        loadTargetDescription(targetName, getDefaultTargetSearchPath());
    if (!target)
      fail(3, llvm::toString(target.takeError()));
    t.header.target = target->name;
    t.header.kind = target->device.kind == "gpu" ? "gpu" : "cpu";
    if (t.header.kind == "gpu") {
      t.gpu = gpuModelOf(*target);
    } else {
      t.cpuPeakGflops = target->peakFlops("f32") / 1e9;
      t.cpuBandwidthGBs = target->device.memoryBandwidthGBps;
    }
  }
  t.isGpu = t.header.kind == "gpu";
  space.target = t.isGpu ? tune::TileTarget::Cuda : tune::TileTarget::Cpu;
  space.caches = tune::CacheSizes::detect();
  t.measured = !t.isGpu && costKind == "measured";
  t.header.cost = t.measured ? "measured" : "model";
  t.header.kernel =
      t.isGpu ? tune::kCudaGemmModelVersion : tune::kCpuGemmKernelVersion;
  t.header.machine = t.measured ? tune::machineIdentity(threads)
                                : "analytic model of " + t.header.target;
  return t;
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

/// The distinct GEMMs of the inputs (models and shapes), with how many
/// matmuls have each.
static std::map<GemmKey, int> collectGemms(MLIRContext &ctx) {
  std::map<GemmKey, int> keys;
  for (const std::string &input : inputs) {
    tune::GemmProblem p;
    if (StringRef(input).ends_with(".mlir") || input == "-" ||
        !tune::parseGemmProblem(input, p).empty()) {
      if (!StringRef(input).ends_with(".mlir") && input != "-" &&
          !llvm::sys::fs::exists(input))
        fail(2, tune::parseGemmProblem(input, p));
      collectModel(ctx, input, keys);
      continue;
    }
    ++keys[gemmKeyFor(shapeDtype, p.batch, p.m, p.n, p.k, p.transA, p.transB,
                      /*rhsIsMatrix=*/false)];
  }
  return keys;
}

/// --list: prints the distinct GEMMs.
static void listGemms(const std::map<GemmKey, int> &keys) {
  for (const auto &[key, count] : keys)
    llvm::outs() << key.dtype << " " << key.str() << " (" << count
                 << (count == 1 ? " matmul)\n" : " matmuls)\n");
}

/// --measure: times the given tilings side by side, round robin on every
/// GEMM (comparing the results of different searches under the same machine
/// load), and prints the best median of each.
static void measureGivenTilings(const std::map<GemmKey, int> &keys) {
  std::vector<GemmTiling> tilings;
  for (const std::string &text : measureTilings) {
    GemmTiling t;
    SmallVector<StringRef> parts;
    StringRef(text).split(parts, ',');
    t.mc = -1; // "default": the GEMM's own (f32 or bf16) defaults
    if (text != "default" &&
        (parts.size() != 5 || parts[0].getAsInteger(10, t.mc) ||
         parts[1].getAsInteger(10, t.nc) || parts[2].getAsInteger(10, t.kc) ||
         parts[3].getAsInteger(10, t.mr) || parts[4].getAsInteger(10, t.nr)))
      fail(2, "invalid --measure '" + text + "' (mc,nc,kc,mr,nr or default)");
    tilings.push_back(t);
  }
  for (const auto &entryOfKeys : keys) {
    tune::MeasureOptions mo;
    mo.threads = threads;
    mo.repeats = repeats;
    mo.seed = seed;
    mo.bf16 = entryOfKeys.first.dtype == "bf16";
    tune::GemmMeasurer measurer(toProblem(entryOfKeys.first), mo);
    std::vector<double> best(tilings.size(), HUGE_VAL);
    for (int r = 0; r < std::max(1, rounds.getValue()); ++r)
      for (size_t i = 0; i < tilings.size(); ++i)
        best[i] = std::min(
            best[i],
            measurer.measure(tilings[i].mc < 0 ? tune::defaultCpuTiling(mo.bf16)
                                               : tilings[i]));
    for (size_t i = 0; i < tilings.size(); ++i)
      llvm::outs() << (mo.bf16 ? "bf16 " : "") << entryOfKeys.first.str() << " "
                   << measureTilings[i] << " "
                   << llvm::formatv("{0:e}", best[i]) << "\n";
  }
}

//===----------------------------------------------------------------------===//
// Database and output files
//===----------------------------------------------------------------------===//

/// --cost-table: the table a replay searches over (exits with code 2 when
/// the other options contradict a replay).
static CostTable loadReplayTable(const TuneTarget &target) {
  if (!saveCostTablePath.empty())
    fail(2, "--cost-table replays a table; it cannot be combined with "
            "--save-cost-table");
  if (target.isGpu || costKind != "measured")
    fail(2, "--cost-table replays measured CPU times; it cannot be "
            "combined with a GPU target or --cost model");
  return loadCostTable(costTablePath);
}

/// The database to add to: --db when it exists (and was tuned for the same
/// target, machine, kernel and cost kind; else exit code 3), else an empty
/// one with `header`'s fields.
static TuningDatabase openDatabase(const TuningDatabase &header) {
  if (!llvm::sys::fs::exists(dbPath))
    return header;
  llvm::Expected<TuningDatabase> loaded = loadTuningDatabase(dbPath);
  if (!loaded)
    fail(3, "corrupt tuning database: " + llvm::toString(loaded.takeError()) +
                " (fix or remove the file)");
  if (loaded->target != header.target || loaded->kind != header.kind ||
      loaded->machine != header.machine || loaded->kernel != header.kernel ||
      loaded->cost != header.cost)
    fail(3, "tuning database '" + dbPath + "' holds target '" + loaded->target +
                "' on '" + loaded->machine + "' (" + loaded->kernel + ", " +
                loaded->cost + "), not target '" + header.target + "' on '" +
                header.machine + "' (" + header.kernel + ", " + header.cost +
                "); use another --db");
  return std::move(*loaded);
}

/// Opens `path` for appending (exit code 1 on failure); null for no path.
static std::unique_ptr<llvm::raw_fd_ostream> openAppend(StringRef path) {
  if (path.empty())
    return nullptr;
  std::error_code ec;
  auto os = std::make_unique<llvm::raw_fd_ostream>(
      path, ec, llvm::sys::fs::OF_Append | llvm::sys::fs::OF_Text);
  if (ec)
    fail(1, "cannot write '" + path + "': " + ec.message());
  return os;
}

//===----------------------------------------------------------------------===//
// Tuning one GEMM
//===----------------------------------------------------------------------===//

namespace {
/// Searches the tiling of each GEMM in turn and records it: in the database,
/// or, when replaying a cost table, as a result line on stdout.
class Tuner {
public:
  Tuner(const TuneTarget &target, const tune::SpaceOptions &space,
        tune::SearchOptions search, TuningDatabase &db,
        const CostTable *replayTable)
      : target(target), space(space), search(std::move(search)), db(db),
        replayTable(replayTable), history(openAppend(historyPath)),
        saveTable(openAppend(saveCostTablePath)) {}

  /// Tunes GEMM number `index` (1-based) of `count`.
  void tuneGemm(const GemmKey &key, int index, size_t count);
  int tuned = 0, skipped = 0;

private:
  /// One GEMM: its problem, space, label and how a state is costed.
  struct Gemm {
    Gemm(const GemmKey &key, std::string label, const tune::SpaceOptions &space)
        : key(key), label(std::move(label)), problem(toProblem(key)),
          bf16(key.dtype == "bf16"), tileSpace(problem, spaceFor(space, bf16)) {
    }
    static tune::SpaceOptions spaceFor(tune::SpaceOptions space, bool bf16) {
      space.bf16 = bf16;
      return space;
    }
    const GemmKey &key;
    std::string label;
    tune::GemmProblem problem;
    /// The bf16 GEMM of a bf16 matmul.
    bool bf16;
    tune::TileSpace tileSpace;
    std::unique_ptr<tune::GemmMeasurer> measurer;
    const std::map<std::array<int64_t, 5>, double> *replayCosts = nullptr;
    int modelThreads = 1;
  };

  /// Whether `key` is not searched: in the database already, or not
  /// measurable.
  bool skip(const GemmKey &key, const std::string &label);
  /// Sets up the measurer or the replayed costs of GEMM number `index`.
  void prepareCosts(Gemm &gemm, int index) const;
  tune::CostFunction costFunction(const Gemm &gemm) const;
  /// The default tiling's seconds on a CPU target (measured or modelled); -1
  /// on a GPU target or in a replay.
  double defaultTilingSeconds(const Gemm &gemm) const;
  void reportStart(const Gemm &gemm, double defaultSeconds) const;
  /// Appends each trial to --history and --save-cost-table, and reports
  /// progress every 2 s.
  std::function<void(const tune::Trial &)> trialCallback(const Gemm &gemm);
  /// A replay's result line on stdout.
  void printReplay(const Gemm &gemm, const tune::SearchResult &result) const;
  /// Adds the tiling found (or the default one, when it measured faster) to
  /// the database and rewrites it.
  void record(const Gemm &gemm, const tune::SearchResult &result,
              double defaultSeconds);

  const TuneTarget &target;
  const tune::SpaceOptions &space;
  tune::SearchOptions search;
  TuningDatabase &db;
  const CostTable *replayTable;
  std::unique_ptr<llvm::raw_fd_ostream> history, saveTable;
};
} // namespace

bool Tuner::skip(const GemmKey &key, const std::string &label) {
  if (!replayTable && !force && db.find(key)) {
    ++skipped;
    if (!quiet)
      llvm::errs() << label << ": in the database, skipped\n";
    return true;
  }
  if (key.dtype != "f32" && key.dtype != "bf16") {
    llvm::errs() << "strata-tune: warning: " << label
                 << ": only f32 and bf16 GEMMs are tuned; skipped\n";
    return true;
  }
  // The analytic models and the cost tables (keyed by shape) are the f32
  // GEMMs'.
  if (key.dtype == "bf16" && (!target.measured || replayTable)) {
    llvm::errs() << "strata-tune: warning: " << label
                 << ": bf16 GEMMs are tuned by measuring the bf16 kernel on "
                    "this machine (not with --cost model, a GPU target or "
                    "--cost-table); skipped\n";
    return true;
  }
  return false;
}

void Tuner::prepareCosts(Gemm &gemm, int index) const {
  if (replayTable) {
    auto it = replayTable->find(gemm.problem.str());
    if (it == replayTable->end())
      fail(1, gemm.label + ": cost table '" + costTablePath +
                  "' has no times for this GEMM");
    gemm.replayCosts = &it->second;
  } else if (target.measured) {
    tune::MeasureOptions mo;
    mo.threads = threads;
    mo.repeats = repeats;
    mo.seed = seed + index;
    mo.bf16 = gemm.bf16;
    gemm.measurer = std::make_unique<tune::GemmMeasurer>(gemm.problem, mo);
  }
  gemm.modelThreads = gemm.measurer ? gemm.measurer->threads()
                                    : std::max(1, threads > 0 ? threads : 2);
}

tune::CostFunction Tuner::costFunction(const Gemm &gemm) const {
  return [this, &gemm](const tune::TileState &s) {
    if (target.isGpu)
      return tune::modelCudaSeconds(gemm.problem, gemm.tileSpace.cudaTiling(s),
                                    target.gpu);
    if (gemm.replayCosts) {
      auto it = gemm.replayCosts->find(gemm.tileSpace.key(s));
      if (it == gemm.replayCosts->end())
        fail(1, gemm.label + ": cost table '" + costTablePath +
                    "' has no time for tiling " +
                    tilingText(gemm.tileSpace.key(s)) + " (state " + s.str() +
                    "); measure every legal state with --algorithm "
                    "exhaustive --budget 0 --save-cost-table");
      return it->second;
    }
    GemmTiling t = gemm.tileSpace.cpuTiling(s);
    if (gemm.measurer)
      return gemm.measurer->measure(t);
    return tune::modelCpuSeconds(gemm.problem, t, space.caches,
                                 gemm.modelThreads, target.cpuPeakGflops,
                                 target.cpuBandwidthGBs);
  };
}

double Tuner::defaultTilingSeconds(const Gemm &gemm) const {
  if (target.isGpu || replayTable)
    return -1;
  GemmTiling d = tune::defaultCpuTiling(gemm.bf16);
  if (gemm.measurer)
    return gemm.measurer->measure(d);
  return tune::modelCpuSeconds(gemm.problem, d, space.caches, gemm.modelThreads,
                               target.cpuPeakGflops, target.cpuBandwidthGBs);
}

void Tuner::reportStart(const Gemm &gemm, double defaultSeconds) const {
  if (quiet)
    return;
  const tune::TileSpace &tileSpace = gemm.tileSpace;
  llvm::errs() << gemm.label << ": " << tune::algorithmName(search.algorithm)
               << " over " << tileSpace.size() << " states ("
               << (tileSpace.size() <= kCountLegalLimit
                       ? std::to_string(tileSpace.countLegal())
                       : std::string("?"))
               << " legal)"
               << (defaultSeconds >= 0
                       ? ", default tiling " + ms(defaultSeconds)
                       : std::string())
               << "\n";
}

std::function<void(const tune::Trial &)>
Tuner::trialCallback(const Gemm &gemm) {
  auto lastReport = std::chrono::steady_clock::now();
  return [this, &gemm, lastReport](const tune::Trial &trial) mutable {
    if (history)
      *history << llvm::formatv(
          "{{\"gemm\": \"{0}\", \"algorithm\": \"{1}\", \"seed\": {2}, "
          "\"trial\": {3}, \"seconds\": {4:e}, \"best\": {5:e}, "
          "\"elapsed\": {6:F3}}\n",
          gemm.key.str(), tune::algorithmName(search.algorithm), search.seed,
          trial.index, trial.cost, trial.bestCost, trial.elapsed);
    if (saveTable && !gemm.bf16) {
      *saveTable << gemm.problem.str() << " "
                 << tilingText(gemm.tileSpace.key(trial.state)) << " ";
      if (std::isinf(trial.cost))
        *saveTable << "inf\n";
      else
        *saveTable << llvm::formatv("{0:e}", trial.cost) << "\n";
      // An interrupted exhaustive run keeps what it measured.
      saveTable->flush();
    }
    auto now = std::chrono::steady_clock::now();
    if (quiet || std::chrono::duration<double>(now - lastReport).count() < 2)
      return;
    lastReport = now;
    llvm::errs() << "  trial " << trial.index;
    if (search.maxTrials > 0)
      llvm::errs() << "/" << search.maxTrials;
    llvm::errs() << ", best " << ms(trial.bestCost) << "\n";
  };
}

void Tuner::printReplay(const Gemm &gemm,
                        const tune::SearchResult &result) const {
  llvm::outs() << llvm::formatv(
      "{0} {1} seed={2} trials={3} best={4:e} tiling={5}{6}\n",
      gemm.problem.str(), tune::algorithmName(search.algorithm), search.seed,
      result.trials, result.bestCost,
      tilingText(gemm.tileSpace.key(result.best)),
      result.complete ? " complete" : "");
}

void Tuner::record(const Gemm &gemm, const tune::SearchResult &result,
                   double defaultSeconds) {
  TuningEntry entry;
  entry.key = gemm.key;
  entry.seconds = result.bestCost;
  entry.defaultSeconds = defaultSeconds;
  entry.algorithm = tune::algorithmName(search.algorithm);
  entry.trials = result.trials;
  entry.seed = search.seed;
  if (target.isGpu) {
    tune::CudaTiling t = gemm.tileSpace.cudaTiling(result.best);
    entry.tiling = {{"block_m", t.blockM},
                    {"block_n", t.blockN},
                    {"k_step", t.kStep},
                    {"thread_m", t.threadM},
                    {"thread_n", t.threadN}};
  } else {
    GemmTiling t = gemm.tileSpace.cpuTiling(result.best);
    // The default tiling need not be a state of the space (its blocks need
    // not divide the dimensions); when it measured faster than everything
    // the search found, it is the tiling to keep.
    if (defaultSeconds >= 0 && defaultSeconds < result.bestCost) {
      t = tune::defaultCpuTiling(gemm.bf16);
      entry.seconds = defaultSeconds;
      entry.algorithm += " (default kept)";
    }
    entry.tiling = {
        {"mc", t.mc}, {"nc", t.nc}, {"kc", t.kc}, {"mr", t.mr}, {"nr", t.nr}};
  }
  std::string chosenText;
  for (const auto &[name, value] : entry.tiling)
    chosenText +=
        (chosenText.empty() ? "" : " ") + name + "=" + std::to_string(value);
  db.insert(std::move(entry));
  if (llvm::Error e = writeTuningDatabase(db, dbPath))
    fail(1, llvm::toString(std::move(e)));
  ++tuned;
  if (quiet)
    return;
  double chosen = db.find(gemm.key)->seconds;
  double gflops = gemm.problem.flops() / chosen / 1e9;
  llvm::errs() << "  -> " << chosenText << ": " << ms(chosen)
               << llvm::formatv(" ({0:F1} GFLOP/s", gflops);
  if (defaultSeconds > 0)
    llvm::errs() << llvm::formatv(", {0:F2}x the default's speed",
                                  defaultSeconds / chosen);
  if (chosen != result.bestCost)
    llvm::errs() << ", the default kept";
  llvm::errs() << llvm::formatv("), {0} trials in {1:F1} s\n", result.trials,
                                result.seconds);
}

void Tuner::tuneGemm(const GemmKey &key, int index, size_t count) {
  std::string label =
      llvm::formatv("[{0}/{1}] {2} {3}", index, count, key.dtype, key.str())
          .str();
  if (skip(key, label))
    return;
  Gemm gemm(key, std::move(label), space);
  prepareCosts(gemm, index);
  tune::CostFunction cost = costFunction(gemm);
  double defaultTime = defaultTilingSeconds(gemm);
  reportStart(gemm, defaultTime);
  search.onTrial = trialCallback(gemm);
  tune::SearchResult result = tune::search(gemm.tileSpace, cost, search);
  search.onTrial = nullptr;
  if (!result.found)
    fail(1, gemm.label + ": no legal tiling could be measured");
  if (saveTable)
    saveTable->flush();
  if (replayTable) {
    printReplay(gemm, result);
    ++tuned;
    return;
  }
  record(gemm, result, defaultTime);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  parseCommandLine(argc, argv);
  tune::SearchOptions search = readSearchOptions();
  tune::SpaceOptions space = readSpaceOptions();
  checkCostOptions();
  TuneTarget target = resolveTarget(space);

  MLIRContext ctx;
  ctx.loadDialect<StrataDialect, func::FuncDialect>();
  std::map<GemmKey, int> keys = collectGemms(ctx);
  if (listOnly) {
    listGemms(keys);
    return 0;
  }
  if (!measureTilings.empty()) {
    measureGivenTilings(keys);
    return 0;
  }

  // A replay searches over a cost table instead of measuring and writes no
  // database.
  bool replay = !costTablePath.empty();
  CostTable replayTable;
  if (replay)
    replayTable = loadReplayTable(target);
  TuningDatabase db = replay ? target.header : openDatabase(target.header);

  Tuner tuner(target, space, search, db, replay ? &replayTable : nullptr);
  int index = 0;
  for (const auto &entryOfKeys : keys)
    tuner.tuneGemm(entryOfKeys.first, ++index, keys.size());
  if (!quiet && replay)
    llvm::errs() << "strata-tune: " << tuner.tuned << " replayed over '"
                 << costTablePath << "'\n";
  else if (!quiet)
    llvm::errs() << "strata-tune: " << tuner.tuned << " tuned, "
                 << tuner.skipped << " already in '" << dbPath << "'\n";
  return 0;
}
