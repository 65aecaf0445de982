//===- ModelBuilder.cpp - Shared helper of the model generators -----------===//

#include "ModelBuilder.h"

#include "strata/Models/Models.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::strata;

ModelBuilder::ModelBuilder(MLIRContext *context, StringRef funcName, bool bf16)
    : context(context), builder(context) {
  context->loadDialect<StrataDialect, func::FuncDialect>();
  elementType =
      bf16 ? Type(BFloat16Type::get(context)) : Type(Float32Type::get(context));
  module = ModuleOp::create(UnknownLoc::get(context));
  builder.setInsertionPointToEnd(module->getBody());
  func = func::FuncOp::create(builder,
                              NameLoc::get(builder.getStringAttr(funcName)),
                              funcName, builder.getFunctionType({}, {}));
  body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
}

void ModelBuilder::beginLayer(StringRef name) {
  layerNames.push_back(name.str());
  layer = static_cast<int64_t>(layerNames.size()) - 1;
}

std::string mlir::strata::joinName(StringRef prefix, StringRef suffix) {
  if (prefix.empty())
    return suffix.str();
  if (suffix.empty())
    return prefix.str();
  return (prefix + "." + suffix).str();
}

Location ModelBuilder::loc(StringRef what) {
  StringRef prefix = layer >= 0 ? StringRef(layerNames[layer]) : StringRef();
  return NameLoc::get(builder.getStringAttr(joinName(prefix, what)));
}

Value ModelBuilder::param(StringRef name, ArrayRef<int64_t> shape,
                          InitKind init, double scale) {
  std::string fullName = joinName(layerNames[layer], name);
  auto type = RankedTensorType::get(shape, elementType);
  Value arg =
      body->addArgument(type, NameLoc::get(builder.getStringAttr(fullName)));
  argAttrs.push_back(builder.getNamedAttr(
      StrataDialect::getParamAttrName(),
      ParamAttr::get(context, fullName, layer, init, llvm::APFloat(scale))));
  return arg;
}

Value ModelBuilder::runningStat(StringRef name, ArrayRef<int64_t> shape,
                                InitKind init) {
  std::string fullName = joinName(layerNames[layer], name);
  auto type = RankedTensorType::get(shape, elementType);
  Value arg =
      body->addArgument(type, NameLoc::get(builder.getStringAttr(fullName)));
  argAttrs.push_back(builder.getNamedAttr(
      StrataDialect::getRunningStatAttrName(),
      RunningStatAttr::get(context, fullName, layer, init)));
  return arg;
}

Value ModelBuilder::input(StringRef name, ArrayRef<int64_t> shape,
                          Type inputType, InputRole role) {
  auto type = RankedTensorType::get(shape, inputType);
  Value arg =
      body->addArgument(type, NameLoc::get(builder.getStringAttr(name)));
  argAttrs.push_back(builder.getNamedAttr(StrataDialect::getInputAttrName(),
                                          InputAttr::get(context, name, role)));
  return arg;
}

OwningOpRef<ModuleOp> ModelBuilder::finish(Value loss) {
  func::ReturnOp::create(builder, loss.getLoc(), loss);
  func.setType(
      builder.getFunctionType(body->getArgumentTypes(), {loss.getType()}));
  // All at once: setting them one by one rebuilds the array of every
  // argument's attributes each time (quadratic in the argument count).
  SmallVector<DictionaryAttr> dicts =
      llvm::map_to_vector(argAttrs, [&](NamedAttribute attr) {
        return DictionaryAttr::get(context, {attr});
      });
  func.setAllArgAttrs(dicts);
  SmallVector<Attribute> names =
      llvm::map_to_vector(layerNames, [&](const std::string &n) -> Attribute {
        return builder.getStringAttr(n);
      });
  func->setAttr(StrataDialect::getLayerNamesAttrName(),
                builder.getArrayAttr(names));
  return std::move(module);
}

Value mlir::strata::linear(ModelBuilder &b, StringRef name, Value x,
                           int64_t out, InitKind init, double scale) {
  int64_t in = cast<RankedTensorType>(x.getType()).getShape().back();
  Value w = b.param(joinName(name, "weight"), {in, out}, init, scale);
  Value bias = b.param(joinName(name, "bias"), {out}, InitKind::zeros, 0.0);
  Value y = b.create<MatmulOp>(name, x, w).getResult();
  return b.create<BiasAddOp>(name, y, bias).getResult();
}

ModelSummary mlir::strata::summarizeModel(ModuleOp module) {
  ModelSummary summary;
  module.walk([&](FunctionOpInterface func) {
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      if (!func.getArgAttr(i, StrataDialect::getParamAttrName()))
        continue;
      auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
      summary.parameters += type.getNumElements();
      summary.parameterBytes += getTensorBytes(type);
      summary.parameterTensors += 1;
    }
    if (auto names = func->getAttrOfType<ArrayAttr>(
            StrataDialect::getLayerNamesAttrName()))
      summary.layers += names.size();
    func.walk([&](CostOpInterface) { ++summary.ops; });
  });
  return summary;
}
