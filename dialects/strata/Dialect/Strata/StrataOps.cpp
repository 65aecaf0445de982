//===- StrataOps.cpp - Strata operations ----------------------------------===//
//
// Result-type inference, verifiers and FLOP counts of the strata ops. Shape
// rules live in the inference functions, so builders and the verifier share
// them and every rule reports its violation at the op's location.
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::strata;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::strata::getLayer(Operation *op) {
  if (auto attr =
          op->getAttrOfType<IntegerAttr>(StrataDialect::getLayerAttrName()))
    return attr.getInt();
  return std::nullopt;
}

void mlir::strata::setLayer(Operation *op, int64_t layer) {
  op->setAttr(StrataDialect::getLayerAttrName(),
              IntegerAttr::get(IntegerType::get(op->getContext(), 64), layer));
}

void mlir::strata::setPhase(Operation *op, Phase phase) {
  op->setAttr(StrataDialect::getPhaseAttrName(),
              PhaseAttr::get(op->getContext(), phase));
}

void mlir::strata::copyPlacement(Operation *from, Operation *op) {
  for (StringRef name : {StrataDialect::getStageAttrName(),
                         StrataDialect::getMicroBatchAttrName(),
                         StrataDialect::getPreviousStepAttrName(),
                         StrataDialect::getLayerAttrName()})
    if (Attribute attr = from->getAttr(name))
      op->setAttr(name, attr);
}

LogicalResult
mlir::strata::forEachTrainStep(ModuleOp module, const Twine &noStep,
                               function_ref<LogicalResult(func::FuncOp)> fn) {
  bool found = false;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(StrataDialect::getTrainStepAttrName()))
      continue;
    found = true;
    if (failed(fn(func)))
      return failure();
  }
  if (!found)
    return emitError(module.getLoc()) << noStep;
  return success();
}

void mlir::strata::setArgAttrOfAll(FunctionOpInterface func, StringRef name,
                                   ArrayRef<Attribute> values) {
  SmallVector<DictionaryAttr> dicts;
  dicts.reserve(values.size());
  for (auto [index, value] : llvm::enumerate(values)) {
    NamedAttrList attrs(func.getArgAttrDict(index));
    attrs.set(name, value);
    dicts.push_back(attrs.getDictionary(func->getContext()));
  }
  func.setAllArgAttrs(dicts);
}

BufferAttr mlir::strata::getBuffer(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (!func)
      return {};
    return func.getArgAttrOfType<BufferAttr>(
        arg.getArgNumber(), StrataDialect::getBufferAttrName());
  }
  auto result = cast<OpResult>(value);
  auto buffers = result.getOwner()->getAttrOfType<ArrayAttr>(
      StrataDialect::getBuffersAttrName());
  if (!buffers || buffers.size() <= result.getResultNumber())
    return {};
  return dyn_cast<BufferAttr>(buffers[result.getResultNumber()]);
}

Value mlir::strata::getReplacedOperand(Operation *op, unsigned index) {
  if (auto update = dyn_cast<InPlaceOpInterface>(op))
    return update.getUpdatedOperand(index);
  if (auto stateful = dyn_cast<StatefulOpInterface>(op))
    return stateful.getUpdatedOperand(index);
  return {};
}

bool mlir::strata::isSizedTensorType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return false;
  uint64_t bytes = (tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  for (int64_t dim : tensor.getShape()) {
    if (dim < 1 || static_cast<uint64_t>(dim) >
                       static_cast<uint64_t>(kMaxTensorBytes) / bytes)
      return false;
    bytes *= static_cast<uint64_t>(dim);
  }
  return bytes <= static_cast<uint64_t>(kMaxTensorBytes);
}

int64_t mlir::strata::getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t bits = tensor.getElementType().getIntOrFloatBitWidth();
  return tensor.getNumElements() * ((bits + 7) / 8);
}

static int64_t getNumElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// Returns `type` as a ranked tensor or reports that `what` must be one.
static FailureOr<RankedTensorType> getRanked(std::optional<Location> loc,
                                             Type type, StringRef what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return emitOptionalError(loc, what, " must be a statically shaped tensor");
  return tensor;
}

