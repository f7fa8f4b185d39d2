"""``maxpool1d``: Keras ``MaxPooling1D`` with "valid" padding on an (L, C) input (and
``GlobalMaxPooling1D`` as a pool over the whole length, followed by a flatten node):
``attrs['pool']`` [p] and ``attrs['strides']`` [s]; the type and per-channel bounds are the
input's. It validates and executes as its 2-D twin, the maxpool2d of one row (``_oned``)."""

from __future__ import annotations

import numpy as np

from ..node import Node
from . import maxpool2d
from ._oned import as_2d, from_2d, row
from ._pooling import check_1d
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (L, C) input, then everything maxpool2d checks of its one-row twin."""
    check_1d(node, inputs[0], where)
    maxpool2d.validate(as_2d(node), [row(inputs[0])], where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The maximum code of each window: the maxpool2d of one row."""
    return maxpool2d.execute(as_2d(node), [row(inputs[0])], [codes[0][:, None]])[:, 0]


def maxpool1d_node(name: str, src: Node, pool: int = 2, strides: int | None = None, source: str = "") -> Node:
    """Max pooling of ``src`` by windows of ``pool`` values at ``strides`` (default: the pool)."""
    s = pool if strides is None else strides
    twin = maxpool2d.maxpool2d_node(name, row(src), (1, pool), (1, s), source)
    return from_2d(twin, "maxpool1d", {"pool": [int(pool)], "strides": [int(s)]})


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`maxpool1d_node` builds it (after a pad, as :func:`maxpool2d.rebuild`)."""
    built = maxpool1d_node(node.name, inputs[0], node.attrs["pool"][0], node.attrs["strides"][0])
    return maxpool2d._within_padding(built, inputs[0], nodes)


SPEC = OpSpec(
    op="maxpool1d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={"pool": "[p] window size", "strides": "[s]"},
)
