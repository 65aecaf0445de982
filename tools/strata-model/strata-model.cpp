//===- strata-model.cpp - Emit built-in models as strata IR ---------------===//
//
//   strata-model mlp   [--batch --inputs --hidden --layers --classes]
//   strata-model gpt   [--preset NAME] [--layers --hidden --heads --seq
//                       --vocab --positions --batch --untie-embeddings]
//   strata-model cnn-small | vgg16 | resnet18 | resnet50 | resnet --depth 18|50
//                      [--batch --image-size --channels --classes]
//                      [--batch-norm (ResNets: torchvision's, with batch norm)]
//   common: --dtype f32|bf16, -o FILE
//
// Prints the forward graph and loss as textual MLIR, preceded by a comment
// line with the parameter count. Invalid sizes exit with code 2.
//
//===----------------------------------------------------------------------===//

#include "strata/Models/Models.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::strata;
namespace cl = llvm::cl;

static cl::OptionCategory category("strata-model options");

static cl::opt<std::string>
    family(cl::Positional,
           cl::desc("<mlp|gpt|cnn-small|vgg16|resnet18|resnet50|resnet>"),
           cl::cat(category));
static cl::opt<std::string> outputFile("o",
                                       cl::desc("Output file (- for stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string> preset("preset", cl::desc("GPT preset name"),
                                   cl::cat(category));
static cl::opt<bool> listPresets("list-presets",
                                 cl::desc("List the GPT presets and exit"),
                                 cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::desc("f32 or bf16"),
                                  cl::init("f32"), cl::cat(category));
static cl::opt<bool>
    batchNorm("batch-norm",
              cl::desc("resnet: batch normalisation after every convolution "
                       "(torchvision's ResNet; convolutions without bias)"),
              cl::cat(category));
static cl::opt<bool> untie("untie-embeddings",
                           cl::desc("GPT: separate output projection"),
                           cl::cat(category));

#define SIZE_OPTION(var, flag, help)                                           \
  static cl::opt<int64_t> var(flag, cl::desc(help), cl::cat(category))
SIZE_OPTION(batch, "batch", "Batch size");
SIZE_OPTION(inputs, "inputs", "MLP: input features");
SIZE_OPTION(hidden, "hidden", "MLP/GPT: hidden width");
SIZE_OPTION(layers, "layers", "MLP: linear layers; GPT: decoder blocks");
SIZE_OPTION(classes, "classes", "MLP/CNN: output classes");
SIZE_OPTION(heads, "heads", "GPT: attention heads");
SIZE_OPTION(seq, "seq", "GPT: sequence length");
SIZE_OPTION(vocab, "vocab", "GPT: vocabulary size");
SIZE_OPTION(positions, "positions", "GPT: position-embedding rows");
SIZE_OPTION(imageSize, "image-size", "CNN: image height and width");
SIZE_OPTION(channels, "channels", "CNN: input channels");
SIZE_OPTION(depth, "depth", "resnet: 18 or 50");
#undef SIZE_OPTION

/// Exit code for invalid options and sizes.
static constexpr int kUsageError = 2;

static int fail(const Twine &message) {
  llvm::errs() << "strata-model: error: " << message << "\n";
  return kUsageError;
}

/// Overwrites `field` with the option's value when the user gave it.
static void take(cl::opt<int64_t> &option, int64_t &field) {
  if (option.getNumOccurrences())
    field = option;
}

/// Rejects options given for a family they do not apply to.
static llvm::Error
checkApplicable(StringRef familyName,
                std::initializer_list<cl::opt<int64_t> *> allowed) {
  cl::opt<int64_t> *all[] = {&batch,     &inputs,    &hidden,   &layers,
                             &classes,   &heads,     &seq,      &vocab,
                             &positions, &imageSize, &channels, &depth};
  for (cl::opt<int64_t> *option : all)
    if (option->getNumOccurrences() && !llvm::is_contained(allowed, option))
      return llvm::createStringError("--%s does not apply to '%s'",
                                     option->ArgStr.str().c_str(),
                                     familyName.str().c_str());
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv, "Emit a built-in model as strata IR\n", &llvm::errs()))
    return kUsageError;

  if (listPresets) {
    for (const std::string &name : getGPTPresetNames()) {
      GPTConfig c = *getGPTPreset(name);
      llvm::outs() << llvm::format(
          "%-12s layers=%lld hidden=%lld heads=%lld seq=%lld vocab=%lld\n",
          name.c_str(), (long long)c.layers, (long long)c.hidden,
          (long long)c.heads, (long long)c.seq, (long long)c.vocab);
    }
    return 0;
  }
  if (family.empty())
    return fail("missing model family (mlp, gpt, cnn-small, vgg16, resnet18, "
                "resnet50)");
  if (dtype != "f32" && dtype != "bf16")
    return fail("--dtype must be f32 or bf16, got '" + dtype + "'");
  bool bf16 = dtype == "bf16";
  if (batchNorm && !StringRef(family).starts_with("resnet"))
    return fail("--batch-norm applies to ResNets only");
  if (!preset.empty() && family != "gpt")
    return fail("--preset applies to 'gpt' only");
  if (untie && family != "gpt")
    return fail("--untie-embeddings applies to 'gpt' only");

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  llvm::Error err = llvm::Error::success();
  if (family == "mlp") {
    MLPConfig c;
    c.bf16 = bf16;
    err =
        checkApplicable(family, {&batch, &inputs, &hidden, &layers, &classes});
    take(batch, c.batch);
    take(inputs, c.inputs);
    take(hidden, c.hidden);
    take(layers, c.layers);
    take(classes, c.classes);
    if (!err)
      err = validateMLP(c);
    if (!err)
      module = buildMLP(&context, c);
  } else if (family == "gpt") {
    GPTConfig c;
    if (!preset.empty()) {
      std::optional<GPTConfig> p = getGPTPreset(preset);
      if (!p)
        return fail("unknown preset '" + preset +
                    "' (known: " + llvm::join(getGPTPresetNames(), ", ") + ")");
      c = *p;
    }
    c.bf16 = bf16;
    c.tieEmbeddings = !untie;
    err = checkApplicable(
        family, {&batch, &hidden, &layers, &heads, &seq, &vocab, &positions});
    take(batch, c.batch);
    take(hidden, c.hidden);
    take(layers, c.layers);
    take(heads, c.heads);
    take(seq, c.seq);
    take(vocab, c.vocab);
    take(positions, c.positions);
    // A longer sequence than the preset's table grows the table with it.
    if (seq.getNumOccurrences() && !positions.getNumOccurrences() &&
        c.positions < c.seq)
      c.positions = c.seq;
    if (!err)
      err = validateGPT(c);
    if (!err)
      module = buildGPT(&context, c);
  } else if (family == "vgg16" || family == "resnet18" ||
             family == "resnet50" || family == "resnet" ||
             family == "cnn-small") {
    CNNConfig c;
    c.bf16 = bf16;
    err = checkApplicable(family,
                          {&batch, &imageSize, &channels, &classes, &depth});
    if (!err && depth.getNumOccurrences() && family != "resnet")
      err = llvm::createStringError("--depth applies to 'resnet' only");
    if (family == "vgg16") {
      c.kind = CNNKind::VGG16;
    } else if (family == "cnn-small") {
      c.kind = CNNKind::Small;
    } else if (family == "resnet18") {
      c.kind = CNNKind::ResNet18;
    } else if (family == "resnet50") {
      c.kind = CNNKind::ResNet50;
    } else if (!depth.getNumOccurrences() || depth == 18) {
      c.kind = CNNKind::ResNet18;
    } else if (depth == 50) {
      c.kind = CNNKind::ResNet50;
    } else if (!err) {
      err = llvm::createStringError("--depth must be 18 or 50, got %lld",
                                    static_cast<long long>(depth));
    }
    c.batchNorm = batchNorm;
    take(batch, c.batch);
    take(imageSize, c.imageSize);
    take(channels, c.channels);
    take(classes, c.classes);
    if (!err)
      err = validateCNN(c);
    if (!err)
      module = buildCNN(&context, c);
  } else {
    return fail("unknown model family '" + family +
                "' (expected mlp, gpt, cnn-small, vgg16, resnet18, resnet50 or "
                "resnet)");
  }
  if (err)
    return fail(llvm::toString(std::move(err)));

  // Options within their bounds can still describe a tensor over the
  // dialect's size limit; the verifier names it.
  std::string verifyError;
  LogicalResult verified = success();
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (verifyError.empty())
        verifyError = diag.str();
      return success();
    });
    verified = mlir::verify(*module);
  }
  if (failed(verified))
    return fail("the model does not fit Strata's limits: " + verifyError);

  ModelSummary summary = summarizeModel(*module);
  std::string command = family;
  if (!preset.empty())
    command += " --preset " + preset;
  // Written through a temporary file and renamed, so a failed run never
  // leaves a partial output behind.
  if (llvm::Error writeErr =
          llvm::writeToOutput(outputFile, [&](llvm::raw_ostream &os) {
            os << "// strata-model " << command << ": " << summary.parameters
               << " parameters in " << summary.parameterTensors << " tensors ("
               << summary.parameterBytes << " bytes), " << summary.layers
               << " layers, " << summary.ops << " ops\n";
            module->print(os);
            return llvm::Error::success();
          })) {
    llvm::errs() << "strata-model: error: cannot write '" << outputFile
                 << "': " << llvm::toString(std::move(writeErr)) << "\n";
    return 1;
  }
  return 0;
}
