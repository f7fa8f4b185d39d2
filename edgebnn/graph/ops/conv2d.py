"""``conv2d``: Keras ``Conv2D`` arithmetic (cross-correlation, channels last) on an (H, W, C)
input: ``params['weight']`` int codes (kh, kw, C, F) on ``attrs['weight_type']``, optional bias as
for dense, ``attrs['strides']`` [sh, sw], ``attrs['padding']`` [[top, bottom], [left, right]]
explicit amounts, ``attrs['pad_code']`` the padding value as a code of the input's type (0: zero
padding; larq's ``pad_values`` otherwise). ``type`` is the exact accumulator."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from ._lattice import weighted
from ._spec import OpSpec
from ._weighted import check_conv_weights, conv_shape, convolve
from .dense import dense_node
from .input import input_node


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (H, W, C) input, weight (kh, kw, C, F), the output shape these padding and strides
    give, a pad code of the input type, and weight and bias codes as for dense."""
    src = inputs[0]
    w = node.params.get("weight")
    if len(src.shape) != 3 or w is None or w.ndim != 4 or w.shape[2] != src.shape[-1] or w.shape[3] != node.shape[-1]:
        raise GraphError(f"{where}: needs an (H, W, C) input and weight (kh, kw, C, F) with C={src.shape[-1]}")
    check_window(node, src, where)


def check_window(node: Node, src: Node, where: str) -> None:
    """The checks of a conv2d node (or of a node seen as one, e.g. a depthwise node's full
    kernel) past its weight's shape: the output shape its padding and strides give, a pad code
    of the input type, and weight and bias codes as for dense."""
    w = node.params["weight"]
    want = conv_shape(src.shape, w.shape[0], w.shape[1], node.attrs["strides"], node.attrs["padding"], w.shape[3])
    if node.shape != want:
        raise GraphError(f"{where}: output shape must be {want} for these padding and strides")
    pad = int(node.attrs["pad_code"])
    if not src.type.min_code <= pad <= src.type.max_code:
        raise GraphError(f"{where}: pad_code {pad} is not a code of the input type {src.type}")
    check_conv_weights(node, src, where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """Cross-correlation as Keras computes it: im2col over (kh, kw, C), then the weighted sum."""
    return convolve(node, inputs[0], codes[0], node.params["weight"])


def conv2d_node(
    name: str,
    src: Node,
    weight,
    weight_type: FixedType,
    strides=(1, 1),
    padding=((0, 0), (0, 0)),
    pad_code: int = 0,
    bias=None,
    bias_type: FixedType | None = None,
    source: str = "",
) -> Node:
    """A conv2d node (see the module docstring) with the narrowest exact accumulator type."""
    weight = np.asarray(weight, dtype=np.int64)
    kh, kw, c, f = weight.shape
    (pt, pb), (pl, pr) = padding
    sh, sw = strides
    lo, hi = src.lo, src.hi
    if pt or pb or pl or pr:  # the padding value enters some windows
        pad_value = float(src.type.from_codes(pad_code))
        lo, hi = np.minimum(lo, pad_value), np.maximum(hi, pad_value)
    window = input_node("window", (kh * kw * c,), src.type)
    window.params.update(lo=np.tile(lo, kh * kw), hi=np.tile(hi, kh * kw))
    flat = dense_node(name, window, weight.reshape(-1, f), weight_type, bias, bias_type, source)
    flat.params["weight"] = weight
    flat.attrs.update(strides=[int(sh), int(sw)], padding=[[int(pt), int(pb)], [int(pl), int(pr)]], pad_code=int(pad_code))
    shape = conv_shape(src.shape, kh, kw, strides, padding, f)
    return Node(name, "conv2d", [src.name], shape, flat.type, flat.params, flat.attrs, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`conv2d_node` builds it from its weights, attrs and input (its bounds)."""
    a, bias = node.attrs, (node.params.get("bias"), node.fixed_attr("bias_type"))
    w, wt = node.params["weight"], node.fixed_attr("weight_type")
    return conv2d_node(node.name, inputs[0], w, wt, a["strides"], a["padding"], a["pad_code"], *bias)


def lattice(node: Node, source, lattice_of) -> tuple[np.ndarray, np.ndarray]:
    """The weighted sum of its input's lattice (and the pad code, where it pads), on the accumulator's codes."""
    src = source(node.inputs[0])
    return weighted(node, src, *lattice_of(src))


def windows(node: Node, src: Node) -> tuple[Node, Node, np.ndarray]:
    """The node, its source and its kernel (a 2-D convolution already)."""
    return node, src, node.params["weight"]


SPEC = OpSpec(
    op="conv2d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    params={"weight": "int codes (kh, kw, C, F) on attrs['weight_type']"},
    attrs={
        "weight_type": "fixed-point type of the weight codes",
        "strides": "[sh, sw]",
        "padding": "explicit padding amounts [[top, bottom], [left, right]]",
        "pad_code": "the padding value as a code of the input's type (0: zero padding)",
    },
    optional_params={"bias": "int codes (F,) on attrs['bias_type'], added to the sum"},
    optional_attrs={"bias_type": "fixed-point type of the bias codes (required with params['bias'])"},
    lattice=lattice,
    windows=windows,
)
