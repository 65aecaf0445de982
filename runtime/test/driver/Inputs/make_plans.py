#!/usr/bin/env python3
"""Writes the hand-built plans the driver tests load (docs/plan-format.md).

They stand in for `strata-translate --export-plan` output so that the runtime
can be tested on its own:
  mlp.json         2-layer MLP, softmax cross-entropy, SGD with momentum
  regression.json  1-layer MLP, MSE loss, AdamW with a step input
  lm.json          bigram language model: embedding, matmul, cross-entropy, AdamW
  lm_v64.json      the same with a vocabulary of 64 (too small for byte data)

Run it from this directory after changing it: python3 make_plans.py
"""
import json
import math
import os


class PlanBuilder:
    def __init__(self, model):
        self.model = model
        self.buffers, self.params, self.states, self.inputs = [], [], [], []
        self.program = []
        self.offset = 0

    def buffer(self, name, kind, shape, dtype="f32"):
        numel = math.prod(shape)
        ident = len(self.buffers)
        self.buffers.append({"id": ident, "name": name, "kind": kind,
                             "dtype": dtype, "shape": list(shape),
                             "offset": self.offset, "bytes": numel * 4})
        self.offset += (numel * 4 + 63) // 64 * 64
        return ident

    def input(self, name, role, shape, dtype):
        ident = self.buffer(name, "input", shape, dtype)
        self.inputs.append({"name": name, "role": role, "buffer": ident})
        return ident

    def param(self, name, shape, layer, init, **extra):
        ident = self.buffer(name, "param", shape)
        grad = self.buffer(name + ".grad", "grad", shape)
        self.params.append(dict({"name": name, "buffer": ident, "grad": grad,
                                 "layer": layer, "init": init}, **extra))
        return ident, grad

    def state(self, param_name, suffix, shape):
        name = param_name + "." + suffix
        ident = self.buffer(name, "state", shape)
        self.states.append({"name": name, "buffer": ident,
                            "param": param_name, "init": "zeros"})
        return ident

    def act(self, name, shape, dtype="f32"):
        return self.buffer(name, "activation", shape, dtype)

    def op(self, op, ins, outs, phase, layer=-1, **attrs):
        inst = {"op": op, "in": ins, "out": outs, "layer": layer,
                "phase": phase}
        if attrs:
            inst["attrs"] = attrs
        self.program.append(inst)

    def plan(self, loss, optimizer):
        return {"format": "strata-plan", "version": 1, "model": self.model,
                "producer": "runtime/test/driver/Inputs/make_plans.py",
                "optimizer": optimizer, "buffers": self.buffers,
                "parameters": self.params, "states": self.states,
                "inputs": self.inputs, "loss": loss,
                "ranks": [{"rank": 0, "device": "cpu",
                           "arena_bytes": self.offset,
                           "program": self.program}]}


def dense_forward(b, x, w, bias, rows, out_features, layer, name):
    y = b.act(name + ".mm", [rows, out_features])
    b.op("matmul", [x, w], [y], "forward", layer)
    z = b.act(name + ".out", [rows, out_features])
    b.op("bias_add", [y, bias], [z], "forward", layer, axis=-1)
    return z


def dense_backward(b, dz, x, w, wgrad, bgrad, layer, want_dx, rows, in_features):
    b.op("bias_add_grad", [dz], [bgrad], "backward", layer, axis=-1)
    b.op("matmul", [x, dz], [wgrad], "backward", layer, transpose_a=1)
    if not want_dx:
        return None
    dx = b.act("d" + b.buffers[x]["name"], [rows, in_features])
    b.op("matmul", [dz, w], [dx], "backward", layer, transpose_b=1)
    return dx


def mlp():
    B, D, H, C = 32, 16, 32, 4
    lr, momentum = 0.05, 0.9
    b = PlanBuilder("mlp")
    x = b.input("features", "data", [B, D], "f32")
    labels = b.input("labels", "labels", [B], "i32")
    w0, gw0 = b.param("fc0.weight", [D, H], 0, "xavier_uniform", scale=1.0,
                      fan_in=D, fan_out=H)
    b0, gb0 = b.param("fc0.bias", [H], 0, "zeros")
    w1, gw1 = b.param("fc1.weight", [H, C], 1, "xavier_uniform", scale=1.0,
                      fan_in=H, fan_out=C)
    b1, gb1 = b.param("fc1.bias", [C], 1, "zeros")
    velocity = {p: b.state(name, "velocity", shape) for p, name, shape in
                [(w0, "fc0.weight", [D, H]), (b0, "fc0.bias", [H]),
                 (w1, "fc1.weight", [H, C]), (b1, "fc1.bias", [C])]}
    h = dense_forward(b, x, w0, b0, B, H, 0, "fc0")
    a = b.act("relu0", [B, H])
    b.op("relu", [h], [a], "forward", 0)
    logits = dense_forward(b, a, w1, b1, B, C, 1, "fc1")
    loss = b.act("loss", [])
    b.op("softmax_cross_entropy", [logits, labels], [loss], "forward", 1)
    dloss = b.act("dloss", [])
    b.op("fill", [], [dloss], "backward", -1, value=1.0)
    dlogits = b.act("dlogits", [B, C])
    b.op("softmax_cross_entropy_grad", [logits, labels, dloss], [dlogits],
         "backward", 1)
    da = dense_backward(b, dlogits, a, w1, gw1, gb1, 1, True, B, H)
    dh = b.act("dfc0.out", [B, H])
    b.op("relu_grad", [da, h], [dh], "backward", 0)
    dense_backward(b, dh, x, w0, gw0, gb0, 0, False, B, D)
    for p, g, layer in [(w0, gw0, 0), (b0, gb0, 0), (w1, gw1, 1), (b1, gb1, 1)]:
        b.op("sgd_update", [p, g, velocity[p]], [p, velocity[p]], "update",
             layer, lr=lr, momentum=momentum, weight_decay=0.0)
    return b.plan(loss, {"kind": "sgd", "lr": lr, "momentum": momentum,
                         "weight_decay": 0.0})


