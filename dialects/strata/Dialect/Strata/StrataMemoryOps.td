//===- StrataMemoryOps.td - Swapping and compressing activations -*- tablegen -*-===//
//
// Copies between the device arena and host memory that `--strata-remat`
// inserts: an activation saved for the backward pass leaves the device after
// its last forward use and comes back before its first backward use. Each
// direction is a start/wait pair on the copy resource, like
// `all_reduce_start` / `all_reduce_wait` on the communication resource, so
// the copy overlaps the compute between the two.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECT_STRATA_STRATAMEMORYOPS_TD
#define STRATA_DIALECT_STRATA_STRATAMEMORYOPS_TD

def Strata_CopyResource : Resource<"::mlir::strata::CopyResource">;

// A copy moves bytes: any tensor a step saves (activations, and the token
// or label slices a pipeline stage keeps for its loss's backward).
def Strata_SwappableTensor : RankedTensorOf<[F32, BF16, I32, I64],
    [HasStaticShapePred, Strata_SizedTensorPred],
    "statically shaped tensor of f32, bf16, i32 or i64 (dimensions >= 1, at "
    "most 2^48 bytes)">;

class Strata_SwapOp<string mnemonic, list<Trait> traits = []>
    : Strata_Op<mnemonic, !listconcat(traits, [
        MemoryEffects<[MemRead<Strata_CopyResource>,
                       MemWrite<Strata_CopyResource>]>,
        DeclareOpInterfaceMethods<Strata_CostOpInterface,
                                  ["getBytesRead", "getBytesWritten",
                                   "estimateSeconds"]>])>;

