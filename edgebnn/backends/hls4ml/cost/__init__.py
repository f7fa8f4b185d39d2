"""hls4ml cost model: resources and latency of each graph op as hls4ml 1.3.0 would build it.

:data:`COSTS` maps each graph op to its cost function, one module per op named after it (each
module's docstring is the description of how that op is costed). Every cost function has the
same signature::

    cost(node, src, rf, ctx, widths, warnings, live) -> LayerEstimate

``node`` the graph node, ``src`` the node it reads (for an op in :data:`MULTI_INPUT`, a merge,
the list of the nodes it reads), ``rf`` its reuse factor (1 for ops without
weights), ``ctx`` the build (:class:`.context._Context`), ``widths`` node name ->
``{"accum"|"result"|"weight": FixedType}`` as the design is built, ``warnings`` a list the
function may append sentences to, ``live`` the mask of the node's outputs some later node reads
(``blocks._live_outputs``). An op ignores what it does not need. To cost a new op, add its
module and one line in :data:`COSTS`.

Ops that get no row are in :data:`FREE` with the reason; ops the model cannot cost are in
:data:`REFUSED` with the reason (the estimator stops on them). Shared pieces are in
:mod:`.blocks`, the constants and timing rules in :mod:`.context`, the softmax row a graph
frozen with ``strip_softmax=True`` gets in :mod:`.softmax`.

Whole design (``edgebnn.estimate``): latency is the sum of the rows along the slowest path from
the input to the output (all rows in a chain: hls4ml chains the layers; a merge waits for its
slowest input, ``blocks._longest_path``), II the largest row's; ``io_stream`` adds a cycle and a
FIFO per node (``blocks._stream``) and a ``clone_<node>`` row where several nodes read one
(hls4ml's Clone, ``blocks._clone``);
past the device's DSP count the other multipliers are rebuilt from LUTs (``blocks._cap_dsp``).
URAM is never used (hls4ml does not place weights there by default). Nothing here imports
hls4ml, TensorFlow or Keras: the model reads only the graph and the board profile.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from . import (
    add,
    affine,
    avgpool1d,
    avgpool2d,
    cast,
    concatenate,
    conv1d,
    conv2d,
    dense,
    depthwise_conv2d,
    flatten,
    maxpool1d,
    maxpool2d,
    pad2d,
    reshape,
    sumpool1d,
    sumpool2d,
    threshold,
    zeropad1d,
)
from .row import LayerEstimate

# graph op -> its cost module
MODULES: dict[str, ModuleType] = {
    "dense": dense,
    "conv2d": conv2d,
    "maxpool2d": maxpool2d,
    "avgpool2d": avgpool2d,
    "flatten": flatten,
    "threshold": threshold,
    "cast": cast,
    "depthwise_conv2d": depthwise_conv2d,
    "affine": affine,
    "conv1d": conv1d,
    "maxpool1d": maxpool1d,
    "avgpool1d": avgpool1d,
    "zeropad1d": zeropad1d,
    "add": add,
    "concatenate": concatenate,
    "sumpool2d": sumpool2d,
    "reshape": reshape,
    "pad2d": pad2d,
    "sumpool1d": sumpool1d,
}
COSTS: dict[str, Callable[..., LayerEstimate]] = {op: module.cost for op, module in MODULES.items()}

# what the whole-design steps ask of an op's cost module (edgebnn.estimate and blocks): the
# values of a node it reads when only some of its own are read (blocks._live_outputs), and
# whether io_stream builds it reading its whole input before writing (blocks._stream)
LIVE_READS: dict[str, Callable] = {op: m.reads_live for op, m in MODULES.items() if hasattr(m, "reads_live")}
STREAMS_WHOLE_VECTOR = frozenset(op for op, m in MODULES.items() if getattr(m, "STREAM_READS_ALL_FIRST", False))
# and which readers make io_stream alias its output stream to its input (no process, no FIFO)
STREAM_ALIAS_READERS: dict[str, tuple[str, ...]] = {
    op: m.STREAM_ALIAS_READERS for op, m in MODULES.items() if hasattr(m, "STREAM_ALIAS_READERS")
}

# graph ops that build no logic and get no row, and why
FREE: dict[str, str] = {
    "input": "the design's input port: no logic (Graph.compute_nodes() leaves it out)",
}

# graph ops the cost model cannot estimate, and why (none at present)
REFUSED: dict[str, str] = {}

KNOWN_OPS = tuple(COSTS)

# ops whose cost function gets the list of the nodes they read as ``src`` (the merges)
MULTI_INPUT = ("add", "concatenate")

# ops with a weight matrix: a reuse factor, accumulator and weight types
WEIGHTED_OPS = ("dense", "conv2d", "depthwise_conv2d", "conv1d")
