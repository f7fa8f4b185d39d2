"""``reshape`` in hls4ml: a ``Reshape`` layer to the node's shape (what its Keras converter emits).

io_parallel: a no-op on the flat array (dropped when it is the last layer). io_stream: hls4ml
replaces it with a ``Repack`` (``nnet::repack_stream``), which copies the stream's values in
order from packets of the input's last axis into packets of the node's last axis: exact in
channels-last row-major order when one packet size divides the other, which export requires; a
reshape of a flattened tensor is refused there (hls4ml's io_stream flatten is a view of the pixel
packets that only a dense layer reads)."""

from __future__ import annotations

from ....errors import EdgebnnError
from ....graph import Node
from .common import own_config_names, precision
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def _repack(name: str) -> str:
    return f"repack_{name}"


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows in io_parallel (see :func:`hls_layers`)."""
    return "Reshape"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """In io_stream refuse a reshape to one axis (a flatten node's job), the reshape of a flatten
    and packets that do not divide each other."""
    if io_type != "io_stream":
        return
    if len(node.shape) == 1:
        raise EdgebnnError(f"{where} reshapes to one axis, which hls4ml's io_stream runs as a flatten; use a flatten node")
    if src.op == "flatten":
        raise EdgebnnError(
            f"{where} reshapes the flattened tensor of {src.name!r}, which hls4ml's io_stream holds as pixel packets "
            "only a dense layer reads; reshape the (H, W, C) tensor itself or use io_parallel"
        )
    a, b = int(src.shape[-1]), int(node.shape[-1])
    if a % b and b % a:
        raise EdgebnnError(
            f"{where} repacks the stream from packets of {a} values into packets of {b}, which hls4ml's io_stream "
            "reshape cannot do unless one divides the other; choose a last axis that divides or is a multiple of "
            f"{a}, or use io_parallel"
        )


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): a reshape to the node's shape."""
    return dict(class_name="Reshape", target_shape=[int(d) for d in node.shape])


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: its result is the node's type (its input's)."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type (checked for every layer)."""
    return []


def hls_layers(node: Node, src: Node, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The node's hls4ml layers after the flows: io_stream repacks; io_parallel keeps the
    reshape, or drops it as the last layer."""
    if io_type == "io_stream":
        return [(_repack(name), "Repack", node)]
    return [] if last else [(name, hls_class(node), node)]


def config_names(name: str, last: bool) -> list[str]:
    """The names the node's configuration is given under: also that of the ``Repack`` io_stream
    replaces it with."""
    return own_config_names(name, last) + [_repack(name)]
