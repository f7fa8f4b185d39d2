"""Cost of a ``concatenate`` node: hls4ml's ``Concatenate`` of two inputs along the last axis; a
concatenation of ``k`` inputs is the chain of ``k - 1`` of them the export builds
(``blocks._merge_chain``).

Wires: each value is assigned to the output type, which holds it exactly (0 LUTs). io_parallel
inlines it (0 cycles, no register). io_stream reads one packet of each input per pixel and
writes one joined packet: ``H*W`` cycles per merge, II ``H*W``, no logic beyond its FIFO
(``blocks._stream``).
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from .blocks import _merge_chain, _positions
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: list[Node], rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a concatenate node: wires in io_parallel; io_stream joins one pixel per cycle in each merge."""

    def merge(step: Node, wo: int) -> LayerEstimate:
        latency = _positions(step) if ctx.io_type == "io_stream" else 0
        detail = {"elements": int(np.prod(step.shape))}
        return LayerEstimate(step.name, "concatenate", 0, 0, 0, 0, 0, latency, max(1, latency), detail)

    return _merge_chain(node, src, ctx, widths, merge)


def reads_live(reader: Node, node: Node, live: np.ndarray, graph, strategy: str, rf: int) -> np.ndarray:
    """The channels of ``node`` that the concatenate writes live (its slice of the output)."""
    offsets = np.cumsum([0] + [graph[i].shape[-1] for i in reader.inputs])
    need = np.zeros(int(node.shape[-1]), dtype=bool)
    for i, name in enumerate(reader.inputs):
        if name == node.name:
            need |= live[offsets[i] : offsets[i + 1]]
    return need
