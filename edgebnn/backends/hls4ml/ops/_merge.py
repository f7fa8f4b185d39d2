"""What the merge ops' hls4ml lowerings share (``add``, ``concatenate``; ``MULTI_INPUT``: their
``src`` is the list of the nodes they read): hls4ml merges two tensors at a time, and the
result type is the node's exact type, which nothing rounds."""

from __future__ import annotations

from ....errors import EdgebnnError
from ....graph import Node
from .common import precision


def check_inputs(node: Node, srcs: list[Node], io_type: str, where: str) -> None:
    """Refuse a merge of more than two inputs (hls4ml's Merge and Concatenate take two), and in
    io_stream one that reads the same node twice (one stream cannot be read twice)."""
    if len(srcs) != 2:
        raise EdgebnnError(
            f"{where} merges {len(srcs)} inputs, but hls4ml's merge layers take two; "
            "merge two at a time in the model (nested Add or Concatenate layers)"
        )
    if io_type == "io_stream" and srcs[0].name == srcs[1].name:
        raise EdgebnnError(
            f"{where} reads {srcs[0].name!r} twice, which hls4ml's io_stream cannot do (a stream is read once); use io_parallel"
        )


def precisions(node: Node, srcs: list[Node]) -> dict[str, str]:
    """The layer's precisions: the node's exact type as its result."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, srcs: list[Node], backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type (checked for every layer)."""
    return []
