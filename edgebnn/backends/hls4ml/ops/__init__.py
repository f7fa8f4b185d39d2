"""Each graph op's hls4ml lowering, one module per op, looked up in :data:`LOWERINGS`.

Every module has the same interface (``src`` is the node's input in the chain hls4ml gets,
None for the input; ``where`` names the node in error messages):

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

Shared parts live in ``common``. Nothing here imports hls4ml.
"""

from __future__ import annotations

from types import ModuleType

from ....errors import EdgebnnError
from ....graph import Node
from . import avgpool2d, cast, conv2d, dense, flatten, input, maxpool2d, pad2d, reshape, sumpool2d, threshold

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
    "sumpool2d": sumpool2d,
    "reshape": reshape,
    "pad2d": pad2d,
}

# what every module in LOWERINGS defines
INTERFACE = ("ELEMENTWISE", "hls_class", "check", "layer", "precisions", "reuse_factor", "config_names", "hls_layers", "verify")


def lowering(node: Node) -> ModuleType:
    """The lowering module of ``node``'s op; an op without one is refused with one sentence."""
    try:
        return LOWERINGS[node.op]
    except (KeyError, TypeError):
        raise EdgebnnError(
            f"graph node {node.name!r} ({node.op}) cannot be exported to hls4ml; export supports {', '.join(LOWERINGS)} nodes"
        ) from None
