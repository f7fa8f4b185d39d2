"""What several lowerings share: the MVAU of a weighted node (dense, or a convolution's sum over
one window), a window generator in front of a unit, and the per-lane body of a map unit."""

from __future__ import annotations

import numpy as np

from ....graph import Node
from ....graph.ops._weighted import feature_bounds
from ..hdl import header
from ._units import Unit, chain, mvau, weight_mode, window


def weighted(node: Node, src: Node, w: np.ndarray, name: str, fold, what: str, then: Node | None = None) -> Unit | None:
    """The MVAU of ``node`` reading beats of ``w.shape[0]`` codes of ``src``'s type (its input
    beat, or a window of it) with the (N, M) weight codes ``w``, folded ``fold`` = (PE, SIMD);
    with ``then`` (the threshold node that is its only reader) the MVAU and the threshold as one
    unit, or None when the threshold cannot move onto the accumulator."""
    w = np.asarray(w, dtype=np.int64)
    n, m = w.shape
    pe, simd = fold
    wt = node.fixed_attr("weight_type")
    prod_exp = src.type.lsb_exp + wt.lsb_exp
    bias, pshift, bshift, sum_exp = None, 0, 0, prod_exp
    if "bias" in node.params:
        bt = node.fixed_attr("bias_type")
        bias = np.asarray(node.params["bias"], dtype=np.int64)
        if bt.lsb_exp >= prod_exp:
            bshift = bt.lsb_exp - prod_exp
        else:  # a bias finer than the products: the sum moves onto its grid, as the emulator sums
            pshift, sum_exp = prod_exp - bt.lsb_exp, bt.lsb_exp
    lo, hi = feature_bounds(node, src, n)
    padding = node.attrs.get("padding")
    zero_pad = padding is not None and any(np.ravel(padding)) and int(node.attrs["pad_code"]) == 0
    # a sign's outputs are never 0, so the XNOR needs no mask of zero inputs
    nonzero = src.op == "threshold" and bool(np.isin(src.params["levels"], (-1, 1)).all()) and not zero_pad
    mode = weight_mode(w, float(lo.min(initial=0)), float(hi.max(initial=0)), nonzero)
    t = src.type
    xmax = max(abs(t.min_code), abs(t.max_code), abs(int(node.attrs.get("pad_code", 0))))
    nf, sf = m // pe, n // simd
    products = {
        "xnor": "XNOR + popcount",
        "pm1": "XNOR + popcount of the nonzero inputs",
        "addsub": "add/subtract tree (binary weights)",
        "tern": "add/subtract/skip (ternary weights)",
        "mul": "multipliers",
    }[mode]
    fused = []
    if then is not None:
        fused = [f"then threshold {then.name!r} per output channel -> {then.type} (the MVAU's values are not kept)"]
    text = header(
        f"{name}: {what}" + ("" if then is None else f", fused with {then.name}"),
        [
            f"y[{m}] = x[{n}] @ w ({node.attrs['weight_type']}){' + bias' if bias is not None else ''} -> {node.type}",
            *fused,
            f"products: {products}",
            f"folding: PE {pe} x SIMD {simd}: {sf} x {nf} = {sf * nf} cycles per input beat",
        ],
    )
    # per output channel, the accumulator's least and greatest value over the inputs' bounds
    wl, wh = w * lo[:, None], w * hi[:, None]
    reach = (np.minimum(wl, wh).sum(axis=0), np.maximum(wl, wh).sum(axis=0))
    return mvau(name, src.type, node.type, w, wt, bias, pshift, bshift, sum_exp, pe, simd, mode, xmax, text, then, reach)


def windowed(
    node: Node,
    src: Node,
    name: str,
    compute,
    kh: int,
    kw: int,
    strides,
    padding,
    pad_code: int,
    what: str,
    then: Node | None = None,
) -> Unit | None:
    """``compute`` (a function of the module name giving the unit that reads windows) behind the
    window generator of an (H, W, C) ``src``: the node's module ``name`` chains the two. With
    ``then`` (a threshold fused into the compute unit) None when ``compute`` gives None."""
    h, w, c = src.shape
    iw = src.type.width
    gen = window(
        f"{name}_window",
        h,
        w,
        c,
        iw,
        kh,
        kw,
        strides,
        padding,
        pad_code,
        header(
            f"{name}_window: {kh}x{kw} windows of the {h}x{w}x{c} input",
            [f"strides {list(strides)}, padding {padding}, pad code {pad_code}"],
        ),
    )
    inner = compute(f"{name}_compute")
    if inner is None:
        return None
    (pt, pb), (pl, pr) = padding
    ho, wo = (h + pt + pb - kh) // strides[0] + 1, (w + pl + pr - kw) // strides[1] + 1
    out = chain(
        name,
        gen,
        inner,
        f"{name}_window",
        f"{name}_compute",
        c * iw,
        kh * kw * c * iw,
        node.shape[-1] * (then or node).type.width,
        header(
            f"{name}: {what}" + ("" if then is None else f", fused with {then.name}"),
            [f"window generator ({gen.cycles}) -> {inner.cycles.split(' per beat')[0]} per window"],
        ),
        tap_bits=0 if then is None else node.shape[-1] * node.type.width,
    )
    out.interval = max(h * w, ho * wo * max(inner.interval, 1)) + 1  # input and windows overlap in the line buffer
    out.cycles = f"about {out.interval} cycles per sample"
    return out


def lane(bus: str, i: int, width: int) -> str:
    """Lane ``i`` of ``bus`` (``width`` bits per code)."""
    return f"{bus}[{i * width + width - 1}:{i * width}]"
