//===- FuzzIR.cpp - Fuzz the parser, verifier and every pass --------------===//
//
// libFuzzer target `strata-fuzz-ir`. The first byte of an input picks a pass
// pipeline of strata-opt (fixed, sane options; see kPipelines), the rest is
// MLIR text with the strata and func dialects registered. The text is parsed
// and verified, the pipeline runs (with the verifier after every pass), and
// pipelines that end in a plan export it and load the result with the
// runtime's plan loader: a plan the compiler exports must be one the runtime
// accepts (but for kKnownRefusals), and a rejected export aborts like a
// crash.
//
// Diagnostics are swallowed; the test passes' printouts go to /dev/null.
// Inputs over kMaxInputBytes are skipped so that a pass cannot be driven into
// work proportional to a huge module.
//
//===----------------------------------------------------------------------===//

#include "strata/Conversion/Plan.h"
#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Transforms/Passes.h"

#include "TestPasses.h"

#include "strata-rt/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>

using namespace mlir;

namespace {
/// Pipelines (the pass list of strata-opt); `exports` lowers and exports a
/// plan after them.
struct Pipeline {
  const char *passes;
  bool exports;
};
} // namespace

static const Pipeline kPipelines[] = {
    {"", false},
    {"strata-annotate-costs{target=cpu-local}", false},
    {"strata-annotate-costs{target=h100-sxm-8x}", false},
    {"strata-autodiff", false},
    {"strata-autodiff{optimizer=sgd lr=0.1 momentum=0.9}", false},
    {"strata-autodiff{optimizer=adam weight-decay=0.01}", false},
    {"strata-data-parallel{replicas=2}", false},
    {"strata-insert-grad-sync{target=cpu-local}", false},
    {"strata-insert-grad-sync{bucket-bytes=4096 replicas=2}", false},
    {"strata-insert-grad-sync{bucket-bytes=4096 replicas=2 accumulate=host "
     "chunk-bytes=1024}",
     false},
    {"strata-insert-grad-sync{bucket-bytes=4096 replicas=2 staleness=1}",
     false},
    {"strata-partition-pipeline{target=cpu-local devices=2 micro-batches=2}",
     false},
    {"strata-partition-pipeline{target=v100-pcie-4x devices=4 stages=auto "
     "objective=balance micro-batches=4 schedule=gpipe}",
     false},
    {"strata-schedule-pipeline{stages=2 micro-batches=2 schedule=1f1b}", false},
    {"strata-schedule-pipeline{stages=2 micro-batches=2 schedule=gpipe}",
     false},
    {"strata-schedule-pipeline{stages=2 micro-batches=2 schedule=zb-h1}",
     false},
    {"strata-schedule-pipeline{stages=2 micro-batches=4 schedule=interleaved "
     "virtual=2}",
     false},
    {"strata-tile-gemm{fallback=model}", false},
    {"test-strata-print-costs", false},
    {"test-strata-print-saved", false},
    {"strata-lower-to-plan", true},
    {"strata-autodiff,strata-lower-to-plan", true},
    {"strata-autodiff,strata-data-parallel{replicas=2},"
     "strata-insert-grad-sync{bucket-bytes=4096},strata-lower-to-plan",
     true},
    {"strata-autodiff,strata-partition-pipeline{target=cpu-local devices=2 "
     "stages=2 micro-batches=2},strata-schedule-pipeline{micro-batches=2 "
     "schedule=1f1b},strata-lower-to-plan",
     true},
    {"strata-autodiff,strata-tile-gemm{fallback=model},strata-lower-to-plan",
     true},
    {"strata-compress-activations{format=bfp:m=4,block=16 min-elements=8}",
     false},
    {"strata-autodiff,strata-compress-activations{format=auto "
     "budget=0.05},strata-plan-buffers,strata-lower-to-plan",
     true},
    // A pipeline that carries micro-batches over between steps.
    {"strata-autodiff{optimizer=adam},strata-schedule-pipeline{stages=2 "
     "micro-batches=2 schedule=pipedream},strata-plan-buffers,"
     "strata-lower-to-plan",
     true},
    {"strata-schedule-pipeline{stages=2 micro-batches=2 schedule=2bw}", false},
};
static constexpr size_t kNumPipelines =
    sizeof(kPipelines) / sizeof(*kPipelines);
static constexpr size_t kMaxInputBytes = 32 * 1024;

/// Refusals by the runtime of an exported plan that are expected, or known
/// compiler bugs not fixed yet (each with its reproducer in
/// fuzz/crashes/ir/; remove the entry with the fix so that the fuzzer
/// guards it).
static const char *const kKnownRefusals[] = {
    // The CPU runtime computes in f32 and i32 only.
    "unknown dtype",
};

static bool isKnownRefusal(const std::string &message) {
  for (const char *known : kKnownRefusals)
    if (message.find(known) != std::string::npos)
      return true;
  return false;
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mlir::strata::registerStrataPasses();
  mlir::strata::test::registerStrataTestPasses();
  // The test passes print to stdout; libFuzzer reports on stderr.
  int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > kMaxInputBytes)
    return -1;
  const Pipeline &pipeline = kPipelines[data[0] % kNumPipelines];
  // A copy, for its terminating NUL: MLIR's lexer reads one character past
  // the end of the buffer (where a MemoryBuffer has its NUL), which a
  // libFuzzer input does not have.
  std::string text(reinterpret_cast<const char *>(data + 1), size - 1);

  DialectRegistry registry;
  registry.insert<mlir::strata::StrataDialect, func::FuncDialect>();
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });

  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!module)
    return 0;

  PassManager pm(&context);
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (failed(parsePassPipeline(pipeline.passes, pm, errorStream))) {
    llvm::errs() << "strata-fuzz-ir: bad pipeline '" << pipeline.passes
                 << "': " << error << "\n";
    std::abort();
  }
  if (failed(pm.run(*module)) || !pipeline.exports)
    return 0;

  std::string planText;
  llvm::raw_string_ostream os(planText);
  if (failed(mlir::strata::exportPlan(*module, os)))
    return 0;
  os.flush();
  ::strata::rt::Plan plan;
  ::strata::rt::Status status =
      ::strata::rt::parsePlan(planText, "exported.plan.json", plan);
  if (!status.ok() && !isKnownRefusal(status.message())) {
    llvm::errs() << "strata-fuzz-ir: the runtime rejects an exported plan: "
                 << status.message() << "\n";
    std::abort();
  }
  return 0;
}
