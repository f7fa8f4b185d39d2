"""Cost of a ``depthwise_conv2d`` node as export builds it: hls4ml's 2-D convolution of the full
(kh, kw, C, C*M) kernel (``graph.ops.depthwise_conv2d.full_kernel``), costed by :mod:`.conv2d`.

The zeros outside each channel's block are zero products (free with constant weights, the
Latency strategy, as every zero weight in :mod:`.dense`; stored and multiplied under the
Resource strategy, where the reuse factor divides the full ``kh*kw*C x C*M`` unit), so the row
is what hls4ml builds for that kernel; the adder trees sum only the ``kh*kw`` non-zero terms of
each output.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from edgebnn.graph import Node
from edgebnn.graph.ops.depthwise_conv2d import as_conv2d

from . import conv2d
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The conv2d row of the full kernel, under the node's op."""
    row = conv2d.cost(as_conv2d(node), src, rf, ctx, widths, warnings, live)
    w = node.params["weight"]
    return dataclasses.replace(row, op="depthwise_conv2d", detail={**row.detail, "depth_multiplier": int(w.shape[3])})
