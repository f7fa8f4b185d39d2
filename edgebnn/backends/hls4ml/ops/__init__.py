"""Each graph op's hls4ml lowering, one module per op, looked up in :data:`LOWERINGS`.

Every module has the same interface (``src`` is the node's input in the chain hls4ml gets,
None for the input, and for a module with ``MULTI_INPUT = True`` (a merge) the list of the
nodes it reads: :func:`source`; ``where`` names the node in error messages):

``ELEMENTWISE``                                  True for an op that commutes with a flatten
                                                 (io_stream runs it before a flatten it follows)
``hls_class(node)``                              hls4ml's class of the node's layer after the flows
``check(node, src, io_type, where)``             raise an ``EdgebnnError`` (one sentence) for what
                                                 hls4ml cannot reproduce bit for bit
``layer(node, src)``                             the layer-list entry's fields besides name and inputs
``precisions(node, src)``                        the layer's precision strings by type name
``reuse_factor(node, backend, strategy, rf)``    the reuse factor the layer is configured with
``config_names(name, last)``                     the layer names its configuration is given under
``hls_layers(node, src, name, io_type, last)``   the hls4ml layers after the flows, as
                                                 (name, class, node whose type the result has)
``verify(layer, node, src, backend, rf)``        check the hls4ml layer after the flows (raise
                                                 RuntimeError); returns messages for the user
``weight_matrix(node)``                          (optional) the ``n_in x n_out`` matrix hls4ml
                                                 builds for an op computed as another (a sum
                                                 pool, a depthwise convolution); the reuse
                                                 factors valid there follow from it

Shared parts live in ``common``. Nothing here imports hls4ml.
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
INTERFACE = ("ELEMENTWISE", "hls_class", "check", "layer", "precisions", "reuse_factor", "config_names", "hls_layers", "verify")


def source(module: ModuleType, nodes, node: Node):
    """What ``module``'s functions get as ``src`` for ``node`` of ``nodes`` (a graph or a chain):
    the list of the nodes it reads for a ``MULTI_INPUT`` module, else the one it reads (None for
    the input)."""
    srcs = nodes.sources(node)
    if getattr(module, "MULTI_INPUT", False):
        return srcs
    return srcs[0] if srcs else None


def lowering(node: Node) -> ModuleType:
    """The lowering module of ``node``'s op; an op without one is refused with one sentence."""
    try:
        return LOWERINGS[node.op]
    except (KeyError, TypeError):
        raise EdgebnnError(
            f"graph node {node.name!r} ({node.op}) cannot be exported to hls4ml; export supports {', '.join(LOWERINGS)} nodes"
        ) from None
