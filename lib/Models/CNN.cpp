//===- CNN.cpp - VGG-16 and ResNet-18/50 generators -----------------------===//
//
// NCHW image classifiers. By default batch normalisation is not modelled:
// every convolution carries a bias instead, and residual branches start
// scaled down (see residualBlock). With `batchNorm` a ResNet is torchvision's:
// convolutions without bias, each followed by strata.batch_norm. Each
// convolution (with its activation and any pooling that follows) is one VGG
// layer; each residual block is one ResNet layer.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "strata/Models/Models.h"

#include <cmath>

using namespace mlir;
using namespace mlir::strata;

llvm::Error mlir::strata::validateCNN(const CNNConfig &c) {
  for (auto [name, value] : {std::pair<StringRef, int64_t>("batch", c.batch),
                             {"image-size", c.imageSize},
                             {"channels", c.channels},
                             {"classes", c.classes}})
    if (llvm::Error err = checkModelSize(name, value, kMaxModelDim))
      return err;
  if (c.kind == CNNKind::Small && c.imageSize % 4 != 0)
    return llvm::createStringError(
        "--image-size (%lld) must be a multiple of 4 (cnn-small downsamples "
        "by 4)",
        static_cast<long long>(c.imageSize));
  if (c.batchNorm && c.kind != CNNKind::ResNet18 && c.kind != CNNKind::ResNet50)
    return llvm::createStringError("--batch-norm applies to ResNets only");
  if (c.kind != CNNKind::Small && c.imageSize % 32 != 0)
    return llvm::createStringError(
        "--image-size (%lld) must be a multiple of 32 (the network "
        "downsamples by 32)",
        static_cast<long long>(c.imageSize));
  return llvm::Error::success();
}

static int64_t channelsOf(Value x) {
  return cast<RankedTensorType>(x.getType()).getDimSize(1);
}

/// Convolution with bias: [N, C, H, W] -> [N, out, H', W']. `scale`
/// multiplies the Kaiming standard deviation of the filter.
static Value conv(ModelBuilder &b, StringRef name, Value x, int64_t out,
                  int64_t kernel, int64_t stride, int64_t pad,
                  double scale = 1.0) {
  Value w =
      b.param(joinName(name, "weight"), {out, channelsOf(x), kernel, kernel},
              InitKind::kaiming_normal, scale);
  Value bias = b.param(joinName(name, "bias"), {out}, InitKind::zeros, 0.0);
  Value y = b.create<Conv2DOp>(name, x, w, ArrayRef<int64_t>{stride, stride},
                               ArrayRef<int64_t>{pad, pad})
                .getResult();
  return b.create<BiasAddOp>(name, y, bias, /*axis=*/1).getResult();
}

/// Convolution without bias followed by batch normalisation (torchvision's
/// conv + BatchNorm2d: gamma 1, beta 0, running mean 0, running variance 1).
static Value convBN(ModelBuilder &b, StringRef name, StringRef bnName, Value x,
                    int64_t out, int64_t kernel, int64_t stride, int64_t pad) {
  Value w =
      b.param(joinName(name, "weight"), {out, channelsOf(x), kernel, kernel},
              InitKind::kaiming_normal, 1.0);
  Value y = b.create<Conv2DOp>(name, x, w, ArrayRef<int64_t>{stride, stride},
                               ArrayRef<int64_t>{pad, pad})
                .getResult();
  Value gamma = b.param(joinName(bnName, "weight"), {out}, InitKind::ones);
  Value beta = b.param(joinName(bnName, "bias"), {out}, InitKind::zeros, 0.0);
  Value mean =
      b.runningStat(joinName(bnName, "running_mean"), {out}, InitKind::zeros);
  Value var =
      b.runningStat(joinName(bnName, "running_var"), {out}, InitKind::ones);
  return b.create<BatchNormOp>(bnName, y, gamma, beta, mean, var).getResult();
}

static Value relu(ModelBuilder &b, StringRef name, Value x) {
  return b.create<ReluOp>(name, x).getResult();
}

static Value maxPool(ModelBuilder &b, StringRef name, Value x, int64_t kernel,
                     int64_t stride, int64_t pad) {
  return b
      .create<MaxPool2DOp>(name, x, ArrayRef<int64_t>{kernel, kernel},
                           ArrayRef<int64_t>{stride, stride},
                           ArrayRef<int64_t>{pad, pad})
      .getResult();
}

static Value buildVGG16(ModelBuilder &b, Value x, const CNNConfig &c) {
  // Channels per convolution; 0 marks a 2x2 max pool after the previous one.
  const int64_t plan[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                          0,  512, 512, 512, 0,   512, 512, 512, 0};
  int block = 1, index = 1;
  for (size_t i = 0; i < std::size(plan); ++i) {
    if (plan[i] == 0)
      continue;
    std::string name =
        "conv" + std::to_string(block) + "_" + std::to_string(index);
    b.beginLayer(name);
    x = relu(b, "relu", conv(b, "", x, plan[i], 3, 1, 1));
    ++index;
    if (i + 1 < std::size(plan) && plan[i + 1] == 0) {
      x = maxPool(b, "pool", x, 2, 2, 0);
      ++block;
      index = 1;
    }
  }
  b.beginLayer("fc6");
  x = b.create<FlattenOp>("flatten", x).getResult();
  x = relu(b, "relu", linear(b, "", x, 4096, InitKind::xavier_uniform, 1.0));
  b.beginLayer("fc7");
  x = relu(b, "relu", linear(b, "", x, 4096, InitKind::xavier_uniform, 1.0));
  b.beginLayer("fc8");
  return linear(b, "", x, c.classes, InitKind::xavier_uniform, 1.0);
}

