//===- Models.h - Built-in model generators ---------------------*- C++ -*-===//
//
// Generators for the model families Strata supports. Each emits one
// `func.func` holding the forward graph and the loss, with parameters and data
// inputs marked (`strata.param`, `strata.input`) and every op tagged with its
// layer (`strata.layer`). Configurations are validated first: `validate*`
// returns an error naming the offending option, and `build*` must only be
// called on a configuration that validated.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_MODELS_MODELS_H
#define STRATA_MODELS_MODELS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::strata {

/// Upper bounds of the generators' options, checked by `validate*`: at most
/// `kMaxModelLayers` layers (MLP) or decoder blocks (GPT), and every other
/// size (batch, widths, sequence, vocabulary, image size, channels, classes)
/// at most `kMaxModelDim`. A model within them may still hold a tensor over
/// the dialect's 2^48-byte limit, which the verifier then reports.
constexpr int64_t kMaxModelLayers = 4096;
constexpr int64_t kMaxModelDim = (int64_t(1) << 31) - 1;

/// Checks `1 <= value <= max` for the generator option `--name`.
llvm::Error checkModelSize(llvm::StringRef name, int64_t value, int64_t max);

/// A multi-layer perceptron classifier: `layers` linear layers (the hidden
/// ones followed by relu) and a softmax cross-entropy loss.
struct MLPConfig {
  int64_t batch = 32;
  int64_t inputs = 784;
  int64_t hidden = 256;
  int64_t layers = 3;
  int64_t classes = 10;
  bool bf16 = false;
};

/// A GPT-2-style pre-layer-norm decoder trained as a language model.
struct GPTConfig {
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t seq = 1024;
  int64_t vocab = 50257;
  int64_t positions = 1024;
  int64_t batch = 8;
  /// The output projection reuses the token embedding table (as GPT-2 does).
  bool tieEmbeddings = true;
  bool bf16 = false;
};

enum class CNNKind { Small, VGG16, ResNet18, ResNet50 };

/// A VGG-16 or ResNet-18/50 image classifier, or a small two-convolution
/// one (cnn-small: conv 3x3 16 - relu - 2x2 max pool - conv 3x3 32 - relu -
/// 2x2 max pool - linear; images a multiple of 4 in size), NCHW. By default
/// without batch normalisation: every convolution carries a bias instead.
/// `batchNorm` (ResNets only) builds torchvision's ResNet: convolutions
/// without bias, each followed by `strata.batch_norm` with running
/// statistics.
struct CNNConfig {
  CNNKind kind = CNNKind::ResNet18;
  int64_t batch = 8;
  int64_t imageSize = 224;
  int64_t channels = 3;
  int64_t classes = 1000;
  bool bf16 = false;
  bool batchNorm = false;
};

/// Named GPT sizes: "gpt-tiny", "gpt2-small" (124M parameters),
/// "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-175b" (96 layers, hidden
/// 12288; compile-only).
std::optional<GPTConfig> getGPTPreset(llvm::StringRef name);
std::vector<std::string> getGPTPresetNames();

llvm::Error validateMLP(const MLPConfig &config);
llvm::Error validateGPT(const GPTConfig &config);
llvm::Error validateCNN(const CNNConfig &config);

OwningOpRef<ModuleOp> buildMLP(MLIRContext *context, const MLPConfig &config);
OwningOpRef<ModuleOp> buildGPT(MLIRContext *context, const GPTConfig &config);
OwningOpRef<ModuleOp> buildCNN(MLIRContext *context, const CNNConfig &config);

/// Counts of a generated model.
struct ModelSummary {
  int64_t parameters = 0;
  int64_t parameterTensors = 0;
  int64_t parameterBytes = 0;
  int64_t layers = 0;
  int64_t ops = 0;
};
ModelSummary summarizeModel(ModuleOp module);

} // namespace mlir::strata

#endif // STRATA_MODELS_MODELS_H
