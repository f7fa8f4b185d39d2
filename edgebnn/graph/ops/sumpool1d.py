"""``sumpool1d``: the sum of each "valid" window of an (L, C) input, exactly: ``attrs['pool']`` [p]
and ``attrs['strides']`` [s]. The output type is the input's grid, wide enough for ``p`` times the
per-channel bounds, and the codes are the window sums of the input codes; nothing rounds. It is
the exact part of an ``AveragePooling1D`` / ``GlobalAveragePooling1D`` whose window is not a power
of two (freeze folds the division into the next requantization), and it validates, executes and
is built as its 2-D twin, the sumpool2d of one row (``_oned``)."""

from __future__ import annotations

import numpy as np

from ..node import Node
from . import sumpool2d
from ._oned import as_2d, from_2d, row
from ._pooling import check_1d
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (L, C) input, then everything sumpool2d checks of its one-row twin."""
    check_1d(node, inputs[0], where)
    sumpool2d.validate(as_2d(node), [row(inputs[0])], where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The sum of each window's codes: the sumpool2d of one row."""
    return sumpool2d.execute(as_2d(node), [row(inputs[0])], [codes[0][:, None]])[:, 0]


def sumpool1d_node(name: str, src: Node, pool: int = 3, strides: int | None = None, source: str = "") -> Node:
    """The window sums of ``src`` by windows of ``pool`` values at ``strides`` (default: the pool)."""
    s = pool if strides is None else strides
    twin = sumpool2d.sumpool2d_node(name, row(src), (1, pool), (1, s), source)
    return from_2d(twin, "sumpool1d", {"pool": [int(pool)], "strides": [int(s)]})


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`sumpool1d_node` builds it from its input (its bounds)."""
    return sumpool1d_node(node.name, inputs[0], node.attrs["pool"][0], node.attrs["strides"][0])


SPEC = OpSpec(
    op="sumpool1d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={"pool": "[p] window size", "strides": "[s]"},
)
