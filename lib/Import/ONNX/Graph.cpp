//===- Graph.cpp - Reading the ONNX ModelProto ----------------------------===//
//
// Tensor decoding (raw_data or the typed fields), attributes, and the order
// in which the nodes are converted. Everything a file can get wrong is
// reported as a message, never trusted.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Endian.h"

#include <cstring>
#include <functional>
#include <queue>

using namespace mlir;
namespace onnx_import = mlir::strata::onnx_import;
using namespace mlir::strata::onnx_import;

int64_t onnx_import::checkedNumel(ArrayRef<int64_t> shape) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && numel > kMaxTensorElements / d)
      return -1;
    numel *= d;
  }
  return numel;
}

/// Appends the typed field `values` converted to double.
template <typename Field>
static void appendTyped(const Field &values, std::vector<double> &out) {
  for (auto v : values)
    out.push_back(static_cast<double>(v));
}

/// Decodes `count` little-endian elements of `raw`.
template <typename T>
static void appendRaw(const std::string &raw, int64_t count,
                      std::vector<double> &out) {
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out.push_back(static_cast<double>(v));
  }
}

static size_t elementBytes(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
    return 4;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
    return 8;
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
    return 1;
  default:
    return 0;
  }
}

static void decodeRaw(int32_t dataType, const std::string &raw, int64_t numel,
                      std::vector<double> &out) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return appendRaw<float>(raw, numel, out);
  case onnx::TensorProto::INT32:
    return appendRaw<int32_t>(raw, numel, out);
  case onnx::TensorProto::DOUBLE:
    return appendRaw<double>(raw, numel, out);
  case onnx::TensorProto::INT64:
    return appendRaw<int64_t>(raw, numel, out);
  case onnx::TensorProto::INT8:
    return appendRaw<int8_t>(raw, numel, out);
  default: // BOOL, UINT8
    return appendRaw<uint8_t>(raw, numel, out);
  }
}

static void decodeTyped(const onnx::TensorProto &proto,
                        std::vector<double> &out) {
  switch (proto.data_type()) {
  case onnx::TensorProto::FLOAT:
    return appendTyped(proto.float_data(), out);
  case onnx::TensorProto::DOUBLE:
    return appendTyped(proto.double_data(), out);
  case onnx::TensorProto::INT64:
    return appendTyped(proto.int64_data(), out);
  default: // INT32, BOOL, UINT8, INT8 live in int32_data
    return appendTyped(proto.int32_data(), out);
  }
}

std::string onnx_import::decodeTensor(const onnx::TensorProto &proto,
                                      HostTensor &out) {
  out = HostTensor();
  int32_t dataType = proto.data_type();
  size_t bytes = elementBytes(dataType);
  if (bytes == 0)
    return "unsupported element type " + getTypeName(dataType);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL ||
      proto.external_data_size() > 0)
    return "external data is not supported (re-export with the weights "
           "inside the file)";
  out.isFloat = dataType == onnx::TensorProto::FLOAT ||
                dataType == onnx::TensorProto::DOUBLE;
  out.shape.assign(proto.dims().begin(), proto.dims().end());
  int64_t numel = checkedNumel(out.shape);
  if (numel < 0)
    return "invalid dimensions";
  out.data.reserve(numel);
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != static_cast<size_t>(numel) * bytes)
      return "raw_data holds " + std::to_string(proto.raw_data().size()) +
             " bytes, the shape needs " + std::to_string(numel * bytes);
    decodeRaw(dataType, proto.raw_data(), numel, out.data);
    return "";
  }
  decodeTyped(proto, out.data);
  if (out.numel() != numel)
    return "holds " + std::to_string(out.numel()) +
           " values, the shape needs " + std::to_string(numel);
  return "";
}

std::string onnx_import::getTypeName(int32_t dataType) {
  const std::string &name = onnx::TensorProto_DataType_Name(dataType);
  return name.empty() ? std::to_string(dataType) : name;
}

std::string onnx_import::describe(const onnx::NodeProto &node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

const onnx::AttributeProto *onnx_import::findAttr(const onnx::NodeProto &node,
                                                  StringRef name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t onnx_import::getIntAttr(const onnx::NodeProto &node, StringRef name,
                                int64_t fallback) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr && attr->has_i() ? attr->i() : fallback;
}

float onnx_import::getFloatAttr(const onnx::NodeProto &node, StringRef name,
                                float fallback) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr && attr->has_f() ? attr->f() : fallback;
}

SmallVector<int64_t> onnx_import::getIntsAttr(const onnx::NodeProto &node,
                                              StringRef name) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  if (!attr)
    return {};
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

/// Kahn's algorithm over the value names, taking the ready node that comes
/// first in the file (so a sorted file keeps its order): O(E log N).
std::optional<std::vector<const onnx::NodeProto *>>
onnx_import::sortNodes(const onnx::GraphProto &graph, std::string &error) {
  llvm::StringSet<> defined;
  for (const onnx::ValueInfoProto &input : graph.input())
    defined.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    defined.insert(init.name());
  llvm::StringMap<int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &out : graph.node(i).output())
      if (!out.empty() && !producer.try_emplace(out, i).second) {
        error = describe(graph.node(i)) + ": output '" + out +
                "' is also produced by another node";
        return std::nullopt;
      }
  // waiting[i]: inputs of node i that a node still has to produce.
  std::vector<int> waiting(graph.node_size(), 0);
  llvm::StringMap<SmallVector<int>> consumers;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &in : graph.node(i).input()) {
      if (in.empty() || defined.contains(in))
        continue;
      if (!producer.contains(in)) {
        error = describe(graph.node(i)) + ": input '" + in +
                "' is not defined (no graph input, initializer or node "
                "produces it)";
        return std::nullopt;
      }
      ++waiting[i];
      consumers[in].push_back(i);
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < graph.node_size(); ++i)
    if (waiting[i] == 0)
      ready.push(i);
  std::vector<const onnx::NodeProto *> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(&graph.node(i));
    for (const std::string &out : graph.node(i).output()) {
      auto it = consumers.find(out);
      if (out.empty() || it == consumers.end())
        continue;
      for (int c : it->second)
        if (--waiting[c] == 0)
          ready.push(c);
    }
  }
  if (order.size() == static_cast<size_t>(graph.node_size()))
    return order;
  for (int i = 0; i < graph.node_size(); ++i)
    if (waiting[i] > 0) {
      error =
          describe(graph.node(i)) + ": the graph has a cycle through this node";
      break;
    }
  return std::nullopt;
}
