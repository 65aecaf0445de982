//===- StrataOps.td - Strata operations --------------------*- tablegen -*-===//
//
// Forward ops of the three model families Strata supports: MLPs, GPT-2-style
// decoders and VGG/ResNet-style CNNs. Every op infers its result type from its
// operands (builders never compute shapes) and implements CostOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECT_STRATA_STRATAOPS_TD
#define STRATA_DIALECT_STRATA_STRATAOPS_TD

include "strata/Dialect/Strata/StrataDialect.td"
include "strata/Dialect/Strata/StrataAttrs.td"
include "strata/Dialect/Strata/StrataInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Every dimension is at least 1 and a tensor holds at most 2^48 bytes
// (`kMaxTensorBytes`), so no size derived from a type can wrap.
def Strata_SizedTensorPred
    : CPred<"::mlir::strata::isSizedTensorType($_self)">;
def Strata_FloatTensor : RankedTensorOf<[F32, BF16],
    [HasStaticShapePred, Strata_SizedTensorPred],
    "statically shaped tensor of f32 or bf16 (dimensions >= 1, at most 2^48 "
    "bytes)">;
def Strata_IndexTensor : RankedTensorOf<[I32, I64],
    [HasStaticShapePred, Strata_SizedTensorPred],
    "statically shaped tensor of i32 or i64 (dimensions >= 1, at most 2^48 "
    "bytes)">;
def Strata_LossTensor : 0DTensorOf<[F32]>;

def Strata_Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;

/// Forward ops say how to differentiate themselves.
def Strata_Differentiable : DeclareOpInterfaceMethods<Strata_AutodiffOpInterface>;
/// A differentiable op whose backward rule amplifies errors in some of the
/// values it saves (AutodiffOpInterface::amplifiesSavedError).
def Strata_DifferentiableSensitive
    : DeclareOpInterfaceMethods<Strata_AutodiffOpInterface,
                                ["amplifiesSavedError"]>;

/// A side-effect-free op with a cost; `costOverrides` names the
/// CostOpInterface methods with a default that the op replaces.
class Strata_ComputeOp<string mnemonic, list<Trait> traits = [],
                       list<string> costOverrides = []>
    : Strata_Op<mnemonic, !listconcat(traits, [
        Pure, DeclareOpInterfaceMethods<Strata_CostOpInterface, costOverrides>])>;

/// A compute op whose result type is inferred from its operands.
class Strata_InferredOp<string mnemonic, list<Trait> traits = [],
                        list<string> costOverrides = []>
    : Strata_ComputeOp<mnemonic, !listconcat(traits, [InferTypeOpAdaptor]),
                       costOverrides>;

/// Element-wise ops: ODS infers the result type from the operand type.
class Strata_ElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Strata_ComputeOp<mnemonic, !listconcat(traits,
        [SameOperandsAndResultType, InferTypeOpInterface])>;

