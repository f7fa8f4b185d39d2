"""``avgpool1d``: Keras ``AveragePooling1D`` with "valid" padding on an (L, C) input (and
``GlobalAveragePooling1D`` as a pool over the whole length, followed by a flatten node):
``attrs['pool']`` [p] and ``attrs['strides']`` [s], where the window holds a power of two
``p = 2**k`` of values. As for avgpool2d the output type is the input's with ``k`` more fraction
bits and the codes are the window sums of the input codes, exactly. It validates and executes as
its 2-D twin, the avgpool2d of one row (``_oned``)."""

from __future__ import annotations

import numpy as np

from ..node import Node
from . import avgpool2d
from ._oned import as_2d, from_2d, row
from ._pooling import check_1d
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (L, C) input, then everything avgpool2d checks of its one-row twin."""
    check_1d(node, inputs[0], where)
    avgpool2d.validate(as_2d(node), [row(inputs[0])], where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The sum of each window's codes: the avgpool2d of one row."""
    return avgpool2d.execute(as_2d(node), [row(inputs[0])], [codes[0][:, None]])[:, 0]


def avgpool1d_node(name: str, src: Node, pool: int = 2, strides: int | None = None, source: str = "") -> Node:
    """Average pooling of ``src`` by windows of ``pool`` values (a power of two) at ``strides``
    (default: the pool)."""
    if avgpool2d.window_bits((1, pool)) is None:
        raise ValueError(f"avgpool1d_node needs a window of a power of two of values, got {pool}")
    s = pool if strides is None else strides
    twin = avgpool2d.avgpool2d_node(name, row(src), (1, pool), (1, s), source)
    return from_2d(twin, "avgpool1d", {"pool": [int(pool)], "strides": [int(s)]})


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`avgpool1d_node` builds it from its input (its bounds)."""
    return avgpool1d_node(node.name, inputs[0], node.attrs["pool"][0], node.attrs["strides"][0])


SPEC = OpSpec(
    op="avgpool1d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={"pool": "[p] window size, a power of two", "strides": "[s]"},
)
