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
//
// Collects the distinct GEMMs of the models' matmuls (forward and backward
// of a training step alike; a SHAPE is MxNxK[:bB][:ta][:tb]) and searches the
// tiling space of each (runtime/include/strata-rt/Tune.h). On a CPU target
// the cost of a tiling is the measured time of the runtime's matmul kernel
// on this machine; a GPU target uses the analytic model of Strata's CUDA GEMM.
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

#include "strata-rt/Tune.h"

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

/// Spaces up to this many states have their legal states counted for the
/// progress report (about a second at the limit).
static constexpr uint64_t kCountLegalLimit = 5000000;

[[noreturn]] static void fail(int code, const llvm::Twine &message) {
  llvm::errs() << "strata-tune: error: " << message << "\n";
  std::exit(code);
}

/// Adds the GEMMs of every matmul in `path` to `keys`.
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
  module->walk([&](MatmulOp op) { ++keys[getGemmKey(op)]; });
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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
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
    return 2;
  if (inputs.empty())
    fail(2, "no model or GEMM shape given");

  // Options.
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
  tune::SpaceOptions space;
  {
    SmallVector<StringRef> parts;
    StringRef(levels).split(parts, ',');
    int values[3];
    if (parts.size() != 3 || parts[0].getAsInteger(10, values[0]) ||
        parts[1].getAsInteger(10, values[1]) ||
        parts[2].getAsInteger(10, values[2]) || values[0] < 2 ||
        values[1] < 2 || values[2] < 1 || values[0] > 6 || values[1] > 6 ||
        values[2] > 6)
      fail(2, "invalid --levels '" + levels +
                  "' (M,N,K: 2-6 levels for m and n, 1-6 for k)");
    space.levelsM = values[0];
    space.levelsN = values[1];
    space.levelsK = values[2];
  }
  if (costKind != "measured" && costKind != "model")
    fail(2, "--cost must be 'measured' or 'model'");
  if (repeats < 1)
    fail(2, "--repeats must be at least 1");

  // Target.
  TuningDatabase fresh;
  fresh.target = "cpu";
  fresh.kind = "cpu";
  tune::GpuModel gpu;
  double cpuPeakGflops = 100, cpuBandwidth = 20;
  if (targetName != "cpu") {
    llvm::Expected<TargetDescription> target =
        loadTargetDescription(targetName, getDefaultTargetSearchPath());
    if (!target)
      fail(3, llvm::toString(target.takeError()));
    fresh.target = target->name;
    fresh.kind = target->device.kind == "gpu" ? "gpu" : "cpu";
    if (fresh.kind == "gpu") {
      gpu.peakTflops = target->peakFlops("f32") / 1e12;
      gpu.bandwidthGBs = target->device.memoryBandwidthGBps;
      StringRef name = target->device.name;
      gpu.sms = name.contains("H100") ? 132 : name.contains("V100") ? 80 : 108;
    } else {
      cpuPeakGflops = target->peakFlops("f32") / 1e9;
      cpuBandwidth = target->device.memoryBandwidthGBps;
    }
  }
  bool gpuTarget = fresh.kind == "gpu";
  space.target = gpuTarget ? tune::TileTarget::Cuda : tune::TileTarget::Cpu;
  space.caches = tune::CacheSizes::detect();
  bool measured = !gpuTarget && costKind == "measured";
  fresh.cost = measured ? "measured" : "model";
  fresh.kernel =
      gpuTarget ? tune::kCudaGemmModelVersion : tune::kCpuGemmKernelVersion;
  fresh.machine = gpuTarget  ? "analytic model of " + fresh.target
                  : measured ? tune::machineIdentity(threads)
                             : "analytic model of " + fresh.target;

  // GEMMs.
  MLIRContext ctx;
  ctx.loadDialect<StrataDialect, func::FuncDialect>();
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
    ++keys[gemmKeyFor("f32", p.batch, p.m, p.n, p.k, p.transA, p.transB,
                      /*rhsIsMatrix=*/false)];
  }
  if (listOnly) {
    for (const auto &[key, count] : keys)
      llvm::outs() << key.dtype << " " << key.str() << " (" << count
                   << (count == 1 ? " matmul)\n" : " matmuls)\n");
    return 0;
  }

  // Side-by-side timing of given tilings (comparing the results of
  // different searches under the same machine load).
  if (!measureTilings.empty()) {
    std::vector<GemmTiling> tilings;
    for (const std::string &text : measureTilings) {
      GemmTiling t;
      SmallVector<StringRef> parts;
      StringRef(text).split(parts, ',');
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
      tune::GemmMeasurer measurer(toProblem(entryOfKeys.first), mo);
      std::vector<double> best(tilings.size(), HUGE_VAL);
      for (int r = 0; r < std::max(1, rounds.getValue()); ++r)
        for (size_t i = 0; i < tilings.size(); ++i)
          best[i] = std::min(best[i], measurer.measure(tilings[i]));
      for (size_t i = 0; i < tilings.size(); ++i)
        llvm::outs() << entryOfKeys.first.str() << " " << measureTilings[i]
                     << " " << llvm::formatv("{0:e}", best[i]) << "\n";
    }
    return 0;
  }

  // Replay over a cost table instead of measuring (no database).
  bool replay = !costTablePath.empty();
  CostTable costTable;
  if (replay) {
    if (!saveCostTablePath.empty())
      fail(2, "--cost-table replays a table; it cannot be combined with "
              "--save-cost-table");
    if (gpuTarget || costKind != "measured")
      fail(2, "--cost-table replays measured CPU times; it cannot be "
              "combined with a GPU target or --cost model");
    costTable = loadCostTable(costTablePath);
  }

  // Database.
  TuningDatabase db = fresh;
  if (!replay && llvm::sys::fs::exists(dbPath)) {
    llvm::Expected<TuningDatabase> loaded = loadTuningDatabase(dbPath);
    if (!loaded)
      fail(3, "corrupt tuning database: " + llvm::toString(loaded.takeError()) +
                  " (fix or remove the file)");
    if (loaded->target != fresh.target || loaded->kind != fresh.kind ||
        loaded->machine != fresh.machine || loaded->kernel != fresh.kernel ||
        loaded->cost != fresh.cost)
      fail(3, "tuning database '" + dbPath + "' holds target '" +
                  loaded->target + "' on '" + loaded->machine + "' (" +
                  loaded->kernel + ", " + loaded->cost + "), not target '" +
                  fresh.target + "' on '" + fresh.machine + "' (" +
                  fresh.kernel + ", " + fresh.cost + "); use another --db");
    db = std::move(*loaded);
  }

  std::unique_ptr<llvm::raw_fd_ostream> history;
  if (!historyPath.empty()) {
    std::error_code ec;
    history = std::make_unique<llvm::raw_fd_ostream>(
        historyPath, ec, llvm::sys::fs::OF_Append | llvm::sys::fs::OF_Text);
    if (ec)
      fail(1, "cannot write '" + historyPath + "': " + ec.message());
  }
  std::unique_ptr<llvm::raw_fd_ostream> saveTable;
  if (!saveCostTablePath.empty()) {
    std::error_code ec;
    saveTable = std::make_unique<llvm::raw_fd_ostream>(
        saveCostTablePath, ec,
        llvm::sys::fs::OF_Append | llvm::sys::fs::OF_Text);
    if (ec)
      fail(1, "cannot write '" + saveCostTablePath + "': " + ec.message());
  }

  int index = 0, tuned = 0, skipped = 0;
  for (const auto &entryOfKeys : keys) {
    const GemmKey &key = entryOfKeys.first;
    ++index;
    std::string label = llvm::formatv("[{0}/{1}] {2} {3}", index, keys.size(),
                                      key.dtype, key.str())
                            .str();
    if (!replay && !force && db.find(key)) {
      ++skipped;
      if (!quiet)
        llvm::errs() << label << ": in the database, skipped\n";
      continue;
    }
    if (key.dtype != "f32" && measured) {
      llvm::errs() << "strata-tune: warning: " << label
                   << ": only f32 GEMMs can be measured; skipped\n";
      continue;
    }
    tune::GemmProblem problem = toProblem(key);
    tune::TileSpace tileSpace(problem, space);
    std::unique_ptr<tune::GemmMeasurer> measurer;
    const std::map<std::array<int64_t, 5>, double> *replayCosts = nullptr;
    if (replay) {
      auto it = costTable.find(problem.str());
      if (it == costTable.end())
        fail(1, label + ": cost table '" + costTablePath +
                    "' has no times for this GEMM");
      replayCosts = &it->second;
    } else if (measured) {
      tune::MeasureOptions mo;
      mo.threads = threads;
      mo.repeats = repeats;
      mo.seed = seed + index;
      measurer = std::make_unique<tune::GemmMeasurer>(problem, mo);
    }
    int modelThreads =
        measurer ? measurer->threads() : std::max(1, threads > 0 ? threads : 2);
    tune::CostFunction cost = [&](const tune::TileState &s) {
      if (gpuTarget)
        return tune::modelCudaSeconds(problem, tileSpace.cudaTiling(s), gpu);
      if (replayCosts) {
        auto it = replayCosts->find(tileSpace.key(s));
        if (it == replayCosts->end())
          fail(1, label + ": cost table '" + costTablePath +
                      "' has no time for tiling " +
                      tilingText(tileSpace.key(s)) + " (state " + s.str() +
                      "); measure every legal state with --algorithm "
                      "exhaustive --budget 0 --save-cost-table");
        return it->second;
      }
      GemmTiling t = tileSpace.cpuTiling(s);
      if (measurer)
        return measurer->measure(t);
      return tune::modelCpuSeconds(problem, t, space.caches, modelThreads,
                                   cpuPeakGflops, cpuBandwidth);
    };
    double defaultSeconds = -1;
    if (!gpuTarget && !replay) {
      GemmTiling d;
      defaultSeconds =
          measurer
              ? measurer->measure(d)
              : tune::modelCpuSeconds(problem, d, space.caches, modelThreads,
                                      cpuPeakGflops, cpuBandwidth);
    }
    if (!quiet)
      llvm::errs() << label << ": " << tune::algorithmName(search.algorithm)
                   << " over " << tileSpace.size() << " states ("
                   << (tileSpace.size() <= kCountLegalLimit
                           ? std::to_string(tileSpace.countLegal())
                           : std::string("?"))
                   << " legal)"
                   << (defaultSeconds >= 0
                           ? ", default tiling " + ms(defaultSeconds)
                           : std::string())
                   << "\n";
    auto lastReport = std::chrono::steady_clock::now();
    search.onTrial = [&](const tune::Trial &trial) {
      if (history)
        *history << llvm::formatv(
            "{{\"gemm\": \"{0}\", \"algorithm\": \"{1}\", \"seed\": {2}, "
            "\"trial\": {3}, \"seconds\": {4:e}, \"best\": {5:e}, "
            "\"elapsed\": {6:F3}}\n",
            key.str(), tune::algorithmName(search.algorithm), search.seed,
            trial.index, trial.cost, trial.bestCost, trial.elapsed);
      if (saveTable) {
        *saveTable << problem.str() << " "
                   << tilingText(tileSpace.key(trial.state)) << " ";
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
    tune::SearchResult result = tune::search(tileSpace, cost, search);
    if (!result.found)
      fail(1, label + ": no legal tiling could be measured");
    if (saveTable)
      saveTable->flush();
    if (replay) {
      llvm::outs() << llvm::formatv(
          "{0} {1} seed={2} trials={3} best={4:e} tiling={5}{6}\n",
          problem.str(), tune::algorithmName(search.algorithm), search.seed,
          result.trials, result.bestCost,
          tilingText(tileSpace.key(result.best)),
          result.complete ? " complete" : "");
      ++tuned;
      continue;
    }

    TuningEntry entry;
    entry.key = key;
    entry.seconds = result.bestCost;
    entry.defaultSeconds = defaultSeconds;
    entry.algorithm = tune::algorithmName(search.algorithm);
    entry.trials = result.trials;
    entry.seed = search.seed;
    std::string tilingText;
    if (gpuTarget) {
      tune::CudaTiling t = tileSpace.cudaTiling(result.best);
      entry.tiling = {{"block_m", t.blockM},
                      {"block_n", t.blockN},
                      {"k_step", t.kStep},
                      {"thread_m", t.threadM},
                      {"thread_n", t.threadN}};
    } else {
      GemmTiling t = tileSpace.cpuTiling(result.best);
      // The default tiling need not be a state of the space (its blocks need
      // not divide the dimensions); when it measured faster than everything
      // the search found, it is the tiling to keep.
      if (defaultSeconds >= 0 && defaultSeconds < result.bestCost) {
        t = GemmTiling();
        entry.seconds = defaultSeconds;
        entry.algorithm += " (default kept)";
      }
      entry.tiling = {
          {"mc", t.mc}, {"nc", t.nc}, {"kc", t.kc}, {"mr", t.mr}, {"nr", t.nr}};
    }
    for (const auto &[name, value] : entry.tiling)
      tilingText +=
          (tilingText.empty() ? "" : " ") + name + "=" + std::to_string(value);
    db.insert(std::move(entry));
    if (llvm::Error e = writeTuningDatabase(db, dbPath))
      fail(1, llvm::toString(std::move(e)));
    ++tuned;
    double chosen = db.find(key)->seconds;
    double gflops = problem.flops() / chosen / 1e9;
    if (!quiet) {
      llvm::errs() << "  -> " << tilingText << ": " << ms(chosen)
                   << llvm::formatv(" ({0:F1} GFLOP/s", gflops);
      if (defaultSeconds > 0)
        llvm::errs() << llvm::formatv(", {0:F2}x the default's speed",
                                      defaultSeconds / chosen);
      if (chosen != result.bestCost)
        llvm::errs() << ", the default kept";
      llvm::errs() << llvm::formatv("), {0} trials in {1:F1} s\n",
                                    result.trials, result.seconds);
    }
  }
  if (!quiet && replay)
    llvm::errs() << "strata-tune: " << tuned << " replayed over '"
                 << costTablePath << "'\n";
  else if (!quiet)
    llvm::errs() << "strata-tune: " << tuned << " tuned, " << skipped
                 << " already in '" << dbPath << "'\n";
  return 0;
}
