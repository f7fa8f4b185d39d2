"""Each graph op's RTL lowering, one module per op, looked up in :data:`LOWERINGS`.

Every module has the same interface (``srcs`` is the list of the nodes the node reads, ``name``
the Verilog identifier of the node, ``where`` names the node in error messages):

``FOLDED``                         True for an op whose unit is folded PE x SIMD (an MVAU)
``check(node, srcs, where)``       raise an ``EdgebnnError`` (one sentence) for what the unit cannot
                                   compute bit for bit
``unit(node, srcs, name, fold)``   the node's hardware: a :class:`~._units.Unit` whose last module is
                                   called ``name`` and has the stream ports of ``hdl`` (None for the
                                   input, which is the top's ``s_axis`` stream); ``fold`` is the
                                   (PE, SIMD) of a ``FOLDED`` op, else None
``fold_sizes(node, srcs)``         (``FOLDED`` ops) the (output channels, inputs per output) that PE and
                                   SIMD must divide
``unit(..., then=node)``           (``FOLDED`` ops) the unit with the threshold ``node`` that is its only
                                   reader built in (see ``fused_reader``), or None when it cannot be

Shared parts: ``_units`` (the MVAU, the window generator, map/join, regrouping), ``_lower`` (what
the weighted ops share), ``_pooling``, ``_merge``. Nothing here imports TensorFlow, Keras or hls4ml.
"""

from __future__ import annotations

from types import ModuleType

from ....errors import EdgebnnError
from ....graph import Node
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
    input,
    maxpool1d,
    maxpool2d,
    pad2d,
    reshape,
    sumpool1d,
    sumpool2d,
    threshold,
    zeropad1d,
)

# graph op -> its lowering module (the order is the one export's refusal lists)
LOWERINGS: dict[str, ModuleType] = {
    "input": input,
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

# what every module in LOWERINGS defines
INTERFACE = ("FOLDED", "check", "unit")


def fused_reader(graph, node: Node) -> Node | None:
    """The threshold node built into the unit of the folded (MVAU) ``node``: its only reader,
    when that is a threshold (FINN's MVTU: only the threshold's codes are kept and sent). The
    unit's ``unit(..., then=...)`` may still decline it (None) when the threshold cannot move onto
    the accumulator (a wrapping conversion between them)."""
    if node.op not in LOWERINGS or not LOWERINGS[node.op].FOLDED or node.name == graph.output.name:
        return None
    readers = graph.readers(node)
    return readers[0] if len(readers) == 1 and readers[0].op == "threshold" else None


def lowering(node: Node) -> ModuleType:
    """The lowering module of ``node``'s op; an op without one is refused with one sentence."""
    try:
        return LOWERINGS[node.op]
    except (KeyError, TypeError):
        raise EdgebnnError(
            f"graph node {node.name!r} ({node.op}) cannot be exported to RTL; "
            f"the RTL backend supports {', '.join(LOWERINGS)} nodes"
        ) from None
