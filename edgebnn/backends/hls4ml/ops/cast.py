"""``cast`` in hls4ml: an ``Activation`` layer (``relu`` or ``linear``) whose result type is the
node's type: the C++ assignment is the ap_fixed conversion with that type's modes. A linear cast
to the type its source already has (a quantizer repeated as the next layer's input quantizer) is
the identity, which hls4ml's flows remove (``EliminateLinearActivation``); the model after the
flows then has no layer for it."""

from __future__ import annotations

import numpy as np

from ....errors import EdgebnnError
from ....fixed import cast_asserts
from ....graph import Node
from .common import own_config_names as config_names
from .common import own_hls_layer, precision
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

# elementwise: commutes with a flatten, and streams one packet out per packet in
ELEMENTWISE = True


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return "Activation"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Refuse a conversion that fails an ap_fixed assertion (aborting the C-simulation)."""
    if cast_asserts(src.type, node.type):
        raise EdgebnnError(
            f"{where}: converting {src.type} to {node.type} drops more bits than the source holds, "
            "which aborts the C-simulation (an ap_fixed assertion); use TRN rounding or a wider input type"
        )


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): the activation and its size."""
    return dict(class_name="Activation", activation="relu" if node.attrs["relu"] else "linear", n_in=int(np.prod(node.shape)))


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: its result is the node's type."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type and, in io_stream, the packing (both checked by ``model``)."""
    return []


_own_layer = own_hls_layer(hls_class)


def hls_layers(node: Node, src: Node | None, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The node's hls4ml layer after the flows: none for an identity (see the module docstring)."""
    if not node.attrs["relu"] and src is not None and precision(src.type) == precision(node.type):
        return []
    return _own_layer(node, src, name, io_type, last)
