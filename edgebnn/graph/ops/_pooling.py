"""What the pooling ops share: the output shape of "valid" windows, the windows themselves, and the
check of a 1-D pool's input and attrs."""

from __future__ import annotations

import numpy as np

from ..node import GraphError


def pooled_shape(shape, pool, strides) -> tuple[int, int, int] | None:
    """The (Ho, Wo, C) that ``pool`` windows at ``strides`` ("valid" padding) leave of an
    (H, W, C) ``shape``; None for any other rank."""
    if len(shape) != 3:
        return None
    (ph, pw), (sh, sw) = pool, strides
    return ((shape[0] - ph) // sh + 1, (shape[1] - pw) // sw + 1, shape[2])


def pool_attrs(pool, strides) -> dict:
    """The attrs of a pooling node: ``pool`` [ph, pw] and ``strides`` [sh, sw] (default: the pool)."""
    ph, pw = pool
    sh, sw = strides or pool
    return {"pool": [int(ph), int(pw)], "strides": [int(sh), int(sw)]}


def windows(node, x: np.ndarray) -> np.ndarray:
    """The node's windows of the batch ``x`` (N, H, W, C): a view (N, Ho, Wo, C, ph, pw)."""
    (ph, pw), (sh, sw) = node.attrs["pool"], node.attrs["strides"]
    win = np.lib.stride_tricks.sliding_window_view(x, (ph, pw), axis=(1, 2))[:, ::sh, ::sw]
    return win[:, : node.shape[0], : node.shape[1]]


def check_1d(node, src, where: str) -> None:
    """A 1-D pool (maxpool1d, avgpool1d) reads an (L, C) input with a pool [p] and strides [s]."""
    if len(src.shape) != 2 or len(node.attrs["pool"]) != 1 or len(node.attrs["strides"]) != 1:
        raise GraphError(f"{where}: pools an (L, C) input with pool [p] and strides [s]")
