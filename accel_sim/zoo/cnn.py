"""ResNet generators (He et al., CVPR 2016, Table 1; torchvision's v1.5 layout) as einsum cascades.

* Convolution: ``O[n,k,p,q] = sum_{c,r,s} I[n, c, stride*p + r - pad, stride*q + s - pad] * W[k,c,r,s]``;
  out-of-range reads are zero, which is the zero padding.
* BatchNorm is folded into the preceding convolution (inference: scale into W, shift into a per-channel
  bias), as both ONNX exporters do (MANIFEST: "BatchNorm folded into Conv"); the bias add, ReLU and the
  residual add are one elementwise einsum after each convolution.
* Max pooling 3x3/2 with padding 1 reads zeros at the border; its input is a ReLU output (>= 0), so a
  zero pad gives the same maximum as PyTorch's -inf pad.
* Weights and biases are kind "weight" at ``weight_bits``; activations at ``act_bits``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from accel_sim.errors import ConfigError
from accel_sim.spec.workload import Expr, Workload
from accel_sim.zoo.graph import GraphBuilder, aff, at, call

# blocks per stage and block type: He et al. 2016, Table 1
RESNET_STAGES: dict[int, tuple[str, tuple[int, int, int, int]]] = {
    18: ("basic", (2, 2, 2, 2)), 34: ("basic", (3, 4, 6, 3)), 50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)), 152: ("bottleneck", (3, 8, 36, 3)),
}
STAGE_WIDTHS = (64, 128, 256, 512)   # He et al. 2016, Table 1 (conv2_x .. conv5_x)
BOTTLENECK_EXPANSION = 4             # 1x1 -> 3x3 -> 1x1 with 4x output channels (He et al. 2016, Fig. 5)
NCHW = ("n", "c", "h", "w")


@dataclass(frozen=True)
class ResNetSpec:
    """Parameters of a ResNet inference workload."""

    name: str = "resnet50"                           # model name: prefix of the workload name
    depth: Literal[18, 34, 50, 101, 152] = 50        # layers (He et al. 2016, Table 1)
    batch: int = 1                                   # images
    image_size: int = 224                            # input height = width, pixels
    in_channels: int = 3                             # input image channels
    num_classes: int = 1000                          # FC outputs (ImageNet-1k)
    weight_bits: int = 16                            # parameter width
    act_bits: int = 16                               # activation width


@dataclass(frozen=True)
class _FMap:
    name: str
    C: int
    H: int
    W: int


def check_resnet(spec: ResNetSpec) -> None:
    """Raise ConfigError (key path = the parameter) for values no ResNet can have."""
    if spec.depth not in RESNET_STAGES:
        raise ConfigError(f"no ResNet-{spec.depth}", key_path="depth",
                          fix=f"use one of: {', '.join(map(str, RESNET_STAGES))}")
    for key in ("batch", "image_size", "in_channels", "num_classes", "weight_bits", "act_bits"):
        if getattr(spec, key) < 1:
            raise ConfigError(f"{key} must be a positive integer, got {getattr(spec, key)}", key_path=key,
                              fix=f"set {key} to 1 or more")
    if spec.image_size < 32:
        # five stride-2 stages shrink the image 32x; smaller inputs reach zero-sized feature maps
        raise ConfigError(f"image_size {spec.image_size} is below 32 pixels, the total stride of ResNet",
                          key_path="image_size", fix="use an image_size of 32 or more (ImageNet: 224)")


def workload_name(spec: ResNetSpec) -> str:
    """E.g. 'resnet50-b1-224', with '-w8a8' when a width differs from 16."""
    name = f"{spec.name}-b{spec.batch}-{spec.image_size}"
    if (spec.weight_bits, spec.act_bits) != (16, 16):
        name += f"-w{spec.weight_bits}a{spec.act_bits}"
    return name


def resnet(spec: ResNetSpec) -> Workload:
    """The einsum cascade of one ResNet forward pass on `batch` images."""
    check_resnet(spec)
    g = GraphBuilder()
    image = g.tensor("input", NCHW, (spec.batch, spec.in_channels, spec.image_size, spec.image_size), spec.act_bits)
    x = _FMap(image, spec.in_channels, spec.image_size, spec.image_size)
    x = _conv_act(g, spec, "stem", x, 64, 7, 2, 3)
    x = _maxpool(g, spec, "stem.maxpool", x)
    kind, blocks = RESNET_STAGES[spec.depth]
    for stage, (width, count) in enumerate(zip(STAGE_WIDTHS, blocks)):
        for index in range(count):
            stride = 2 if stage > 0 and index == 0 else 1
            name = f"layer{stage + 1}.{index}"
            block = _bottleneck if kind == "bottleneck" else _basic
            x = block(g, spec, name, x, width, stride)
    _head(g, spec, x)
    return g.workload(workload_name(spec), items_per_run=spec.batch, item_unit="image")


def _conv(g: GraphBuilder, spec: ResNetSpec, name: str, x: _FMap, c_out: int, kernel: int, stride: int,
          pad: int) -> tuple[_FMap, str]:
    """Convolution (BN folded); returns the raw output and the folded per-channel bias."""
    n = spec.batch
    h_out = (x.H + 2 * pad - kernel) // stride + 1
    w_out = (x.W + 2 * pad - kernel) // stride + 1
    weight = g.tensor(f"{name}.weight", ("k", "c", "r", "s"), (c_out, x.C, kernel, kernel), spec.weight_bits, "weight")
    bias = g.tensor(f"{name}.bias", ("k",), (c_out,), spec.weight_bits, "weight")
    out = g.tensor(f"{name}.out", ("n", "k", "p", "q"), (n, c_out, h_out, w_out), spec.act_bits)
    g.contract(f"{name}.conv", at(out, "n", "k", "p", "q"),
               at(x.name, "n", "c", aff(-pad, p=stride, r=1), aff(-pad, q=stride, s=1)),
               at(weight, "k", "c", "r", "s"),
               {"n": n, "k": c_out, "p": h_out, "q": w_out, "c": x.C, "r": kernel, "s": kernel})
    return _FMap(out, c_out, h_out, w_out), bias


def _activate(g: GraphBuilder, spec: ResNetSpec, name: str, conv: _FMap, bias: str,
              shortcut: Expr | None) -> _FMap:
    """relu(conv + bias [+ shortcut]) as one elementwise einsum."""
    expr: Expr = call("add", at(conv.name, *NCHW), at(bias, "c"))
    if shortcut is not None:
        expr = call("add", expr, shortcut)
    expr = call("relu", expr)
    out = g.tensor(f"{name}.act", NCHW, (spec.batch, conv.C, conv.H, conv.W), spec.act_bits)
    g.einsum(f"{name}.bias_relu", at(out, *NCHW), expr,
             {"n": spec.batch, "c": conv.C, "h": conv.H, "w": conv.W})
    return _FMap(out, conv.C, conv.H, conv.W)


def _conv_act(g: GraphBuilder, spec: ResNetSpec, name: str, x: _FMap, c_out: int, kernel: int, stride: int,
              pad: int) -> _FMap:
    conv, bias = _conv(g, spec, name, x, c_out, kernel, stride, pad)
    return _activate(g, spec, name, conv, bias, None)


def _shortcut(g: GraphBuilder, spec: ResNetSpec, name: str, x: _FMap, c_out: int, stride: int) -> Expr:
    """Identity, or the 1x1 strided downsample conv (+ folded BN bias) when the shape changes."""
    if stride == 1 and x.C == c_out:
        return at(x.name, *NCHW)
    conv, bias = _conv(g, spec, f"{name}.downsample", x, c_out, 1, stride, 0)
    return call("add", at(conv.name, *NCHW), at(bias, "c"))


def _basic(g: GraphBuilder, spec: ResNetSpec, name: str, x: _FMap, width: int, stride: int) -> _FMap:
    """3x3 (stride) -> 3x3, identity or downsample shortcut (He et al. 2016, Fig. 5 left)."""
    h = _conv_act(g, spec, f"{name}.conv1", x, width, 3, stride, 1)
    conv, bias = _conv(g, spec, f"{name}.conv2", h, width, 3, 1, 1)
    return _activate(g, spec, f"{name}.conv2", conv, bias, _shortcut(g, spec, name, x, width, stride))


def _bottleneck(g: GraphBuilder, spec: ResNetSpec, name: str, x: _FMap, width: int, stride: int) -> _FMap:
    """1x1 -> 3x3 (stride, torchvision v1.5) -> 1x1 x4, identity or downsample shortcut (Fig. 5 right)."""
    c_out = width * BOTTLENECK_EXPANSION
    h = _conv_act(g, spec, f"{name}.conv1", x, width, 1, 1, 0)
    h = _conv_act(g, spec, f"{name}.conv2", h, width, 3, stride, 1)
    conv, bias = _conv(g, spec, f"{name}.conv3", h, c_out, 1, 1, 0)
    return _activate(g, spec, f"{name}.conv3", conv, bias, _shortcut(g, spec, name, x, c_out, stride))


def _maxpool(g: GraphBuilder, spec: ResNetSpec, name: str, x: _FMap) -> _FMap:
    """3x3 max pool, stride 2, padding 1."""
    h_out, w_out = (x.H + 2 - 3) // 2 + 1, (x.W + 2 - 3) // 2 + 1
    out = g.tensor(f"{name}.out", NCHW, (spec.batch, x.C, h_out, w_out), spec.act_bits)
    g.einsum(f"{name}.max", at(out, *NCHW), at(x.name, "n", "c", aff(-1, h=2, r=1), aff(-1, w=2, s=1)),
             {"n": spec.batch, "c": x.C, "h": h_out, "w": w_out, "r": 3, "s": 3}, reduce="max")
    return _FMap(out, x.C, h_out, w_out)


def _head(g: GraphBuilder, spec: ResNetSpec, x: _FMap) -> str:
    """Global average pool, then the fully connected classifier with its bias."""
    n, W, A = spec.batch, spec.weight_bits, spec.act_bits
    pooled = g.tensor("avgpool.out", ("n", "c"), (n, x.C), A)
    g.einsum("avgpool.mean", at(pooled, "n", "c"), call("div", at(x.name, *NCHW), x.H * x.W),
             {"n": n, "c": x.C, "h": x.H, "w": x.W})
    weight = g.tensor("fc.weight", ("j", "c"), (spec.num_classes, x.C), W, "weight")
    bias = g.tensor("fc.bias", ("j",), (spec.num_classes,), W, "weight")
    raw = g.tensor("fc.out", ("n", "j"), (n, spec.num_classes), A)
    g.contract("fc.matmul", at(raw, "n", "j"), at(pooled, "n", "c"), at(weight, "j", "c"),
               {"n": n, "j": spec.num_classes, "c": x.C})
    logits = g.tensor("logits", ("n", "j"), (n, spec.num_classes), A)
    return g.einsum("fc.bias_add", at(logits, "n", "j"), call("add", at(raw, "n", "j"), at(bias, "j")),
                    {"n": n, "j": spec.num_classes})
