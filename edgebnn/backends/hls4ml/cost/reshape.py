"""Cost of a ``reshape`` node: a view, costed as ``flatten`` (wires in io_parallel; in io_stream
hls4ml's ``Repack`` moves one input packet per cycle)."""

from __future__ import annotations

import dataclasses

import numpy as np

from edgebnn.graph import Node

from . import flatten
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a reshape node: a flatten's."""
    return dataclasses.replace(flatten.cost(node, src, rf, ctx, widths, warnings, live), op="reshape")
