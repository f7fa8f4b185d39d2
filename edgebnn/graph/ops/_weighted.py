"""What dense, conv2d and depthwise_conv2d share: the check of weight and bias codes, the exact
weighted sum on integer codes, im2col (a convolution as a weighted sum over windows), the output
shape of a convolution and the kernel of a dilated one."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..node import GraphError, Node

# float64 sums of integers are exact while every partial sum stays below this
EXACT_FLOAT64 = 2.0**53


def check_weights(node: Node, src: Node, where: str) -> None:
    """``params['weight']`` (n_in, n_out) codes on ``attrs['weight_type']`` for an input of
    ``src.shape[-1]`` features, and the optional bias (n_out,) with its ``attrs['bias_type']``."""
    w = node.params.get("weight")
    if w is None or w.ndim != 2 or w.shape[0] != src.shape[-1] or w.shape[1] != node.shape[-1]:
        raise GraphError(f"{where}: weight must have shape ({src.shape[-1]}, {node.shape[-1]})")
    wt = node.fixed_attr("weight_type")
    if wt is None or not (w.min(initial=0) >= wt.min_code and w.max(initial=0) <= wt.max_code):
        raise GraphError(f"{where}: weight codes do not fit weight_type {wt}")
    if "bias" in node.params:
        bt = node.fixed_attr("bias_type")
        b = node.params["bias"]
        if bt is None or b.shape != (node.shape[-1],):
            raise GraphError(f"{where}: bias needs shape ({node.shape[-1]},) and a bias_type")


def check_conv_weights(node: Node, src: Node, where: str) -> None:
    """:func:`check_weights` for a conv2d node: its (kh, kw, C, F) weight seen as the
    (kh*kw*C, F) weight of a dense node over one window."""
    w = node.params["weight"]
    check_weights(
        dataclasses.replace(node, shape=(node.shape[-1],), params={**node.params, "weight": w.reshape(-1, w.shape[3])}),
        dataclasses.replace(src, shape=(w.shape[0] * w.shape[1] * w.shape[2],)),
        where,
    )


def im2col(x: np.ndarray, kh: int, kw: int, strides, padding, pad_code: int) -> np.ndarray:
    """The (N, Ho, Wo, kh*kw*C) windows of the (N, H, W, C) codes ``x`` in Keras's cross-correlation
    order (kh, kw, C), after padding with ``pad_code`` by ``padding`` [[top, bottom], [left, right]]."""
    (pt, pb), (pl, pr) = padding
    sh, sw = strides
    c = x.shape[-1]
    x = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=int(pad_code))
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::sh, ::sw]  # N,Ho,Wo,C,kh,kw
    return win.transpose(0, 1, 2, 4, 5, 3).reshape(*win.shape[:3], kh * kw * c)


def conv_shape(src_shape, kh: int, kw: int, strides, padding, channels: int) -> tuple[int, int, int]:
    """The (Ho, Wo, ``channels``) output of a ``kh`` x ``kw`` kernel over an (H, W, C) input with
    explicit ``padding`` [[top, bottom], [left, right]] and ``strides``."""
    (pt, pb), (pl, pr) = padding
    sh, sw = strides
    return ((src_shape[0] + pt + pb - kh) // sh + 1, (src_shape[1] + pl + pr - kw) // sw + 1, channels)


def convolve(node: Node, src: Node, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cross-correlation as Keras computes it of the (N, H, W, C) codes ``x`` with the (kh, kw, C, F)
    kernel ``w`` under the node's strides, padding and pad code: im2col, then the weighted sum."""
    kh, kw, c, f = w.shape
    cols = im2col(x, kh, kw, node.attrs["strides"], node.attrs["padding"], node.attrs["pad_code"])
    return weighted_sum(node, src, cols, w.reshape(kh * kw * c, f))


def dilated(weight, rate) -> np.ndarray:
    """The kernel of a convolution with ``dilation_rate`` ``rate`` (one rate per spatial axis:
    (rh, rw), or (r,) for 1-D) as an undilated one: the taps of the (k1, ..., C, F) ``weight``
    ``rate`` apart, zeros between them, each spatial size k becoming (k - 1) * r + 1. The same
    sums exactly (a zero weight adds 0)."""
    weight = np.asarray(weight)
    rate = [int(r) for r in rate]
    spatial = weight.shape[: len(rate)]
    out = np.zeros((*((k - 1) * r + 1 for k, r in zip(spatial, rate)), *weight.shape[len(rate) :]), dtype=weight.dtype)
    out[tuple(slice(None, None, r) for r in rate)] = weight
    return out


def weighted_sum(node: Node, src: Node, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w (+ bias)`` on integer codes, exactly, cast to the node's accumulator type.

    Computed in float64 through BLAS when every partial sum stays below 2**53 (then float64 is
    exact), otherwise in int64."""
    wt = node.fixed_attr("weight_type")
    # codes of the product live on the grid lsb(src) * lsb(weight)
    prod_lsb_exp = src.type.lsb_exp + wt.lsb_exp
    bound = float(np.abs(x).max(initial=0)) * float(np.abs(w).sum(axis=0).max(initial=0))
    if bound < EXACT_FLOAT64:
        acc = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.int64)
    else:
        acc = x.astype(np.int64) @ w.astype(np.int64)
    if "bias" in node.params:
        bt = node.fixed_attr("bias_type")
        shift = bt.lsb_exp - prod_lsb_exp
        bias = node.params["bias"].astype(np.int64)
        if shift >= 0:
            acc = acc + (bias << shift)
        else:  # bias finer than the products: move the sum onto the bias grid
            acc = (acc << -shift) + bias
            prod_lsb_exp = bt.lsb_exp
    return node.type.cast_codes(acc, prod_lsb_exp)
