#!/usr/bin/env python3
"""Exports the ONNX test models of test/Import from PyTorch, with PyTorch's
training results on the same weights and batch as the reference.

    python test/Import/make_onnx_models.py [--out DIR] [--models NAME...]
                                           [--resnet224 FILE]

Needs torch and onnx (a virtual environment from PyPI:
`python3 -m venv V && V/bin/pip install torch onnx`). PyTorch is never a
dependency of Strata's tests: the files written here are committed
(test/Import/Inputs) and the tests compare strata-run's results with them
using only the Python standard library.

For every model NAME it writes:
  NAME.onnx                the forward graph (torch.onnx.export, TorchScript
                           exporter, opset 17, static shapes; the GPT also
                           at opset 14 as gpt-opset14.onnx, the GPT-2 layout
                           at 13 and 18, the MLP at 13, 15 and 18)
  NAME.data.safetensors    one batch: "inputs" and "labels" (strata-run --data)
  NAME.ref.safetensors     PyTorch's results from the exported weights:
                           "grad/P"     gradient of the first step's loss
                           "sgd10/P"    P after 10 SGD steps (lr 0.1)
                           "adamw10/P"  P after 10 AdamW steps (lr 0.01,
                                        weight decay 0.01)
                           and in __metadata__ the losses of every step
                           ("sgd_losses", "adamw_losses", JSON lists) and
                           the learning rates ("sgd_lr", "adamw_lr"; some
                           models train at lower rates, see main())
                           With float64=True also "grad64/P", PyTorch's
                           float64 gradients, and in __metadata__
                           "f32_vs_f64": how far PyTorch's float32 results
                           are from float64 ones (scaled as compare_torch.py
                           scales)
Models with batch normalisation (resnet18-bn) are exported in training form
(training=TrainingMode.TRAINING: batch statistics, running statistics as
initializers) and trained in train mode; their references also hold the
running statistics after the 10 steps ("sgd10/bn1.running_mean", ...).
Every step trains on the same batch (strata-run shuffles it within the batch,
which neither a mean loss nor batch statistics see).
"""
import argparse
import copy
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


class SplitConcat(nn.Module):
    """An MLP whose hidden layer is split, sliced, recombined and joined:
    Split, Slice, Sub of two tensors, a scalar Mul, Neg and Concat."""

    def __init__(self, inputs=16, hidden=32, classes=4):
        super().__init__()
        self.fc0 = nn.Linear(inputs, hidden)
        self.fc1 = nn.Linear(44, classes)

    def forward(self, x):
        h = torch.relu(self.fc0(x))
        a, b = h.split([12, 20], dim=1)
        return self.fc1(torch.cat([a - b[:, :12], 0.5 * b, -a], dim=1))


