#!/usr/bin/env python3
"""Exports the ONNX test models of test/Import from PyTorch, with PyTorch's
training results on the same weights and batch as the reference.

    python test/Import/make_onnx_models.py [--out DIR] [--resnet224 FILE]

Needs torch and onnx (a virtual environment from PyPI:
`python3 -m venv V && V/bin/pip install torch onnx`). PyTorch is never a
dependency of Strata's tests: the files written here are committed
(test/Import/Inputs) and the tests compare strata-run's results with them
using only the Python standard library.

For every model NAME it writes:
  NAME.onnx                the forward graph (torch.onnx.export, TorchScript
                           exporter, opset 17, static shapes; the GPT also
                           at opset 14 as gpt-opset14.onnx)
  NAME.data.safetensors    one batch: "inputs" and "labels" (strata-run --data)
  NAME.ref.safetensors     PyTorch's results from the exported weights:
                           "grad/P"     gradient of the first step's loss
                           "sgd10/P"    P after 10 SGD steps (lr 0.1)
                           "adamw10/P"  P after 10 AdamW steps (lr 0.01,
                                        weight decay 0.01)
                           and in __metadata__ the losses of every step
                           ("sgd_losses", "adamw_losses", JSON lists)
Every step trains on the same batch (strata-run shuffles it within the batch,
which a mean loss does not see).
"""
import argparse
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
STEPS = 10
SGD_LR = 0.1
ADAMW_LR = 0.01
ADAMW_DECAY = 0.01


class MLP(nn.Module):
    """Linear layers fc0..fc2 with ReLU: Gemm (transB = 1) and Relu."""

    def __init__(self, inputs=16, hidden=32, classes=4):
        super().__init__()
        self.fc0 = nn.Linear(inputs, hidden)
        self.fc1 = nn.Linear(hidden, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(torch.relu(self.fc0(x)))))


