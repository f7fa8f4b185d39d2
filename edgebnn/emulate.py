"""Exact NumPy execution of a deployment graph.

Tensors travel as integer codes on their node's fixed-point type. Each node runs through its
op's ``execute`` (``edgebnn/graph/ops/<op>.py``), looked up in the op table; products and sums
are computed on codes, exactly (float64 through BLAS while provably exact, int64 otherwise).
"""

from __future__ import annotations

import numpy as np

from .graph import Graph
from .graph.ops import REGISTRY


def emulate(graph: Graph, x, return_all: bool = False):
    """Run ``graph`` on float inputs ``x`` (batch first); returns float64 outputs.

    With ``return_all=True`` returns a dict of every node's output values, by node name.
    """
    x = np.asarray(x, dtype=np.float64)
    inp = graph.input
    if x.shape[1:] != tuple(inp.shape):
        raise ValueError(f"input has shape {x.shape[1:]} per sample but graph {graph.name!r} expects {tuple(inp.shape)}")
    # the input node's one value is the float batch itself; every other node's are its sources' codes
    codes: dict[str, np.ndarray] = {inp.name: REGISTRY[inp.op].execute(inp, [], [x])}
    for node in graph.compute_nodes():
        srcs = [graph[s] for s in node.inputs]
        codes[node.name] = REGISTRY[node.op].execute(node, srcs, [codes[s] for s in node.inputs])
    if return_all:
        return {n.name: n.type.from_codes(codes[n.name]) for n in graph.nodes}
    return graph.output.type.from_codes(codes[graph.output.name])