class Strata_UnaryElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Strata_ElementwiseOp<mnemonic, !listconcat(traits, [Strata_Differentiable])> {
  let arguments = (ins Strata_FloatTensor:$input);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Dense algebra
//===----------------------------------------------------------------------===//

def Strata_MatmulOp : Strata_InferredOp<"matmul", [Strata_Differentiable,
    DeclareOpInterfaceMethods<Strata_MixedPrecisionOpInterface>]> {
  let summary = "matrix product, optionally batched and transposed";
  let description = [{
    Computes `op(lhs) · op(rhs)` over the last two dimensions, where `op`
    transposes those two dimensions when `transpose_a` / `transpose_b` is set.
    `lhs` has shape `[b..., M, K]` (`[b..., K, M]` transposed). `rhs` has
    either the same leading batch dimensions `[b..., K, N]`, or rank 2
    (`[K, N]`), in which case the same matrix multiplies every batch element
    (a linear layer applied to every token). The result is `[b..., M, N]`.

    With `bf16` (set by `--strata-mixed-precision`), both operands are
    rounded to bfloat16 (to nearest even) and the products are summed in f32:
    the operands and the result stay f32 tensors, so only the arithmetic
    changes (as `torch.autocast` computes a matmul, except that the result is
    not rounded). The gradient products of a `bf16` matmul are `bf16` too.

    `heads_a`, `heads_b`, `heads_c` (set by `--strata-fuse`, after autodiff)
    fold attention's head split into the product: that operand (or the
    result) of logical shape `[b..., H, R, C]` is stored as `[b..., R, H, C]`
    (the two dimensions before the last swapped: the `[batch, seq, heads,
    head_size]` view of a `[batch, seq, hidden]` activation), as a
    `strata.transpose` by `[..., r-2, r-3, r-1]` would store it. The runtime
    reads (or writes) the matrices in place with a row stride of `H · C`,
    so the transpose is never written. The operand types are the stored
    ones; a rank-2 `rhs` has no heads layout. Autodiff refuses these flags.

    Cost: `2 · batch · M · N · K` FLOPs (at the target's bf16 peak with
    `bf16`).

    ```mlir
    %y = strata.matmul %x, %w : (tensor<8x128x768xf32>, tensor<768x3072xf32>) -> tensor<8x128x3072xf32>
    %s = strata.matmul %q, %k transpose_b : (tensor<8x12x128x64xf32>, tensor<8x12x128x64xf32>) -> tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$lhs, Strata_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$bf16, UnitAttr:$heads_a, UnitAttr:$heads_b,
                       UnitAttr:$heads_c);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs), [{
      build($_builder, $_state, lhs, rhs, /*transpose_a=*/false,
            /*transpose_b=*/false);
    }]>
  ];
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    (`bf16` $bf16^)? (`heads_a` $heads_a^)? (`heads_b` $heads_b^)?
    (`heads_c` $heads_c^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Returns (batch, M, N, K) of the product.
    std::array<int64_t, 4> getProblemSize();
    /// Whether an operand or the result is stored in the heads layout.
    bool hasHeadsLayout() { return getHeadsA() || getHeadsB() || getHeadsC(); }
  }];
}

def Strata_BiasAddOp : Strata_InferredOp<"bias_add", [Strata_Differentiable]> {
  let summary = "adds a 1-D bias along one axis";
  let description = [{
    `result[..., i, ...] = input[..., i, ...] + bias[i]` where `i` indexes
    dimension `axis` of `input` (negative values count from the end; the
    default `-1` is the last dimension, `1` is the channel axis of NCHW).

    Cost: one FLOP per element.

    ```mlir
    %y = strata.bias_add %x, %b : (tensor<32x128xf32>, tensor<128xf32>) -> tensor<32x128xf32>
    %z = strata.bias_add %c, %cb axis = 1 : (tensor<8x64x32x32xf32>, tensor<64xf32>) -> tensor<8x64x32x32xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_FloatTensor:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$bias), [{
      build($_builder, $_state, input, bias, /*axis=*/-1);
    }]>
  ];
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $bias (`axis` `=` $axis^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Returns `axis` as a non-negative dimension index.
    int64_t getNormalizedAxis();
  }];
}

