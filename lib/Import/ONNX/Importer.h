//===- Importer.h - Internals of the ONNX importer --------------*- C++ -*-===//
//
// The importer's pieces, one file each:
//   Graph.cpp            reading the ModelProto: tensors, shapes, order
//   ConstantFolding.cpp  host evaluation of shape subgraphs
//   Layers.cpp           layer names from the nodes' module paths
//   Operators.cpp        one converter per ONNX operator
//   Importer.cpp         the function being built: arguments, layers, loss
//   Weights.cpp          the .safetensors file of the initializers
//   Translation.cpp      the mlir-translate registration
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_IMPORT_ONNX_IMPORTER_H
#define STRATA_LIB_IMPORT_ONNX_IMPORTER_H

#include "strata/Dialect/Strata/StrataAttrs.h"
#include "strata/Import/ONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

// onnx_pb.h defines ONNX_API, then includes onnx-ml.pb.h (ONNX_ML=1).
#include <onnx/onnx_pb.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::strata::onnx_import {

/// A tensor known at import time: an initializer, a Constant node or a
/// folded shape computation. Values are held as doubles (exact for float32
/// and for the integers of shapes and indices).
struct HostTensor {
  SmallVector<int64_t> shape;
  bool isFloat = true;
  std::vector<double> data;

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};

/// Largest element count the importer accepts for one tensor.
constexpr int64_t kMaxTensorElements = int64_t(1) << 31;
/// Largest tensor constant folding creates (ConstantOfShape, broadcasts).
constexpr int64_t kMaxFoldElements = int64_t(1) << 24;

/// `v` as an integer (shape entries, axes, indices): truncated, NaN as 0,
/// clamped to +-2^62 so that later checks see an invalid value, never
/// undefined behaviour.
inline int64_t toInt(double v) {
  if (!(v == v))
    return 0;
  constexpr double limit = 4.611686018427388e18; // 2^62
  return v <= -limit  ? -(int64_t(1) << 62)
         : v >= limit ? (int64_t(1) << 62)
                      : static_cast<int64_t>(v);
}

/// Decodes `proto` (raw_data or the typed fields). Returns an error message
/// or "" on success.
std::string decodeTensor(const onnx::TensorProto &proto, HostTensor &out);

/// The product of `shape`, or -1 when a dimension is negative or the product
/// exceeds kMaxTensorElements.
int64_t checkedNumel(ArrayRef<int64_t> shape);

/// The nodes of `graph` in an order where every input is defined before its
/// use. Fails (with `error` set) on an undefined input or a cycle.
std::optional<std::vector<const onnx::NodeProto *>>
sortNodes(const onnx::GraphProto &graph, std::string &error);

/// The name of ONNX element type `dataType` ("FLOAT"), or its number.
std::string getTypeName(int32_t dataType);

/// `type` as MLIR prints it, for messages.
std::string describeType(Type type);

/// `name (op)` for messages.
std::string describe(const onnx::NodeProto &node);

/// The attribute `name` of `node`, or null.
const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                     StringRef name);
int64_t getIntAttr(const onnx::NodeProto &node, StringRef name,
                   int64_t fallback);
float getFloatAttr(const onnx::NodeProto &node, StringRef name, float fallback);
SmallVector<int64_t> getIntsAttr(const onnx::NodeProto &node, StringRef name);

/// Whether ConstantFolding can evaluate `opType` when all its inputs are
/// known.
bool isFoldable(StringRef opType);

/// Evaluates `node` on host tensors. `inputs[i]` is null for an absent
/// optional input. Returns an error message or "" on success.
std::string foldNode(const onnx::NodeProto &node,
                     ArrayRef<const HostTensor *> inputs,
                     std::vector<HostTensor> &outputs);

/// The dotted module path of a node name written by torch.onnx.export:
/// "/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1"; "" when there is none.
std::string getModulePath(StringRef nodeName);
/// The layer a module path belongs to: the path up to its first numeric
/// component ("layer1.0.conv1" -> "layer1.0", "h.1.attn" -> "h.1"), else its
/// first component ("fc0" -> "fc0").
std::string getLayerName(StringRef modulePath);
/// Whether a layer name is a numbered block ("layer1.0", "h.3").
bool isBlockLayer(StringRef layerName);

