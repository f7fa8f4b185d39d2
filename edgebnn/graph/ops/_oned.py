"""What the 1-D ops share with their 2-D twins: an (L, C) tensor is the (1, L, C) tensor of one row.

:func:`as_2d` turns a conv1d, maxpool1d, avgpool1d, sumpool1d or zeropad1d node and its source into that
2-D twin (conv2d, maxpool2d, avgpool2d, sumpool2d, pad2d with a height of 1), so the 1-D ops validate,
execute, are costed and exported by the 2-D code, with nothing duplicated."""

from __future__ import annotations

import dataclasses

from ..node import Node

# 1-D op -> its 2-D twin
TWINS = {"conv1d": "conv2d", "maxpool1d": "maxpool2d", "avgpool1d": "avgpool2d", "sumpool1d": "sumpool2d", "zeropad1d": "pad2d"}


def row(node: Node) -> Node:
    """``node`` with a height of 1 in front of its shape (any (L, C) tensor as (1, L, C))."""
    return dataclasses.replace(node, shape=(1, *node.shape))


def as_2d(node: Node) -> Node:
    """The 2-D twin of a 1-D node: shape (1, Lo, C), a kernel (1, k, C, F) with strides [1, s]
    and padding [[0, 0], [left, right]], a pool [1, p] with strides [1, s], or a padding
    [[0, 0], [left, right]]."""
    attrs = dict(node.attrs)
    params = dict(node.params)
    if node.op == "conv1d":
        params["weight"] = node.params["weight"][None]
        attrs.update(strides=[1, *node.attrs["strides"]], padding=[[0, 0], list(node.attrs["padding"])])
    elif node.op == "zeropad1d":
        attrs.update(padding=[[0, 0], list(node.attrs["padding"])])
    else:
        attrs.update(pool=[1, *node.attrs["pool"]], strides=[1, *node.attrs["strides"]])
    return dataclasses.replace(node, op=TWINS[node.op], shape=(1, *node.shape), params=params, attrs=attrs)


def from_2d(node2: Node, op: str, attrs: dict, params: dict | None = None) -> Node:
    """The 1-D node of ``op`` whose 2-D twin is ``node2``: its shape without the height, the 1-D
    ``attrs`` (and ``params``, default the twin's) instead of the twin's."""
    return dataclasses.replace(
        node2, op=op, shape=tuple(node2.shape[1:]), params=params or node2.params, attrs={**node2.attrs, **attrs}
    )
