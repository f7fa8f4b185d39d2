"""``dense`` in hls4ml: a ``Dense`` layer with weights and bias given as values (code * lsb) in
their exact types; accumulator and result both take the node's type, which is exact (wide
enough, on the product grid, WRAP), so nothing rounds."""

from __future__ import annotations

from ....errors import EdgebnnError
from ....graph import Node
from .common import bias_values, check_accumulator, own_hls_layer, verify_weighted, weight_values, weighted_precisions
from .common import own_config_names as config_names
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return "Dense"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Refuse a dense layer on a non-flat input and a type that is not an exact accumulator."""
    if len(src.shape) != 1:
        raise EdgebnnError(
            f"{where} reads a tensor of shape {src.shape}; export supports dense layers on flat inputs only, "
            "flatten before the dense layer"
        )
    check_accumulator(node, src, where)


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): sizes, weights and bias as values."""
    w = node.params["weight"]
    return dict(
        class_name="Dense",
        n_in=int(w.shape[0]),
        n_out=int(w.shape[1]),
        data_format="channels_last",
        weight_data=weight_values(node),
        bias_data=bias_values(node),
    )


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: weight and bias types, the node's type as accumulator and result."""
    return weighted_precisions(node)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: types, weights, bias and reuse factor (see ``common.verify_weighted``)."""
    return verify_weighted(layer, node, precisions(node, src), backend, reuse_factor)


hls_layers = own_hls_layer(hls_class)
