//===- Importer.cpp - The Strata function of an ONNX graph ----------------===//
//
// Graph inputs become data inputs, initializers become parameters where an
// op uses them (named as in the ONNX file, which torch.onnx.export takes from
// the module's state_dict), nodes become Strata ops in the layer of their
// module path, and the single graph output gets the loss chosen with --loss
// against a new labels input.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;
using namespace mlir::strata;

std::string onnx_import::describeType(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

Importer::Importer(MLIRContext *context, const onnx::ModelProto &model,
                   StringRef fileName, const OnnxImportOptions &options)
    : context(context), model(model), fileName(fileName.str()),
      options(options), builder(context),
      nodeLoc(FileLineColLoc::get(context, fileName, 0, 0)) {}

LogicalResult Importer::fail(const Twine &message) {
  Location loc = FileLineColLoc::get(context, fileName, 0, 0);
  if (node)
    return emitError(loc) << describe(*node) << ": " << message;
  return emitError(loc) << message;
}

void Importer::enterLayer(StringRef name) { pendingLayer = name.str(); }

void Importer::ensureLayer() {
  if (pendingLayer.empty())
    pendingLayer = "model";
  auto [it, inserted] = layerIndex.try_emplace(
      pendingLayer, static_cast<int64_t>(layerNames.size()));
  if (inserted)
    layerNames.push_back(pendingLayer);
  layer = it->second;
}

void Importer::setLayer(Operation *op) { strata::setLayer(op, layer); }

Value Importer::addArgument(Type type, StringRef name, DictionaryAttr attrs) {
  argAttrs.push_back(attrs);
  return body->addArgument(type, NameLoc::get(builder.getStringAttr(name)));
}

Value Importer::addParameter(StringRef name, const HostTensor &value) {
  ensureLayer();
  ++created;
  auto type = RankedTensorType::get(value.shape, builder.getF32Type());
  // The values come from the weights file (strata-run --init); the scheme
  // here is what a run without it starts from.
  InitKind init =
      value.shape.size() >= 2 ? InitKind::xavier_uniform : InitKind::zeros;
  auto attr = ParamAttr::get(context, name, layer, init, llvm::APFloat(1.0));
  weights.push_back({name.str(), value.shape, &value});
  return addArgument(type, name,
                     builder.getDictionaryAttr(builder.getNamedAttr(
                         StrataDialect::getParamAttrName(), attr)));
}

LogicalResult Importer::addInitializers() {
  for (const onnx::TensorProto &init : model.graph().initializer()) {
    auto tensor = std::make_unique<HostTensor>();
    std::string error = decodeTensor(init, *tensor);
    if (!error.empty())
      return fail("initializer '" + init.name() + "': " + error);
    if (slots.count(init.name()))
      return fail("initializer '" + init.name() + "' is defined twice");
    Slot slot;
    slot.constant = tensor.get();
    slot.isInitializer = true;
    slots[init.name()] = std::move(slot);
    tensors.push_back(std::move(tensor));
  }
  return success();
}

/// The Strata type of graph input `info`, or failure for dynamic shapes and
/// unsupported element types.
static FailureOr<RankedTensorType>
getInputType(Importer &im, const onnx::ValueInfoProto &info, Builder &builder) {
  if (!info.type().has_tensor_type())
    return im.fail("input '" + info.name() + "' is not a tensor");
  const onnx::TypeProto::Tensor &t = info.type().tensor_type();
  Type element;
  if (t.elem_type() == onnx::TensorProto::FLOAT)
    element = builder.getF32Type();
  else if (t.elem_type() == onnx::TensorProto::INT64 ||
           t.elem_type() == onnx::TensorProto::INT32)
    element = builder.getI32Type(); // token ids: the runtime's index type
  else
    return im.fail("input '" + info.name() + "' has unsupported element type " +
                   getTypeName(t.elem_type()));
  if (!t.has_shape())
    return im.fail("input '" + info.name() + "' has no shape");
  SmallVector<int64_t> shape;
  for (const auto &[i, dim] : llvm::enumerate(t.shape().dim())) {
    if (!dim.has_dim_value() || dim.dim_value() <= 0)
      return im.fail("input '" + info.name() + "': dimension " +
                     std::to_string(i) + " is dynamic" +
                     (dim.has_dim_param() ? " ('" + dim.dim_param() + "')"
                                          : std::string()) +
                     "; export with fixed shapes (no dynamic_axes)");
    shape.push_back(dim.dim_value());
  }
  if (checkedNumel(shape) < 0)
    return im.fail("input '" + info.name() + "' is too large");
  return RankedTensorType::get(shape, element);
}

LogicalResult Importer::addGraphInputs() {
  for (const onnx::ValueInfoProto &info : model.graph().input()) {
    if (slots.count(info.name()))
      continue; // older exporters list initializers as inputs too
    FailureOr<RankedTensorType> type = getInputType(*this, info, builder);
    if (failed(type))
      return failure();
    auto attr = InputAttr::get(context, info.name(), InputRole::data);
    Value arg = addArgument(*type, info.name(),
                            builder.getDictionaryAttr(builder.getNamedAttr(
                                StrataDialect::getInputAttrName(), attr)));
    slots[info.name()].value = arg;
  }
  return success();
}

FailureOr<Value> Importer::getParameter(StringRef name) {
  Slot &slot = slots[name];
  if (slot.value)
    return slot.value;
  if (!slot.isInitializer || !slot.constant)
    return fail("input '" + name +
                "' is a constant that Strata cannot take as a tensor operand");
  if (!slot.constant->isFloat)
    return fail("initializer '" + name +
                "' is not a float tensor and cannot be a parameter");
  if (slot.constant->numel() == 0)
    return fail("initializer '" + name + "' is empty");
  slot.value = addParameter(name, *slot.constant);
  return slot.value;
}

FailureOr<Value> Importer::getRunningStat(unsigned index, InitKind init) {
  if (static_cast<int>(index) >= node->input_size() ||
      node->input(index).empty())
    return fail("input " + std::to_string(index) + " is missing");
  const std::string &name = node->input(index);
  Slot &slot = slots[name];
  if (slot.value && slot.isRunningStat)
    return fail("running statistic '" + name +
                "' is updated by two batch normalisations");
  if (slot.value || !slot.isInitializer || !slot.constant ||
      !slot.constant->isFloat)
    return fail("input '" + name +
                "' must be a float initializer (a running statistic of the "
                "model), not a computed tensor or a parameter");
  if (slot.constant->numel() == 0)
    return fail("initializer '" + name + "' is empty");
  ensureLayer();
  ++created;
  auto type = RankedTensorType::get(slot.constant->shape, builder.getF32Type());
  auto attr = RunningStatAttr::get(context, name, layer, init);
  weights.push_back({name, slot.constant->shape, slot.constant});
  slot.value = addArgument(type, name,
                           builder.getDictionaryAttr(builder.getNamedAttr(
                               StrataDialect::getRunningStatAttrName(), attr)));
  slot.isRunningStat = true;
  return slot.value;
}

Slot &Importer::getSlot(unsigned index) {
  // An absent input (past the end, or empty) reads as an empty slot.
  if (static_cast<int>(index) >= node->input_size() ||
      node->input(index).empty()) {
    absentSlot = Slot();
    return absentSlot;
  }
  return slots[node->input(index)];
}

FailureOr<Value> Importer::getValue(unsigned index) {
  FailureOr<Value> v = getAnyValue(index);
  if (failed(v))
    return failure();
  if (!cast<RankedTensorType>(v->getType()).getElementType().isF32())
    return fail("input '" + node->input(index) +
                "' must be a float tensor, got " + describeType(v->getType()));
  return v;
}

FailureOr<Value> Importer::getAnyValue(unsigned index) {
  if (static_cast<int>(index) >= node->input_size() ||
      node->input(index).empty())
    return fail("input " + std::to_string(index) + " is missing");
  const std::string &name = node->input(index);
  Slot &slot = slots[name];
  if (slot.isRunningStat)
    return fail("running statistic '" + name +
                "' is read by an op other than its batch normalisation");
  if (slot.value)
    return slot.value;
  if (!slot.rowsOf.empty())
    return fail("'" + name + "' (the first rows of '" + slot.rowsOf +
                "') is supported only added to a [B, S, H] tensor (learned "
                "positions)");
  if (slot.norm != NormStep::None)
    return fail("'" + name +
                "' is a step of a layer norm decomposition that does not "
                "continue to its end (the scale and shift)");
  if (slot.expr) {
    FailureOr<Value> v = materializeExpr(*this, slot, name);
    if (failed(v))
      return failure();
    Slot &again = slots[name]; // materializing may grow the map
    again.value = *v;
    again.expr = nullptr;
    again.base = Value();
    return *v;
  }
  if (!slot.transposeOf.empty()) {
    std::string source = slot.transposeOf;
    FailureOr<Value> w = getParameter(source);
    if (failed(w))
      return failure();
    Value t = create<TransposeOp>(*w, ArrayRef<int64_t>{1, 0}).getResult();
    slots[name].value = t;
    return t;
  }
  return getParameter(name);
}

const HostTensor *Importer::getConstant(unsigned index) {
  if (static_cast<int>(index) >= node->input_size() ||
      node->input(index).empty())
    return nullptr;
  auto it = slots.find(node->input(index));
  return it == slots.end() ? nullptr : it->second.constant;
}

bool Importer::isParameter(unsigned index) {
  if (static_cast<int>(index) >= node->input_size())
    return false;
  auto it = slots.find(node->input(index));
  return it != slots.end() && it->second.isInitializer && it->second.constant &&
         it->second.constant->isFloat;
}

void Importer::setResult(unsigned index, Value value) {
  if (static_cast<int>(index) < node->output_size()) {
    Slot slot;
    slot.value = value;
    slots[node->output(index)] = std::move(slot);
  }
}

void Importer::setSlot(unsigned index, Slot slot) {
  if (static_cast<int>(index) < node->output_size())
    slots[node->output(index)] = std::move(slot);
}

void Importer::setConstant(unsigned index, HostTensor tensor) {
  tensors.push_back(std::make_unique<HostTensor>(std::move(tensor)));
  if (static_cast<int>(index) < node->output_size()) {
    Slot slot;
    slot.constant = tensors.back().get();
    slots[node->output(index)] = std::move(slot);
  }
}

/// Evaluates the current node on the host when all its inputs are known
/// constants (not parameters) and the op is one ConstantFolding handles.
LogicalResult Importer::foldCurrentNode() {
  SmallVector<const HostTensor *> inputs;
  for (unsigned i = 0, e = node->input_size(); i < e; ++i)
    inputs.push_back(getConstant(i));
  std::vector<HostTensor> outputs;
  std::string error = foldNode(*node, inputs, outputs);
  if (!error.empty())
    return fail(error);
  for (auto [i, out] : llvm::enumerate(outputs))
    setConstant(i, std::move(out));
  return success();
}

LogicalResult Importer::convertNode(const onnx::NodeProto &current) {
  node = &current;
  nodeLoc = NameLoc::get(builder.getStringAttr(current.name()),
                         FileLineColLoc::get(context, fileName, 0, 0));
  // A node starts a layer when it is inside a numbered block ("layer1.0"
  // of "layer1.0.conv1") or uses a parameter ("fc", "ln_f",
  // "features.0"); parameterless modules ("relu", "maxpool", and the
  // entries of a Sequential such as VGG's "features.1") stay in the layer
  // before them.
  std::string previousLayer = pendingLayer;
  int64_t createdBefore = created;
  std::string path = getModulePath(current.name());
  if (!path.empty()) {
    std::string name = getLayerName(path);
    // Batch normalisation stays in the layer of the convolution before it
    // (torchvision's stem: conv1, bn1, relu, maxpool is one layer).
    bool usesParameter = false;
    for (unsigned i = 0, e = current.input_size(); i < e; ++i)
      usesParameter |= !current.input(i).empty() &&
                       (isParameter(i) || !getSlot(i).transposeOf.empty());
    if (current.op_type() == "BatchNormalization" && !pendingLayer.empty())
      usesParameter = false;
    bool insideBlock = isBlockLayer(name) && name != path;
    if (pendingLayer.empty() || insideBlock || usesParameter)
      enterLayer(name);
  }
  bool allConstant = true;
  for (unsigned i = 0, e = current.input_size(); i < e; ++i)
    if (!current.input(i).empty() && (!getConstant(i) || isParameter(i)))
      allConstant = false;
  if (isFoldable(current.op_type()) && allConstant) {
    pendingLayer = previousLayer;
    return foldCurrentNode();
  }
  if (failed(convertOperator(*this)))
    return failure();
  if (created == createdBefore)
    pendingLayer = previousLayer;
  for (const std::string &out : current.output())
    if (!out.empty() && !slots.count(out))
      return fail("output '" + out + "' is not supported");
  return success();
}

LogicalResult Importer::addLoss() {
  node = nullptr;
  const onnx::GraphProto &graph = model.graph();
  if (graph.output_size() != 1)
    return fail("the graph must have exactly one output (the model's "
                "prediction), got " +
                std::to_string(graph.output_size()));
  const std::string &name = graph.output(0).name();
  auto it = slots.find(name);
  if (it != slots.end() && !it->second.value && it->second.expr) {
    FailureOr<Value> v = materializeExpr(*this, it->second, name);
    if (failed(v))
      return failure();
    it->second.value = *v;
  }
  if (it == slots.end() || !it->second.value)
    return fail("the graph output '" + name + "' is not a computed tensor");
  Value out = it->second.value;
  auto type = cast<RankedTensorType>(out.getType());
  if (!type.getElementType().isF32())
    return fail("the graph output '" + name + "' must be a float tensor, got " +
                describeType(type));
  bool ce = options.loss == OnnxLoss::SoftmaxCrossEntropy;
  if (ce && type.getRank() < 2)
    return fail("softmax cross-entropy needs logits of rank at least 2 "
                "([batch..., classes]), got " +
                describeType(type));
  auto labelsType = ce ? RankedTensorType::get(type.getShape().drop_back(),
                                               builder.getI32Type())
                       : type;
  auto attr = InputAttr::get(context, "labels", InputRole::labels);
  Value labels = addArgument(labelsType, "labels",
                             builder.getDictionaryAttr(builder.getNamedAttr(
                                 StrataDialect::getInputAttrName(), attr)));
  nodeLoc = NameLoc::get(builder.getStringAttr("loss"));
  Value loss = ce ? create<SoftmaxCrossEntropyOp>(out, labels).getResult()
                  : create<MseLossOp>(out, labels).getResult();
  func::ReturnOp::create(builder, nodeLoc, loss);
  func.setType(
      builder.getFunctionType(body->getArgumentTypes(), {loss.getType()}));
  func.setAllArgAttrs(argAttrs);
  SmallVector<Attribute> names =
      llvm::map_to_vector(layerNames, [&](const std::string &n) -> Attribute {
        return builder.getStringAttr(n);
      });
  func->setAttr(StrataDialect::getLayerNamesAttrName(),
                builder.getArrayAttr(names));
  return success();
}

LogicalResult Importer::writeWeightsFile() {
  if (options.weightsPath.empty())
    return success();
  std::string error = writeWeights(options.weightsPath, weights);
  if (!error.empty())
    return fail(error);
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  if (!model.has_graph()) {
    (void)fail("the file holds no graph");
    return nullptr;
  }
  context->loadDialect<StrataDialect, func::FuncDialect>();
  module = ModuleOp::create(FileLineColLoc::get(context, fileName, 0, 0));
  builder.setInsertionPointToEnd(module->getBody());
  func = func::FuncOp::create(
      builder, NameLoc::get(builder.getStringAttr(options.funcName)),
      options.funcName, builder.getFunctionType({}, {}));
  body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  if (failed(addInitializers()) || failed(addGraphInputs()))
    return nullptr;
  std::string error;
  std::optional<std::vector<const onnx::NodeProto *>> order =
      sortNodes(model.graph(), error);
  if (!order) {
    (void)fail(error);
    return nullptr;
  }
  for (const onnx::NodeProto *n : *order)
    if (failed(convertNode(*n)))
      return nullptr;
  if (failed(addLoss()) || failed(verify(*module)) ||
      failed(writeWeightsFile()))
    return nullptr;
  return std::move(module);
}

OwningOpRef<ModuleOp>
mlir::strata::importOnnx(MLIRContext *context, StringRef bytes,
                         StringRef fileName, const OnnxImportOptions &options) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    emitError(FileLineColLoc::get(context, fileName, 0, 0))
        << "not a valid ONNX model (the protobuf does not parse)";
    return nullptr;
  }
  return Importer(context, model, fileName, options).run();
}