/// Formats a shape as `[a, b, c]` for diagnostics.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << '[';
  llvm::interleaveComma(shape, os);
  os << ']';
  return str;
}

static LogicalResult checkSameElementType(std::optional<Location> loc,
                                          RankedTensorType a,
                                          RankedTensorType b, StringRef aName,
                                          StringRef bName) {
  if (a.getElementType() == b.getElementType())
    return success();
  return emitOptionalError(loc, aName, " and ", bName,
                           " must have the same element type, got ",
                           a.getElementType(), " and ", b.getElementType());
}

/// Output extent of a window sliding over `size` (with symmetric `pad`).
static int64_t getWindowOutputSize(int64_t size, int64_t window, int64_t stride,
                                   int64_t pad) {
  return (size + 2 * pad - window) / stride + 1;
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> mlir::strata::swapHeads(std::optional<Location> loc,
                                                    RankedTensorType type,
                                                    bool heads,
                                                    StringRef what) {
  if (!heads)
    return type;
  int64_t rank = type.getRank();
  if (rank < 3)
    return emitOptionalError(loc, what,
                             " in the heads layout needs rank >= 3, "
                             "got ",
                             rank);
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[rank - 3], shape[rank - 2]);
  return RankedTensorType::get(shape, type.getElementType());
}