def Strata_SwapOutOp : Strata_SwapOp<"swap_out"> {
  let summary = "start copying a tensor to host memory";
  let description = [{
    Starts copying `input` into host slot `slot` (a host buffer of the
    tensor's size that the runtime allocates once) and returns at once; the
    copy runs on the copy stream (CUDA) or copy thread (CPU) while later ops
    compute. The `strata.swap_out_wait` of the same slot and tensor completes
    it; until then the tensor's buffer stays live. Each slot is used by
    exactly one `swap_out`, `swap_out_wait`, `swap_in`, `swap_in_wait`
    sequence per step.

    Cost: the tensor's bytes over the target's host link. It occupies the
    copy resource, not the compute stream.

    ```mlir
    strata.swap_out %h slot = 0 : tensor<32x256xf32>
    ```
  }];
  let arguments = (ins Strata_SwappableTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let assemblyFormat = "$input `slot` `=` $slot attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Strata_SwapOutWaitOp : Strata_SwapOp<"swap_out_wait"> {
  let summary = "wait until a tensor's copy to host memory is complete";
  let description = [{
    Blocks until the copy that the `strata.swap_out` of `slot` started is
    complete. `input` must be that swap_out's tensor: after the wait its
    device buffer may hold other values.

    Cost: none of its own (the copy is the swap_out's).

    ```mlir
    strata.swap_out_wait %h slot = 0 : tensor<32x256xf32>
    ```
  }];
  let arguments = (ins Strata_SwappableTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let assemblyFormat = "$input `slot` `=` $slot attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Strata_SwapInOp : Strata_SwapOp<"swap_in"> {
  let summary = "start copying a swapped tensor back from host memory";
  let description = [{
    Starts copying host slot `slot` back into a new device tensor and returns
    it at once; its bytes are valid only after the `strata.swap_in_wait` of
    the same slot, so that wait must be the result's first use in the block
    and every other use must follow it. The result type must be the slot's
    `swap_out` tensor type.

    Cost: the tensor's bytes over the target's host link, on the copy
    resource.

    ```mlir
    %h2 = strata.swap_in slot = 0 : tensor<32x256xf32>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let results = (outs Strata_SwappableTensor:$result);
  let assemblyFormat = "`slot` `=` $slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Strata_SwapInWaitOp : Strata_SwapOp<"swap_in_wait"> {
  let summary = "wait until a tensor's copy back from host memory is complete";
  let description = [{
    Blocks until the copy that the `strata.swap_in` of `slot` started is
    complete. `input` must be that swap_in's result; the ops after the wait
    read it.

    Cost: none of its own (the copy is the swap_in's).

    ```mlir
    strata.swap_in_wait %h2 slot = 0 : tensor<32x256xf32>
    ```
  }];
  let arguments = (ins Strata_SwappableTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let assemblyFormat = "$input `slot` `=` $slot attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activation compression
//===----------------------------------------------------------------------===//

def Strata_CompressOp : Strata_Op<"compress", [Pure,
    DeclareOpInterfaceMethods<Strata_CostOpInterface>]> {
  let summary = "pack an activation saved for backward into a narrow format";
  let description = [{
    Inserted by `--strata-compress-activations` after the forward op that
    produces `input`: packs its f32 elements in `format` (a block-scaled
    format, docs/compression.md) into the bytes of `result`, which the
    backward pass's `strata.decompress` ops read. `candidates`, when present,
    lists the formats the runtime may switch this tensor to while training
    (it includes `format`); `result` holds the widest of them, so the arena
    is sized for it and a switch never needs a new plan. `budget`, when
    present, is the relative error (||x - q(x)|| / ||x||) the runtime keeps
    this tensor's format within when it chooses among the candidates.
    Cost: a pass over the input and the packed bytes, about 4 FLOPs per
    element (scale, round, clamp, pack).

    `result` is a rank-1 `i8` tensor of exactly the packed bytes of the
    widest candidate (`actPackedBytes`).

    ```mlir
    %c = strata.compress %h format #strata.act_format<"mxfp6e2m3"> : tensor<32x256xf32> -> tensor<6400xi8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32], [HasStaticShapePred,
                                              Strata_SizedTensorPred]>:$input,
                       Strata_ActFormatAttr:$format,
                       OptionalAttr<TypedArrayAttrBase<Strata_ActFormatAttr,
                           "array of activation formats">>:$candidates,
                       OptionalAttr<F64Attr>:$budget);
  let results = (outs 1DTensorOf<[I8]>:$result);
  let assemblyFormat = [{
    $input `format` $format (`candidates` $candidates^)? (`budget` $budget^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The formats the runtime may use: `candidates`, or `format` alone.
    ::llvm::SmallVector<::mlir::strata::ActFormatAttr> getCandidateFormats();
  }];
}

def Strata_DecompressOp : Strata_Op<"decompress", [Pure,
    DeclareOpInterfaceMethods<Strata_CostOpInterface>]> {
  let summary = "unpack a compressed activation for a backward op";
  let description = [{
    Unpacks the bytes a `strata.compress` wrote back into f32 values, in the
    format that compress used in this step. `input` must be a
    `strata.compress` result and `result` has that compress's input type.
    The pass places one right before each backward op that reads the
    activation, so the f32 copy lives only as long as that op needs it.
    Cost: a pass over the packed bytes and the output, about 2 FLOPs per
    element.

    ```mlir
    %h2 = strata.decompress %c : tensor<6400xi8> -> tensor<32x256xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[I8]>:$input);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The compress op whose bytes this unpacks (the verifier guarantees it).
    ::mlir::strata::CompressOp getCompress();
  }];
}

//===----------------------------------------------------------------------===//
// Weight versions
//===----------------------------------------------------------------------===//

def Strata_WeightVersionsResource
    : Resource<"::mlir::strata::WeightVersionsResource">;

// Not Pure: it overwrites `dest`'s buffer, so it declares a write of the
// kept weight versions, and CSE, DCE and hoisting leave it where it is.
def Strata_CopyIntoOp : Strata_Op<"copy_into", [
    DeclareOpInterfaceMethods<Strata_StatefulOpInterface,
                              ["updatesRankLocalState"]>,
    DeclareOpInterfaceMethods<Strata_CostOpInterface, ["getBytesRead"]>,
    MemoryEffects<[MemWrite<Strata_WeightVersionsResource>]>,
    AllTypesMatch<["source", "dest", "result"]>]> {
  let summary = "copy a tensor into a persistent buffer, in place";
  let description = [{
    `result` is a copy of `source`; the runtime writes it in place, into the
    buffer of `dest`, whose old value is lost. `dest` is a persistent buffer
    (a function argument of the step, or such an argument's newer version),
    so no later op may read the old `dest`.

    `--strata-schedule-pipeline` emits it for the asynchronous schedules:
    before an update overwrites a parameter, the weight version that
    in-flight micro-batches (or the next step) still read is kept in a
    state of the parameter (`strata.state`, `init = param`); and, for a
    pipeline that does not drain between steps, what the next step's
    carried passes read is kept in a state of no parameter (any element
    type: token ids are i32). With `local`, no send ever reads `dest` (it
    never leaves the rank), so the runtime need not wait for the sends in
    flight before overwriting it. Cost: the tensor's bytes read and written.

    ```mlir
    %kept = strata.copy_into %w, %stash : tensor<784x256xf32>
    %carried = strata.copy_into %x, %carry local : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source, AnyRankedTensor:$dest,
                       UnitAttr:$local);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$source `,` $dest (`local` $local^)? attr-dict `:` type($source)";
}

#endif // STRATA_DIALECT_STRATA_STRATAMEMORYOPS_TD
