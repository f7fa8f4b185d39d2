"""What the merge ops (``add``, ``concatenate``) share: their inputs' codes moved onto one finer
grid exactly, and the finest grid of their inputs."""

from __future__ import annotations

import numpy as np

from ..node import Node


def finest_lsb(inputs: list[Node]) -> int:
    """The finest grid exponent among ``inputs``' types (every input's values lie on it)."""
    return min(n.type.lsb_exp for n in inputs)


def on_grid_codes(inputs: list[Node], codes: list[np.ndarray], lsb_exp: int, width: int) -> list[np.ndarray]:
    """Each input's codes on the grid ``2**lsb_exp`` (a left shift, exact), in int64 while a
    result of ``width`` bits and every shifted input fit 62 bits, else as Python ints."""
    shifts = [n.type.lsb_exp - lsb_exp for n in inputs]
    small = width <= 62 and all(n.type.width + s <= 62 for n, s in zip(inputs, shifts))
    if small:
        return [np.left_shift(np.asarray(c).astype(np.int64), s) for c, s in zip(codes, shifts)]
    return [np.asarray(c).astype(object) * (1 << s) for c, s in zip(codes, shifts)]


def result_codes(codes: np.ndarray, node: Node) -> np.ndarray:
    """``codes`` (exact, within the node's type) in the node's code dtype."""
    dtype = node.type.code_dtype
    return codes if dtype.kind == "O" else codes.astype(dtype)
