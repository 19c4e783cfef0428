"""ONNX views (reshape, transpose, split, gather, concat): the views and shapes the importer makes, and what they
keep alive over a run (sim/placement's lifetimes) and which of them a decode step's KV cache is."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import helper
from onnx_builders import rand_array, save_onnx

from accel_sim.io.onnx import load_onnx


def test_shuffle_reshape_transpose_are_views_with_shapes(tmp_path: Path) -> None:
    """ShuffleNet's channel shuffle (Reshape, Transpose, Reshape) is three views and no einsum."""
    nodes = [helper.make_node("Reshape", ["X", "s1"], ["R"]), helper.make_node("Transpose", ["R"], ["T"],
                                                                                perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["T", "s2"], ["Y"])]
    path = save_onnx(tmp_path, nodes, {"X": (1, 8, 4, 4)}, {"Y": None},
                 inits={"s1": np.array([1, 2, 4, 4, 4]), "s2": np.array([1, 8, 4, 4])})
    workload = load_onnx(path)
    assert [v.op for v in workload.views] == ["reshape", "transpose", "reshape"]
    assert workload.einsums == () and workload.tensor("T").shape == (1, 4, 2, 4, 4)
    assert workload.tensor("s1").kind == "constant"


def test_split_makes_one_view_per_output(tmp_path: Path) -> None:
    """Split of [6, 4] into 2 + 4 rows gives two views with shapes [2, 4] and [4, 4]."""
    node = helper.make_node("Split", ["X", "sizes"], ["A", "B"], axis=0)
    path = save_onnx(tmp_path, [node], {"X": (6, 4)}, {"A": None, "B": None}, inits={"sizes": np.array([2, 4])})
    workload = load_onnx(path)
    assert [(v.output, workload.tensor(v.output).shape) for v in workload.views] == [("A", (2, 4)), ("B", (4, 4))]


def test_a_reshape_to_a_constant_shape_and_a_fixed_gather_are_views_of_their_data(tmp_path: Path) -> None:
    """Y1 = X W1; Y2 = Reshape(Y1, [4, 8]) (its shape an initializer); Y3 = Gather(Y2, 1) (a constant index);
    Z = Y3 W2. The shape and the index are no data of the views' outputs: Y2 and Y3 alias Y1, which lives from
    its writer to Z's MatMul. With every input a source, Y2 (an activation reading a constant) was a tensor of its
    own, live from the first einsum."""
    from accel_sim.sim.placement import lifetimes  # the placement layer, used here on the imported workload
    path = save_onnx(tmp_path, [helper.make_node("MatMul", ["X", "W1"], ["Y1"]),
                            helper.make_node("Reshape", ["Y1", "shape"], ["Y2"]),
                            helper.make_node("Gather", ["Y2", "row"], ["Y3"], axis=0),
                            helper.make_node("MatMul", ["Y3", "W2"], ["Z"])],
                 {"X": (2, 16)}, {"Z": (4,)},
                 {"W1": rand_array(16, 16), "shape": np.array([4, 8], dtype=np.int64),
                  "row": np.array(1, dtype=np.int64),
                  "W2": rand_array(8, 4)})
    workload = load_onnx(path)
    spans = {life.tensor: (life.start, life.end) for life in lifetimes(workload)}
    assert "Y2" not in spans and "Y3" not in spans
    assert spans["Y1"] == (0, 1)


def test_a_view_of_its_own_lives_from_when_its_sources_exist(tmp_path: Path) -> None:
    """T = Concat(token, Y) with `token` a weight and Y = X W1 written by the second einsum (after a Relu): a
    tensor of its own (its sources are of two storage classes), made when Y is written, not live from the first
    einsum; and Y is read then, not kept to the end."""
    from accel_sim.sim.placement import lifetimes  # the placement layer, used here on the imported workload
    path = save_onnx(tmp_path, [helper.make_node("Relu", ["X"], ["R"]),
                            helper.make_node("MatMul", ["R", "W1"], ["Y"]),
                            helper.make_node("Concat", ["token", "Y"], ["T"], axis=0),
                            helper.make_node("MatMul", ["T", "W2"], ["Z"])],
                 {"X": (3, 8)}, {"Z": (4, 4)},
                 {"W1": rand_array(8, 8), "token": rand_array(1, 8), "W2": rand_array(8, 4)})
    workload = load_onnx(path)
    spans = {life.tensor: (life.start, life.end) for life in lifetimes(workload)}
    assert spans["T"] == (1, 2) and spans["Y"] == (1, 1)


def test_a_past_cache_extended_into_a_graph_output_is_a_kv_cache(tmp_path: Path) -> None:
    """past (a user input) passes a one-input Concat, then a Concat with the step's new row K into the graph
    output `present`: past, the pass-through and present are kind kv_cache (held where `holds: [kv_cache]`);
    the new row and the attention scores stay activations."""
    path = save_onnx(tmp_path, [helper.make_node("MatMul", ["X", "Wk"], ["K"]),
                            helper.make_node("Concat", ["past"], ["past_copy"], axis=0),
                            helper.make_node("Concat", ["past_copy", "K"], ["present"], axis=0),
                            helper.make_node("MatMul", ["present", "q"], ["S"])],
                 {"X": (1, 8), "past": (5, 8)}, {"present": (6, 8), "S": (6, 1)}, {"Wk": rand_array(8, 8),
                                                                                     "q": rand_array(8, 1)})
    kinds = {t.name: t.kind for t in load_onnx(path).tensors}
    assert [kinds[n] for n in ("past", "past_copy", "present", "K", "S")] == [
        "kv_cache", "kv_cache", "kv_cache", "activation", "activation"]
