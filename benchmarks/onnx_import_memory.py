"""Peak memory and time of ONNX import: every shared model plus a synthetic model with multi-GB weights.

Each import runs in its own Python process so that its peak resident set size (VmHWM, or ru_maxrss off
Linux) belongs to that import alone. The synthetic model gathers from a 4 GiB embedding table and
multiplies by 2 GiB and 1 GiB weight matrices stored as external data in a sparse file (no disk blocks
are written), plus a 2 GiB weight declared as a plain graph input (shapes only): an importer that loads
weights cannot stay small.
A second synthetic model carries 1.5 GiB of float weights INLINE (raw_data inside the .onnx file, written
with onnx.save): the importer must leave those bytes in the file too (they are never paged in).

Run: `python -m benchmarks.onnx_import_memory` (exit 1 when a model exceeds the 400 MB budget).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
MODELS = (ROOT / ".." / "shared" / "models").resolve()
BUDGET_MB = 400.0  # the importer's peak-memory budget (ONNX importer brief)

# Peak RSS of the child itself: VmHWM (Linux) is the high-water mark of the process's own address space;
# ru_maxrss also counts the parent's peak at fork/exec time, so it is only the fallback off Linux.
_PEAK = """
import resource
def peak_mb():
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
_CHILD = _PEAK + """
import json, sys, time
t0 = time.perf_counter()
from accel_sim.io.onnx import load_onnx
t1 = time.perf_counter()
w = load_onnx(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"import_s": t2 - t1, "module_s": t1 - t0, "macs": w.total_macs, "einsums": len(w.einsums),
                  "views": len(w.views), "unsupported": len(w.unsupported),
                  "peak_mb": peak_mb(), "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
_BASELINE = _PEAK + """
import json
import accel_sim.io.onnx
print(json.dumps({"peak_mb": peak_mb()}))
"""
# Writing the inline model holds its weights in memory: done in a child so that this process stays small.
_BUILD_INLINE = """
import json, sys
from pathlib import Path
from benchmarks.onnx_import_memory import build_inline
print(json.dumps({"path": str(build_inline(Path(sys.argv[1])))}))
"""


def _external(name: str, dims: list[int], location: str, offset: int) -> tuple[TensorProto, int]:
    """An fp32 initializer whose bytes live at `offset` of the external file `location`."""
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    tensor.data_location = TensorProto.EXTERNAL
    length = 4
    for d in dims:
        length *= d
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor, length


def build_synthetic(folder: Path) -> Path:
    """Write the multi-GB-weight synthetic model (sparse external data) into `folder`; returns its path."""
    tokens, hidden, vocab, ffn = 512, 4096, 262_144, 131_072
    table, n1 = _external("embedding", [vocab, hidden], "weights.bin", 0)
    up, n2 = _external("w_up", [hidden, ffn], "weights.bin", n1)
    down, n3 = _external("w_down", [ffn // 16, hidden], "weights.bin", n1 + n2)
    with open(folder / "weights.bin", "wb") as f:
        f.truncate(n1 + n2 + n3)  # sparse: the size is declared, no blocks are written
    nodes = [
        helper.make_node("Gather", ["embedding", "ids"], ["x"], name="embed"),
        helper.make_node("MatMul", ["x", "w_up"], ["h"], name="up"),
        helper.make_node("Relu", ["h"], ["a"], name="act"),
        helper.make_node("Slice", ["a", "starts", "ends", "axes"], ["s"], name="narrow"),
        helper.make_node("MatMul", ["s", "w_down"], ["y"], name="down"),
        helper.make_node("MatMul", ["y", "w_head"], ["logits"], name="head"),
    ]
    starts = helper.make_tensor("starts", TensorProto.INT64, [1], [0])
    ends = helper.make_tensor("ends", TensorProto.INT64, [1], [ffn // 16])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        nodes, "synthetic_multi_gb",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [tokens]),
         helper.make_tensor_value_info("w_head", TensorProto.FLOAT, [hidden, vocab // 2])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [tokens, vocab // 2])],
        [table, up, down, starts, ends, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "synthetic_multi_gb.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def build_inline(folder: Path, matrices: int = 6, hidden: int = 2048, wide: int = 32_768) -> Path:
    """Write a model whose `matrices` fp32 weights of hidden x wide (256 MiB each by default) are inline
    initializers (raw_data in the .onnx file, 1.5 GiB in all) into `folder`; returns its path."""
    tokens = 16
    shapes = {"embedding": [wide, hidden]}
    nodes = [helper.make_node("Gather", ["embedding", "ids"], ["x0"], name="embed")]
    for k in range(1, matrices):
        shapes[f"w{k}"] = [hidden, wide] if k % 2 else [wide, hidden]
        nodes.append(helper.make_node("MatMul", [f"x{k - 1}", f"w{k}"], [f"x{k}"], name=f"mm{k}"))
    # a small operand that must keep its values: the Reshape target shape
    nodes.append(helper.make_node("Reshape", [f"x{matrices - 1}", "heads"], ["y"], name="split_heads"))
    last = shapes[f"w{matrices - 1}"][1]
    graph = helper.make_graph(
        nodes, "synthetic_inline_weights", [helper.make_tensor_value_info("ids", TensorProto.INT64, [tokens])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [tokens, last // 64, 64])],
        [TensorProto(name=n, data_type=TensorProto.FLOAT, dims=s) for n, s in shapes.items()]
        + [numpy_helper.from_array(np.array([tokens, -1, 64], np.int64), "heads")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for init in model.graph.initializer[:matrices]:  # filled in place: one copy of the weights in this process
        init.raw_data = bytes(4 * init.dims[0] * init.dims[1])
    path = folder / "synthetic_inline_1p5gb.onnx"
    onnx.save(model, path)
    return path


def _run(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    """Import each model in a fresh process; print peak RSS and import time; 1 if any exceeds the budget."""
    with tempfile.TemporaryDirectory() as tmp:
        synthetic = build_synthetic(Path(tmp))
        inline = Path(_run(_BUILD_INLINE, tmp)["path"])
        models = (sorted(MODELS.glob("*.onnx")) if MODELS.is_dir() else []) + [synthetic, inline]
        baseline = _run(_BASELINE)
        print(f"python + accel_sim.io.onnx imported, no model: peak RSS {baseline.get('peak_mb', float('nan')):.0f} MB")
        print(f"{'model':56s} {'peak RSS MB':>11s} {'ru_maxrss MB':>12s} {'import s':>9s} {'GMACs':>9s} "
              f"{'einsums':>7s} {'views':>6s}")
        worst = 0
        for path in models:
            row = _run(_CHILD, str(path))
            if "error" in row:
                print(f"{path.name:56s} ERROR {row['error']}")
                worst = 1
                continue
            print(f"{path.name:56s} {row['peak_mb']:11.0f} {row['maxrss_mb']:12.0f} {row['import_s']:9.3f} "
                  f"{row['macs'] / 1e9:9.3f} {row['einsums']:7d} {row['views']:6d}")
            if row["peak_mb"] > BUDGET_MB:
                worst = 1
        weights_gb = sum(f.stat().st_size for f in Path(tmp).glob("*.bin")) / 2**30
        print(f"synthetic model: {weights_gb:.1f} GiB of external weights (sparse file) + 2.0 GiB graph-input weight; "
              f"inline model: {inline.stat().st_size / 2**30:.2f} GiB file of inline weights; "
              f"budget {BUDGET_MB:.0f} MB per import")
    return worst


if __name__ == "__main__":
    sys.exit(main())