class Block(nn.Module):
    """A pre-layer-norm GPT-2 block (as lib/Models/GPT.cpp builds it)."""

    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.q = nn.Linear(hidden, hidden)
        # No key bias: it adds the same amount to every score of a row, which
        # softmax ignores, so its gradient is zero up to rounding and AdamW
        # would amplify that noise differently in each framework.
        self.k = nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.out = nn.Linear(4 * hidden, hidden)
        self.gelu = nn.GELU(approximate="tanh")
        mask = torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq)
        self.register_buffer("mask", mask, persistent=False)

    def split(self, t):
        b, s, h = t.shape
        return t.view(b, s, self.heads, h // self.heads).transpose(1, 2)

    def forward(self, x):
        b, s, h = x.shape
        n = self.ln1(x)
        q, k, v = self.split(self.q(n)), self.split(self.k(n)), self.split(self.v(n))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.heads))
        att = att.masked_fill(self.mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(y)
        return x + self.out(self.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Token and position embeddings, blocks h.0..h.N-1, final norm, head."""

    def __init__(self, vocab=32, hidden=16, heads=2, seq=8, layers=2,
                 positions=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        # More positions than the sequence: rows seq.. are unused.
        self.wpe = nn.Embedding(positions, hidden)
        self.h = nn.ModuleList(Block(hidden, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x))


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock (same module names)."""

    def __init__(self, inplanes, planes, stride, norm):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride, bias=False), norm(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """torchvision.models.resnet18's architecture and module names (torchvision
    itself is not needed); `norm` is nn.BatchNorm2d there."""

    def __init__(self, classes=1000, norm=nn.BatchNorm2d, width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = norm(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, inplanes = [], width
        for i, planes in enumerate((width, 2 * width, 4 * width, 8 * width)):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(inplanes, planes, stride, norm),
                                        BasicBlock(planes, planes, 1, norm)))
            inplanes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def no_norm(channels):
    return nn.Identity()


def write_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        dtype = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        raw = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-(len(text) + 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def loss_of(model, inputs, labels):
    out = model(inputs)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1).long())


def train(model, inputs, labels, make_optimizer):
    """Losses of STEPS steps on the batch, and the parameters after them."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    opt = make_optimizer(model.parameters())
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(model, inputs, labels)
        loss.backward()
        losses.append(loss.item())
        opt.step()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    model.load_state_dict(state)
    return losses, params


def export(name, model, inputs, labels, out_dir):
    model.eval()  # no dropout or batch statistics in these models
    path = os.path.join(out_dir, name + ".onnx")
    # Constant folding off: initializers keep their state_dict names (the
    # folder would pre-transpose Linear weights into unnamed copies) and the
    # shape subgraphs stay for the importer to fold.
    torch.onnx.export(model, (inputs,), path, dynamo=False, opset_version=OPSET,
                      input_names=["inputs"], output_names=["logits"],
                      do_constant_folding=False)
    write_safetensors(os.path.join(out_dir, name + ".data.safetensors"),
                      {"inputs": inputs, "labels": labels})
    model.zero_grad()
    loss_of(model, inputs, labels).backward()
    ref = {"grad/" + n: p.grad.clone() for n, p in model.named_parameters()}
    sgd_losses, sgd = train(model, inputs, labels,
                            lambda p: torch.optim.SGD(p, lr=SGD_LR))
    adam_losses, adam = train(
        model, inputs, labels,
        lambda p: torch.optim.AdamW(p, lr=ADAMW_LR, weight_decay=ADAMW_DECAY))
    ref.update({"sgd10/" + n: t for n, t in sgd.items()})
    ref.update({"adamw10/" + n: t for n, t in adam.items()})
    write_safetensors(os.path.join(out_dir, name + ".ref.safetensors"), ref,
                      {"sgd_losses": json.dumps(sgd_losses),
                       "adamw_losses": json.dumps(adam_losses),
                       "torch": torch.__version__})
    print(f"{name}: {os.path.getsize(path)} bytes, loss {sgd_losses[0]:.6f} "
          f"-> sgd {sgd_losses[-1]:.6f}, adamw {adam_losses[-1]:.6f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(HERE, "Inputs"))
    parser.add_argument("--resnet224", metavar="FILE",
                        help="also export ResNet-18 with batch norm at "
                             "224x224, batch 8, in inference form (the "
                             "exporter folds each BatchNormalization into "
                             "its Conv), to FILE (45 MB: not committed)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    mlp = MLP()
    x = torch.randn(16, 16)
    y = torch.randint(0, 4, (16,), dtype=torch.int32)
    export("mlp", mlp, x, y, args.out)

    gpt = GPT()
    tokens = torch.randint(0, 32, (4, 8), dtype=torch.int32)
    targets = torch.randint(0, 32, (4, 8), dtype=torch.int32)
    export("gpt", gpt, tokens, targets, args.out)
    # The same weights at opset 14, where LayerNorm is decomposed
    # (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add): the
    # reference and the batch of "gpt" apply.
    torch.onnx.export(gpt, (tokens,), os.path.join(args.out, "gpt-opset14.onnx"),
                      dynamo=False, opset_version=14, input_names=["inputs"],
                      output_names=["logits"], do_constant_folding=False)

    # ResNet-18 without normalisation (as strata-model resnet18 builds it),
    # width 4 instead of 64 to keep the files small: Conv (strided, 1x1
    # shortcuts), MaxPool, residual Add, GlobalAveragePool, Flatten, Gemm.
    resnet = ResNet18(classes=10, norm=no_norm, width=4)
    for p in resnet.parameters():  # no batch norm: keep activations in range
        p.data.mul_(0.5)
    images = torch.randn(2, 3, 32, 32)
    classes = torch.randint(0, 10, (2,), dtype=torch.int32)
    export("resnet18", resnet, images, classes, args.out)

    if args.resnet224:
        big = ResNet18().eval()
        torch.onnx.export(big, (torch.randn(8, 3, 224, 224),), args.resnet224,
                          dynamo=False, opset_version=OPSET,
                          input_names=["inputs"], output_names=["logits"])
        print(f"{args.resnet224}: {os.path.getsize(args.resnet224)} bytes")


if __name__ == "__main__":
    main()
