#!/usr/bin/env python3
"""A NumPy reimplementation of pipelined MLP training with SGD, for checking
the asynchronous pipeline schedules (pipedream, 2bw) and 1F1B-flush against a
straightforward simulation of their update rules.

  make PREFIX ...   writes PREFIX.npz (float64 inputs, int64 labels, as
                    np.savez writes them) and PREFIX.init.safetensors (the
                    parameters of `strata-model mlp`, for strata-run --init)
  check ...         replays the run in float64 and compares the final
                    parameters, optimizer states, kept weight versions
                    (PARAM.stashK) and the per-step losses with a strata-run
                    checkpoint and --log-json file

The model is `strata-model mlp`: layer i computes h @ fc{i}.weight +
fc{i}.bias, relu except after the last layer, then the mean softmax
cross-entropy. With S stages of the L layers, stage s holds layers
[s L / S, (s + 1) L / S). Global micro-batch n = (step - 1) M + m of every
replica reads its rows of the step's batch (strata-run's --data order: a
Fisher-Yates shuffle per epoch over the run's seed, replica r reading
[r M b, (r + 1) M b) of the step's global batch, micro-batch m rows
[m b, (m + 1) b) of that). Update rules, per stage s (w = S - s - 1):
  flush:     every micro-batch of a step reads the step's weights; one update
             per step with the mean gradient over micro-batches and replicas.
  pipedream: micro-batch n reads version max(0, n - w) of stage s (the
             weights after that many updates; PipeDream's weight stashing:
             the forward pass sees the updates of every micro-batch whose
             backward pass ran before it, and the backward pass the same
             version); one update per micro-batch, with its gradient
             averaged over the replicas.
  2bw:       window t (micro-batches [t K, (t + 1) K)) reads version
             max(0, t - 1) of every stage; W(t + 1) = W(t) - lr g(W(t - 1)),
             g the mean over the window and the replicas.
SGD: v = momentum v + (g + weight_decay p); p -= lr v. Adam (--optimizer
adam, adamw): strata's adam_update with t the stage's count of updates
(several per step for pipedream and 2bw with more than one window).
"""

import argparse
import json
import struct
import sys

import numpy as np

MASK = (1 << 64) - 1


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for c in text.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK
    return h


def epoch_order(seed, epoch, samples):
    """strata-run's ArrayData order (Data.cpp): Fisher-Yates over
    randomBits(seed, fnv1a64("strata.data.epoch.E"), i)."""
    order = list(range(samples))
    key = fnv1a64("strata.data.epoch.%d" % epoch)
    for i in range(samples - 1, 0, -1):
        j = splitmix64(seed ^ ((key + i) & MASK)) % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    base = 8 + size
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(raw[base + begin:base + end],
                                  dtype=np.float32).reshape(entry["shape"])
    return out


def layer_dims(a):
    return [a.inputs] + [a.hidden] * (a.layers - 1) + [a.classes]


def make(a):
    rng = np.random.default_rng(a.seed)
    inputs = rng.standard_normal((a.samples, a.inputs))
    teacher = rng.standard_normal((a.inputs, a.classes))
    labels = np.argmax(inputs @ teacher, axis=1).astype(np.int64)
    np.savez(a.prefix + ".npz", inputs=inputs, labels=labels)
    dims = layer_dims(a)
    params = {}
    for i in range(a.layers):
        bound = np.sqrt(6.0 / (dims[i] + dims[i + 1]))
        params["fc%d.weight" % i] = rng.uniform(-bound, bound,
                                                (dims[i], dims[i + 1]))
        params["fc%d.bias" % i] = 0.1 * rng.standard_normal(dims[i + 1])
    write_safetensors(a.prefix + ".init.safetensors", params)


def forward_backward(weights, x, y):
    """Loss and gradients of one micro-batch; weights[i] = (W, b)."""
    hs, zs = [x], []
    for i, (w, b) in enumerate(weights):
        z = hs[-1] @ w + b
        zs.append(z)
        hs.append(np.maximum(z, 0) if i + 1 < len(weights) else z)
    z = zs[-1]
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(len(y))
    loss = float(np.mean(-np.log(p[rows, y])))
    dz = p
    dz[rows, y] -= 1
    dz /= len(y)
    grads = [None] * len(weights)
    for i in reversed(range(len(weights))):
        w, _ = weights[i]
        grads[i] = (hs[i].T @ dz, dz.sum(axis=0))
        if i > 0:
            dz = (dz @ w.T) * (zs[i - 1] > 0)
    return loss, grads


