//===- StrataGradOps.td - Backward, optimizer and utility ops -*- tablegen -*-===//
//
// Ops that `--strata-autodiff` creates: the gradient kernels of the forward
// ops, optimizer updates and `fill`. Included from StrataOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECT_STRATA_STRATAGRADOPS_TD
#define STRATA_DIALECT_STRATA_STRATAGRADOPS_TD

//===----------------------------------------------------------------------===//
// Utility
//===----------------------------------------------------------------------===//

def Strata_FillOp : Strata_ComputeOp<"fill", [], ["getBytesRead"]> {
  let summary = "a tensor with every element equal to a constant";
  let description = [{
    Creates a tensor of the result type filled with `value`: the seed
    gradient `1.0` of the loss, or zeros.

    Cost: no FLOPs; writes the result.

    ```mlir
    %one = strata.fill 1.000000e+00 : tensor<f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Strata_ScaleOp : Strata_ElementwiseOp<"scale", [Strata_Differentiable]> {
  let summary = "a tensor times a constant";
  let description = [{
    `result = input · factor`, element-wise. The pipeline scheduler averages
    the per-micro-batch losses with it; the ONNX importer makes a scalar
    multiple of a tensor (and, with `factor = -1`, the negation of a `Sub`)
    of it. Its gradient is the result's gradient times `factor`.

    Cost: one FLOP per element.

    ```mlir
    %mean = strata.scale %sum by 2.500000e-01 : tensor<f32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
}

def Strata_MicroBatchOp : Strata_InferredOp<"micro_batch", [],
    ["getBytesRead"]> {
  let summary = "one micro-batch of a batch: a block of rows of dimension 0";
  let description = [{
    Splits dimension 0 of `input` into `count` equal blocks and returns block
    `index` (rows `[index · n / count, (index + 1) · n / count)`). The
    pipeline scheduler feeds micro-batch `index` of the rank's batch to the
    first stage with it; data and labels both go through it.

    Cost: copies the block (reads and writes its bytes).

    ```mlir
    %x1 = strata.micro_batch %x index = 1 count = 4
        : tensor<32x784xf32> -> tensor<8x784xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Strata_FloatTensor, Strata_IndexTensor]>:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$index,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$count);
  let results = (outs AnyTypeOf<[Strata_FloatTensor, Strata_IndexTensor]>:$result);
  let assemblyFormat = [{
    $input `index` `=` $index `count` `=` $count attr-dict `:` type($input)
    `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Gradients of element-wise and normalisation ops
//===----------------------------------------------------------------------===//

class Strata_ElementwiseGradOp<string mnemonic>
    : Strata_ComputeOp<mnemonic, [SameOperandsAndResultType, InferTypeOpInterface]> {
  let arguments = (ins Strata_FloatTensor:$grad, Strata_FloatTensor:$input);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($result)";
}

def Strata_ReluGradOp : Strata_ElementwiseGradOp<"relu_grad"> {
  let summary = "gradient of relu";
  let description = [{
    `result = grad · (input > 0)` where `input` is relu's input (the
    derivative at 0 is taken as 0). Cost: one FLOP per element.

    ```mlir
    %dx = strata.relu_grad %dy, %x : tensor<32x128xf32>
    ```
  }];
}

def Strata_GeluGradOp : Strata_ElementwiseGradOp<"gelu_grad"> {
  let summary = "gradient of gelu (tanh form)";
  let description = [{
    `result = grad · gelu'(input)` for the tanh approximation of gelu. Cost:
    twelve FLOPs per element.

    ```mlir
    %dx = strata.gelu_grad %dy, %x : tensor<8x128x3072xf32>
    ```
  }];
}

def Strata_SoftmaxGradOp : Strata_ComputeOp<"softmax_grad",
    [SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = "gradient of a (scaled) softmax from its output";
  let description = [{
    `result = scale · output · (grad - Σ_j grad_j · output_j)` along the last
    dimension, where `output` is the softmax's result (masked entries of a
    causal softmax are 0 there, so their gradient is 0). Cost: four FLOPs per
    element.

    ```mlir
    %ds = strata.softmax_grad %dp, %p scale = 1.250000e-01 : tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad, Strata_FloatTensor:$output,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $output (`scale` `=` $scale^)? attr-dict `:` type($result)
  }];
}

def Strata_LayerNormGradOp : Strata_InferredOp<"layer_norm_grad"> {
  let summary = "gradients of layer normalisation";
  let description = [{
    From the gradient of the output, the layer norm's input and `gamma`,
    computes the gradients of the input, `gamma` and `beta` (mean and variance
    are recomputed from the input). Cost: twelve FLOPs per input element.

    ```mlir
    %dx, %dg, %db = strata.layer_norm_grad %dy, %x, %g : (tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<768xf32>) -> (tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad, Strata_FloatTensor:$input,
                       Strata_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Strata_FloatTensor:$input_grad,
                      Strata_FloatTensor:$gamma_grad,
                      Strata_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $gamma (`epsilon` `=` $epsilon^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Strata_BatchNormGradOp : Strata_InferredOp<"batch_norm_grad"> {
  let summary = "gradients of batch normalisation (training mode)";
  let description = [{
    From the gradient of the output, the batch norm's input, `gamma` and the
    batch statistics its forward pass saved (`mean`, `inv_std`), computes
    the gradients of the input, `gamma` and `beta`. Per channel, over the `m`
    values of the batch, with `x̂ = (x - mean) · inv_std`:
    `beta_grad = Σ grad`, `gamma_grad = Σ grad · x̂` and
    `input_grad = gamma · inv_std / m · (m · grad - beta_grad - x̂ · gamma_grad)`
    (the batch statistics depend on the input). Cost: ten FLOPs per input
    element.

    ```mlir
    %dx, %dg, %db = strata.batch_norm_grad %dy, %x, %g, %mean, %istd : (tensor<8x64x56x56xf32>, tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad, Strata_FloatTensor:$input,
                       Strata_FloatTensor:$gamma, Strata_FloatTensor:$mean,
                       Strata_FloatTensor:$inv_std);
  let results = (outs Strata_FloatTensor:$input_grad,
                      Strata_FloatTensor:$gamma_grad,
                      Strata_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $gamma `,` $mean `,` $inv_std attr-dict `:`
    functional-type(operands, results)
  }];
}

def Strata_SliceGradOp : Strata_ComputeOp<"slice_grad"> {
  let summary = "gradient of a slice: its gradient in place, zeros elsewhere";
  let description = [{
    A tensor of the result type, zero except for the range
    `[offset, offset + n)` of dimension `axis` (`n` the size of `grad` along
    it), which holds `grad`. The result type is the sliced input's; the
    other dimensions equal `grad`'s. Cost: no FLOPs; writes the result once.

    ```mlir
    %dqkv = strata.slice_grad %dq axis = 2 offset = 0 : tensor<8x128x768xf32> -> tensor<8x128x2304xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `axis` `=` $axis `offset` `=` $offset attr-dict `:` type($grad) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Strata_BiasAddGradOp : Strata_ComputeOp<"bias_add_grad"> {
  let summary = "gradient of a bias: sum over every other dimension";
  let description = [{
    `result[i] = Σ grad[..., i, ...]` where `i` indexes dimension `axis`.
    Cost: one FLOP per element of `grad`.

    ```mlir
    %db = strata.bias_add_grad %dy : tensor<32x128xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $grad (`axis` `=` $axis^)? attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients of embeddings
//===----------------------------------------------------------------------===//

def Strata_EmbeddingGradOp : Strata_ComputeOp<"embedding_grad"> {
  let summary = "gradient of an embedding table (scatter-add of rows)";
  let description = [{
    A zero table of the result type `[V, H]` with `grad[i...]` added to row
    `indices[i...]`, in index order (repeated ids accumulate). Cost: one FLOP
    per element of `grad`.

    ```mlir
    %dt = strata.embedding_grad %dy, %ids : (tensor<8x128x768xf32>, tensor<8x128xi32>) -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad, Strata_IndexTensor:$indices);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Strata_PositionEmbeddingGradOp : Strata_ComputeOp<"position_embedding_grad"> {
  let summary = "gradient of a position-embedding table";
  let description = [{
    For `grad` of shape `[B, S, H]` and a result `[P, H]`: row `s < S` is
    `Σ_b grad[b, s]`, rows `S..P-1` are zero. Cost: one FLOP per element of
    `grad`.

    ```mlir
    %dt = strata.position_embedding_grad %dy : tensor<8x128x768xf32> -> tensor<1024x768xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients of convolutional ops
//===----------------------------------------------------------------------===//

def Strata_Conv2DGradInputOp : Strata_ComputeOp<"conv2d_grad_input",
    [DeclareOpInterfaceMethods<Strata_MixedPrecisionOpInterface>]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    The input gradient `[N, C, H, W]` (the result type) of a `conv2d` with the
    same `strides` and `padding`, from the output gradient and the filter.
    `bf16`: computed in bf16 with f32 accumulation (as the forward `conv2d`
    with `bf16`, whose gradient it is). Cost: the FLOPs of the forward
    convolution.

    ```mlir
    %dx = strata.conv2d_grad_input %dy, %w strides = [1, 1] padding = [1, 1] : (tensor<8x64x32x32xf32>, tensor<64x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad, Strata_FloatTensor:$filter,
                       Strata_Pair:$strides, Strata_Pair:$padding,
                       UnitAttr:$bf16);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $filter `strides` `=` $strides `padding` `=` $padding
    (`bf16` $bf16^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Strata_Conv2DGradFilterOp : Strata_ComputeOp<"conv2d_grad_filter",
    [DeclareOpInterfaceMethods<Strata_MixedPrecisionOpInterface>]> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    The filter gradient `[F, C, KH, KW]` (the result type) of a `conv2d` with
    the same `strides` and `padding`, from the output gradient and the input.
    `bf16`: computed in bf16 with f32 accumulation (as the forward `conv2d`
    with `bf16`, whose gradient it is). Cost: the FLOPs of the forward
    convolution.

    ```mlir
    %dw = strata.conv2d_grad_filter %dy, %x strides = [1, 1] padding = [1, 1] : (tensor<8x64x32x32xf32>, tensor<8x3x32x32xf32>) -> tensor<64x3x3x3xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad, Strata_FloatTensor:$input,
                       Strata_Pair:$strides, Strata_Pair:$padding,
                       UnitAttr:$bf16);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `strides` `=` $strides `padding` `=` $padding
    (`bf16` $bf16^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Strata_MaxPool2DGradOp : Strata_ComputeOp<"max_pool2d_grad", [
    AllTypesMatch<["input", "result"]>]> {
  let summary = "gradient of max pooling";
  let description = [{
    Routes each element of `grad` to the first maximum (row-major scan) of its
    window in `input`; the result has the input's type. Cost: `KH · KW` FLOPs
    per element of `grad`.

    ```mlir
    %dx = strata.max_pool2d_grad %dy, %x kernel = [2, 2] strides = [2, 2] padding = [0, 0] : (tensor<8x64x16x16xf32>, tensor<8x64x32x32xf32>) -> tensor<8x64x32x32xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad, Strata_FloatTensor:$input,
                       Strata_Pair:$kernel, Strata_Pair:$strides,
                       Strata_Pair:$padding);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `kernel` `=` $kernel `strides` `=` $strides `padding` `=`
    $padding attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Strata_GlobalAvgPoolGradOp : Strata_ComputeOp<"global_avg_pool_grad"> {
  let summary = "gradient of global average pooling";
  let description = [{
    `result[n, c, h, w] = grad[n, c] / (H · W)` for a result `[N, C, H, W]`.
    Cost: one FLOP per result element.

    ```mlir
    %dx = strata.global_avg_pool_grad %dy : tensor<8x512xf32> -> tensor<8x512x7x7xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$grad);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients of losses
//===----------------------------------------------------------------------===//

def Strata_SoftmaxCrossEntropyGradOp
    : Strata_ComputeOp<"softmax_cross_entropy_grad", [
        AllTypesMatch<["logits", "result"]>]> {
  let summary = "gradient of the mean softmax cross-entropy";
  let description = [{
    `result = (softmax(logits) - onehot(labels)) · loss_grad / L` where `L` is
    the number of label positions; the result has the logits' type. Cost: five
    FLOPs per logit.

    ```mlir
    %dl = strata.softmax_cross_entropy_grad %logits, %y, %one : (tensor<32x10xf32>, tensor<32xi32>, tensor<f32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$logits, Strata_IndexTensor:$labels,
                       Strata_LossTensor:$loss_grad);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Strata_MseLossGradOp : Strata_ComputeOp<"mse_loss_grad", [
    AllTypesMatch<["input", "target", "result"]>]> {
  let summary = "gradient of the mean squared error w.r.t. its input";
  let description = [{
    `result = 2 · (input - target) · loss_grad / N`. Cost: three FLOPs per
    element.

    ```mlir
    %dx = strata.mse_loss_grad %x, %t, %one : (tensor<32x10xf32>, tensor<32x10xf32>, tensor<f32>) -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, Strata_FloatTensor:$target,
                       Strata_LossTensor:$loss_grad);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $target `,` $loss_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// A multi-tensor group id (`--strata-fuse`): positive.
def Strata_MultiTensorGroup : ConfinedAttr<I64Attr, [IntMinValue<1>]>;

def Strata_SgdUpdateOp : Strata_ComputeOp<"sgd_update", [
    DeclareOpInterfaceMethods<Strata_InPlaceOpInterface>,
    AllTypesMatch<["param", "grad", "velocity", "new_param", "new_velocity"]>]> {
  let summary = "SGD with momentum and weight decay";
  let description = [{
    `velocity' = momentum · velocity + (grad + weight_decay · param)` and
    `param' = param - lr · velocity'`. The runtime updates in place: the
    results take the buffers of `param` and `velocity`. Cost: five FLOPs per
    element.

    `multi_tensor = N` (set by `--strata-fuse`): consecutive updates with the
    same `N` run as one multi-tensor kernel (one parallel loop, one launch);
    each tensor's results are those of its own update.

    ```mlir
    %p2, %v2 = strata.sgd_update %p, %g, %v lr = 1.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<784x256xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$param, Strata_FloatTensor:$grad,
                       Strata_FloatTensor:$velocity, F64Attr:$lr,
                       F64Attr:$momentum, F64Attr:$weight_decay,
                       OptionalAttr<Strata_MultiTensorGroup>:$multi_tensor);
  let results = (outs Strata_FloatTensor:$new_param,
                      Strata_FloatTensor:$new_velocity);
  let assemblyFormat = [{
    $param `,` $grad `,` $velocity `lr` `=` $lr `momentum` `=` $momentum
    `weight_decay` `=` $weight_decay
    (`multi_tensor` `=` $multi_tensor^)? attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Strata_AdamUpdateOp : Strata_ComputeOp<"adam_update", [
    DeclareOpInterfaceMethods<Strata_InPlaceOpInterface>,
    AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>]> {
  let summary = "Adam / AdamW update";
  let description = [{
    With `step` the 1-based step `t`: if `decoupled` (AdamW)
    `param -= lr · weight_decay · param` first, else
    `grad += weight_decay · param` (Adam with L2); then
    `m' = β1 m + (1-β1) grad`, `v' = β2 v + (1-β2) grad²`,
    `param' = param - lr · (m' / (1-β1^t)) / (sqrt(v' / (1-β2^t)) + epsilon)`.
    With `update u of U` (the asynchronous pipeline schedules, which update
    U times per step) `t = (step - 1) U + u + 1`, the count of updates so
    far; a negative `u` (-U <= u < 0) is an update of the previous step run
    at the start of this one (a pipeline that does not drain between
    steps). The runtime updates in place. Cost: twelve FLOPs per element.
    `multi_tensor` groups updates as on `strata.sgd_update`; each member uses
    its own `t`.

    ```mlir
    %p2, %m2, %v2 = strata.adam_update %p, %g, %m, %v, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 : tensor<768xf32>, tensor<i32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$param, Strata_FloatTensor:$grad,
                       Strata_FloatTensor:$m, Strata_FloatTensor:$v,
                       0DTensorOf<[I32]>:$step, F64Attr:$lr, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay,
                       UnitAttr:$decoupled, OptionalAttr<I64Attr>:$update,
                       OptionalAttr<I64Attr>:$updates,
                       OptionalAttr<Strata_MultiTensorGroup>:$multi_tensor);
  let results = (outs Strata_FloatTensor:$new_param, Strata_FloatTensor:$new_m,
                      Strata_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $step `lr` `=` $lr `beta1` `=` $beta1
    `beta2` `=` $beta2 `epsilon` `=` $epsilon `weight_decay` `=` $weight_decay
    (`decoupled` $decoupled^)? (`update` $update^ `of` $updates)?
    (`multi_tensor` `=` $multi_tensor^)? attr-dict
    `:` type($param) `,` type($step)
  }];
  let hasVerifier = 1;
}

#endif // STRATA_DIALECT_STRATA_STRATAGRADOPS_TD
