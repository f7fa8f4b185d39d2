"""Exact NumPy execution of a deployment graph.

Tensors travel as integer codes on their node's fixed-point type. Each node runs through its
op's ``execute`` (``edgebnn/graph/ops/<op>.py``), looked up in the op table; products and sums
are computed on codes, exactly: a weighted node's kernel (``graph/ops/_weighted.py``) is chosen
once per node from the graph's bounds (float32 or float64 BLAS while every partial sum is exact
in it, several output columns packed into one where they stay exact; bit-packed popcount for a
narrow binary layer, or a wide one that cannot pack; integers otherwise).

The batch runs in chunks of samples, each through the whole graph, so the memory a call takes
is bounded (about :data:`CHUNK_BYTES` of temporaries, plus the outputs) whatever the batch size.
"""

from __future__ import annotations

import math

import numpy as np

from .graph import Graph
from .graph.ops import REGISTRY
from .graph.ops._weighted import kernel

# working memory per chunk of samples (codes of every node, im2col windows), in bytes
CHUNK_BYTES = 64 << 20


def sample_bytes(graph: Graph) -> int:
    """An upper estimate of the bytes one sample takes through ``graph``: every node's codes (as
    int64), plus the largest convolution's im2col windows in the dtype its kernel reads, their
    padded copy and the masks a popcount kernel packs from them."""
    total = 8 * math.prod(graph.input.shape)
    windows = 0
    for node in graph.compute_nodes():
        total += 8 * math.prod(node.shape)
        windowed = REGISTRY[node.op].windows
        if windowed is not None:
            node, src, w = windowed(node, graph[node.inputs[0]])
            k = kernel(node, src, w.reshape(-1, w.shape[-1]))
            taps = math.prod(w.shape[:-1])  # kh*kw*C (k*C) per output position
            windows = max(windows, (2 * k.dtype.itemsize + 2) * taps * math.prod(node.shape[:-1]))
    return total + windows


def emulate(graph: Graph, x, return_all: bool = False, batch_size: int | None = None):
    """Run ``graph`` on float inputs ``x`` (batch first); returns float64 outputs.

    With ``return_all=True`` returns a dict of every node's output values, by node name.
    ``batch_size`` samples run through the graph at a time (default: as many as fit
    :data:`CHUNK_BYTES`); the result does not depend on it.
    """
    x = np.asarray(x)
    inp = graph.input
    if x.shape[1:] != tuple(inp.shape):
        raise ValueError(f"input has shape {x.shape[1:]} per sample but graph {graph.name!r} expects {tuple(inp.shape)}")
    n = len(x)
    if batch_size is None:
        batch_size = max(1, CHUNK_BYTES // sample_bytes(graph))
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
    step = int(batch_size)
    nodes = graph.compute_nodes()
    # after node i runs, the codes no later node reads are dropped
    last = {name: i for i, node in enumerate(nodes) for name in node.inputs}
    srcs = [[graph[s] for s in node.inputs] for node in nodes]
    out_node = graph.output
    parts: dict[str, list[np.ndarray]] = {nd.name: [] for nd in graph.nodes} if return_all else {}
    result = None if return_all else np.empty((n, *out_node.shape), dtype=np.float64)
    for start in range(0, max(n, 1), step):
        chunk = np.asarray(x[start : start + step], dtype=np.float64)
        # the input node's one value is the float batch itself; every other node's are its sources' codes
        codes: dict[str, np.ndarray] = {inp.name: REGISTRY[inp.op].execute(inp, [], [chunk])}
        del chunk
        for i, node in enumerate(nodes):
            codes[node.name] = REGISTRY[node.op].execute(node, srcs[i], [codes[s] for s in node.inputs])
            if not return_all:
                for s in set(node.inputs):
                    if last[s] == i:
                        del codes[s]
        if return_all:
            for nd in graph.nodes:
                parts[nd.name].append(nd.type.from_codes(codes[nd.name]))
        else:
            result[start : start + step] = out_node.type.from_codes(codes[out_node.name])
    if return_all:
        return {name: np.concatenate(p) if len(p) > 1 else p[0] for name, p in parts.items()}
    return result
