"""``conv2d``: the window generator feeding the MVAU (one window of kh*kw*C codes per output
position, in the order of the weight rows), folded PE x SIMD."""

from __future__ import annotations

from ._lower import weighted, windowed

FOLDED = True


def check(node, srcs, where) -> None:
    """Every conv2d node is built."""


def fold_sizes(node, srcs) -> tuple[int, int]:
    kh, kw, c, f = node.params["weight"].shape
    return f, kh * kw * c


def kernel(node):
    """The (kh, kw, C, F) kernel the MVAU multiplies."""
    return node.params["weight"]


def unit(node, srcs, name, fold, weight=None, src=None, what="conv2d", then=None):
    src = srcs[0] if src is None else src
    weight = kernel(node) if weight is None else weight
    kh, kw, c, f = weight.shape
    a = node.attrs
    return windowed(
        node,
        src,
        name,
        lambda inner: weighted(node, src, weight.reshape(kh * kw * c, f), inner, fold, f"{what} window sum", then),
        kh,
        kw,
        a["strides"],
        a["padding"],
        int(a["pad_code"]),
        f"{what} {kh}x{kw}, {c} -> {f} channels, strides {list(a['strides'])}",
        then,
    )
