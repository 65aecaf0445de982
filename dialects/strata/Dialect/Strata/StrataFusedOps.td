//===- StrataFusedOps.td - Ops that --strata-fuse creates --*- tablegen -*-===//
//
// Kernels that do the work of several ops in one pass over memory. They come
// after autodiff (they are not differentiable) and compute exactly what the
// ops they replace compute. Included from StrataOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECT_STRATA_STRATAFUSEDOPS_TD
#define STRATA_DIALECT_STRATA_STRATAFUSEDOPS_TD

// The values are the plan's (strata_plan::Epilogue in
// runtime/include/strata-rt/PlanFormat.h); the exporter writes them as they
// are.
def Strata_EpilogueKind : I32EnumAttr<"EpilogueKind",
    "element-wise tail of a fused matmul", [
    I32EnumAttrCase<"bias", 1>,
    I32EnumAttrCase<"bias_relu", 2>,
    I32EnumAttrCase<"bias_gelu", 3>,
    I32EnumAttrCase<"relu_grad", 4>,
    I32EnumAttrCase<"gelu_grad", 5>,
    I32EnumAttrCase<"residual", 6>,
    I32EnumAttrCase<"bias_residual", 7>
  ]> {
  let cppNamespace = "::mlir::strata";
}

def Strata_FusedMatmulOp : Strata_ComputeOp<"fused_matmul"> {
  let summary = "matrix product with an element-wise epilogue";
  let description = [{
    `strata.matmul` (same operands, transposes, `bf16` and tiling) followed
    by an element-wise epilogue applied to each element once its sum over
    `k` is complete, as cuBLASLt's epilogues (and XLA's GEMM rewriter, which
    targets them) fuse a bias and an activation into a GEMM. The product is
    never written to memory on its own. `epilogue`, with its one epilogue
    operand:

    - `bias` (`bias`, 1-D of the result's last dimension):
      `result = product + bias`, as `strata.bias_add`.
    - `bias_relu`, `bias_gelu` (`bias`): `result = act(product + bias)`, as
      `strata.bias_add` then `strata.relu` / `strata.gelu`. The optional
      second result `pre_activation` is `product + bias` itself, for the
      backward pass to read (gelu's gradient needs it).
    - `relu_grad`, `gelu_grad` (`input`, of the result's type): `result =
      relu_grad(product, input)` / `gelu_grad(product, input)`: the product is
      the gradient flowing into an activation whose input was `input`.
    - `residual` (`other`, of the result's type): `result = product + other`,
      as `strata.add` (a residual connection, or two gradient contributions
      summed).
    - `bias_residual` (`bias`, then `other`): `result = (product + bias) +
      other`, as `strata.bias_add` then `strata.add`.

    The epilogue runs the arithmetic of the kernels it replaces, so a fused
    step computes bit for bit what the unfused one does (`bf16` rounds the
    product's operands only, as on `strata.matmul`).

    Cost: the matmul's FLOPs plus the epilogue's per element (bias 1, relu 1,
    gelu 8, relu_grad 1, gelu_grad 12, residual 1, bias_residual 2); it reads
    its operands and writes its results once.

    ```mlir
    %h = strata.fused_matmul bias_relu %x, %w, %b : (tensor<256x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<256x1024xf32>
    %a, %z = strata.fused_matmul bias_gelu %x, %w, %b : (tensor<16x128x256xf32>, tensor<256x1024xf32>, tensor<1024xf32>) -> (tensor<16x128x1024xf32>, tensor<16x128x1024xf32>)
    %dz = strata.fused_matmul relu_grad %dy, %w, %h transpose_b : (tensor<256x1024xf32>, tensor<1024x1024xf32>, tensor<256x1024xf32>) -> tensor<256x1024xf32>
    %r = strata.fused_matmul bias_residual %a, %w2, %b2, %x : (tensor<16x128x1024xf32>, tensor<1024x256xf32>, tensor<256xf32>, tensor<16x128x256xf32>) -> tensor<16x128x256xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$lhs, Strata_FloatTensor:$rhs,
                       Variadic<Strata_FloatTensor>:$epilogue_operands,
                       Strata_EpilogueKind:$epilogue, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b, UnitAttr:$bf16);
  let results = (outs Strata_FloatTensor:$result,
                      Optional<Strata_FloatTensor>:$pre_activation);
  let assemblyFormat = [{
    $epilogue $lhs `,` $rhs (`,` $epilogue_operands^)?
    (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    (`bf16` $bf16^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Returns (batch, M, N, K) of the product.
    std::array<int64_t, 4> getProblemSize();
    /// Whether the epilogue adds a bias (its first epilogue operand).
    bool hasBias();
    /// Whether the epilogue adds a tensor of the result's type (its last
    /// epilogue operand).
    bool hasResidual();
  }];
}

#endif // STRATA_DIALECT_STRATA_STRATAFUSEDOPS_TD