FailureOr<RankedTensorType>
mlir::strata::inferMatmulType(std::optional<Location> loc, Type lhsType,
                              Type rhsType, bool ta, bool tb, bool headsA,
                              bool headsB, bool headsC) {
  FailureOr<RankedTensorType> lhs = getRanked(loc, lhsType, "lhs");
  FailureOr<RankedTensorType> rhs = getRanked(loc, rhsType, "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  lhs = swapHeads(loc, *lhs, headsA, "lhs");
  rhs = swapHeads(loc, *rhs, headsB, "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  if (failed(checkSameElementType(loc, *lhs, *rhs, "lhs", "rhs")))
    return failure();
  int64_t lhsRank = lhs->getRank(), rhsRank = rhs->getRank();
  if (lhsRank < 2 || rhsRank < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ", lhsRank,
                             " and ", rhsRank);
  if (rhsRank != 2 && rhsRank != lhsRank)
    return emitOptionalError(loc, "rhs must have rank 2 or the rank of lhs (",
                             lhsRank, "), got ", rhsRank);
  ArrayRef<int64_t> a = lhs->getShape(), b = rhs->getShape();
  int64_t m = ta ? a[lhsRank - 1] : a[lhsRank - 2];
  int64_t k = ta ? a[lhsRank - 2] : a[lhsRank - 1];
  int64_t kb = tb ? b[rhsRank - 1] : b[rhsRank - 2];
  int64_t n = tb ? b[rhsRank - 2] : b[rhsRank - 1];
  if (k != kb)
    return emitOptionalError(loc, "contracting dimensions differ: lhs has ", k,
                             ", rhs has ", kb);
  ArrayRef<int64_t> batch = a.drop_back(2);
  if (rhsRank > 2 && batch != b.drop_back(2))
    return emitOptionalError(loc,
                             "batch dimensions differ: ", formatShape(batch),
                             " and ", formatShape(b.drop_back(2)));
  SmallVector<int64_t> shape(batch);
  shape.append({m, n});
  return swapHeads(loc, RankedTensorType::get(shape, lhs->getElementType()),
                   headsC, "result");
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> type = inferMatmulType(
      loc, adaptor.getLhs().getType(), adaptor.getRhs().getType(),
      adaptor.getTransposeA(), adaptor.getTransposeB(), adaptor.getHeadsA(),
      adaptor.getHeadsB(), adaptor.getHeadsC());
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

std::array<int64_t, 4>
mlir::strata::getMatmulProblemSize(RankedTensorType lhs,
                                   RankedTensorType result, bool transposeA) {
  int64_t rank = lhs.getRank();
  int64_t k = transposeA ? lhs.getDimSize(rank - 2) : lhs.getDimSize(rank - 1);
  int64_t batch = 1;
  for (int64_t d : lhs.getShape().drop_back(2))
    batch *= d;
  return {batch, result.getDimSize(rank - 2), result.getDimSize(rank - 1), k};
}

std::array<int64_t, 4> MatmulOp::getProblemSize() {
  // The logical shapes (the verifier checked the ranks).
  RankedTensorType lhs =
      *swapHeads(std::nullopt, cast<RankedTensorType>(getLhs().getType()),
                 getHeadsA(), "lhs");
  RankedTensorType result = *swapHeads(
      std::nullopt, cast<RankedTensorType>(getType()), getHeadsC(), "result");
  return getMatmulProblemSize(lhs, result, getTransposeA());
}

int64_t MatmulOp::getFlops() {
  auto [batch, m, n, k] = getProblemSize();
  return 2 * batch * m * n * k;
}

//===----------------------------------------------------------------------===//
// BiasAddOp
//===----------------------------------------------------------------------===//

LogicalResult BiasAddOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  FailureOr<RankedTensorType> bias =
      getRanked(loc, adaptor.getBias().getType(), "bias");
  if (failed(input) || failed(bias))
    return failure();
  if (failed(checkSameElementType(loc, *input, *bias, "input", "bias")))
    return failure();
  int64_t rank = input->getRank();
  int64_t axis = adaptor.getAxis();
  if (axis < -rank || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  if (axis < 0)
    axis += rank;
  if (bias->getRank() != 1 || bias->getDimSize(0) != input->getDimSize(axis))
    return emitOptionalError(loc, "bias must be 1-D of size ",
                             input->getDimSize(axis), " (dimension ", axis,
                             " of the input), got ", *bias);
  results.push_back(*input);
  return success();
}

int64_t BiasAddOp::getNormalizedAxis() {
  int64_t axis = getAxis();
  return axis < 0 ? axis + getType().getRank() : axis;
}

int64_t BiasAddOp::getFlops() { return getNumElements(getResult()); }

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

int64_t AddOp::getFlops() { return getNumElements(getResult()); }

int64_t ReluOp::getFlops() { return getNumElements(getResult()); }

int64_t GeluOp::getFlops() { return 8 * getNumElements(getResult()); }

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  results.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult SoftmaxOp::verify() {
  if (!(getScale().convertToDouble() > 0.0))
    return emitOpError("scale must be positive, got ")
           << getScale().convertToDouble();
  if (!getCausal())
    return success();
  RankedTensorType type = getType();
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 1) != type.getDimSize(rank - 2))
    return emitOpError("causal softmax needs square trailing dimensions "
                       "[S, S], got ")
           << type;
  return success();
}

int64_t SoftmaxOp::getFlops() {
  int64_t perElement = getScale().convertToDouble() == 1.0 ? 5 : 6;
  return perElement * getNumElements(getResult());
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  if (input->getRank() < 1)
    return emitOptionalError(loc, "input must have rank >= 1");
  int64_t features = input->getShape().back();
  for (auto [value, name] : {std::pair(adaptor.getGamma(), "gamma"),
                             std::pair(adaptor.getBeta(), "beta")}) {
    FailureOr<RankedTensorType> param = getRanked(loc, value.getType(), name);
    if (failed(param) ||
        failed(checkSameElementType(loc, *input, *param, "input", name)))
      return failure();
    if (param->getRank() != 1 || param->getDimSize(0) != features)
      return emitOptionalError(loc, name, " must be 1-D of size ", features,
                               ", got ", *param);
  }
  if (!(adaptor.getEpsilon().convertToDouble() > 0.0))
    return emitOptionalError(loc, "epsilon must be positive");
  results.push_back(*input);
  return success();
}

int64_t LayerNormOp::getFlops() { return 8 * getNumElements(getResult()); }

//===----------------------------------------------------------------------===//
// BatchNormOp
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  if (input->getRank() < 2)
    return emitOptionalError(loc,
                             "input must have rank >= 2 ([N, C, ...]), "
                             "got ",
                             *input);
  int64_t channels = input->getDimSize(1);
  if (input->getNumElements() / channels < 2)
    return emitOptionalError(loc,
                             "batch normalisation needs more than one value "
                             "per channel, got ",
                             *input);
  SmallVector<Type> stats;
  for (auto [value, name] :
       {std::pair(adaptor.getGamma(), "gamma"),
        std::pair(adaptor.getBeta(), "beta"),
        std::pair(adaptor.getRunningMean(), "running_mean"),
        std::pair(adaptor.getRunningVar(), "running_var")}) {
    FailureOr<RankedTensorType> vector = getRanked(loc, value.getType(), name);
    if (failed(vector) ||
        failed(checkSameElementType(loc, *input, *vector, "input", name)))
      return failure();
    if (vector->getRank() != 1 || vector->getDimSize(0) != channels)
      return emitOptionalError(loc, name, " must be 1-D of the ", channels,
                               " channels, got ", *vector);
    stats.push_back(*vector);
  }
  if (!(adaptor.getEpsilon().convertToDouble() > 0.0))
    return emitOptionalError(loc, "epsilon must be positive");
  double momentum = adaptor.getMomentum().convertToDouble();
  if (!(momentum >= 0.0 && momentum <= 1.0))
    return emitOptionalError(loc, "momentum must lie in [0, 1], got ",
                             momentum);
  results.append({*input, stats[0], stats[0], stats[0], stats[0]});
  return success();
}

