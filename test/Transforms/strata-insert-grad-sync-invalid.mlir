// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-insert-grad-sync=bucket-bytes=1024
// RUN: not strata-opt %s --split-input-file --strata-insert-grad-sync 2>&1 | FileCheck %s --check-prefix=NOTARGET
// RUN: not strata-opt %s --split-input-file --strata-insert-grad-sync=bucket-bytes=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not strata-opt %s --split-input-file --strata-insert-grad-sync=target=no-such-target 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not strata-opt %s --split-input-file --strata-data-parallel=replicas=2 --strata-insert-grad-sync="bucket-bytes=1024 replicas=3" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not strata-opt %s --split-input-file --strata-insert-grad-sync="bucket-bytes=64 accumulate=nic" 2>&1 | FileCheck %s --check-prefix=ACCUMULATE
// RUN: not strata-opt %s --split-input-file --strata-insert-grad-sync="bucket-bytes=64 accumulate=host chunk-bytes=2" 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not strata-opt %s --split-input-file --strata-insert-grad-sync="bucket-bytes=64 staleness=-1" 2>&1 | FileCheck %s --check-prefix=STALENESS
// RUN: not strata-opt %s --split-input-file --strata-insert-grad-sync="bucket-bytes=64 accumulate=host staleness=1" 2>&1 | FileCheck %s --check-prefix=STALEHOST

// Option errors are reported at the module, before any step is touched.
// NOTARGET: error: --strata-insert-grad-sync needs bucket-bytes=N or a target for its cost model (target=NAME or target=FILE.json)
// NEGATIVE: error: --strata-insert-grad-sync needs bucket-bytes >= 0, got -1
// UNKNOWN: error: {{.*}}no-such-target
// replicas=N must agree with a data-parallel step's replicas.
// MISMATCH: error: 'func.func' op has 2 data-parallel replicas, but --strata-insert-grad-sync was given replicas=3

// A step that is not data-parallel needs replicas=N.
// expected-error @+1 {{'func.func' op is not data-parallel (run --strata-data-parallel first or pass replicas=N)}}
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<2xf32> attributes {strata.train_step} {
  return %x : tensor<2xf32>
}

// -----

// Buckets are inserted once.
// expected-error @+1 {{'func.func' op already has bucketed gradient all-reduces}}
func.func @step(%g: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<2xf32> attributes {strata.train_step, strata.replicas = 2 : i64} {
  strata.all_reduce_start %g mean replicas = 2 bucket = 0 : tensor<2xf32>
  %r = strata.all_reduce_wait %g bucket = 0 : tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// expected-error @+1 {{no training step to synchronise (run --strata-autodiff first)}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// ACCUMULATE: for the --accumulate option: Cannot find option named 'nic'!
// CHUNK: error: --strata-insert-grad-sync needs chunk-bytes >= 4, got 2
// STALENESS: error: --strata-insert-grad-sync needs staleness >= 0, got -1
// STALEHOST: error: --strata-insert-grad-sync: staleness > 0 cannot be combined with accumulate=host

