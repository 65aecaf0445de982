//===- strata-partition.cpp - Partition a layer profile into stages -------===//
//
// Runs the pipeline partitioner of --strata-partition-pipeline on a profile
// alone, without IR: a Strata profile (.json) or PipeDream's graph.txt.
//
//   strata-partition vgg16/graph.txt --target v100-pcie-4x-4node
//   strata-partition profile.json --target h100-sxm-8x --devices 8 --json
//   strata-partition graph.txt --emit-profile -o profile.json
//   strata-partition graph.txt --target t.json --evaluate 13-2-1
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PipelinePartition.h"
#include "strata/Analysis/PipelineProfile.h"
#include "strata/Target/TargetDescription.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace llvm;
using namespace mlir::strata;

static cl::OptionCategory category("strata-partition options");
static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<profile.json | graph.txt>"),
                                  cl::cat(category));
static cl::opt<std::string>
    targetName("target", cl::desc("Target description: a name or a JSON file"),
               cl::cat(category));
static cl::opt<int64_t> devices("devices",
                                cl::desc("Devices (0: all of the target)"),
                                cl::init(0), cl::cat(category));
static cl::opt<std::string> stages("stages", cl::desc("Stages, or auto"),
                                   cl::init("auto"), cl::cat(category));
static cl::opt<int64_t> replicas("replicas",
                                 cl::desc("Replicas per stage (0: chosen)"),
                                 cl::init(0), cl::cat(category));
static cl::opt<bool> straight("straight", cl::desc("One device per stage"),
                              cl::cat(category));
static cl::opt<bool>
    recompute("recompute",
              cl::desc("Recompute activations: a stage keeps only its input "
                       "per micro-batch in flight, at a second forward pass"),
              cl::cat(category));
static cl::opt<std::string>
    objective("objective", cl::desc("throughput, balance or communication"),
              cl::init("throughput"), cl::cat(category));
static cl::opt<int64_t>
    microBatches("micro-batches", cl::desc("Micro-batches (0: 4 per device)"),
                 cl::init(0), cl::cat(category));
static cl::opt<std::string> schedule(
    "schedule",
    cl::desc("gpipe, 1f1b, interleaved, zb-h1, or the asynchronous "
             "pipedream and 2bw (priced without a flush; "
             "--strata-schedule-pipeline runs them, each step drained)"),
    cl::init("1f1b"), cl::cat(category));
static cl::opt<std::string> costModel(
    "cost-model",
    cl::desc("Cost terms: strata (default), pipedream (PipeDream's "
             "optimizer's terms), or key=value overrides: allreduce=F, "
             "shares=whole|even, transfers=per-cut|per-replica|pipedream|none, "
             "replicas=nodes|all"),
    cl::init("strata"), cl::cat(category));
static cl::opt<double>
    memoryBytes("memory-bytes",
                cl::desc("Memory per device in bytes (0: the target's)"),
                cl::init(0), cl::cat(category));
static cl::opt<bool> jsonOutput("json", cl::desc("Print the report as JSON"),
                                cl::cat(category));
static cl::opt<bool>
    emitProfile("emit-profile",
                cl::desc("Write the input as a Strata profile and exit"),
                cl::cat(category));
static cl::opt<bool> timing("time",
                            cl::desc("Print the partitioning time to stderr"),
                            cl::cat(category));
static cl::opt<bool> reference(
    "reference",
    cl::desc("Use the exhaustive DP for every objective (the searches' "
             "reference; slow on large device counts)"),
    cl::cat(category));
static cl::opt<std::string> evaluate(
    "evaluate",
    cl::desc("Price this partition instead of searching: FIRST..LAST:REPLICAS "
             "per stage, comma-separated, in layer positions (e.g. "
             "0..11:3,12..40:1; a stage of several ranges joins them with "
             "'+': 0..3+6..7:2,4..5+8..9:1); or replicas per stage R0-R1-... "
             "(PipeDream's 13-2-1), whose stage boundaries are the model's "
             "best for them; or a file holding either"),
    cl::cat(category));
static cl::opt<std::string> cuts(
    "cuts",
    cl::desc("Cuts between stages: down-sets (any set of layers holding the "
             "producers of what it reads; the default) or prefixes (stages "
             "contiguous in the input's layer order)"),
    cl::init("down-sets"), cl::cat(category));
static cl::opt<int64_t> maxDownSets(
    "max-down-sets",
    cl::desc("Search prefixes instead when the layer DAG has more down-sets "
             "(at most 65535)"),
    cl::init(20000), cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file"), cl::init("-"),
                                   cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "strata-partition") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "Partition a layer profile into pipeline "
                              "stages x replicas\n");
  Expected<LayerGraph> graph = loadLayerGraph(input);
  if (!graph)
    return fail(toString(graph.takeError()));

  auto write = [&](function_ref<void(raw_ostream &)> body) {
    if (Error e = writeToOutput(output, [&](raw_ostream &os) {
          body(os);
          return Error::success();
        }))
      return fail(toString(std::move(e)));
    return 0;
  };
  if (emitProfile)
    return write([&](raw_ostream &os) {
      os << formatv("{0:2}", layerGraphToProfile(*graph)) << "\n";
    });

  if (targetName.empty())
    return fail("--target is required");
  Expected<TargetDescription> target =
      loadTargetDescription(targetName, getDefaultTargetSearchPath());
  if (!target)
    return fail(toString(target.takeError()));

  PartitionOptions options;
  if (!parseObjective(objective, options.objective))
    return fail("unknown objective '" + objective + "'");
  if (!parseSchedule(schedule, options.schedule))
    return fail("unknown schedule '" + schedule + "'");
  if (std::string error; !parseCostTerms(costModel, options.terms, error))
    return fail("--cost-model: " + error);
  if (stages != "auto" && (StringRef(stages).getAsInteger(10, options.stages) ||
                           options.stages < 1))
    return fail("--stages must be auto or a positive number");
  if (cuts != "down-sets" && cuts != "prefixes")
    return fail("--cuts must be down-sets or prefixes");
  options.cuts = cuts == "down-sets" ? CutSpace::DownSets : CutSpace::Prefixes;
  if (maxDownSets < 1 || maxDownSets > 65535)
    return fail("--max-down-sets must be in 1..65535");
  options.maxDownSets = maxDownSets;
  options.devices = devices;
  options.replicas = replicas;
  options.straight = straight;
  options.recompute = recompute;
  options.microBatches = microBatches;
  options.memoryBytes = memoryBytes;

  auto start = std::chrono::steady_clock::now();
  PartitionTopology topology = PartitionTopology::fromTarget(*target);
  PartitionResult result;
  if (!evaluate.empty()) {
    std::string spec = evaluate;
    if (sys::fs::is_regular_file(spec)) {
      ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(spec);
      if (!file)
        return fail("cannot read '" + spec + "': " + file.getError().message());
      spec = (*file)->getBuffer().trim().str();
    }
    result = evaluateGivenPartition(*graph, topology, options, spec);
  } else {
    result = reference ? mlir::strata::detail::partitionPipelineReference(
                             *graph, topology, options)
                       : partitionPipeline(*graph, topology, options);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (timing)
    errs() << formatv("partition time: {0:f4} s\n", seconds);
  if (!result.ok())
    return fail(result.error);
  return write([&](raw_ostream &os) {
    if (jsonOutput)
      os << formatv("{0:2}", partitionReportToJSON(*graph, result)) << "\n";
    else
      printPartitionReport(os, *graph, result);
  });
}
