//===- GPT.cpp - GPT-2-style decoder generator ----------------------------===//
//
// Pre-layer-norm decoder blocks as in GPT-2:
//   x = x + Wo · attention(ln1(x));   x = x + W2 · gelu(W1 · ln2(x))
// with separate q/k/v projections, a causal softmax scaled by 1/sqrt(head
// size), learned position embeddings and (by default) an output projection
// tied to the token embedding table.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "strata/Models/Models.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::strata;

std::optional<GPTConfig> mlir::strata::getGPTPreset(StringRef name) {
  auto make = [](int64_t layers, int64_t hidden, int64_t heads, int64_t seq,
                 int64_t vocab, int64_t positions, int64_t batch) {
    GPTConfig c;
    c.layers = layers;
    c.hidden = hidden;
    c.heads = heads;
    c.seq = seq;
    c.vocab = vocab;
    c.positions = positions;
    c.batch = batch;
    return c;
  };
  return llvm::StringSwitch<std::optional<GPTConfig>>(name)
      // Byte-level toy model that trains in minutes on a CPU.
      .Case("gpt-tiny", make(4, 256, 4, 128, 256, 128, 16))
      .Case("gpt2-small", make(12, 768, 12, 1024, 50257, 1024, 8))
      .Case("gpt2-medium", make(24, 1024, 16, 1024, 50257, 1024, 8))
      .Case("gpt2-large", make(36, 1280, 20, 1024, 50257, 1024, 8))
      .Case("gpt2-xl", make(48, 1600, 25, 1024, 50257, 1024, 8))
      .Case("gpt3-175b", make(96, 12288, 96, 2048, 50257, 2048, 1))
      .Default(std::nullopt);
}

std::vector<std::string> mlir::strata::getGPTPresetNames() {
  return {"gpt-tiny",   "gpt2-small", "gpt2-medium",
          "gpt2-large", "gpt2-xl",    "gpt3-175b"};
}

llvm::Error mlir::strata::validateGPT(const GPTConfig &c) {
  if (llvm::Error err = checkModelSize("layers", c.layers, kMaxModelLayers))
    return err;
  for (auto [name, value] : {std::pair<StringRef, int64_t>("hidden", c.hidden),
                             {"heads", c.heads},
                             {"seq", c.seq},
                             {"vocab", c.vocab},
                             {"positions", c.positions},
                             {"batch", c.batch}})
    if (llvm::Error err = checkModelSize(name, value, kMaxModelDim))
      return err;
  if (c.hidden % c.heads != 0)
    return llvm::createStringError(
        "--hidden (%lld) must be divisible by --heads (%lld)",
        static_cast<long long>(c.hidden), static_cast<long long>(c.heads));
  if (c.seq > c.positions)
    return llvm::createStringError(
        "--seq (%lld) must not exceed --positions (%lld)",
        static_cast<long long>(c.seq), static_cast<long long>(c.positions));
  return llvm::Error::success();
}

