"""What the merge ops' hls4ml lowerings share (``add``, ``concatenate``; ``MULTI_INPUT``: their
``src`` is the list of the nodes they read): hls4ml merges two tensors at a time, so a merge of
``n`` inputs is built as a chain of ``n - 1`` two-input merges (:func:`merge_steps`) whose
intermediate results have exact types; the last result type is the node's exact type, and
nothing rounds."""

from __future__ import annotations

import dataclasses

from ....errors import EdgebnnError
from ....graph import Node, add_node, concatenate_node
from .common import precision


def check_inputs(node: Node, srcs: list[Node], io_type: str, where: str) -> None:
    """Refuse, in io_stream, a merge that reads only one node (one stream cannot be read twice by
    one layer, and no order of its two-input merges avoids that)."""
    if io_type == "io_stream" and len({s.name for s in srcs}) == 1:
        times = "twice" if len(srcs) == 2 else f"{len(srcs)} times"
        raise EdgebnnError(
            f"{where} reads {srcs[0].name!r} {times}, which hls4ml's io_stream cannot do (a stream is read once); use io_parallel"
        )


def merge_steps(node: Node, srcs: list[Node], io_type: str, taken=frozenset()) -> list[Node]:
    """The two-input merges hls4ml builds for ``node`` (an add or concatenate of ``srcs``), in
    order, each a node reading two nodes; the last is ``node``, the others are its partial
    results, named ``<node>_part<k>`` (with underscores added while the name is in ``taken``).

    The first merge joins two neighbouring inputs, each later one joins the partial result with
    the next input on its left, then with those on its right, so the inputs keep their order
    (concatenate). In io_stream the first pair is the first of two different nodes, so no merge
    reads one stream twice (hls4ml's ``Clone`` copies a node read by several merges). A partial
    add has the exact type of its inputs' sum (``add_node``); a partial concatenation has the
    node's type, which holds every input's values exactly.
    """
    if len(srcs) <= 2:
        return [node]
    first = 0
    if io_type == "io_stream":
        first = next((k for k in range(len(srcs) - 1) if srcs[k].name != srcs[k + 1].name), 0)
    order = [*range(first - 1, -1, -1), *range(first + 2, len(srcs))]
    covered = [first, first + 1]
    inputs = [srcs[first].name, srcs[first + 1].name]
    steps: list[Node] = []
    for k, j in enumerate(order, 1):
        name = f"{node.name}_part{k}"
        while name in taken:
            name += "_"
        part = _partial(node, name, [srcs[i] for i in covered])
        steps.append(dataclasses.replace(part, inputs=inputs, source=node.source))
        covered = [j, *covered] if j < first else [*covered, j]
        inputs = [srcs[j].name, name] if j < first else [name, srcs[j].name]
    return [*steps, dataclasses.replace(node, inputs=inputs)]


def _partial(node: Node, name: str, srcs: list[Node]) -> Node:
    """The merge of ``srcs`` (some of ``node``'s inputs, in order) with its exact type."""
    if node.op == "add":
        return add_node(name, srcs)
    return dataclasses.replace(concatenate_node(name, srcs), type=node.type)


def precisions(node: Node, srcs: list[Node]) -> dict[str, str]:
    """The layer's precisions: the node's exact type as its result."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, srcs: list[Node], backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type (checked for every layer)."""
    return []
