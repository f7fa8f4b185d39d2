"""``dense``: the MVAU over each input beat (the last axis), folded PE x SIMD."""

from __future__ import annotations

from ._lower import weighted

FOLDED = True


def check(node, srcs, where) -> None:
    """Every dense node is built."""


def fold_sizes(node, srcs) -> tuple[int, int]:
    """(output channels, inputs per output): what PE and SIMD must divide."""
    w = node.params["weight"]
    return w.shape[1], w.shape[0]


def unit(node, srcs, name, fold, then=None):
    return weighted(
        node, srcs[0], node.params["weight"], name, fold, f"dense {node.params['weight'].shape[0]} -> {node.shape[-1]}", then
    )
