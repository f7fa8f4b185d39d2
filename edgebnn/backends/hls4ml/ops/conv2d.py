"""``conv2d`` in hls4ml: a ``Conv2D`` layer (channels last, weights in Keras layout (kh, kw, C, F))
with types as for dense and the graph's explicit padding as pad_top/bottom/left/right.

hls4ml pads with zeros only, so a node with a non-zero ``pad_code`` is refused (freeze emits a
pad2d node and a conv2d node without padding for such a layer). In io_stream
hls4ml moves the padding into a ``ZeroPadding2D`` layer of the input's type. hls4ml runs a 1x1
kernel as a ``PointwiseConv2D`` (same weights and types), rebuilt from the configuration: its
reuse factor is the one configured, which export has checked is valid (``reuse``).
"""

from __future__ import annotations

from ....errors import EdgebnnError
from ....graph import Node
from .common import bias_values, check_accumulator, verify_weighted, weight_values, weighted_precisions
from .common import own_config_names as config_names
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def _pointwise(node: Node) -> bool:
    return tuple(node.params["weight"].shape[:2]) == (1, 1)


def _padded(node: Node) -> bool:
    return any(node.attrs["padding"][0] + node.attrs["padding"][1])


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows: ``PointwiseConv2D`` for a 1x1 kernel."""
    if _pointwise(node):
        # hls4ml's optimize_pointwise_conv: the same layer and weights, 1x1 kernels in C++
        return "PointwiseConv2D"
    return "Conv2D"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Refuse a non-zero padding value, an inexact accumulator, and in io_stream a one-row
    kernel with a row stride."""
    if _padded(node) and int(node.attrs["pad_code"]) != 0:
        raise EdgebnnError(
            f"{where} pads with the value {src.type.from_codes(node.attrs['pad_code'])} but hls4ml pads "
            "convolutions with zeros only; train it with pad_values=0 or padding='valid'"
        )
    check_accumulator(node, src, where)
    kh, kw = (int(d) for d in node.params["weight"].shape[:2])
    if io_type == "io_stream" and kh == 1 and kw > 1 and int(node.attrs["strides"][0]) > 1:
        raise EdgebnnError(
            f"{where} has a one-row kernel ({kh}, {kw}) with a row stride of {node.attrs['strides'][0]}, "
            "which hls4ml's io_stream convolution ignores (it convolves every row and leaves data in "
            "its output stream); use io_parallel, a row stride of 1 or a kernel of two or more rows"
        )


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): shapes, strides, padding, weights and bias as values."""
    w = node.params["weight"]
    kh, kw, c, f = (int(d) for d in w.shape)
    (pt, pb), (pl, pr) = node.attrs["padding"]
    sh, sw = node.attrs["strides"]
    return dict(
        class_name="Conv2D",
        data_format="channels_last",
        in_height=int(src.shape[0]),
        in_width=int(src.shape[1]),
        n_chan=c,
        out_height=int(node.shape[0]),
        out_width=int(node.shape[1]),
        n_filt=f,
        filt_height=kh,
        filt_width=kw,
        stride_height=int(sh),
        stride_width=int(sw),
        pad_top=int(pt),
        pad_bottom=int(pb),
        pad_left=int(pl),
        pad_right=int(pr),
        weight_data=weight_values(node),
        bias_data=bias_values(node),
    )


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: weight and bias types, the node's type as accumulator and result."""
    return weighted_precisions(node)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: types, weights, bias and reuse factor (see ``common.verify_weighted``)."""
    return verify_weighted(layer, node, precisions(node, src), backend, reuse_factor)


def hls_layers(node: Node, src: Node, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The node's hls4ml layers after the flows, as (name, class, node whose type the result has):
    in io_stream a padded convolution is preceded by a ``ZeroPadding2D`` layer."""
    layers = []
    if io_type == "io_stream" and _padded(node):
        # io_stream pads in a ZeroPadding2D layer of the input's type: zeros are exact in any type
        layers.append((f"zp2d_{name}", "ZeroPadding2D", src))
    layers.append((name, hls_class(node), node))
    return layers