class Stage:
    """The version history of one stage's layers (SGD with momentum)."""

    def __init__(self, layers, init, a):
        self.layers = layers
        self.history = [[(init["fc%d.weight" % i].astype(np.float64),
                          init["fc%d.bias" % i].astype(np.float64))
                         for i in layers]]
        zeros = [(np.zeros_like(w), np.zeros_like(b))
                 for w, b in self.history[0]]
        self.velocity, self.m, self.v = zeros, zeros, zeros
        self.a = a

    def version(self, v):
        return self.history[max(0, v)]

    def update(self, grads):
        if self.a.optimizer != "sgd":
            return self.adam(grads)
        a, new, vel = self.a, [], []
        for (w, b), (vw, vb), (gw, gb) in zip(self.history[-1], self.velocity,
                                              grads):
            vw = a.momentum * vw + (gw + a.weight_decay * w)
            vb = a.momentum * vb + (gb + a.weight_decay * b)
            new.append((w - a.lr * vw, b - a.lr * vb))
            vel.append((vw, vb))
        self.history.append(new)
        self.velocity = vel

    def adam(self, grads):
        a, t = self.a, len(self.history)
        new, ms, vs = [], [], []
        for params, m_old, v_old, g_pair in zip(self.history[-1], self.m,
                                                self.v, grads):
            out_p, out_m, out_v = [], [], []
            for p, m, v, g in zip(params, m_old, v_old, g_pair):
                if a.optimizer == "adamw":
                    p = p - a.lr * a.weight_decay * p
                else:
                    g = g + a.weight_decay * p
                m = a.beta1 * m + (1 - a.beta1) * g
                v = a.beta2 * v + (1 - a.beta2) * g * g
                p = p - a.lr * (m / (1 - a.beta1 ** t)) / (
                    np.sqrt(v / (1 - a.beta2 ** t)) + a.epsilon)
                out_p.append(p)
                out_m.append(m)
                out_v.append(v)
            new.append(tuple(out_p))
            ms.append(tuple(out_m))
            vs.append(tuple(out_v))
        self.history.append(new)
        self.m, self.v = ms, vs


