"""``affine`` in hls4ml: its ``BatchNormalization`` layer (``nnet::normalize``, array and stream)
given the scale and offset themselves (``scale_data``, ``bias_data``) in their exact types, so
hls4ml derives nothing from BatchNorm statistics: ``data * scale`` in full precision plus the
offset, assigned to the node's exact type, rounds and overflows nothing. Channels last
(``n_filt`` = C). In io_stream hls4ml indexes the scale by the position in a packet, which after
a flatten is no longer the channel: an affine node reading a flatten is refused there."""

from __future__ import annotations

import numpy as np

from ....errors import EdgebnnError
from ....graph import Node
from .common import expect_precision, own_hls_layer, precision
from .common import own_config_names as config_names
from .common import same_reuse_factor as reuse_factor

__all__ = [
    "ELEMENTWISE",
    "check",
    "config_names",
    "hls_class",
    "hls_layers",
    "is_identity",
    "layer",
    "precisions",
    "reuse_factor",
    "verify",
]

ELEMENTWISE = False  # per channel, but hls4ml's stream version indexes by packet position


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return "BatchNormalization"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Refuse an affine node after a flatten in io_stream (see the module docstring)."""
    if io_type == "io_stream" and src.op == "flatten":
        raise EdgebnnError(
            f"{where} scales a flattened tensor, which hls4ml's io_stream BatchNormalization indexes by "
            "pixel position; use io_parallel or apply it before the flatten"
        )


def _values(node: Node) -> dict[str, np.ndarray]:
    """The scale and offset values, by hls4ml's weight name."""
    return {
        "scale": node.fixed_attr("scale_type").from_codes(node.params["scale"]),
        "bias": node.fixed_attr("offset_type").from_codes(node.params["offset"]),
    }


def is_identity(node: Node, src: Node) -> bool:
    """The node changes nothing: every scale 1, every offset 0, its input's type (a float bias of
    zeros; hls4ml fuses such a layer into a dense or convolution before it, so export leaves it out)."""
    values = _values(node)
    return node.type == src.type and bool(np.all(values["scale"] == 1) and np.all(values["bias"] == 0))


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): sizes, scale and offset as values."""
    values = _values(node)
    return dict(
        class_name="BatchNormalization",
        n_in=int(np.prod(node.shape)),
        n_filt=int(node.shape[-1]),
        scale_data=values["scale"],
        bias_data=values["bias"],
    )


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: scale and offset in their types, the result in the node's."""
    return {
        "scale": precision(node.fixed_attr("scale_type")),
        "bias": precision(node.fixed_attr("offset_type")),
        "result": precision(node.type),
    }


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: the scale's and offset's types and values."""
    prec = precisions(node, src)
    for key, data in _values(node).items():
        var = layer.get_weights(key)
        expect_precision(backend, layer, key, var.type.precision, prec[key])
        if not np.array_equal(np.asarray(var.data).reshape(-1), data):
            raise RuntimeError(f"hls4ml changed the {key} of layer {layer.name!r}; please report this to edgebnn")
    return []


hls_layers = own_hls_layer(hls_class)
