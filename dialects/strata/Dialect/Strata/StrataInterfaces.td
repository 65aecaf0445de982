//===- StrataInterfaces.td - Strata op interfaces ----------*- tablegen -*-===//

#ifndef STRATA_DIALECT_STRATA_STRATAINTERFACES_TD
#define STRATA_DIALECT_STRATA_STRATAINTERFACES_TD

include "mlir/IR/OpBase.td"

def Strata_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::strata";
  let description = [{
    The analytic cost of one execution of an op: floating-point operations,
    bytes read and written, and a roofline time on a target description.
    Cost-driven passes (`--strata-annotate-costs`, the pipeline partitioner, the
    estimator) ask this interface and never switch over op names.

    By default an op reads every operand once and writes every result once;
    ops that touch less (a gather, say) override the byte counts. The default
    time is `max(flops / peak(dtype), bytes / bandwidth)` where `dtype` is the
    element type of the op's first floating-point result or operand.
  }];

  let methods = [
    InterfaceMethod<[{
        Returns the floating-point operations of one execution (a fused
        multiply-add counts two).
      }],
      "int64_t", "getFlops", (ins)>,
    InterfaceMethod<[{
        Returns the bytes read from memory by one execution.
      }],
      "int64_t", "getBytesRead", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::strata::detail::getOperandBytes($_op);
      }]>,
    InterfaceMethod<[{
        Returns the bytes written to memory by one execution.
      }],
      "int64_t", "getBytesWritten", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::strata::detail::getResultBytes($_op);
      }]>,
    InterfaceMethod<[{
        Returns the analytic time in seconds of one execution on `target`.
      }],
      "double", "estimateSeconds",
      (ins "const ::mlir::strata::TargetDescription &":$target),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::strata::detail::getRooflineSeconds($_op, target);
      }]>,
  ];
}

def Strata_AutodiffOpInterface : OpInterface<"AutodiffOpInterface"> {
  let cppNamespace = "::mlir::strata";
  let description = [{
    How to differentiate an op in reverse mode. `--strata-autodiff` walks the
    forward graph backwards and asks each op for the gradients of its
    operands given the gradients of its results; the rule lives with the op.

    `getSavedForBackward` names the forward values the backward rule reads
    (operands or results of this op). They are exactly the values that must
    stay alive from the forward to the backward pass, so the passes that
    checkpoint, swap, recompute or compress activations act on these.
  }];

  let methods = [
    InterfaceMethod<[{
        Creates, at the builder's insertion point, the ops computing the
        gradient of every operand from `resultGrads` (one per result; null
        where a result has no gradient) and appends one value per operand to
        `operandGrads` (null for operands that are not differentiable, such
        as token ids or labels). Reads no forward value other than those of
        `getSavedForBackward`.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<[{
        Returns the forward values (operands or results of this op) that the
        backward rule reads.
      }],
      "::llvm::SmallVector<::mlir::Value>", "getSavedForBackward", (ins)>,
    InterfaceMethod<[{
        Whether the backward rule amplifies an error in the saved value
        `saved` (one of `getSavedForBackward`) beyond its relative size: a
        normalisation's backward pass renormalises its input by the input's
        own spread, and a softmax's backward pass weighs the gradient by the
        probabilities, the small ones included. Activation compression keeps
        such values in a wider format (`sensitive=`).
      }],
      "bool", "amplifiesSavedError", (ins "::mlir::Value":$saved), [{}],
      [{ return false; }]>,
  ];
}

def Strata_MixedPrecisionOpInterface : OpInterface<"MixedPrecisionOpInterface"> {
  let cppNamespace = "::mlir::strata";
  let description = [{
    An op whose products can compute in bf16 with f32 accumulation: a matmul,
    a convolution and the convolution's gradients. With `computesInBf16`, the
    runtime rounds both operands to bfloat16 (to nearest even) as its GEMM
    packs them and sums the products in f32; the tensors stay f32 (fp32
    master weights). `--strata-mixed-precision` sets it on every such op, the
    gradient ops of a forward op inherit it, and the cost model prices the op
    at the target's bf16 peak. The defaults read and write the op's `bf16`
    unit attribute.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns whether the op computes its products in bf16.
      }],
      "bool", "computesInBf16", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{ return $_op.getBf16(); }]>,
    InterfaceMethod<[{
        Sets whether the op computes its products in bf16.
      }],
      "void", "setComputesInBf16", (ins "bool":$bf16), /*methodBody=*/"",
      /*defaultImplementation=*/[{ $_op.setBf16(bf16); }]>,
  ];
}

