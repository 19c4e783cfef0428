"""Design study: LUT vs MAC tensor cores across weight bits, and Llama-2-7B decode tokens/s, as PNG plots.

For weight bits 1, 2, 3, 4 and 8 and fp16/int8 activations it computes TOPS/mm^2 and TOPS/W of the lut_core
and mac_core engines (validation/lut_tensor_core.py's metrics on the artifact GEMM), and evaluates one
Llama-2-7B decode step (batch 1, kv_len 1024) at 1, 2, 4 and 8-bit weights on both shipped accelerators.
Run: python -m validation.lut_design_study [OUT_DIR]   (default reports/lut_design_study)
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd

from accel_sim import load_arch
from accel_sim.evaluate import evaluate
from accel_sim.zoo import build
from validation.lut_tensor_core import LUT_CONFIG, MAC_CONFIG, metrics

BITS = (1, 2, 3, 4, 8)
DECODE_BITS = (1, 2, 4, 8)


def engine_frame() -> pd.DataFrame:
    """One row per (engine, activation, weight bits): TOPS, area, TOPS/mm^2 and TOPS/W."""
    lut_arch, mac_arch = load_arch(LUT_CONFIG), load_arch(MAC_CONFIG)
    node, clock = lut_arch.technology_nm, lut_arch.clock_hz
    rows = []
    for name, engine in (("LUT", lut_arch.engine("lut_core")), ("MAC", mac_arch.engine("mac_core"))):
        for act in ("fp16", "int8"):
            e = engine.model_copy(update={"activation": act})
            for bits in BITS:
                m = metrics(e, bits, node, clock)
                rows.append({"engine": name, "activation": act, "weight_bits": bits, "tops": m.tops,
                             "area_mm2": m.area_mm2, "tops_per_mm2": m.tops_per_mm2, "tops_per_w": m.tops_per_w})
    return pd.DataFrame(rows)


def decode_frame() -> pd.DataFrame:
    """Llama-2-7B decode tokens/s, energy per token and area on the LUT and MAC accelerators per weight width."""
    rows = []
    for name, config in (("LUT", LUT_CONFIG), ("MAC", MAC_CONFIG)):
        arch = load_arch(config)
        for bits in DECODE_BITS:
            s = evaluate(arch, build("llama2-7b", phase="decode", kv_len=1024, weight_bits=bits)).summary()
            rows.append({"engine": name, "weight_bits": bits, "tokens_per_s": s["throughput_per_s"],
                         "energy_per_token_j": s["energy_j"], "area_mm2": s["area_mm2"]})
    return pd.DataFrame(rows)


def plot(engines: pd.DataFrame, decode: pd.DataFrame, out: Path) -> list[Path]:
    """Write the study's PNGs into `out` and return their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for metric, label in (("tops_per_mm2", "TOPS/mm$^2$"), ("tops_per_w", "TOPS/W")):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for (engine, act), group in engines.groupby(["engine", "activation"]):
            ax.plot(group.weight_bits, group[metric], marker="o", label=f"{engine} A-{act}")
        ax.set(xlabel="weight bits", ylabel=label, yscale="log", title=f"{label} vs weight bits (28 nm)")
        ax.legend()
        fig.tight_layout()
        paths.append(out / f"{metric}.png")
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for engine, group in decode.groupby("engine"):
        ax.plot(group.weight_bits, group.tokens_per_s, marker="o", label=engine)
    ax.set(xlabel="weight bits", ylabel="tokens/s", title="Llama-2-7B decode (batch 1, kv 1024)")
    ax.legend()
    fig.tight_layout()
    paths.append(out / "llama2_7b_decode_tokens_per_s.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> list[Path]:
    """Compute the study, print its tables, write the PNGs and return their paths."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "reports" / "lut_design_study"
    engines, decode = engine_frame(), decode_frame()
    print(engines.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(decode.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return plot(engines, decode, out)


if __name__ == "__main__":
    main()