ADAM = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
        "weight_decay": 0.01, "decoupled": 1}


def adam_updates(b, params, step):
    for name, p, g, shape, layer in params:
        m = b.state(name, "m", shape)
        v = b.state(name, "v", shape)
        b.op("adam_update", [p, g, m, v, step], [p, m, v], "update", layer,
             **ADAM)


def regression():
    B, D, O = 16, 8, 3
    b = PlanBuilder("regression")
    x = b.input("features", "data", [B, D], "f32")
    t = b.input("targets", "labels", [B, O], "f32")
    step = b.input("step", "step", [], "i32")
    w, gw = b.param("fc.weight", [D, O], 0, "kaiming_normal", scale=1.0)
    bias, gb = b.param("fc.bias", [O], 0, "zeros")
    y = dense_forward(b, x, w, bias, B, O, 0, "fc")
    loss = b.act("loss", [])
    b.op("mse_loss", [y, t], [loss], "forward", 0)
    dloss = b.act("dloss", [])
    b.op("fill", [], [dloss], "backward", value=1.0)
    dy = b.act("dy", [B, O])
    b.op("mse_loss_grad", [y, t, dloss], [dy], "backward", 0)
    dense_backward(b, dy, x, w, gw, gb, 0, False, B, D)
    adam_updates(b, [("fc.weight", w, gw, [D, O], 0),
                     ("fc.bias", bias, gb, [O], 0)], step)
    return b.plan(loss, dict({"kind": "adamw"}, **ADAM))


def lm(vocab=256):
    B, S, H, V = 4, 16, 32, vocab
    b = PlanBuilder("bigram-lm")
    tokens = b.input("tokens", "data", [B, S], "i32")
    labels = b.input("labels", "labels", [B, S], "i32")
    step = b.input("step", "step", [], "i32")
    emb, gemb = b.param("embed.weight", [V, H], 0, "normal", scale=0.02)
    w, gw = b.param("head.weight", [H, V], 1, "xavier_uniform")
    bias, gb = b.param("head.bias", [V], 1, "zeros")
    e = b.act("embed.out", [B, S, H])
    b.op("embedding", [emb, tokens], [e], "forward", 0)
    e2 = b.act("embed.flat", [B * S, H])
    b.op("reshape", [e], [e2], "forward", 0)
    z = dense_forward(b, e2, w, bias, B * S, V, 1, "head")
    logits = b.act("logits", [B, S, V])
    b.op("reshape", [z], [logits], "forward", 1)
    loss = b.act("loss", [])
    b.op("softmax_cross_entropy", [logits, labels], [loss], "forward", 1)
    dloss = b.act("dloss", [])
    b.op("fill", [], [dloss], "backward", value=1.0)
    dlogits = b.act("dlogits", [B, S, V])
    b.op("softmax_cross_entropy_grad", [logits, labels, dloss], [dlogits],
         "backward", 1)
    dz = b.act("dhead.out", [B * S, V])
    b.op("reshape", [dlogits], [dz], "backward", 1)
    de2 = dense_backward(b, dz, e2, w, gw, gb, 1, True, B * S, H)
    de = b.act("dembed.out", [B, S, H])
    b.op("reshape", [de2], [de], "backward", 0)
    b.op("embedding_grad", [de, tokens], [gemb], "backward", 0)
    adam_updates(b, [("embed.weight", emb, gemb, [V, H], 0),
                     ("head.weight", w, gw, [H, V], 1),
                     ("head.bias", bias, gb, [V], 1)], step)
    return b.plan(loss, dict({"kind": "adamw"}, **ADAM))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, plan in [("mlp", mlp()), ("regression", regression()),
                       ("lm", lm()), ("lm_v64", lm(64))]:
        with open(os.path.join(here, name + ".json"), "w") as f:
            json.dump(plan, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
