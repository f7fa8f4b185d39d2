"""Resources and latency of a deployment graph on an FPGA board, before any synthesis.

``estimate(graph, board)`` reads only the graph (integer weights, fixed-point types, per-channel
bounds) and a board profile (:mod:`edgebnn.boards`), checks the options, and costs each node
with the hls4ml cost table (:data:`edgebnn.backends.hls4ml.cost.COSTS`, one module per op, each
describing its formulas and sources) as hls4ml 1.3.0's Vivado/Vitis templates would build it.
It returns an :class:`Estimate` (:mod:`.report`): per-node rows and totals of LUT, FF, DSP,
BRAM18 and URAM, latency in clock cycles (the sum of the rows; in a graph with branches, of
the rows on its slowest path, ``Estimate.latency_path``) and the initiation interval (the
largest row's). :func:`fit` (:mod:`.fit`) searches the valid reuse factors for the
smallest that fits.

This is an analytic model: its constants (:data:`CONSTANTS`, nowhere else) are round figures
from the sources named in the cost modules, not fitted to synthesis results. Trust the
direction of a change (a larger reuse factor gives fewer DSPs and a longer latency, a binary
layer uses no DSP, wider weights cost more, zero weights cost nothing) more than any absolute
number. When the design needs more DSPs than the device has, Vivado caps DSP inference at the
device's count and builds the rest from LUTs; the estimate then warns, keeps the demand in
``dsp_needed`` and does not fit.
"""

from __future__ import annotations

from edgebnn.backends.hls4ml.cost import KNOWN_OPS
from edgebnn.backends.hls4ml.cost.blocks import valid_reuse_factors
from edgebnn.backends.hls4ml.cost.context import CONSTANTS, EstimateError, ModelConstants
from edgebnn.backends.target import IO_TYPES, STRATEGIES, Target, hls_tool_family

from .core import estimate
from .fit import Fit, fit
from .report import Estimate, LayerEstimate

__all__ = [
    "CONSTANTS",
    "IO_TYPES",
    "KNOWN_OPS",
    "STRATEGIES",
    "Estimate",
    "EstimateError",
    "Fit",
    "LayerEstimate",
    "ModelConstants",
    "Target",
    "estimate",
    "fit",
    "hls_tool_family",
    "valid_reuse_factors",
]
