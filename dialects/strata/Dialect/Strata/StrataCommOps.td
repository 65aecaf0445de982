//===- StrataCommOps.td - Communication between ranks ------*- tablegen -*-===//
//
// Collectives among the replicas of a data-parallel group. They read and
// write the communication resource, so CSE, DCE and reordering passes leave
// them alone. Included from StrataOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECT_STRATA_STRATACOMMOPS_TD
#define STRATA_DIALECT_STRATA_STRATACOMMOPS_TD

def Strata_CommResource : Resource<"::mlir::strata::CommResource">;

def Strata_AllReduceOp : Strata_Op<"all_reduce", [
    SameOperandsAndResultType, InferTypeOpInterface,
    MemoryEffects<[MemRead<Strata_CommResource>, MemWrite<Strata_CommResource>]>,
    DeclareOpInterfaceMethods<Strata_CostOpInterface,
                              ["getBytesRead", "getBytesWritten",
                               "estimateSeconds"]>]> {
  let summary = "sum or mean of a tensor over the replicas of a group";
  let description = [{
    Every one of the `replicas` ranks of the group contributes its `input`;
    each receives the element-wise sum (or, with `mean`, the sum divided by
    `replicas`). `--strata-data-parallel` averages gradients with it.

    Cost: a ring all-reduce sends and receives `2 (p - 1) / p` times the
    tensor's bytes per rank; its time on a target is that traffic over the
    link joining the replicas (intra-node when they fit in one node) plus
    `2 (p - 1)` link latencies.

    ```mlir
    %g = strata.all_reduce %dw mean replicas = 4 : tensor<784x256xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input, UnitAttr:$mean,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$replicas);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`mean` $mean^)? `replicas` `=` $replicas attr-dict `:` type($result)
  }];
}

#endif // STRATA_DIALECT_STRATA_STRATACOMMOPS_TD
