"""``depthwise_conv2d``: Keras ``DepthwiseConv2D`` arithmetic (channels last) on an (H, W, C) input:
``params['weight']`` int codes (kh, kw, C, M) on ``attrs['weight_type']`` (M the depth
multiplier), output channel ``c * M + m`` the cross-correlation of input channel ``c`` with
``weight[:, :, c, m]``, as Keras orders it; ``attrs['strides']``, ``attrs['padding']`` and
``attrs['pad_code']`` and the optional bias (C*M,) as for conv2d. ``type`` is the exact
accumulator.

A depthwise convolution is the conv2d whose (kh, kw, C, C*M) kernel is zero outside each
channel's block (:func:`full_kernel`); the kernel, the bounds and the accumulator type come from
that one fact, and the kernel executes through the same im2col and exact weighted sum. A dilated
depthwise convolution holds its dilated kernel (zeros between the taps, see
``_weighted.dilated``), as conv2d does: the node's weights are what the hardware multiplies.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from ._spec import OpSpec
from ._weighted import convolve
from .conv2d import check_window, conv2d_node


def full_kernel(weight) -> np.ndarray:
    """The (kh, kw, C, C*M) conv2d kernel of the depthwise (kh, kw, C, M) ``weight``: column
    ``c * M + m`` holds ``weight[:, :, c, m]`` in row block ``c`` and zeros elsewhere."""
    weight = np.asarray(weight)
    kh, kw, c, m = weight.shape
    full = np.zeros((kh, kw, c, c, m), dtype=weight.dtype)
    full[:, :, np.arange(c), np.arange(c)] = weight
    return full.reshape(kh, kw, c, c * m)


def as_conv2d(node: Node) -> Node:
    """The same node as the conv2d of :func:`full_kernel` (what export builds and the cost model
    costs); bounds, type, strides, padding and bias are unchanged."""
    return dataclasses.replace(node, op="conv2d", params={**node.params, "weight": full_kernel(node.params["weight"])})


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (H, W, C) input, weight (kh, kw, C, M), the (Ho, Wo, C*M) output these padding and
    strides give, a pad code of the input type, and weight and bias codes as for conv2d."""
    src = inputs[0]
    w = node.params.get("weight")
    if len(src.shape) != 3 or w is None or w.ndim != 4 or w.shape[2] != src.shape[-1]:
        raise GraphError(f"{where}: needs an (H, W, C) input and weight (kh, kw, C, M) with C={src.shape[-1]}")
    check_window(as_conv2d(node), src, where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The conv2d of the full kernel: im2col over (kh, kw, C), then the exact weighted sum."""
    return convolve(node, inputs[0], codes[0], full_kernel(node.params["weight"]))


def describe(node: Node) -> str:
    return f" depth multiplier {node.params['weight'].shape[3]}, weight {node.attrs['weight_type']}"


def depthwise_conv2d_node(
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
    """A depthwise_conv2d node (see the module docstring) with the narrowest exact accumulator type."""
    weight = np.asarray(weight, dtype=np.int64)
    conv = conv2d_node(name, src, full_kernel(weight), weight_type, strides, padding, pad_code, bias, bias_type, source)
    return dataclasses.replace(conv, op="depthwise_conv2d", params={**conv.params, "weight": weight})


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`depthwise_conv2d_node` builds it from its weights, attrs and input."""
    a, bias = node.attrs, (node.params.get("bias"), node.fixed_attr("bias_type"))
    w, wt = node.params["weight"], node.fixed_attr("weight_type")
    return depthwise_conv2d_node(node.name, inputs[0], w, wt, a["strides"], a["padding"], a["pad_code"], *bias)


def windows(node: Node, src: Node) -> tuple[Node, Node, np.ndarray]:
    """The node, its source and the conv2d kernel of the full ``(kh, kw, C, C*M)`` form."""
    return node, src, full_kernel(node.params["weight"])


SPEC = OpSpec(
    op="depthwise_conv2d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    describe=describe,
    params={"weight": "int codes (kh, kw, C, M) on attrs['weight_type'], M the depth multiplier"},
    attrs={
        "weight_type": "fixed-point type of the weight codes",
        "strides": "[sh, sw]",
        "padding": "explicit padding amounts [[top, bottom], [left, right]]",
        "pad_code": "the padding value as a code of the input's type (0: zero padding)",
    },
    optional_params={"bias": "int codes (C*M,) on attrs['bias_type'], added to the sum"},
    optional_attrs={"bias_type": "fixed-point type of the bias codes (required with params['bias'])"},
    windows=windows,
)
