// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-compress-activations="format=mxfp8"
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=mxfp3" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=bfp:m=12" 2>&1 | FileCheck %s --check-prefix=BITS
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=auto" 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=mxfp8 budget=-1" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=mxfp8 budget=nan" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=mxfp8 candidates=none" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=none budget=0.1" 2>&1 | FileCheck %s --check-prefix=NONE-BUDGET
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=mxfp8 min-elements=-5" 2>&1 | FileCheck %s --check-prefix=MIN
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=none sensitive=mxfp8" 2>&1 | FileCheck %s --check-prefix=NONE-SENSITIVE
// RUN: not strata-opt %s --split-input-file --strata-compress-activations="format=mxfp4 sensitive=mxfp9" 2>&1 | FileCheck %s --check-prefix=SENSITIVE

// Option errors come before any step is touched.
// FORMAT: error: --strata-compress-activations: invalid activation format 'mxfp3': unknown format 'mxfp3'
// BITS: error: --strata-compress-activations: invalid activation format 'bfp:m=12': m must be in 1..8, got 12
// AUTO: error: --strata-compress-activations: format=auto needs budget=E
// BUDGET: error: --strata-compress-activations needs 0 <= budget <= 1e6, got
// NONE: error: --strata-compress-activations: 'none' cannot be a candidate
// NONE-BUDGET: error: --strata-compress-activations: format=none takes no candidates or budget
// MIN: error: --strata-compress-activations needs min-elements >= 0, got -5
// NONE-SENSITIVE: error: --strata-compress-activations: format=none takes no sensitive format
// SENSITIVE: error: --strata-compress-activations: invalid activation format 'mxfp9'

// A module without a training step has nothing to compress.
// expected-error @+1 {{no training step to compress (run --strata-autodiff first)}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// The pass compresses activations before buffers exist.
// expected-error @+1 {{training step @step: already has buffers: run --strata-compress-activations before --strata-lower-to-plan}}
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>, strata.buffer = #strata.buffer<id = 0, offset = 0, bytes = 8>}) -> tensor<2xf32> attributes {strata.train_step, strata.arena_bytes = 64 : i64} {
  %0 = strata.relu %x {strata.buffers = [#strata.buffer<id = 1, offset = 0, bytes = 8>]} : tensor<2xf32>
  return %0 : tensor<2xf32>
}