int64_t BatchNormOp::getFlops() {
  int64_t channels =
      cast<RankedTensorType>(getGamma().getType()).getNumElements();
  return 8 * getNumElements(getResult()) + 6 * channels;
}

Value BatchNormOp::getUpdatedOperand(unsigned index) {
  if (index == 3)
    return getRunningMean();
  if (index == 4)
    return getRunningVar();
  return {};
}

// No send reads running statistics.
bool BatchNormOp::updatesRankLocalState() { return true; }

//===----------------------------------------------------------------------===//
// EmbeddingOp and PositionEmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> table =
      getRanked(loc, adaptor.getTable().getType(), "table");
  FailureOr<RankedTensorType> indices =
      getRanked(loc, adaptor.getIndices().getType(), "indices");
  if (failed(table) || failed(indices))
    return failure();
  if (table->getRank() != 2)
    return emitOptionalError(loc, "table must be 2-D [V, H], got ", *table);
  SmallVector<int64_t> shape(indices->getShape());
  shape.push_back(table->getDimSize(1));
  results.push_back(RankedTensorType::get(shape, table->getElementType()));
  return success();
}

int64_t EmbeddingOp::getFlops() { return 0; }

int64_t EmbeddingOp::getBytesRead() {
  return getTensorBytes(getIndices().getType()) +
         getTensorBytes(getResult().getType());
}

LogicalResult PositionEmbeddingOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  FailureOr<RankedTensorType> table =
      getRanked(loc, adaptor.getTable().getType(), "table");
  if (failed(input) || failed(table))
    return failure();
  if (failed(checkSameElementType(loc, *input, *table, "input", "table")))
    return failure();
  if (input->getRank() != 3)
    return emitOptionalError(loc, "input must be 3-D [B, S, H], got ", *input);
  if (table->getRank() != 2 || table->getDimSize(1) != input->getDimSize(2) ||
      table->getDimSize(0) < input->getDimSize(1))
    return emitOptionalError(loc, "table must be [P, ", input->getDimSize(2),
                             "] with P >= ", input->getDimSize(1), ", got ",
                             *table);
  results.push_back(*input);
  return success();
}

int64_t PositionEmbeddingOp::getFlops() { return getNumElements(getResult()); }

int64_t PositionEmbeddingOp::getBytesRead() {
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t rowsBytes =
      getTensorBytes(getInput().getType()) / input.getDimSize(0);
  return getTensorBytes(input) + rowsBytes;
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  RankedTensorType result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("cannot change the element type (")
           << input.getElementType() << " to " << result.getElementType()
           << ")";
  if (input.getNumElements() != result.getNumElements())
    return emitOpError("element count differs: ")
           << input.getNumElements() << " vs " << result.getNumElements();
  return success();
}

