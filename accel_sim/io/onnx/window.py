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

    def taps(self, positions: list[str], kernel_ranks: list[str]) -> tuple[Affine, ...]:
        """Index stride*p + dilation*r - pad_begin along each spatial dim."""
        return tuple(Affine(((p, s), (r, d)), -pad) for p, r, s, d, pad
                     in zip(positions, kernel_ranks, self.strides, self.dilations, self.pad_begin))


def sliding_window(at: dict[str, Any], in_spatial: tuple[int, ...], out_spatial: tuple[int, ...],
                   kernel: tuple[int, ...], *, transposed: bool = False) -> Window:
    """Geometry from a node's attributes; auto_pad SAME as the Conv/pool spec, or the ConvTranspose one."""
    k = len(in_spatial)
    strides = tuple(at.get("strides", [1] * k))
    dilations = tuple(at.get("dilations", [1] * k))
    auto_pad = at.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") and transposed:
        # ONNX ConvTranspose spec: total_padding = stride*(in-1) + output_padding + ((k-1)*d+1) - out
        out_pad = tuple(at.get("output_padding", [0] * k))
        total = [s * (i - 1) + op + (kk - 1) * d + 1 - o
                 for s, i, op, kk, d, o in zip(strides, in_spatial, out_pad, kernel, dilations, out_spatial)]
        begin = tuple(t - t // 2 if auto_pad == "SAME_UPPER" else t // 2 for t in total)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = [max(0, (o - 1) * s + (kk - 1) * d + 1 - i)
                 for i, o, s, kk, d in zip(in_spatial, out_spatial, strides, kernel, dilations)]
        begin = tuple(t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total)
    elif auto_pad == "VALID":
        begin = (0,) * k
    else:
        begin = tuple(at.get("pads", [0] * 2 * k)[:k])
    return Window(kernel, strides, dilations, begin)