def simulate(a):
    data = np.load(a.data)
    inputs, labels = data["inputs"], data["labels"]
    init = read_safetensors(a.init)
    per_stage = [list(range(s * a.layers // a.stages,
                            (s + 1) * a.layers // a.stages))
                 for s in range(a.stages)]
    stages = [Stage(layers, init, a) for layers in per_stage]
    rank_batch = a.micro_batches * a.batch
    global_batch = a.replicas * rank_batch
    steps_per_epoch = len(inputs) // global_batch
    window = {"flush": a.micro_batches, "pipedream": 1,
              "2bw": a.window or a.micro_batches}[a.schedule]
    losses = []
    for step in range(1, a.steps + 1):
        epoch = (step - 1) // steps_per_epoch
        order = epoch_order(a.seed, epoch, len(inputs))
        first = ((step - 1) % steps_per_epoch) * global_batch
        step_loss = 0.0
        acc = None
        for m in range(a.micro_batches):
            n = (step - 1) * a.micro_batches + m
            weights = []
            for s, stage in enumerate(stages):
                if a.schedule == "flush":
                    v = len(stage.history) - 1
                elif a.schedule == "pipedream":
                    v = n - (a.stages - s - 1)
                else:
                    v = n // window - 1
                weights += stage.version(v)
            grads = None
            for r in range(a.replicas):
                rows = [order[first + r * rank_batch + m * a.batch + i]
                        for i in range(a.batch)]
                loss, g = forward_backward(weights, inputs[rows],
                                           labels[rows])
                step_loss += loss / (a.micro_batches * a.replicas)
                g = [(gw / a.replicas, gb / a.replicas) for gw, gb in g]
                grads = g if grads is None else [
                    (x[0] + y[0], x[1] + y[1]) for x, y in zip(grads, g)]
            acc = grads if acc is None else [
                (x[0] + y[0], x[1] + y[1]) for x, y in zip(acc, grads)]
            if (m + 1) % window == 0:
                mean = [(gw / window, gb / window) for gw, gb in acc]
                for s, stage in enumerate(stages):
                    stage.update([mean[i] for i in per_stage[s]])
                acc = None
        losses.append(step_loss)
    return stages, per_stage, losses


def expected_tensors(a, stages, per_stage):
    """Parameters, velocities and kept versions after the run."""
    out = {}
    for s, (stage, layers) in enumerate(zip(stages, per_stage)):
        kept = {"flush": 0, "pipedream": a.stages - s - 1, "2bw": 1}
        for j, i in enumerate(layers):
            for k, part in enumerate(("weight", "bias")):
                name = "fc%d.%s" % (i, part)
                out[name] = stage.history[-1][j][k]
                if a.optimizer == "sgd":
                    out[name + ".velocity"] = stage.velocity[j][k]
                else:
                    out[name + ".m"] = stage.m[j][k]
                    out[name + ".v"] = stage.v[j][k]
                updates = len(stage.history) - 1
                for back in range(1, kept[a.schedule] + 1):
                    out[name + ".stash%d" % back] = \
                        stage.history[max(0, updates - back)][j][k]
    return out


def check(a):
    stages, per_stage, losses = simulate(a)
    want = expected_tensors(a, stages, per_stage)
    got = read_safetensors(a.checkpoint)
    worst, where = 0.0, ""
    for name, ref in want.items():
        if name not in got:
            sys.exit("checkpoint has no tensor %r" % name)
        scale = max(np.abs(ref).max(), 1e-3)
        err = float(np.abs(got[name] - ref).max() / scale)
        if err > worst:
            worst, where = err, name
    logged = [json.loads(line)["loss"] for line in open(a.log)]
    if len(logged) != len(losses):
        sys.exit("%d logged steps, expected %d" % (len(logged), len(losses)))
    loss_err = max(abs(x - y) / abs(y) for x, y in zip(logged, losses))
    print("%s: %d tensors, largest relative difference %.3g (%s); losses "
          "%.3g" % (a.schedule, len(want), worst, where, loss_err))
    if a.expect == "match":
        if worst > a.rtol or loss_err > a.rtol:
            sys.exit("FAIL: the run differs from the %s reference by more "
                     "than %g" % (a.schedule, a.rtol))
    elif worst < 100 * a.rtol:
        sys.exit("FAIL: the run equals the %s reference within %g; expected "
                 "it to differ" % (a.schedule, 100 * a.rtol))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("make", "check"):
        q = sub.add_parser(name)
        q.add_argument("--inputs", type=int, required=True)
        q.add_argument("--hidden", type=int, required=True)
        q.add_argument("--layers", type=int, required=True)
        q.add_argument("--classes", type=int, required=True)
        q.add_argument("--seed", type=int, default=0)
    make_p = sub.choices["make"]
    make_p.add_argument("prefix")
    make_p.add_argument("--samples", type=int, required=True)
    c = sub.choices["check"]
    c.add_argument("--schedule", choices=["flush", "pipedream", "2bw"],
                   required=True)
    c.add_argument("--stages", type=int, required=True)
    c.add_argument("--micro-batches", type=int, required=True)
    c.add_argument("--window", type=int, default=0)
    c.add_argument("--replicas", type=int, default=1)
    c.add_argument("--batch", type=int, required=True)
    c.add_argument("--steps", type=int, required=True)
    c.add_argument("--lr", type=float, required=True)
    c.add_argument("--momentum", type=float, default=0.0)
    c.add_argument("--weight-decay", type=float, default=0.0)
    c.add_argument("--optimizer", choices=["sgd", "adam", "adamw"],
                   default="sgd")
    c.add_argument("--beta1", type=float, default=0.9)
    c.add_argument("--beta2", type=float, default=0.999)
    c.add_argument("--epsilon", type=float, default=1e-8)
    c.add_argument("--data", required=True)
    c.add_argument("--init", required=True)
    c.add_argument("--checkpoint", required=True)
    c.add_argument("--log", required=True)
    c.add_argument("--rtol", type=float, default=1e-4)
    c.add_argument("--expect", choices=["match", "differ"], default="match")
    a = p.parse_args()
    make(a) if a.command == "make" else check(a)


if __name__ == "__main__":
    main()