int64_t ReshapeOp::getFlops() { return 0; }
int64_t ReshapeOp::getBytesRead() { return 0; }
int64_t ReshapeOp::getBytesWritten() { return 0; }

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input->getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid)
    return emitOptionalError(loc, "permutation ", formatShape(perm),
                             " is not a permutation of [0, ", rank, ")");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input->getDimSize(p));
  results.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

int64_t TransposeOp::getFlops() { return 0; }

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  if (input->getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2, got ", *input);
  int64_t batch = input->getDimSize(0);
  results.push_back(RankedTensorType::get(
      {batch, input->getNumElements() / std::max<int64_t>(batch, 1)},
      input->getElementType()));
  return success();
}

int64_t FlattenOp::getFlops() { return 0; }
int64_t FlattenOp::getBytesRead() { return 0; }
int64_t FlattenOp::getBytesWritten() { return 0; }

LogicalResult SliceOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  int64_t axis = adaptor.getAxis(), offset = adaptor.getOffset(),
          size = adaptor.getSize();
  if (axis < 0 || axis >= input->getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for ",
                             *input);
  int64_t dim = input->getDimSize(axis);
  if (offset < 0 || size < 1 || offset > dim || size > dim - offset)
    return emitOptionalError(loc, "range [", offset, ", ", offset, " + ", size,
                             ") does not fit dimension ", axis, " of ", *input);
  SmallVector<int64_t> shape(input->getShape());
  shape[axis] = size;
  results.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

int64_t SliceOp::getFlops() { return 0; }
int64_t SliceOp::getBytesRead() { return getTensorBytes(getType()); }

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  FailureOr<RankedTensorType> first =
      getRanked(loc, adaptor.getInputs().front().getType(), "input #0");
  if (failed(first))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first->getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for ",
                             *first);
  SmallVector<int64_t> shape(first->getShape());
  shape[axis] = 0;
  for (auto [i, value] : llvm::enumerate(adaptor.getInputs())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || type.getRank() != first->getRank() ||
        type.getElementType() != first->getElementType())
      return emitOptionalError(loc, "input #", i,
                               " must have the rank and element type of "
                               "input #0, got ",
                               value.getType());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != axis && type.getDimSize(d) != first->getDimSize(d))
        return emitOptionalError(loc, "input #", i, " ", type,
                                 " differs from input #0 ", *first,
                                 " in dimension ", d);
    shape[axis] += type.getDimSize(axis);
  }
  results.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

int64_t ConcatOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// Convolutional ops
//===----------------------------------------------------------------------===//

/// Checks window attributes and computes the pooled/convolved spatial size.
static FailureOr<std::array<int64_t, 2>>
inferWindowOutput(std::optional<Location> loc, RankedTensorType input,
                  ArrayRef<int64_t> window, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> padding) {
  std::array<int64_t, 2> out;
  for (int i = 0; i < 2; ++i) {
    if (window[i] <= 0)
      return emitOptionalError(loc, "window sizes must be positive, got ",
                               formatShape(window));
    if (strides[i] <= 0)
      return emitOptionalError(loc, "strides must be positive, got ",
                               formatShape(strides));
    if (padding[i] < 0)
      return emitOptionalError(loc, "padding must be non-negative, got ",
                               formatShape(padding));
    int64_t size = input.getDimSize(2 + i);
    if (size + 2 * padding[i] < window[i])
      return emitOptionalError(loc, "window ", formatShape(window),
                               " does not fit the padded input ", input);
    out[i] = getWindowOutputSize(size, window[i], strides[i], padding[i]);
  }
  return out;
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  FailureOr<RankedTensorType> filter =
      getRanked(loc, adaptor.getFilter().getType(), "filter");
  if (failed(input) || failed(filter))
    return failure();
  if (failed(checkSameElementType(loc, *input, *filter, "input", "filter")))
    return failure();
  if (input->getRank() != 4 || filter->getRank() != 4)
    return emitOptionalError(loc, "input and filter must be 4-D (NCHW, OIHW)");
  if (input->getDimSize(1) != filter->getDimSize(1))
    return emitOptionalError(loc, "input has ", input->getDimSize(1),
                             " channels but the filter expects ",
                             filter->getDimSize(1));
  if (adaptor.getStrides().size() != 2 || adaptor.getPadding().size() != 2)
    return emitOptionalError(loc, "strides and padding must have 2 entries");
  FailureOr<std::array<int64_t, 2>> out =
      inferWindowOutput(loc, *input, filter->getShape().drop_front(2),
                        adaptor.getStrides(), adaptor.getPadding());
  if (failed(out))
    return failure();
  results.push_back(RankedTensorType::get(
      {input->getDimSize(0), filter->getDimSize(0), (*out)[0], (*out)[1]},
      input->getElementType()));
  return success();
}