/// One parameter's initial value for the weights file.
struct WeightTensor {
  std::string name;
  SmallVector<int64_t> shape;
  const HostTensor *value;
};

/// Writes `weights` as a .safetensors file (F32), through a temporary file
/// renamed over `path`. Returns an error message or "".
std::string writeWeights(StringRef path, ArrayRef<WeightTensor> weights);

/// An element-wise function of one tensor `x` with scalar constants, built
/// from the decomposed ops exporters write (GELU's tanh or erf form, the
/// attention scale). Recognised by evaluating it at sample points.
struct Expr {
  enum Kind { Var, Const, Add, Sub, Mul, Div, Pow, Tanh, Erf, Sqrt, Neg };
  Kind kind = Var;
  double value = 0;
  std::shared_ptr<const Expr> lhs, rhs;
  /// Nodes of the expression as a tree (shared operands counted each time),
  /// what one evaluation costs.
  int64_t size = 1;

  double eval(double x) const;
};
using ExprRef = std::shared_ptr<const Expr>;

/// The steps of layer normalisation as opsets before 17 export it:
/// mean = ReduceMean(x); d = Sub(x, mean); Pow(d, 2); var = ReduceMean;
/// Add(var, eps); s = Sqrt; n = Div(d, s); Mul(n, gamma); Add(., beta).
enum class NormStep {
  None,
  Mean,
  Centered,
  Squared,
  Variance,
  VarianceEps,
  Deviation,
  Normalized,
  Scaled
};

/// What an ONNX value name stands for while the graph is converted.
struct Slot {
  /// A tensor of the Strata function (an argument or an op result).
  Value value;
  /// Known at import time.
  const HostTensor *constant = nullptr;
  /// `value` is a running statistic (getRunningStat), not a parameter.
  bool isRunningStat = false;
  /// An initializer: becomes a parameter where a converter needs a Value.
  bool isInitializer = false;
  /// Pending element-wise function `expr` of `base`, not yet a Strata op
  /// (`value` is null until a converter needs it).
  Value base;
  ExprRef expr;
  /// `base` (scaled by `expr`) with the causal mask applied: only a Softmax
  /// can take it.
  bool causal = false;
  /// The transpose of initializer `transposeOf` (rank 2): MatMul takes it as
  /// `transpose_b`, others get a strata.transpose.
  std::string transposeOf;
  /// Rows 0 .. `rows` - 1 of initializer `rowsOf` (a Gather of arange or a
  /// Slice: the learned positions of a sequence); an Add to [B, rows, H]
  /// makes it strata.position_embedding.
  std::string rowsOf;
  int64_t rows = 0;
  /// A step of a decomposed layer norm of `base` (LayerNormPattern.cpp),
  /// with the epsilon and scale found so far.
  NormStep norm = NormStep::None;
  double epsilon = 0;
  Value gamma;
};

/// Builds the Strata function for one ONNX graph.
class Importer {
public:
  Importer(MLIRContext *context, const onnx::ModelProto &model,
           StringRef fileName, const OnnxImportOptions &options);

  /// Converts the graph; null after a reported error.
  OwningOpRef<ModuleOp> run();