class GPT2Block(nn.Module):
    """A GPT-2 block with Hugging Face's module names: the fused
    query/key/value projection attn.c_attn, split into three (Split)."""

    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads, self.hidden = heads, hidden
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(hidden, 3 * hidden)
        self.attn.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp.c_proj = nn.Linear(4 * hidden, hidden)
        self.gelu = nn.GELU(approximate="tanh")
        mask = torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq)
        self.register_buffer("mask", mask, persistent=False)

    def split_heads(self, t):
        b, s, h = t.shape
        return t.view(b, s, self.heads, h // self.heads).transpose(1, 2)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(self.hidden, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.heads))
        att = att.masked_fill(self.mask == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(self.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    """GPT-2's layout (fused c_attn, module names of Hugging Face's GPT2Model
    without the `transformer.` prefix), the head tied to the token
    embedding as in GPT-2."""

    def __init__(self, vocab=32, hidden=16, heads=2, seq=8, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.h = nn.ModuleList(GPT2Block(hidden, heads, seq)
                               for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


class VGG16(nn.Module):
    """torchvision.models.vgg16's layout and module names (13 convolutions
    in 5 blocks with max pooling, `features.N`; 3 linear layers with ReLU
    and dropout, `classifier.N`), reduced for small committed files: widths
    divided by 32 (2..16 channels), classifier 32 wide, 32x32 images. The
    final feature map is 1x1, which AdaptiveAvgPool2d((7, 7)) would
    replicate and torch.onnx cannot export, so the pool is (1, 1)."""

    def __init__(self, classes=10, width=2, hidden=32):
        super().__init__()
        layers, channels = [], 3
        for v in (1, 1, "M", 2, 2, "M", 4, 4, 4, "M", 8, 8, 8, "M", 8, 8, 8,
                  "M"):
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
                continue
            layers += [nn.Conv2d(channels, v * width, 3, padding=1),
                       nn.ReLU(inplace=True)]
            channels = v * width
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(
            nn.Linear(channels, hidden), nn.ReLU(True), nn.Dropout(),
            nn.Linear(hidden, hidden), nn.ReLU(True), nn.Dropout(),
            nn.Linear(hidden, classes))
        # torchvision's initialisation.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out",
                                        nonlinearity="relu")
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


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


def weights_of(model):
    """Parameters and the float buffers of the state_dict (batch norm's
    running statistics; num_batches_tracked is not exported)."""
    out = {n: p.detach().clone() for n, p in model.named_parameters()}
    for n, t in model.state_dict().items():
        if n not in out and t.is_floating_point():
            out[n] = t.detach().clone()
    return out


def train(model, inputs, labels, make_optimizer):
    """Losses of STEPS steps on the batch, and the parameters (and running
    statistics) after them."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    opt = make_optimizer(model.parameters())
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(model, inputs, labels)
        loss.backward()
        losses.append(loss.item())
        opt.step()
    params = weights_of(model)
    model.load_state_dict(state)
    return losses, params


def load_initializers(model, path):
    """Loads the file's initializers into the model's state_dict entries of
    the same name: a training-mode export runs the model, which moves the
    running statistics, so the file is the one source of the weights."""
    import onnx
    from onnx import numpy_helper
    state = model.state_dict()
    for init in onnx.load(path).graph.initializer:
        if init.name in state:
            value = torch.from_numpy(numpy_helper.to_array(init).copy())
            state[init.name].copy_(value.reshape(state[init.name].shape))


def reference(model, inputs, labels, sgd_lr, adamw_lr):
    """The first step's gradients, and the losses and weights of 10 SGD and
    10 AdamW steps from the model's current state (which it keeps)."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.zero_grad()
    loss_of(model, inputs, labels).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.load_state_dict(state)  # the forward moved the running statistics
    sgd_losses, sgd = train(model, inputs, labels,
                            lambda p: torch.optim.SGD(p, lr=sgd_lr))
    adam_losses, adam = train(
        model, inputs, labels,
        lambda p: torch.optim.AdamW(p, lr=adamw_lr, weight_decay=ADAMW_DECAY))
    return grads, sgd_losses, sgd, adam_losses, adam


def scaled_difference(a, b):
    """The largest |a - b| / max|b| over the tensors of b."""
    return max(float((a[n].double() - b[n].double()).abs().max() /
                     max(b[n].double().abs().max(), 1e-30)) for n in b)


def conditioning(model, inputs, labels, sgd_lr, adamw_lr, f32):
    """How far PyTorch's own float32 results are from float64 ones: the
    rounding noise any float32 implementation is up against."""
    f64 = reference(copy.deepcopy(model).double(), inputs.double()
                    if inputs.is_floating_point() else inputs, labels,
                    sgd_lr, adamw_lr)
    loss_diff = lambda a, b: max(abs(x - y) / abs(y) for x, y in zip(a, b))
    return f64[0], {
        "grads": scaled_difference(f32[0], f64[0]),
        "sgd_losses": loss_diff(f32[1], f64[1]),
        "sgd10": scaled_difference(f32[2], f64[2]),
        "adamw_losses": loss_diff(f32[3], f64[3]),
        "adamw10": scaled_difference(f32[4], f64[4]),
    }


def export(name, model, inputs, labels, out_dir, training=False, opset=OPSET,
           sgd_lr=SGD_LR, adamw_lr=ADAMW_LR, float64=False):
    """Writes NAME.onnx, NAME.data and NAME.ref (see the file comment). With
    `float64`, the ref also holds PyTorch's float64 gradients ("grad64/P")
    and in its metadata how far PyTorch's float32 results are from float64
    ones ("f32_vs_f64")."""
    # No dropout in these models; batch norm trains with batch statistics.
    model.train(training)
    path = os.path.join(out_dir, name + ".onnx")
    # Constant folding off: initializers keep their state_dict names (the
    # folder would pre-transpose Linear weights into unnamed copies) and the
    # shape subgraphs stay for the importer to fold.
    extra = {"training": torch.onnx.TrainingMode.TRAINING} if training else {}
    torch.onnx.export(model, (inputs,), path, dynamo=False, opset_version=opset,
                      input_names=["inputs"], output_names=["logits"],
                      do_constant_folding=False, **extra)
    if training:
        load_initializers(model, path)
    write_safetensors(os.path.join(out_dir, name + ".data.safetensors"),
                      {"inputs": inputs, "labels": labels})
    f32 = reference(model, inputs, labels, sgd_lr, adamw_lr)
    grads, sgd_losses, sgd, adam_losses, adam = f32
    ref = {"grad/" + n: t for n, t in grads.items()}
    ref.update({"sgd10/" + n: t for n, t in sgd.items()})
    ref.update({"adamw10/" + n: t for n, t in adam.items()})
    metadata = {"sgd_losses": json.dumps(sgd_losses),
                "adamw_losses": json.dumps(adam_losses),
                "sgd_lr": str(sgd_lr), "adamw_lr": str(adamw_lr),
                "torch": torch.__version__}
    if float64:
        grads64, noise = conditioning(model, inputs, labels, sgd_lr, adamw_lr, f32)
        ref.update({"grad64/" + n: t.float() for n, t in grads64.items()})
        metadata["f32_vs_f64"] = json.dumps({k: float("%.3g" % v)
                                             for k, v in noise.items()})
        print(f"{name}: PyTorch float32 against float64: {metadata['f32_vs_f64']}")
    write_safetensors(os.path.join(out_dir, name + ".ref.safetensors"), ref,
                      metadata)
    print(f"{name}: {os.path.getsize(path)} bytes, loss {sgd_losses[0]:.6f} "
          f"-> sgd {sgd_losses[-1]:.6f}, adamw {adam_losses[-1]:.6f}")


def randomize_batch_norm(model):
    """Batch norm parameters and running statistics as a trained model has
    them (not the fresh ones, 1 and 0, which equal each other)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.normal_(0, 0.1)
            m.running_mean.normal_(0, 0.1)
            m.running_var.uniform_(0.5, 1.5)


MODELS = ["mlp", "gpt", "resnet18", "resnet18-bn", "split-concat", "gpt2",
          "vgg16", "mlp-opsets"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(HERE, "Inputs"))
    parser.add_argument("--models", nargs="*", default=MODELS, choices=MODELS,
                        help="the models to write (default: all); the random "
                             "draws of every model are made in any case, so "
                             "each model's files do not depend on the others")
    parser.add_argument("--resnet224", metavar="FILE",
                        help="also export torchvision's ResNet-18 (with batch "
                             "norm) at 224x224, batch 8, in training form, "
                             "to FILE (47 MB: not committed)")
    args = parser.parse_args()
    wanted = set(args.models)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    mlp = MLP()
    x = torch.randn(16, 16)
    y = torch.randint(0, 4, (16,), dtype=torch.int32)
    if "mlp" in wanted:
        export("mlp", mlp, x, y, args.out)

    gpt = GPT()
    tokens = torch.randint(0, 32, (4, 8), dtype=torch.int32)
    targets = torch.randint(0, 32, (4, 8), dtype=torch.int32)
    if "gpt" in wanted:
        export("gpt", gpt, tokens, targets, args.out)
        # The same weights at opset 14, where LayerNorm is decomposed
        # (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add): the
        # reference and the batch of "gpt" apply.
        torch.onnx.export(gpt, (tokens,),
                          os.path.join(args.out, "gpt-opset14.onnx"),
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
    if "resnet18" in wanted:
        export("resnet18", resnet, images, classes, args.out)

    # torchvision's ResNet-18 with batch norm (width 4, 48x48 images, batch
    # 8), in training form. layer4 sees 2x2 maps: its statistics are over 32
    # values per channel (over 2, a batch norm's input gradient vanishes).
    # Training a batch-normalised network on 8 samples is ill-conditioned:
    # at SGD lr 0.1 or AdamW lr 0.01 (the other models' rates) PyTorch's own
    # float32 and float64 runs part by percents within 10 steps. At the lower
    # rates here, and for this draw, they agree to about 1e-6 (the ref's
    # f32_vs_f64 says by how much), so a comparison can tell a bug from
    # rounding.
    torch.manual_seed(2)
    resnet_bn = ResNet18(classes=10, width=4)
    randomize_batch_norm(resnet_bn)
    images_bn = torch.randn(8, 3, 48, 48)
    classes_bn = torch.randint(0, 10, (8,), dtype=torch.int32)
    if "resnet18-bn" in wanted:
        export("resnet18-bn", resnet_bn, images_bn, classes_bn, args.out,
               training=True, sgd_lr=0.02, adamw_lr=0.001, float64=True)

    # An MLP with Split, Slice, Sub, a scalar Mul, Neg and Concat.
    torch.manual_seed(3)
    split_concat = SplitConcat()
    x_sc = torch.randn(16, 16)
    y_sc = torch.randint(0, 4, (16,), dtype=torch.int32)
    if "split-concat" in wanted:
        export("split-concat", split_concat, x_sc, y_sc, args.out,
               float64=True)

    # GPT-2's layout: fused c_attn split into query, key and value, the head
    # tied to the token embedding.
    torch.manual_seed(4)
    gpt2 = GPT2()
    tokens2 = torch.randint(0, 32, (4, 8), dtype=torch.int32)
    targets2 = torch.randint(0, 32, (4, 8), dtype=torch.int32)
    if "gpt2" in wanted:
        export("gpt2", gpt2, tokens2, targets2, args.out, float64=True)
        # The same weights at opset 13 (layer norm decomposed, Split sizes
        # as an input) and 18 (ReduceMean axes as inputs): the reference and
        # the batch of "gpt2" apply.
        for opset in (13, 18):
            torch.onnx.export(gpt2.eval(), (tokens2,),
                              os.path.join(args.out, f"gpt2-opset{opset}.onnx"),
                              dynamo=False, opset_version=opset,
                              input_names=["inputs"], output_names=["logits"],
                              do_constant_folding=False)

    # VGG-16 (torchvision's layout, reduced; see VGG16). Exported and
    # trained without dropout (random), as torchvision's model.eval() runs.
    torch.manual_seed(5)
    vgg = VGG16()
    images_vgg = torch.randn(4, 3, 32, 32)
    classes_vgg = torch.randint(0, 10, (4,), dtype=torch.int32)
    if "vgg16" in wanted:
        export("vgg16", vgg, images_vgg, classes_vgg, args.out, float64=True)

    # The MLP's weights at opsets 13, 15 and 18 (mlp.onnx is opset 17): the
    # reference and the batch of "mlp" apply.
    if "mlp-opsets" in wanted:
        for opset in (13, 15, 18):
            torch.onnx.export(mlp.eval(), (x,),
                              os.path.join(args.out, f"mlp-opset{opset}.onnx"),
                              dynamo=False, opset_version=opset,
                              input_names=["inputs"], output_names=["logits"],
                              do_constant_folding=False)

    if args.resnet224:
        big = ResNet18().train()
        torch.onnx.export(big, (torch.randn(8, 3, 224, 224),), args.resnet224,
                          dynamo=False, opset_version=OPSET,
                          input_names=["inputs"], output_names=["logits"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        print(f"{args.resnet224}: {os.path.getsize(args.resnet224)} bytes")


if __name__ == "__main__":
    main()
