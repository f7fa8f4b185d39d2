"""What the 1-D ops share with their 2-D twins: an (L, C) tensor is the (1, L, C) tensor of one row.

:func:`as_2d` turns a conv1d, maxpool1d, avgpool1d, sumpool1d or zeropad1d node and its source into that
2-D twin (conv2d, maxpool2d, avgpool2d, sumpool2d, pad2d with a height of 1), so the 1-D ops validate,
execute, are costed and exported by the 2-D code, with nothing duplicated."""

from __future__ import annotations

import dataclasses

from ..node import Node


def _kernel(attrs: dict, params: dict) -> None:
    params["weight"] = params["weight"][None]
    attrs.update(strides=[1, *attrs["strides"]], padding=[[0, 0], list(attrs["padding"])])


def _padding(attrs: dict, params: dict) -> None:
    attrs.update(padding=[[0, 0], list(attrs["padding"])])


def _pool(attrs: dict, params: dict) -> None:
    attrs.update(pool=[1, *attrs["pool"]], strides=[1, *attrs["strides"]])


# 1-D op -> (its 2-D twin, what changes in the node's attrs and params, in place)
TWINS = {
    "conv1d": ("conv2d", _kernel),
    "maxpool1d": ("maxpool2d", _pool),
    "avgpool1d": ("avgpool2d", _pool),
    "sumpool1d": ("sumpool2d", _pool),
    "zeropad1d": ("pad2d", _padding),
}


def row(node: Node) -> Node:
    """``node`` with a height of 1 in front of its shape (any (L, C) tensor as (1, L, C))."""
    return dataclasses.replace(node, shape=(1, *node.shape))


def as_2d(node: Node) -> Node:
    """The 2-D twin of a 1-D node: shape (1, Lo, C), a kernel (1, k, C, F) with strides [1, s]
    and padding [[0, 0], [left, right]], a pool [1, p] with strides [1, s], or a padding
    [[0, 0], [left, right]]."""
    attrs = dict(node.attrs)
    params = dict(node.params)
    twin, lift = TWINS[node.op]
    lift(attrs, params)
    return dataclasses.replace(node, op=twin, shape=(1, *node.shape), params=params, attrs=attrs)


def from_2d(node2: Node, op: str, attrs: dict, params: dict | None = None) -> Node:
    """The 1-D node of ``op`` whose 2-D twin is ``node2``: its shape without the height, the 1-D
    ``attrs`` (and ``params``, default the twin's) instead of the twin's."""
    return dataclasses.replace(
        node2, op=op, shape=tuple(node2.shape[1:]), params=params or node2.params, attrs={**node2.attrs, **attrs}
    )
