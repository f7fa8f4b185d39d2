"""hls4ml cost model: resources and latency of each graph op as hls4ml 1.3.0 would build it.

:data:`COSTS` maps each graph op to its cost function, one module per op (:mod:`.dense`,
:mod:`.conv2d`, :mod:`.maxpool2d`, :mod:`.avgpool2d`, :mod:`.flatten`, :mod:`.threshold`, :mod:`.cast`; each
module's docstring is the description of how that op is costed). Every cost function has the
same signature::

    cost(node, src, rf, ctx, widths, warnings, live) -> LayerEstimate

``node`` the graph node, ``src`` the node it reads, ``rf`` its reuse factor (1 for ops without
weights), ``ctx`` the build (:class:`.context._Context`), ``widths`` node name ->
``{"accum"|"result"|"weight": FixedType}`` as the design is built, ``warnings`` a list the
function may append sentences to, ``live`` the mask of the node's outputs some later node reads
(``blocks._live_outputs``). An op ignores what it does not need. To cost a new op, add its
module and one line in :data:`COSTS`.

Ops that get no row are in :data:`FREE` with the reason; ops the model cannot cost are in
:data:`REFUSED` with the reason (the estimator stops on them). Shared pieces are in
:mod:`.blocks`, the constants and timing rules in :mod:`.context`, the softmax row a graph
frozen with ``strip_softmax=True`` gets in :mod:`.softmax`.

Whole design (``edgebnn.estimate``): latency is the sum of the rows (hls4ml chains the layers),
II the largest row's; ``io_stream`` adds a cycle and a FIFO per node (``blocks._stream``);
past the device's DSP count the other multipliers are rebuilt from LUTs (``blocks._cap_dsp``).
URAM is never used (hls4ml does not place weights there by default). Nothing here imports
hls4ml, TensorFlow or Keras: the model reads only the graph and the board profile.
"""

from __future__ import annotations

from collections.abc import Callable

from . import avgpool2d, cast, conv2d, dense, flatten, maxpool2d, pad2d, reshape, sumpool2d, threshold
from .row import LayerEstimate

COSTS: dict[str, Callable[..., LayerEstimate]] = {
    "dense": dense.cost,
    "conv2d": conv2d.cost,
    "maxpool2d": maxpool2d.cost,
    "avgpool2d": avgpool2d.cost,
    "flatten": flatten.cost,
    "threshold": threshold.cost,
    "cast": cast.cost,
    "sumpool2d": sumpool2d.cost,
    "reshape": reshape.cost,
    "pad2d": pad2d.cost,
}

# graph ops that build no logic and get no row, and why
FREE: dict[str, str] = {
    "input": "the design's input port: no logic (Graph.compute_nodes() leaves it out)",
}

# graph ops the cost model cannot estimate, and why (none at present)
REFUSED: dict[str, str] = {}

KNOWN_OPS = tuple(COSTS)

# ops with a weight matrix: a reuse factor, accumulator and weight types
WEIGHTED_OPS = ("dense", "conv2d")
