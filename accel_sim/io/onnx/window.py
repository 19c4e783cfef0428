"""Sliding-window geometry shared by Conv, ConvTranspose and pooling: kernel, strides, dilations, padding."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accel_sim.spec.workload import Affine


def spatial_names(k: int) -> tuple[list[str], list[str]]:
    if k == 1:
        return ["p"], ["r"]
    if k == 2:
        return ["p", "q"], ["r", "s"]
    return [f"p{j}" for j in range(k)], [f"r{j}" for j in range(k)]


@dataclass(frozen=True)
class Window:
    """Sliding-window geometry of a conv or pool along the spatial dims."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pad_begin: tuple[int, ...]


def sliding_window(at: dict[str, Any], in_spatial: tuple[int, ...], out_spatial: tuple[int, ...],
            kernel: tuple[int, ...]) -> Window:
    k = len(in_spatial)
    strides = tuple(at.get("strides", [1] * k))
    dilations = tuple(at.get("dilations", [1] * k))
    auto_pad = at.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = [max(0, (o - 1) * s + (kk - 1) * d + 1 - i)
                 for i, o, s, kk, d in zip(in_spatial, out_spatial, strides, kernel, dilations)]
        begin = tuple(t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total)
    elif auto_pad == "VALID":
        begin = (0,) * k
    else:
        begin = tuple(at.get("pads", [0] * 2 * k)[:k])
    return Window(kernel, strides, dilations, begin)


def window_index(out_rank: str, kernel_rank: str, stride: int, dilation: int, pad: int) -> Affine:
    return Affine(((out_rank, stride), (kernel_rank, dilation)), -pad)
