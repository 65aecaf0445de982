#!/usr/bin/env python3
"""Writes the small invalid ONNX files of onnx-errors.test (committed in
test/Import/Inputs/invalid/) and copies them as seeds of the ONNX fuzzer
(fuzz/corpus/onnx/).

    python test/Import/make_invalid_onnx.py      # needs the onnx package

Each file is a tiny model with one defect, named after it.
"""
import os
import shutil

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs", "invalid")
CORPUS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fuzz", "corpus", "onnx")


def x_input(dims=(2, 4)):
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))


def logits():
    return helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])


def weight(name="w", dims=(3, 4), raw=None):
    t = helper.make_tensor(name, TensorProto.FLOAT, list(dims),
                           [0.5] * (dims[0] * dims[1]))
    if raw is not None:
        t.ClearField("float_data")
        t.raw_data = raw
    return t


def gemm(name="/fc/Gemm", inputs=("x", "w"), output="y"):
    return helper.make_node("Gemm", list(inputs), [output], name=name, transB=1)


def save(name, nodes, inputs, outputs, inits, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def main():
    os.makedirs(OUT, exist_ok=True)
    save("valid", [gemm()], [x_input()], [logits()], [weight()])
    save("unsupported-op",
         [helper.make_node("Sin", ["x"], ["s"], name="/act/Sin"),
          gemm(inputs=("s", "w"))], [x_input()], [logits()], [weight()])
    dynamic = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    save("dynamic-shape", [gemm()], [dynamic], [logits()], [weight()])
    save("missing-initializer", [gemm()], [x_input()], [logits()], [])
    save("cycle",
         [helper.make_node("Relu", ["b"], ["a"], name="/r0/Relu"),
          helper.make_node("Relu", ["a"], ["b"], name="/r1/Relu"),
          gemm(inputs=("x", "w"))], [x_input()], [logits()], [weight()])
    save("wrong-raw-size", [gemm()], [x_input()], [logits()],
         [weight(raw=b"\0" * 10)])
    string_init = helper.make_tensor("w", TensorProto.STRING, [1], [b"abc"])
    save("wrong-initializer-type", [gemm()], [x_input()], [logits()], [string_init])
    int_input = helper.make_tensor_value_info("x", TensorProto.STRING, [2, 4])
    save("wrong-input-type", [gemm()], [int_input], [logits()], [weight()])
    save("shape-mismatch", [gemm()], [x_input((2, 5))], [logits()], [weight()])
    save("two-outputs",
         [gemm(), helper.make_node("Relu", ["y"], ["z"], name="/r/Relu")],
         [x_input()], [logits(), helper.make_tensor_value_info(
             "z", TensorProto.FLOAT, [2, 3])], [weight()])
    bn = [helper.make_tensor(n, TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
          for n in ("bn.weight", "bn.bias", "bn.running_mean", "bn.running_var")]
    image = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 3])
    flat = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 36])
    bn_inputs = ["x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"]

    def batch_norm(inputs=bn_inputs, training=1, outputs=("b", "rm", "rv")):
        return [helper.make_node("BatchNormalization", list(inputs), list(outputs),
                                 name="/bn/BatchNormalization", momentum=0.9,
                                 training_mode=training),
                helper.make_node("Flatten", ["b"], ["y"], name="/Flatten")]
    # Inference form (training_mode = 0): fixed statistics, not trained.
    save("batch-norm", batch_norm(training=0, outputs=("b",)), [image], [flat], bn)
    # Training form (as torch.onnx.export(training=TRAINING) writes it): valid.
    save("batch-norm-training", batch_norm(), [image], [flat], bn)
    # Malformed: four inputs, a running mean of 3 channels for 4, a running
    # variance that is a graph input instead of an initializer, and a
    # running mean no initializer defines.
    save("batch-norm-inputs", batch_norm(inputs=bn_inputs[:4]), [image], [flat], bn)
    short = [t if t.name != "bn.running_mean" else
             helper.make_tensor("bn.running_mean", TensorProto.FLOAT, [3], [0.0] * 3)
             for t in bn]
    save("batch-norm-channels", batch_norm(), [image], [flat], short)
    save("batch-norm-stat-input", batch_norm(),
         [image, helper.make_tensor_value_info("bn.running_var", TensorProto.FLOAT, [4])],
         [flat], [t for t in bn if t.name != "bn.running_var"])
    save("batch-norm-missing-stat", batch_norm(), [image], [flat],
         [t for t in bn if t.name != "bn.running_mean"])
    # GELU in erf form (nn.GELU() at opset 17): x * 0.5 * (1 + erf(x / sqrt 2)).
    consts = [helper.make_node("Constant", [], [n], name="/gelu/" + n,
                               value=helper.make_tensor(n, TensorProto.FLOAT, [], [v]))
              for n, v in (("c_sqrt2", 1.4142135), ("c_one", 1.0), ("c_half", 0.5))]
    save("gelu-erf", consts + [
        gemm(output="h"),
        helper.make_node("Div", ["h", "c_sqrt2"], ["d"], name="/gelu/Div"),
        helper.make_node("Erf", ["d"], ["e"], name="/gelu/Erf"),
        helper.make_node("Add", ["e", "c_one"], ["a"], name="/gelu/Add"),
        helper.make_node("Mul", ["h", "a"], ["m"], name="/gelu/Mul"),
        helper.make_node("Mul", ["m", "c_half"], ["y"], name="/gelu/Mul_1")],
        [x_input()], [logits()], [weight()])
    # A Mul of two different tensors has no Strata op.
    save("product", [gemm(output="h"),
                     helper.make_node("Mul", ["h", "h2"], ["y"], name="/mul/Mul"),
                     helper.make_node("Relu", ["h"], ["h2"], name="/act/Relu")],
         [x_input()], [logits()], [weight()])
    # A Split whose sizes do not add up to the dimension, and a Concat of
    # tensors that differ in a dimension other than the axis.
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [2], [3, 3])
    save("split-sizes", [
        helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="/qkv/Split",
                         axis=1),
        helper.make_node("Concat", ["a", "b"], ["c"], name="/cat/Concat", axis=1),
        gemm(inputs=("c", "w"))], [x_input()], [logits()], [weight(), sizes])
    save("concat-shapes", [
        helper.make_node("Relu", ["x2"], ["r"], name="/act/Relu"),
        helper.make_node("Concat", ["x", "r"], ["y"], name="/cat/Concat", axis=1)],
        [x_input(), helper.make_tensor_value_info("x2", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [])
    # A mean that is not part of a layer norm over the last axis.
    save("reduce-mean", [gemm(output="h"),
                         helper.make_node("ReduceMean", ["h"], ["y"],
                                          name="/pool/ReduceMean", axes=[0])],
         [x_input()], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
         [weight()])
    # A layer norm decomposition cut off after the centering.
    save("broken-layer-norm", [
        gemm(output="h"),
        helper.make_node("ReduceMean", ["h"], ["m"], name="/ln/ReduceMean", axes=[-1]),
        helper.make_node("Sub", ["h", "m"], ["d"], name="/ln/Sub"),
        helper.make_node("Relu", ["d"], ["y"], name="/act/Relu")],
        [x_input()], [logits()], [weight()])
    # VGG's AdaptiveAvgPool2d((7, 7)) on a 7x7 map: a 1x1 AveragePool
    # (valid: the identity).
    fmap = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 7, 7])
    save("avgpool-1x1", [
        helper.make_node("AveragePool", ["x"], ["p"], name="/avgpool/AveragePool",
                         kernel_shape=[1, 1], strides=[1, 1]),
        helper.make_node("Flatten", ["p"], ["f"], name="/Flatten"),
        helper.make_node("Gemm", ["f", "w"], ["y"], name="/fc/Gemm", transB=1)],
        [fmap], [logits()], [weight(dims=(3, 196))])
    # A 2x2 average pool has no Strata op.
    save("avgpool-2x2", [
        helper.make_node("AveragePool", ["x"], ["y"], name="/pool/AveragePool",
                         kernel_shape=[2, 2], strides=[2, 2])],
        [fmap], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3, 3])], [])
    with open(os.path.join(OUT, "valid.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
        f.write(data[:len(data) // 2])
    os.makedirs(CORPUS, exist_ok=True)
    for name in sorted(os.listdir(OUT)):
        shutil.copy(os.path.join(OUT, name), os.path.join(CORPUS, name))
    shutil.copy(os.path.join(HERE, "Inputs", "mlp.onnx"), os.path.join(CORPUS, "mlp.onnx"))
    print("wrote", ", ".join(sorted(os.listdir(OUT))))


if __name__ == "__main__":
    main()
