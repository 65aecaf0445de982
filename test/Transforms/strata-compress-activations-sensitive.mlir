// RUN: strata-model gpt --preset gpt-tiny --hidden 32 --heads 2 --seq 8 --positions 8 --batch 2 --layers 1 | strata-opt --strata-autodiff -o %t.step.mlir
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp4 sensitive=mxfp8" 2>/dev/null | FileCheck %s --check-prefix=WIDE
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp4 sensitive=mxfp8" 2>&1 >/dev/null | FileCheck %s --check-prefix=WIDE-REMARK
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp4 sensitive=none" 2>/dev/null | FileCheck %s --check-prefix=KEEP
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp4 sensitive=none" 2>&1 >/dev/null | FileCheck %s --check-prefix=KEEP-REMARK
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=auto budget=0.05 sensitive=mxfp8" 2>/dev/null | FileCheck %s --check-prefix=AUTO
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp4" 2>/dev/null | FileCheck %s --check-prefix=UNSET
// RUN: strata-opt %t.step.mlir --strata-remat="budget=412000 target=cpu-local solver=dp" --strata-compress-activations="format=mxfp4 sensitive=bf16" 2>/dev/null | FileCheck %s --check-prefix=REMAT
// RUN: strata-opt %S/../Integration/Inputs/batch-norm-cnn.mlir --strata-autodiff --strata-compress-activations="format=mxfp4 sensitive=mxfp8" 2>/dev/null | FileCheck %s --check-prefix=BN

// sensitive= picks the format of the saved values whose backward rule
// amplifies their error (AutodiffOpInterface::amplifiesSavedError): the
// inputs of the three layer norms (the residual stream) and the attention
// probabilities; every other saved value follows format=.
// WIDE-REMARK: remark: compressed 13 saved activations from 37888 to 5928 bytes (mxfp4); 4 of them error-sensitive, in mxfp8e4m3
// WIDE-LABEL: func.func @gpt
// WIDE: %[[X:.*]] = strata.position_embedding
// WIDE-NEXT: strata.compress %[[X]] format <"mxfp8e4m3"> {{.*}} : tensor<2x8x32xf32> -> tensor<528xi8>
// WIDE-NEXT: %[[LN:.*]] = strata.layer_norm %[[X]]
// WIDE-NEXT: strata.compress %[[LN]] format <"mxfp4"> {{.*}} : tensor<2x8x32xf32> -> tensor<272xi8>
// WIDE: %[[P:.*]] = strata.softmax
// WIDE-NEXT: strata.compress %[[P]] format <"mxfp8e4m3"> {{.*}} : tensor<2x2x8x8xf32> -> tensor<264xi8>
// WIDE-COUNT-2: strata.compress %{{.*}} format <"mxfp8e4m3">

// sensitive=none keeps them f32: their backward users read the f32 values.
// KEEP-REMARK: remark: compressed 9 saved activations from 30720 to 4080 bytes (mxfp4); 4 error-sensitive ones left f32; of 13 compressible saved activations, 37888 bytes as f32
// KEEP-LABEL: func.func @gpt
// KEEP: %[[P:.*]] = strata.softmax
// KEEP-NOT: strata.compress %[[P]]
// KEEP: strata.softmax_grad %{{.*}}, %[[P]]
// KEEP-NOT: format <"mxfp8e4m3">

// With auto, the sensitive values keep their one format (no candidates, no
// budget: the runtime does not switch them); the others carry the
// candidates.
// AUTO-LABEL: func.func @gpt
// AUTO: %[[P:.*]] = strata.softmax
// AUTO-NEXT: strata.compress %[[P]] format <"mxfp8e4m3"> {strata.layer = 1 : i64} : tensor<2x2x8x8xf32> -> tensor<264xi8>
// AUTO: strata.compress %{{.*}} format <"mxfp8e4m3"> candidates [{{.*}}] budget 5.000000e-02

// Unset, they are treated like the others.
// UNSET-LABEL: func.func @gpt
// UNSET-NOT: format <"mxfp8e4m3">

// A batch norm's input is sensitive (its backward pass renormalises it);
// its normalised output is not.
// BN-LABEL: func.func @bn_cnn
// BN: %[[C:.*]] = strata.conv2d
// BN-NEXT: strata.compress %[[C]] format <"mxfp8e4m3">
// BN-NEXT: %[[Y:[^,]*]], %{{.*}} = strata.batch_norm %[[C]]
// BN-NEXT: strata.compress %[[Y]] format <"mxfp4">

// After --strata-remat recomputes the attention probabilities from the
// queries and keys, those are sensitive too (an error in them reaches the
// probabilities through the exponential): bf16, while the values (V) and
// the rest take mxfp4.
// REMAT-LABEL: func.func @gpt
// REMAT: %[[Q:.*]] = strata.transpose
// REMAT-NEXT: strata.compress %[[Q]] format <"bf16"> {{.*}} -> tensor<1040xi8>
// REMAT: %[[K:.*]] = strata.transpose
// REMAT-NEXT: strata.compress %[[K]] format <"bf16">
// REMAT: %[[V:.*]] = strata.transpose
// REMAT-NEXT: strata.compress %[[V]] format <"mxfp4">
// REMAT: strata.softmax {{.*}}strata.phase = #strata<phase recompute>