  // Used by the operator converters (Operators.cpp).
  /// Reports `message` about the current node and returns failure.
  LogicalResult fail(const Twine &message);
  /// Input `index` of the current node as a Strata value (an initializer
  /// becomes a parameter of the current layer); fails when absent or when it
  /// is a non-parameter constant.
  FailureOr<Value> getValue(unsigned index);
  /// getValue of any element type (the integer indices of Gather).
  FailureOr<Value> getAnyValue(unsigned index);
  /// Input `index` of the current node when known at import time, else null.
  const HostTensor *getConstant(unsigned index);
  /// The slot of input `index` of the current node (an empty one when the
  /// node has no such input).
  Slot &getSlot(unsigned index);
  /// Defines output `index` of the current node as `slot`.
  void setSlot(unsigned index, Slot slot);
  /// The parameter for initializer `name` (created on first use).
  FailureOr<Value> getParameter(StringRef name);
  /// Input `index` of the current node as a running statistic (batch
  /// norm's running mean or variance): a float initializer becomes an
  /// argument marked `strata.running_stat`, its value goes to the weights
  /// file; anything else fails.
  FailureOr<Value> getRunningStat(unsigned index, InitKind init);
  /// Whether input `index` is an initializer that has not been folded.
  bool isParameter(unsigned index);
  /// Defines output `index` of the current node.
  void setResult(unsigned index, Value value);
  void setConstant(unsigned index, HostTensor tensor);
  /// Creates `OpTy` at the current node's location in the current layer.
  template <typename OpTy, typename... Args> OpTy create(Args &&...args) {
    ensureLayer();
    ++created;
    OpTy op = OpTy::create(builder, nodeLoc, std::forward<Args>(args)...);
    setLayer(op.getOperation());
    return op;
  }
  const onnx::NodeProto &getNode() const { return *node; }
  OpBuilder &getBuilder() { return builder; }
  Location getLoc() const { return nodeLoc; }
  Type getF32() { return builder.getF32Type(); }

private:
  LogicalResult addGraphInputs();
  LogicalResult addInitializers();
  LogicalResult convertNode(const onnx::NodeProto &node);
  LogicalResult foldCurrentNode();
  LogicalResult addLoss();
  Value addParameter(StringRef name, const HostTensor &value);
  Value addArgument(Type type, StringRef name, DictionaryAttr attrs);
  /// Makes `name` the layer of the next ops and parameters (created when the
  /// first of them is).
  void enterLayer(StringRef name);
  void setLayer(Operation *op);
  void ensureLayer();
  LogicalResult writeWeightsFile();

  MLIRContext *context;
  const onnx::ModelProto &model;
  std::string fileName;
  const OnnxImportOptions &options;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  Block *body = nullptr;
  Location nodeLoc;
  const onnx::NodeProto *node = nullptr;

  llvm::StringMap<Slot> slots;
  Slot absentSlot;
  /// Storage of every host tensor (stable addresses).
  std::vector<std::unique_ptr<HostTensor>> tensors;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> layerNames;
  llvm::StringMap<int64_t> layerIndex;
  int64_t layer = -1;
  std::string pendingLayer;
  /// Ops and parameters created so far: a node that creates none (a
  /// constant, a pending transpose or row range) leaves the layer as it was.
  int64_t created = 0;
  std::vector<WeightTensor> weights;
};

/// Whether the element-wise converters (Elementwise.cpp) take `opType`.
bool isElementwise(StringRef opType);
/// Add of two tensors: a residual (equal shapes), a bias along one axis, or
/// learned positions ([B, S, H] + [S, H]).
LogicalResult convertTensorAdd(Importer &importer);
/// Sub of two tensors: the Add of the first and the second scaled by -1.
LogicalResult convertTensorSub(Importer &importer);
/// Converts an element-wise node into a pending expression, a residual or
/// bias Add, or the causal mask of a Where or Add.
LogicalResult convertElementwise(Importer &importer);
/// The Strata op for a pending expression: `x` itself or GELU; failure
/// (reported) otherwise.
FailureOr<Value> materializeExpr(Importer &importer, Slot &slot,
                                 StringRef name);
/// The `scale` of a pending expression `scale · x`, if it is one.
std::optional<double> getLinearScale(const Expr &expr);

/// ReduceMean over the last axis of a tensor: the first or the variance step
/// of a decomposed layer norm.
LogicalResult convertReduceMean(Importer &importer);
/// The next step of a decomposed layer norm when an operand of the current
/// element-wise node is one (strata.layer_norm at the last step); nullopt
/// when none is.
std::optional<LogicalResult> tryLayerNormStep(Importer &importer);

/// Converts the current node of `importer` (dispatch on its op type).
/// Unsupported operators fail with a message naming the node and the op.
LogicalResult convertOperator(Importer &importer);

} // namespace mlir::strata::onnx_import

#endif // STRATA_LIB_IMPORT_ONNX_IMPORTER_H