/// [B, S, H] -> [B, heads, S, H / heads].
static Value splitHeads(ModelBuilder &b, StringRef name, Value x,
                        const GPTConfig &c) {
  int64_t headSize = c.hidden / c.heads;
  auto type =
      RankedTensorType::get({c.batch, c.seq, c.heads, headSize}, b.floatType());
  Value r = b.create<ReshapeOp>(name, type, x).getResult();
  return b.create<TransposeOp>(name, r, ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult();
}

static Value block(ModelBuilder &b, Value x, const GPTConfig &c) {
  int64_t h = c.hidden;
  double std = 0.02;
  auto layerNorm = [&](StringRef name, Value v) {
    Value gamma = b.param(joinName(name, "weight"), {h}, InitKind::ones, 0.0);
    Value beta = b.param(joinName(name, "bias"), {h}, InitKind::zeros, 0.0);
    return b.create<LayerNormOp>(name, v, gamma, beta).getResult();
  };

  // Attention.
  Value n1 = layerNorm("ln1", x);
  Value q = splitHeads(b, "attn.q",
                       linear(b, "attn.q", n1, h, InitKind::normal, std), c);
  Value k = splitHeads(b, "attn.k",
                       linear(b, "attn.k", n1, h, InitKind::normal, std), c);
  Value v = splitHeads(b, "attn.v",
                       linear(b, "attn.v", n1, h, InitKind::normal, std), c);
  Value scores = b.create<MatmulOp>("attn.scores", q, k, /*transpose_a=*/false,
                                    /*transpose_b=*/true)
                     .getResult();
  double scale = 1.0 / std::sqrt(static_cast<double>(h / c.heads));
  Value probs = b.create<SoftmaxOp>("attn.softmax", scores, /*causal=*/true,
                                    llvm::APFloat(scale))
                    .getResult();
  Value ctx = b.create<MatmulOp>("attn.context", probs, v).getResult();
  Value merged =
      b.create<TransposeOp>("attn.merge", ctx, ArrayRef<int64_t>{0, 2, 1, 3})
          .getResult();
  merged =
      b.create<ReshapeOp>(
           "attn.merge",
           RankedTensorType::get({c.batch, c.seq, h}, b.floatType()), merged)
          .getResult();
  // GPT-2 scales the residual projections by 1/sqrt(2 · layers).
  double residualStd = std / std::sqrt(2.0 * c.layers);
  Value attn = linear(b, "attn.proj", merged, h, InitKind::normal, residualStd);
  x = b.create<AddOp>("attn.residual", x, attn).getResult();

  // Feed-forward.
  Value n2 = layerNorm("ln2", x);
  Value f = linear(b, "mlp.fc", n2, 4 * h, InitKind::normal, std);
  f = b.create<GeluOp>("mlp.gelu", f).getResult();
  f = linear(b, "mlp.proj", f, h, InitKind::normal, residualStd);
  return b.create<AddOp>("mlp.residual", x, f).getResult();
}

OwningOpRef<ModuleOp> mlir::strata::buildGPT(MLIRContext *context,
                                             const GPTConfig &c) {
  ModelBuilder b(context, "gpt", c.bf16);
  Type i32 = IntegerType::get(context, 32);
  Value tokens = b.input("tokens", {c.batch, c.seq}, i32, InputRole::data);
  Value targets = b.input("targets", {c.batch, c.seq}, i32, InputRole::labels);

  b.beginLayer("embed");
  Value wte = b.param("wte", {c.vocab, c.hidden}, InitKind::normal, 0.02);
  Value wpe = b.param("wpe", {c.positions, c.hidden}, InitKind::normal, 0.01);
  Value x = b.create<EmbeddingOp>("tokens", wte, tokens).getResult();
  x = b.create<PositionEmbeddingOp>("positions", x, wpe).getResult();

  for (int64_t i = 0; i < c.layers; ++i) {
    b.beginLayer("h" + std::to_string(i));
    x = block(b, x, c);
  }

  b.beginLayer("head");
  Value gamma = b.param("ln_f.weight", {c.hidden}, InitKind::ones, 0.0);
  Value beta = b.param("ln_f.bias", {c.hidden}, InitKind::zeros, 0.0);
  x = b.create<LayerNormOp>("ln_f", x, gamma, beta).getResult();
  // Tied: logits = x · wteᵀ, reusing the embedding layer's table.
  Value out = c.tieEmbeddings ? wte
                              : b.param("lm_head", {c.vocab, c.hidden},
                                        InitKind::normal, 0.02);
  Value logits = b.create<MatmulOp>("logits", x, out, /*transpose_a=*/false,
                                    /*transpose_b=*/true)
                     .getResult();
  Value loss =
      b.create<SoftmaxCrossEntropyOp>("loss", logits, targets).getResult();
  return b.finish(loss);
}
