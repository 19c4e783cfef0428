"""Zero-compute data movement and shape ops: one View per output, every output tensor still typed."""
from __future__ import annotations

import math

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from accel_sim.errors import ConfigError
from accel_sim.io.onnx.graph import MAX_CONST_ELEMENTS, Graph, Handler


def _view(g: Graph, node: NodeProto, index: int) -> None:
    # a gather's indices pick its rows, but constant ones are structure (a fixed q/k/v split of a stacked tensor),
    # which leaves its output a view of its data alone
    fixed_pick = node.op_type in _GATHERS and len(node.input) > 1 and g.const(node.input[1]) is not None
    g.view(node, index, data_inputs=1 if node.op_type in _FIRST_INPUT_IS_DATA or fixed_pick else None)
    if node.op_type in _SAME_ELEMENTS and node.input and node.input[0] in g.tensors and node.output[0] in g.tensors:
        before, after = g.tensors[node.input[0]].shape, g.tensors[node.output[0]].shape
        if math.prod(before) != math.prod(after):
            # onnx.checker passes a Reshape to a constant shape of another size; its result would be costed
            raise ConfigError(f"{node.op_type} node '{g.node_name(node, index)}' turns '{node.input[0]}' of shape "
                              f"{list(before)} ({math.prod(before):,} elements) into '{node.output[0]}' of shape "
                              f"{list(after)} ({math.prod(after):,} elements)", file=g.path,
                              key_path=f"graph.node[{index}]",
                              fix=f"make the output {math.prod(before):,} elements, as many as the input (a "
                                  "Reshape target whose sizes multiply to that; one entry may be -1, which ONNX "
                                  "infers), or re-export the model")


def _constant(g: Graph, node: NodeProto, index: int) -> None:
    """A View with no sources; small values are kept because later nodes may read them as operands."""
    attr = node.attribute[0] if node.attribute else None
    if attr is not None and attr.name in ("value", "value_int", "value_ints", "value_float", "value_floats"):
        value = helper.get_attribute_value(attr)
        if isinstance(value, TensorProto):
            if math.prod(value.dims) <= MAX_CONST_ELEMENTS and value.data_location != TensorProto.EXTERNAL:
                g.consts[node.output[0]] = numpy_helper.to_array(value)
        else:
            g.consts[node.output[0]] = np.asarray(value)
    g.view(node, index)


# Zero-compute data movement and shape ops (ONNX operator spec, opsets 1-23).
_VIEW_OPS = (
    "Reshape", "Transpose", "Flatten", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
    "ScatterND", "ScatterElements", "Scatter", "Squeeze", "Unsqueeze", "Cast", "CastLike", "Identity", "Dropout",
    "Expand", "Tile", "Pad", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "Shape", "Size", "Constant",
    "ConstantOfShape", "Range", "NonZero", "OneHot", "Trilu", "EyeLike", "ReverseSequence", "Compress", "Unique",
    "MaxUnpool", "CenterCropPad", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
    "Bernoulli", "Multinomial", "Optional", "OptionalGetElement", "OptionalHasElement", "Col2Im", "GridSample",
    "AffineGrid", "ImageDecoder", "BlackmanWindow", "HannWindow", "HammingWindow",
)
# Views that only rearrange or retype their first input: the first output has exactly its elements.
_SAME_ELEMENTS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "DepthToSpace", "SpaceToDepth",
                  "Identity", "Cast", "CastLike"}
# Views whose output holds elements of their first input only: the later inputs are parameters (a target shape,
# axes, slice bounds, pads, scales, repeats, a dropout ratio, a type template), not data the output keeps alive.
# A view with every input a source (a gather's indices pick its rows; a concat's inputs are all data) is an alias
# only where all of them share a storage class (sim/placement): a Reshape to a constant shape was a tensor of its
# own, live from the first einsum (ViT-B/16's 62 reshapes kept 35 MiB in tpu_v1's 24 MiB Unified Buffer).
_FIRST_INPUT_IS_DATA = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Expand", "Tile", "Pad",
                        "Resize", "Upsample", "Split", "Cast", "CastLike", "Identity", "Dropout", "CenterCropPad",
                        "Trilu", "DepthToSpace", "SpaceToDepth"}
_GATHERS = {"Gather", "GatherElements", "GatherND"}
HANDLERS: dict[str, Handler] = {**{op: _view for op in _VIEW_OPS}, "Constant": _constant}