int64_t Conv2DOp::getFlops() {
  auto filter = cast<RankedTensorType>(getFilter().getType());
  int64_t perOutput =
      filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3);
  return 2 * getNumElements(getResult()) * perOutput;
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  if (input->getRank() != 4)
    return emitOptionalError(loc, "input must be 4-D (NCHW), got ", *input);
  if (adaptor.getKernel().size() != 2 || adaptor.getStrides().size() != 2 ||
      adaptor.getPadding().size() != 2)
    return emitOptionalError(loc,
                             "kernel, strides and padding must have 2 entries");
  for (int i = 0; i < 2; ++i)
    if (adaptor.getPadding()[i] >= adaptor.getKernel()[i] &&
        adaptor.getKernel()[i] > 0)
      return emitOptionalError(loc, "padding ",
                               formatShape(adaptor.getPadding()),
                               " must be smaller than the kernel ",
                               formatShape(adaptor.getKernel()));
  FailureOr<std::array<int64_t, 2>> out =
      inferWindowOutput(loc, *input, adaptor.getKernel(), adaptor.getStrides(),
                        adaptor.getPadding());
  if (failed(out))
    return failure();
  results.push_back(RankedTensorType::get(
      {input->getDimSize(0), input->getDimSize(1), (*out)[0], (*out)[1]},
      input->getElementType()));
  return success();
}

int64_t MaxPool2DOp::getFlops() {
  ArrayRef<int64_t> kernel = getKernel();
  return getNumElements(getResult()) * kernel[0] * kernel[1];
}

LogicalResult
GlobalAvgPoolOp::inferReturnTypes(MLIRContext *context,
                                  std::optional<Location> loc, Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      getRanked(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  if (input->getRank() != 4)
    return emitOptionalError(loc, "input must be 4-D (NCHW), got ", *input);
  results.push_back(RankedTensorType::get(
      {input->getDimSize(0), input->getDimSize(1)}, input->getElementType()));
  return success();
}

int64_t GlobalAvgPoolOp::getFlops() { return getNumElements(getInput()); }

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> logits =
      getRanked(loc, adaptor.getLogits().getType(), "logits");
  FailureOr<RankedTensorType> labels =
      getRanked(loc, adaptor.getLabels().getType(), "labels");
  if (failed(logits) || failed(labels))
    return failure();
  if (logits->getRank() < 2)
    return emitOptionalError(loc, "logits must have rank >= 2, got ", *logits);
  if (labels->getShape() != logits->getShape().drop_back())
    return emitOptionalError(loc, "labels must have shape ",
                             formatShape(logits->getShape().drop_back()),
                             " (the logits without the class dimension), got ",
                             formatShape(labels->getShape()));
  results.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

int64_t SoftmaxCrossEntropyOp::getFlops() {
  return 5 * getNumElements(getLogits()) + getNumElements(getLabels());
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  if (adaptor.getInput().getType() != adaptor.getTarget().getType())
    return emitOptionalError(loc,
                             "input and target must have the same type, "
                             "got ",
                             adaptor.getInput().getType(), " and ",
                             adaptor.getTarget().getType());
  results.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

int64_t MseLossOp::getFlops() { return 3 * getNumElements(getInput()); }

#define GET_OP_CLASSES
#include "strata/Dialect/Strata/StrataOps.cpp.inc"