/// Two convolutions with max pooling and a linear classifier: small enough
/// to train on a CPU in seconds (the digits example).
static Value buildSmall(ModelBuilder &b, Value x, const CNNConfig &c) {
  b.beginLayer("conv1");
  x = maxPool(b, "pool", relu(b, "relu", conv(b, "", x, 16, 3, 1, 1)), 2, 2, 0);
  b.beginLayer("conv2");
  x = maxPool(b, "pool", relu(b, "relu", conv(b, "", x, 32, 3, 1, 1)), 2, 2, 0);
  b.beginLayer("fc");
  x = b.create<FlattenOp>("flatten", x).getResult();
  return linear(b, "", x, c.classes, InitKind::xavier_uniform, 1.0);
}

/// Basic (ResNet-18/34) or bottleneck (ResNet-50+) residual block. Without
/// batch normalisation every residual sum would double the activations'
/// variance, so the last convolution of the branch starts at
/// `branchScale` times the Kaiming scale (1/sqrt(blocks) keeps the growth
/// over the whole network below e).
static Value residualBlock(ModelBuilder &b, Value x, int64_t width,
                           int64_t stride, bool bottleneck,
                           double branchScale) {
  int64_t out = bottleneck ? 4 * width : width;
  Value y;
  if (bottleneck) {
    y = relu(b, "relu1", conv(b, "conv1", x, width, 1, 1, 0));
    y = relu(b, "relu2", conv(b, "conv2", y, width, 3, stride, 1));
    y = conv(b, "conv3", y, out, 1, 1, 0, branchScale);
  } else {
    y = relu(b, "relu1", conv(b, "conv1", x, width, 3, stride, 1));
    y = conv(b, "conv2", y, out, 3, 1, 1, branchScale);
  }
  Value shortcut = x;
  if (stride != 1 || channelsOf(x) != out)
    shortcut = conv(b, "downsample", x, out, 1, stride, 0);
  return relu(b, "relu", b.create<AddOp>("residual", y, shortcut).getResult());
}

/// torchvision's BasicBlock / Bottleneck: every convolution followed by
/// batch normalisation, the downsample shortcut too.
static Value residualBlockBN(ModelBuilder &b, Value x, int64_t width,
                             int64_t stride, bool bottleneck) {
  int64_t out = bottleneck ? 4 * width : width;
  Value y;
  if (bottleneck) {
    y = relu(b, "relu1", convBN(b, "conv1", "bn1", x, width, 1, 1, 0));
    y = relu(b, "relu2", convBN(b, "conv2", "bn2", y, width, 3, stride, 1));
    y = convBN(b, "conv3", "bn3", y, out, 1, 1, 0);
  } else {
    y = relu(b, "relu1", convBN(b, "conv1", "bn1", x, width, 3, stride, 1));
    y = convBN(b, "conv2", "bn2", y, out, 3, 1, 1);
  }
  Value shortcut = x;
  if (stride != 1 || channelsOf(x) != out)
    shortcut = convBN(b, "downsample.0", "downsample.1", x, out, 1, stride, 0);
  return relu(b, "relu", b.create<AddOp>("residual", y, shortcut).getResult());
}

static Value buildResNet(ModelBuilder &b, Value x, const CNNConfig &c) {
  bool bottleneck = c.kind == CNNKind::ResNet50;
  const int64_t blocks18[] = {2, 2, 2, 2};
  const int64_t blocks50[] = {3, 4, 6, 3};
  const int64_t *blocks = bottleneck ? blocks50 : blocks18;
  int64_t totalBlocks = 0;
  for (int stage = 0; stage < 4; ++stage)
    totalBlocks += blocks[stage];
  double branchScale = 1.0 / std::sqrt(static_cast<double>(totalBlocks));

  b.beginLayer("stem");
  x = c.batchNorm ? convBN(b, "conv", "bn", x, 64, 7, 2, 3)
                  : conv(b, "conv", x, 64, 7, 2, 3);
  x = relu(b, "relu", x);
  x = maxPool(b, "pool", x, 3, 2, 1);
  for (int stage = 0; stage < 4; ++stage) {
    int64_t width = int64_t(64) << stage;
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      b.beginLayer("layer" + std::to_string(stage + 1) + "." +
                   std::to_string(i));
      int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      x = c.batchNorm
              ? residualBlockBN(b, x, width, stride, bottleneck)
              : residualBlock(b, x, width, stride, bottleneck, branchScale);
    }
  }
  b.beginLayer("fc");
  x = b.create<GlobalAvgPoolOp>("avgpool", x).getResult();
  return linear(b, "", x, c.classes, InitKind::xavier_uniform, 1.0);
}

OwningOpRef<ModuleOp> mlir::strata::buildCNN(MLIRContext *context,
                                             const CNNConfig &c) {
  StringRef name = c.kind == CNNKind::Small      ? "cnn_small"
                   : c.kind == CNNKind::VGG16    ? "vgg16"
                   : c.kind == CNNKind::ResNet18 ? "resnet18"
                                                 : "resnet50";
  ModelBuilder b(context, name, c.bf16);
  Value images =
      b.input("images", {c.batch, c.channels, c.imageSize, c.imageSize},
              b.floatType(), InputRole::data);
  Value labels = b.input("labels", {c.batch}, IntegerType::get(context, 32),
                         InputRole::labels);
  Value logits = c.kind == CNNKind::Small   ? buildSmall(b, images, c)
                 : c.kind == CNNKind::VGG16 ? buildVGG16(b, images, c)
                                            : buildResNet(b, images, c);
  Value loss =
      b.create<SoftmaxCrossEntropyOp>("loss", logits, labels).getResult();
  return b.finish(loss);
}
