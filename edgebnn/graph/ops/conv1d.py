"""``conv1d``: Keras ``Conv1D`` arithmetic (cross-correlation, channels last) on an (L, C) input:
``params['weight']`` int codes (k, C, F) on ``attrs['weight_type']``, optional bias as for dense,
``attrs['strides']`` [s], ``attrs['padding']`` [left, right] explicit amounts (TensorFlow's
"same" split, or Keras's "causal" left padding), ``attrs['pad_code']`` the padding value as a
code of the input's type (0: zero padding; larq's ``pad_values`` otherwise). ``type`` is the
exact accumulator.

The node has no dilation: freeze writes a ``dilation_rate`` d as the kernel of ``(k - 1) * d + 1``
taps with zero weights between the taps Keras reads, which is the same sum exactly (hls4ml's
Conv1D has no dilation either). It validates and executes as its 2-D twin, the conv2d of one
row (``_oned.as_2d``)."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from . import conv2d
from ._oned import as_2d, from_2d, row
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (L, C) input and weight (k, C, F), then everything conv2d checks of its one-row twin."""
    src = inputs[0]
    w = node.params.get("weight")
    if len(src.shape) != 2 or w is None or w.ndim != 3 or w.shape[1] != src.shape[-1] or w.shape[2] != node.shape[-1]:
        raise GraphError(f"{where}: needs an (L, C) input and weight (k, C, F) with C={src.shape[-1]}")
    if len(node.attrs["padding"]) != 2 or len(node.attrs["strides"]) != 1:
        raise GraphError(f"{where}: padding must be [left, right] and strides [s]")
    conv2d.validate(as_2d(node), [row(src)], where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The conv2d of one row: ``(N, L, C)`` codes seen as ``(N, 1, L, C)``."""
    return conv2d.execute(as_2d(node), [row(inputs[0])], [codes[0][:, None]])[:, 0]


def conv1d_node(
    name: str,
    src: Node,
    weight,
    weight_type: FixedType,
    strides=(1,),
    padding=(0, 0),
    pad_code: int = 0,
    bias=None,
    bias_type: FixedType | None = None,
    source: str = "",
) -> Node:
    """A conv1d node (see the module docstring) with the narrowest exact accumulator type."""
    weight = np.asarray(weight, dtype=np.int64)
    (s,) = strides
    left, right = padding
    twin = conv2d.conv2d_node(
        name, row(src), weight[None], weight_type, (1, s), ((0, 0), (left, right)), pad_code, bias, bias_type, source
    )
    attrs = {"strides": [int(s)], "padding": [int(left), int(right)]}
    return from_2d(twin, "conv1d", attrs, {**twin.params, "weight": weight})


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`conv1d_node` builds it from its weights, attrs and input (its bounds)."""
    a, bias = node.attrs, (node.params.get("bias"), node.fixed_attr("bias_type"))
    w, wt = node.params["weight"], node.fixed_attr("weight_type")
    return conv1d_node(node.name, inputs[0], w, wt, a["strides"], a["padding"], a["pad_code"], *bias)


def windows(node: Node, src: Node) -> tuple[Node, Node, np.ndarray]:
    """Its 2-D twin, the source as one row, and the twin's kernel: it runs as that twin."""
    twin = as_2d(node)
    return twin, row(src), twin.params["weight"]


SPEC = OpSpec(
    op="conv1d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    params={"weight": "int codes (k, C, F) on attrs['weight_type']"},
    attrs={
        "weight_type": "fixed-point type of the weight codes",
        "strides": "[s]",
        "padding": "explicit padding amounts [left, right]",
        "pad_code": "the padding value as a code of the input's type (0: zero padding)",
    },
    optional_params={"bias": "int codes (F,) on attrs['bias_type'], added to the sum"},
    optional_attrs={"bias_type": "fixed-point type of the bias codes (required with params['bias'])"},
    windows=windows,
)