def Strata_InPlaceOpInterface : OpInterface<"InPlaceOpInterface"> {
  let cppNamespace = "::mlir::strata";
  let description = [{
    An op whose results are new versions of some of its operands (an
    optimizer update: the new parameter and state). The runtime computes such
    results in place, in the buffers of the operands they replace.

    The interface also names the operands the passes reason about: the
    parameter the update trains and the gradient it reads (the value that
    gradient synchronisation averages and pipeline scheduling accumulates).
    The defaults read the ODS operands `$param` and `$grad`.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the operand that result `index` replaces.
      }],
      "::mlir::Value", "getUpdatedOperand", (ins "unsigned":$index)>,
    InterfaceMethod<[{
        Returns the parameter the op updates (the operand result 0 replaces).
      }],
      "::mlir::Value", "getParameter", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{ return $_op.getParam(); }]>,
    InterfaceMethod<[{
        Returns the gradient operand the update reads.
      }],
      "::mlir::OpOperand &", "getGradientMutable", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{ return $_op.getGradMutable(); }]>,
  ];
  let extraSharedClassDeclaration = [{
    /// Returns the gradient the update reads.
    ::mlir::Value getGradient() { return $_op.getGradientMutable().get(); }
  }];
}

def Strata_StatefulOpInterface : OpInterface<"StatefulOpInterface"> {
  let cppNamespace = "::mlir::strata";
  let description = [{
    An op that writes persistent buffers of the step (function arguments
    that live from one step to the next) in place, and is no optimizer
    update: it has no gradient operand, so the passes that average,
    accumulate or schedule updates (`InPlaceOpInterface`) leave it alone.
    Some of its results are the new versions of such operands: the runtime
    computes them in the operands' buffers (PlanOps.def's `kInPlace`), and
    the other results are fresh values. Two ops implement it:
    `strata.batch_norm`, a forward op that updates running statistics
    (function arguments marked `strata.running_stat`), and
    `strata.copy_into`, which keeps the older weight versions of the
    asynchronous pipeline schedules.

    Running-statistics updates declare a memory effect on the
    running-statistics resource, so CSE and DCE keep them and
    `--strata-remat` never clones one into the backward pass (a recompute
    would update the statistics twice).
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the operand that result `index` replaces in place, or null
        when result `index` is a fresh value.
      }],
      "::mlir::Value", "getUpdatedOperand", (ins "unsigned":$index)>,
    InterfaceMethod<[{
        Returns whether the buffers the op updates never leave the rank (no
        send reads them, as batch_norm's running statistics): the sends in
        flight need not complete before the op (the runtime's
        `kLocalUpdate`). Otherwise (a kept weight version) they must.
      }],
      "bool", "updatesRankLocalState", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{ return false; }]>,
  ];
}

def Strata_ViewOpInterface : OpInterface<"ViewOpInterface"> {
  let cppNamespace = "::mlir::strata";
  let description = [{
    An op whose result is its source operand's bytes read with another type:
    a row-major reshape or a flatten (same element type, same element
    count, same order). The buffer planner places such a result in its
    source's bytes where that is safe (`getBufferViews` in
    strata/Analysis/BufferLiveness.h says where), the plan marks its buffer
    a view (`view_of`), and the runtime's kernel then moves no byte
    (PlanOps.def's `kView`). Elsewhere the op is a copy.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the operand whose bytes the result reinterprets.
      }],
      "::mlir::Value", "getViewSource", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{ return $_op.getInput(); }]>,
  ];
}

#endif // STRATA_DIALECT_STRATA_STRATAINTERFACES_TD