def Strata_AddOp : Strata_ElementwiseOp<"add", [Commutative, Strata_Differentiable]> {
  let summary = "element-wise sum (residual connection)";
  let description = [{
    Element-wise sum of two tensors of the same type, the residual connection
    of transformers and ResNets.

    Cost: one FLOP per element.

    ```mlir
    %y = strata.add %x, %f : tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$lhs, Strata_FloatTensor:$rhs);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Activations and normalisation
//===----------------------------------------------------------------------===//

def Strata_ReluOp : Strata_UnaryElementwiseOp<"relu"> {
  let summary = "rectified linear unit";
  let description = [{
    `result = max(input, 0)` element-wise. Cost: one FLOP per element.

    ```mlir
    %y = strata.relu %x : tensor<32x128xf32>
    ```
  }];
}

def Strata_GeluOp : Strata_UnaryElementwiseOp<"gelu"> {
  let summary = "Gaussian error linear unit (tanh approximation)";
  let description = [{
    `result = 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))`, the form
    GPT-2 uses. Cost: eight FLOPs per element.

    ```mlir
    %y = strata.gelu %x : tensor<8x128x3072xf32>
    ```
  }];
}

def Strata_SoftmaxOp : Strata_InferredOp<"softmax", [Strata_DifferentiableSensitive]> {
  let summary = "softmax over the last dimension, optionally scaled and causal";
  let description = [{
    `result = softmax(scale · input)` along the last dimension. With `causal`,
    the last two dimensions form a square `[S, S]` score matrix and entry
    `(i, j)` with `j > i` is masked out (its probability is zero), the
    attention mask of a decoder.

    Cost: five FLOPs per element (max, subtract, exp, sum, divide), plus one
    when `scale` is not 1.

    ```mlir
    %p = strata.softmax %s causal scale = 1.250000e-01 : tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, UnitAttr:$causal,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`causal` $causal^)? (`scale` `=` $scale^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Strata_LayerNormOp : Strata_InferredOp<"layer_norm", [Strata_DifferentiableSensitive]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    Normalises every vector along the last dimension to zero mean and unit
    variance (`epsilon` is added to the variance), then applies the
    element-wise affine map `gamma · x̂ + beta`. `gamma` and `beta` are 1-D of
    the size of the last dimension.

    Cost: eight FLOPs per element.

    ```mlir
    %y = strata.layer_norm %x, %g, %b : (tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_FloatTensor:$gamma,
                       Strata_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$gamma,
                   "::mlir::Value":$beta), [{
      build($_builder, $_state, input, gamma, beta, ::llvm::APFloat(1.0e-5));
    }]>
  ];
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta (`epsilon` `=` $epsilon^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Strata_RunningStatsResource
    : Resource<"::mlir::strata::RunningStatsResource">;

def Strata_BatchNormOp : Strata_Op<"batch_norm", [
    Strata_DifferentiableSensitive, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Strata_CostOpInterface>,
    DeclareOpInterfaceMethods<Strata_StatefulOpInterface,
                              ["updatesRankLocalState"]>,
    MemoryEffects<[MemRead<Strata_RunningStatsResource>,
                   MemWrite<Strata_RunningStatsResource>]>]> {
  let summary = "batch normalisation over the channel axis, training mode";
  let description = [{
    Batch normalisation of an input `[N, C, d...]` (NCHW for images; rank 2
    is `[N, C]`) as PyTorch's `BatchNorm` computes it in training mode. Per
    channel `c`, over the `m = N · d...` values of the batch:
    `mean = Σ x / m`, `var = Σ (x - mean)² / m` (biased),
    `inv_std = 1 / sqrt(var + epsilon)` and
    `result = gamma · (x - mean) · inv_std + beta`.
    `saved_mean` and `saved_inv_std` are the batch statistics, which the
    backward rule reads. The running statistics are updated with the
    unbiased variance:
    `new_running_mean = (1 - momentum) · running_mean + momentum · mean`,
    `new_running_var = (1 - momentum) · running_var + momentum · var · m / (m - 1)`.
    `gamma`, `beta` and the running statistics are 1-D of size `C`; a batch
    needs more than one value per channel (`m > 1`).

    The running statistics are function arguments marked
    `strata.running_stat`; the runtime updates them in place (the two new
    values take the operands' buffers), so the step need not return them.
    The op declares that effect, so it is never merged, deleted or
    recomputed. Evaluation (`strata-run --infer`, `--eval-data`) runs the op
    in inference mode: it normalises with the running statistics and leaves
    them unchanged.

    Cost: eight FLOPs per input element plus six per channel.

    ```mlir
    %y, %mean, %istd, %rm2, %rv2 = strata.batch_norm %x, %g, %b, %rm, %rv epsilon = 1.000000e-05 momentum = 1.000000e-01 : (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_FloatTensor:$gamma,
                       Strata_FloatTensor:$beta,
                       Strata_FloatTensor:$running_mean,
                       Strata_FloatTensor:$running_var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.1">:$momentum);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$gamma,
                   "::mlir::Value":$beta, "::mlir::Value":$running_mean,
                   "::mlir::Value":$running_var), [{
      build($_builder, $_state, input, gamma, beta, running_mean, running_var,
            ::llvm::APFloat(1.0e-5), ::llvm::APFloat(0.1));
    }]>
  ];
  let results = (outs Strata_FloatTensor:$result,
                      Strata_FloatTensor:$saved_mean,
                      Strata_FloatTensor:$saved_inv_std,
                      Strata_FloatTensor:$new_running_mean,
                      Strata_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `,` $running_mean `,` $running_var
    (`epsilon` `=` $epsilon^)? (`momentum` `=` $momentum^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

def Strata_EmbeddingOp : Strata_InferredOp<"embedding", [Strata_Differentiable],
    ["getBytesRead"]> {
  let summary = "row gather from an embedding table";
  let description = [{
    `result[i..., :] = table[indices[i...], :]`. The table is `[V, H]`; the
    result has the shape of `indices` followed by `H`. Indices outside
    `[0, V)` are an error at run time.

    Cost: no FLOPs; reads the indices and one table row per index.

    ```mlir
    %e = strata.embedding %wte, %tokens : (tensor<50257x768xf32>, tensor<8x128xi32>) -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$table, Strata_IndexTensor:$indices);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` functional-type(operands, results)
  }];
}

def Strata_PositionEmbeddingOp : Strata_InferredOp<"position_embedding",
    [Strata_Differentiable],
    ["getBytesRead"]> {
  let summary = "adds learned position embeddings";
  let description = [{
    `result[b, s, :] = input[b, s, :] + table[s, :]` for an input `[B, S, H]`
    and a table `[P, H]` with `S <= P` (the table holds `P` positions; rows
    `S..P-1` are unused at this sequence length).

    Cost: one FLOP per output element; reads `S` rows of the table.

    ```mlir
    %x = strata.position_embedding %e, %wpe : (tensor<8x128x768xf32>, tensor<1024x768xf32>) -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_FloatTensor:$table);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $table attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def Strata_ReshapeOp : Strata_ComputeOp<"reshape",
    [Strata_Differentiable, Strata_ViewOpInterface],
    ["getBytesRead", "getBytesWritten"]> {
  let summary = "reinterprets a tensor with another shape";
  let description = [{
    Row-major reinterpretation of `input` with the result's shape; the element
    count and element type are unchanged. The result type is the only place
    the new shape is written, so it is not inferred.

    Cost: none (a view; no FLOPs and no memory traffic): the buffer planner
    places the result in the input's bytes (`ViewOpInterface`) wherever that
    is safe, and the runtime then moves no byte; elsewhere it is a copy.

    ```mlir
    %h = strata.reshape %q : tensor<8x128x768xf32> -> tensor<8x128x12x64xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Strata_TransposeOp : Strata_InferredOp<"transpose", [Strata_Differentiable]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`. `permutation` is a
    permutation of `[0, rank)`.

    Cost: no FLOPs; reads and writes every element once.

    ```mlir
    %t = strata.transpose %h [0, 2, 1, 3] : tensor<8x128x12x64xf32> -> tensor<8x12x128x64xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
}

def Strata_FlattenOp : Strata_InferredOp<"flatten",
    [Strata_Differentiable, Strata_ViewOpInterface],
    ["getBytesRead", "getBytesWritten"]> {
  let summary = "collapses all dimensions after the first";
  let description = [{
    `[N, d1, ..., dk] -> [N, d1 · ... · dk]`, the bridge from convolutional
    feature maps to fully connected layers.

    Cost: none (a view, as `strata.reshape`).

    ```mlir
    %f = strata.flatten %x : tensor<8x512x7x7xf32> -> tensor<8x25088xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Strata_SliceOp : Strata_InferredOp<"slice", [Strata_Differentiable],
    ["getBytesRead"]> {
  let summary = "a contiguous range of one dimension";
  let description = [{
    `result = input[..., offset : offset + size, ...]` along dimension
    `axis`; the other dimensions are unchanged. ONNX's `Split` (GPT-2's
    fused query/key/value projection) and `Slice` import as slices.

    Cost: no FLOPs; reads and writes the range once.

    ```mlir
    %q = strata.slice %qkv axis = 2 offset = 0 size = 768 : tensor<8x128x2304xf32> -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$size);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis `offset` `=` $offset `size` `=` $size attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Strata_ConcatOp : Strata_InferredOp<"concat", [Strata_Differentiable]> {
  let summary = "joins tensors along one dimension";
  let description = [{
    The `inputs` (at least one, of one rank and element type, equal in
    every dimension but `axis`) one after the other along dimension `axis`.
    ONNX's `Concat` of computed tensors imports as it.

    Cost: no FLOPs; reads and writes every element once.

    ```mlir
    %c = strata.concat %a, %b axis = 1 : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<8x48xf32>
    ```
  }];
  let arguments = (ins Variadic<Strata_FloatTensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type($inputs, results)
  }];
}

//===----------------------------------------------------------------------===//
// Convolutional networks
//===----------------------------------------------------------------------===//

def Strata_Conv2DOp : Strata_InferredOp<"conv2d", [Strata_Differentiable,
    DeclareOpInterfaceMethods<Strata_MixedPrecisionOpInterface>]> {
  let summary = "2-D convolution, NCHW input and OIHW filter";
  let description = [{
    Cross-correlation of an input `[N, C, H, W]` with a filter `[F, C, KH, KW]`
    and symmetric zero `padding` `[ph, pw]`, moving by `strides` `[sh, sw]`.
    The result is `[N, F, (H + 2ph - KH) / sh + 1, (W + 2pw - KW) / sw + 1]`.
    Bias is a separate `strata.bias_add ... axis = 1`.

    With `bf16` (set by `--strata-mixed-precision`), the input and filter are
    rounded to bfloat16 as the im2col GEMM packs them and the products are
    summed in f32, as for a `bf16` matmul; the gradient ops inherit it.

    Cost: `2 · N · F · OH · OW · C · KH · KW` FLOPs (at the target's bf16
    peak with `bf16`).

    ```mlir
    %y = strata.conv2d %x, %w strides = [1, 1] padding = [1, 1] : (tensor<8x3x224x224xf32>, tensor<64x3x3x3xf32>) -> tensor<8x64x224x224xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_FloatTensor:$filter,
                       Strata_Pair:$strides, Strata_Pair:$padding,
                       UnitAttr:$bf16);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter `strides` `=` $strides `padding` `=` $padding
    (`bf16` $bf16^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Strata_MaxPool2DOp : Strata_InferredOp<"max_pool2d", [Strata_Differentiable]> {
  let summary = "2-D max pooling over NCHW";
  let description = [{
    Maximum over `kernel`-sized windows of an `[N, C, H, W]` input moving by
    `strides`, with implicit `-inf` `padding`. The result is
    `[N, C, (H + 2ph - KH) / sh + 1, (W + 2pw - KW) / sw + 1]`.

    Cost: `KH · KW` FLOPs (comparisons) per output element.

    ```mlir
    %p = strata.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0] : tensor<8x64x224x224xf32> -> tensor<8x64x112x112xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_Pair:$kernel,
                       Strata_Pair:$strides, Strata_Pair:$padding);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Strata_GlobalAvgPoolOp : Strata_InferredOp<"global_avg_pool", [Strata_Differentiable]> {
  let summary = "mean over the spatial dimensions of NCHW";
  let description = [{
    `[N, C, H, W] -> [N, C]`, the mean over `H` and `W`.

    Cost: one FLOP per input element.

    ```mlir
    %g = strata.global_avg_pool %x : tensor<8x512x7x7xf32> -> tensor<8x512xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Strata_SoftmaxCrossEntropyOp : Strata_InferredOp<"softmax_cross_entropy",
    [Strata_Differentiable]> {
  let summary = "mean softmax cross-entropy against integer class labels";
  let description = [{
    `logits` has shape `[d..., C]` and `labels` the shape `[d...]` with class
    indices in `[0, C)`. The result is the mean over all label positions of
    `-log softmax(logits)[label]`, a scalar `f32` whatever the logits' type.
    Over a vocabulary it is the language-model loss.

    Cost: five FLOPs per logit plus one per label.

    ```mlir
    %l = strata.softmax_cross_entropy %logits, %y : (tensor<8x128x50257xf32>, tensor<8x128xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$logits, Strata_IndexTensor:$labels);
  let results = (outs Strata_LossTensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
}

def Strata_MseLossOp : Strata_InferredOp<"mse_loss", [Strata_Differentiable]> {
  let summary = "mean squared error";
  let description = [{
    The mean over all elements of `(input - target)²`, a scalar `f32`.

    Cost: three FLOPs per element.

    ```mlir
    %l = strata.mse_loss %pred, %target : (tensor<32x10xf32>, tensor<32x10xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_FloatTensor:$target);
  let results = (outs Strata_LossTensor:$loss);
  let assemblyFormat = [{
    $input `,` $target attr-dict `:` functional-type(operands, results)
  }];
}

include "strata/Dialect/Strata/StrataGradOps.td"
include "strata/Dialect/Strata/StrataCommOps.td"
include "strata/Dialect/Strata/StrataMemoryOps.td"
include "strata/Dialect/Strata/StrataFusedOps.td"

#endif // STRATA_DIALECT_STRATA_STRATAOPS_TD
