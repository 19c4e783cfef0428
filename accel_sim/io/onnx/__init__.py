"""ONNX models -> accel-sim workloads: compute nodes become einsums, data movement becomes views.

Only shapes are read (reader.py, wire.py): weights stay in the file, and every static shape comes from
ONNX shape inference. Each op family lives in its own module with a table of the ONNX ops it handles:
ops_contract (MatMul, Gemm, Einsum, Conv: the MACs), ops_elementwise, ops_reduce (reductions, pooling,
normalisation and softmax cascades) and ops_views. Data-dependent dimensions (NonZero's count) take their
upper bound, the input's element count, so that downstream nodes get static shapes; the workload then
describes the worst case.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from accel_sim.errors import ConfigError
from accel_sim.io.onnx import ops_contract, ops_elementwise, ops_reduce, ops_views
from accel_sim.io.onnx.graph import STANDARD_DOMAINS, Graph, Handler
from accel_sim.io.onnx.reader import infer_static_shapes, read_model
from accel_sim.spec.workload import Workload

__all__ = ["import_summary", "load_onnx"]

_HANDLERS: dict[str, Handler] = {
    **ops_elementwise.HANDLERS, **ops_contract.HANDLERS, **ops_reduce.HANDLERS, **ops_views.HANDLERS,
}
_UNSUPPORTED_FIX = ("rerun without --strict to import the rest (the node is then listed as unsupported), "
                    "or export the model with standard ONNX operators (ai.onnx domain, no custom or fused ops)")


def load_onnx(path: str | Path, *, strict: bool = False) -> Workload:
    """Import an ONNX model as a Workload (einsums + views); unsupported ops are listed or, if strict, raise."""
    path = Path(path)
    model = read_model(path)
    graph = Graph(path, model, infer_static_shapes(model, path))
    for index, node in enumerate(model.graph.node):
        handler = _HANDLERS.get(node.op_type) if node.domain in STANDARD_DOMAINS else None
        if handler is None:
            if strict:
                raise ConfigError(
                    f"unsupported ONNX operator {node.op_type} (domain '{node.domain or 'ai.onnx'}') "
                    f"at node '{graph.node_name(node, index)}'",
                    fix=_UNSUPPORTED_FIX, file=path, key_path=f"graph.node[{index}]")
            graph.unsupported.append(f"{node.op_type} '{graph.node_name(node, index)}'")
            graph.unsupported_outputs.update(node.output)
            graph.register_outputs(node, index, allow_unknown=True)
            continue
        graph.same_shape_fallback(node)
        added = len(graph.einsums)
        handler(graph, node, index)
        graph.check_extents(node, index, graph.einsums[added:])
    return graph.workload()


def import_summary(workload: Workload) -> dict[str, Any]:
    """Counts of an imported workload: einsums, views, MACs, ops, weight bytes and unsupported ops."""
    return {
        "name": workload.name,
        "einsums": len(workload.einsums),
        "views": len(workload.views),
        "tensors": len(workload.tensors),
        "macs": workload.total_macs,
        "ops": workload.total_ops,
        "weight_bytes": sum(t.bytes for t in workload.tensors if t.kind == "weight"),
        "unsupported": list(workload.unsupported),
    }
