//===- Bf16Tensors.cpp - bf16 tensors to f32 master copies ----------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Conversion/Bf16Tensors.h"
#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::strata;

static bool isBf16Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isBF16();
}

/// `type` with f32 elements where it is a tensor of bf16, else `type`.
static Type widen(Type type) {
  if (!isBf16Tensor(type))
    return type;
  auto tensor = cast<RankedTensorType>(type);
  return tensor.clone(Float32Type::get(type.getContext()));
}

bool mlir::strata::hasBf16Tensors(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    FunctionType type = func.getFunctionType();
    if (llvm::any_of(type.getInputs(), isBf16Tensor) ||
        llvm::any_of(type.getResults(), isBf16Tensor))
      return true;
    WalkResult walk = func.walk([](Operation *op) {
      return llvm::any_of(op->getResultTypes(), isBf16Tensor)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return true;
  }
  return false;
}

int64_t mlir::strata::widenBf16Tensors(ModuleOp module) {
  int64_t marked = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    // Mark first: the types say which products were bf16.
    func.walk([&](MixedPrecisionOpInterface op) {
      if (llvm::any_of(op->getOperandTypes(), isBf16Tensor) ||
          llvm::any_of(op->getResultTypes(), isBf16Tensor)) {
        op.setComputesInBf16(true);
        ++marked;
      }
    });
    func.walk([](Block *block) {
      for (BlockArgument arg : block->getArguments())
        arg.setType(widen(arg.getType()));
    });
    func.walk([](Operation *op) {
      for (OpResult result : op->getResults())
        result.setType(widen(result.getType()));
    });
    FunctionType type = func.getFunctionType();
    SmallVector<Type> inputs = llvm::map_to_vector(type.getInputs(), widen);
    SmallVector<Type> results = llvm::map_to_vector(type.getResults(), widen);
    func.setFunctionType(
        FunctionType::get(module.getContext(), inputs, results));
  }
  return marked;
}
