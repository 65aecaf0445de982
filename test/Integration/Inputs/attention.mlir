// A single causal self-attention block with projections large enough at
// initialisation (scale 0.5) that the query/key gradients are well above the
// noise of f32 finite differences.
func.func @attention(%tokens: tensor<2x6xi32> {strata.input = #strata.input<name = "tokens", role = data>},
                     %targets: tensor<2x6xi32> {strata.input = #strata.input<name = "targets", role = labels>},
                     %wte: tensor<11x8xf32> {strata.param = #strata.param<name = "wte", layer = 0, init = normal, scale = 1.0>},
                     %wq: tensor<8x8xf32> {strata.param = #strata.param<name = "wq", layer = 1, init = normal, scale = 0.5>},
                     %wk: tensor<8x8xf32> {strata.param = #strata.param<name = "wk", layer = 1, init = normal, scale = 0.5>},
                     %wv: tensor<8x8xf32> {strata.param = #strata.param<name = "wv", layer = 1, init = normal, scale = 0.5>},
                     %g: tensor<8xf32> {strata.param = #strata.param<name = "ln.weight", layer = 1, init = normal, scale = 1.0>},
                     %b: tensor<8xf32> {strata.param = #strata.param<name = "ln.bias", layer = 1, init = normal, scale = 0.5>},
                     %wo: tensor<11x8xf32> {strata.param = #strata.param<name = "wo", layer = 2, init = normal, scale = 0.5>})
    -> tensor<f32> attributes {strata.layer_names = ["embed", "attn", "head"]} {
  %x = strata.embedding %wte, %tokens {strata.layer = 0 : i64} : (tensor<11x8xf32>, tensor<2x6xi32>) -> tensor<2x6x8xf32>
  %n = strata.layer_norm %x, %g, %b {strata.layer = 1 : i64} : (tensor<2x6x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x6x8xf32>
  %q = strata.matmul %n, %wq {strata.layer = 1 : i64} : (tensor<2x6x8xf32>, tensor<8x8xf32>) -> tensor<2x6x8xf32>
  %k = strata.matmul %n, %wk {strata.layer = 1 : i64} : (tensor<2x6x8xf32>, tensor<8x8xf32>) -> tensor<2x6x8xf32>
  %v = strata.matmul %n, %wv {strata.layer = 1 : i64} : (tensor<2x6x8xf32>, tensor<8x8xf32>) -> tensor<2x6x8xf32>
  %qh = strata.reshape %q {strata.layer = 1 : i64} : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %kh = strata.reshape %k {strata.layer = 1 : i64} : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %vh = strata.reshape %v {strata.layer = 1 : i64} : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %qt = strata.transpose %qh [0, 2, 1, 3] {strata.layer = 1 : i64} : tensor<2x6x2x4xf32> -> tensor<2x2x6x4xf32>
  %kt = strata.transpose %kh [0, 2, 1, 3] {strata.layer = 1 : i64} : tensor<2x6x2x4xf32> -> tensor<2x2x6x4xf32>
  %vt = strata.transpose %vh [0, 2, 1, 3] {strata.layer = 1 : i64} : tensor<2x6x2x4xf32> -> tensor<2x2x6x4xf32>
  %s = strata.matmul %qt, %kt transpose_b {strata.layer = 1 : i64} : (tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>) -> tensor<2x2x6x6xf32>
  %p = strata.softmax %s causal scale = 0.5 {strata.layer = 1 : i64} : tensor<2x2x6x6xf32>
  %c = strata.matmul %p, %vt {strata.layer = 1 : i64} : (tensor<2x2x6x6xf32>, tensor<2x2x6x4xf32>) -> tensor<2x2x6x4xf32>
  %ct = strata.transpose %c [0, 2, 1, 3] {strata.layer = 1 : i64} : tensor<2x2x6x4xf32> -> tensor<2x6x2x4xf32>
  %m = strata.reshape %ct {strata.layer = 1 : i64} : tensor<2x6x2x4xf32> -> tensor<2x6x8xf32>
  %r = strata.add %x, %m {strata.layer = 1 : i64} : tensor<2x6x8xf32>
  %logits = strata.matmul %r, %wo transpose_b {strata.layer = 2 : i64} : (tensor<2x6x8xf32>, tensor<11x8xf32>) -> tensor<2x6x11xf32>
  %l = strata.softmax_cross_entropy %logits, %targets {strata.layer = 2 : i64} : (tensor<2x6x11xf32>, tensor<2x6xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
