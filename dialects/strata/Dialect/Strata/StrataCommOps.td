//===- StrataCommOps.td - Communication between ranks ------*- tablegen -*-===//
//
// Collectives among the replicas of a data-parallel group: the synchronous
// `all_reduce` and the asynchronous bucketed `all_reduce_start` /
// `all_reduce_wait` pair. They read and write the communication resource, so
// CSE, DCE and reordering passes leave them alone. Included from
// StrataOps.td.
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

def Strata_AllReduceStartOp : Strata_Op<"all_reduce_start", [
    MemoryEffects<[MemRead<Strata_CommResource>, MemWrite<Strata_CommResource>]>,
    DeclareOpInterfaceMethods<Strata_CostOpInterface,
                              ["getBytesRead", "getBytesWritten",
                               "estimateSeconds"]>]> {
  let summary = "start an asynchronous all-reduce of a bucket of tensors";
  let description = [{
    Starts the sum (or, with `mean`, the mean) over the `replicas` ranks of a
    group of every one of `inputs`, as one collective over the bucket (the
    tensors packed one after the other), and returns at once: the transfer
    runs while later ops compute. The `strata.all_reduce_wait` with the same
    `bucket` completes it and yields the reduced tensors; between the two no
    other collective with that bucket may start. Each bucket number names at
    most one transfer in flight; `--strata-insert-grad-sync` places the pair
    around the rest of the backward pass.

    Cost: one ring all-reduce of the bucket's total bytes (`2 (p - 1) / p`
    times the bytes sent and received per rank, `2 (p - 1)` link latencies).
    It occupies the link, not the compute stream.

    With `host` (host accumulation, `--strata-insert-grad-sync
    accumulate=host`), the bucket is not all-reduced among the replicas
    directly: it travels in chunks of `chunk_bytes` (default 1 MiB) to the
    host of rank 0, which accumulates every replica's chunk, and each
    accumulated chunk is sent back to every replica as soon as it is complete
    (for machines whose devices lack a fast direct link). Cost: a reduce and
    a broadcast of the bucket, `2 (p - 1)` bytes per byte of bucket through
    the host's link.

    With `staleness` s > 0 (lagging gradients, `--strata-insert-grad-sync
    staleness=s`) a replica that misses the deadline of a step's aggregate
    may contribute a gradient set it computed in one of the s previous
    iterations instead of the current one, and the aggregate is the mean of
    the sets it holds (each set applied exactly once); docs/plan-format.md
    gives the runtime's deadline rule and weighting. Every start of a step
    carries the same s; s = 0 (the attribute absent) is synchronous.

    ```mlir
    strata.all_reduce_start %dw1, %db1 mean replicas = 4 bucket = 0
        : tensor<256x10xf32>, tensor<10xf32>
    strata.all_reduce_start %dw0 mean replicas = 4 bucket = 1 staleness = 1
        : tensor<784x256xf32>
    ```
  }];
  let arguments = (ins Variadic<Strata_FloatTensor>:$inputs, UnitAttr:$mean,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$replicas,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$bucket,
                       UnitAttr:$host,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<4>]>>:$chunk_bytes,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$staleness);
  let assemblyFormat = [{
    $inputs (`mean` $mean^)? (`host` $host^)? `replicas` `=` $replicas
    `bucket` `=` $bucket (`staleness` `=` $staleness^)? attr-dict `:` type($inputs)
  }];
  let hasVerifier = 1;
}

def Strata_AllReduceWaitOp : Strata_Op<"all_reduce_wait", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    MemoryEffects<[MemRead<Strata_CommResource>, MemWrite<Strata_CommResource>]>,
    DeclareOpInterfaceMethods<Strata_CostOpInterface>]> {
  let summary = "wait for a bucket's all-reduce and return the reduced tensors";
  let description = [{
    Completes the transfer that the `strata.all_reduce_start` with the same
    `bucket` started and returns the reduced value of each of `inputs` (the
    same tensors, in the same order, as the start's operands). Ops that need
    a reduced gradient use this op's results, so they run after the wait.

    Cost: unpacking the bucket (its bytes read and written once).

    ```mlir
    %dw, %db = strata.all_reduce_wait %dw1, %db1 bucket = 0
        : tensor<256x10xf32>, tensor<10xf32>
    ```
  }];
  let arguments = (ins Variadic<Strata_FloatTensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$bucket);
  let results = (outs Variadic<Strata_FloatTensor>:$results);
  let assemblyFormat = [{
    $inputs `bucket` `=` $bucket attr-dict `:` type($inputs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Point to point, between the stages of a pipeline
//===----------------------------------------------------------------------===//

def Strata_SendOp : Strata_Op<"send", [
    MemoryEffects<[MemRead<Strata_CommResource>, MemWrite<Strata_CommResource>]>,
    DeclareOpInterfaceMethods<Strata_CostOpInterface,
                              ["getBytesRead", "getBytesWritten",
                               "estimateSeconds"]>]> {
  let summary = "send a tensor to another pipeline stage";
  let description = [{
    Sends `input` to pipeline stage `peer`: the rank that runs stage `peer`
    in the same replica as the sender. The `strata.recv` on that stage with
    the same `tag` receives it. `--strata-schedule-pipeline` creates the pair
    for every value that one stage produces and another uses (activations
    forward, their gradients backward). The send does not block: the tensor
    may not be written again until the step ends, when the runtime completes
    every send of the step.

    Cost: the tensor's bytes over the link between the stages (taken as the
    intra-node link) plus its latency.

    ```mlir
    strata.send %h to 1 tag 3 : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Strata_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let assemblyFormat = [{
    $input `to` $peer `tag` $tag attr-dict `:` type($input)
  }];
}

def Strata_RecvOp : Strata_Op<"recv", [
    MemoryEffects<[MemRead<Strata_CommResource>, MemWrite<Strata_CommResource>]>,
    DeclareOpInterfaceMethods<Strata_CostOpInterface,
                              ["getBytesRead", "estimateSeconds"]>]> {
  let summary = "receive a tensor from another pipeline stage";
  let description = [{
    Receives the tensor that the `strata.send` with the same `tag` on
    pipeline stage `peer` (same replica) sent; blocks until it arrived. The
    result type must equal the sent tensor's type (the plan loader checks
    every pair).

    Cost: none of its own beyond the link latency (the transfer is the
    send's).

    ```mlir
    %h = strata.recv from 0 tag 3 : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let results = (outs Strata_FloatTensor:$result);
  let assemblyFormat = [{
    `from` $peer `tag` $tag attr-dict `:` type($result)
  }];
}

#endif // STRATA_DIALECT_STRATA_STRATACOMMOPS_TD
