// RUN: strata-opt %s --split-input-file --verify-diagnostics

// Verifier rules of the asynchronous all-reduce ops.

// A bucket must hold at least one tensor.
func.func @empty_start() {
  // expected-error @+1 {{'strata.all_reduce_start' op expects at least one tensor in the bucket}}
  "strata.all_reduce_start"() <{bucket = 0 : i64, replicas = 2 : i64}> : () -> ()
  return
}

// -----

// Every tensor of a bucket has the same element type (it is packed).
func.func @mixed(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'strata.all_reduce_start' op expects every tensor of the bucket to have element type 'f32', but #1 has 'bf16'}}
  strata.all_reduce_start %a, %b replicas = 2 bucket = 0 : tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @negative_bucket(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.all_reduce_start' op attribute 'bucket' failed to satisfy constraint}}
  strata.all_reduce_start %a replicas = 2 bucket = -1 : tensor<4xf32>
  return
}

// -----

func.func @zero_replicas(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.all_reduce_start' op attribute 'replicas' failed to satisfy constraint}}
  strata.all_reduce_start %a replicas = 0 bucket = 0 : tensor<4xf32>
  return
}

// -----

// The wait returns one tensor per operand, of the operand's type.
func.func @wait_type(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{'strata.all_reduce_wait' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @+1 {{'strata.all_reduce_wait' op failed to infer returned types}}
  %r = "strata.all_reduce_wait"(%a) <{bucket = 0 : i64}> : (tensor<4xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @empty_wait() {
  // expected-error @+1 {{'strata.all_reduce_wait' op expects at least one tensor in the bucket}}
  "strata.all_reduce_wait"() <{bucket = 0 : i64}> : () -> ()
  return
}

// -----

// Host accumulation cannot lag.
func.func @host_staleness(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.all_reduce_start' op cannot combine host accumulation with staleness > 0}}
  strata.all_reduce_start %a mean host replicas = 2 bucket = 0 staleness = 1 : tensor<4xf32>
  return
}

// -----

// A lagging aggregate is a mean over the sets it holds.
func.func @sum_staleness(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.all_reduce_start' op with staleness > 0 must average (mean)}}
  strata.all_reduce_start %a replicas = 2 bucket = 0 staleness = 1 : tensor<4xf32>
  return
}
