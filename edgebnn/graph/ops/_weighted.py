"""What dense, conv2d and depthwise_conv2d share: the check of weight and bias codes, the exact
weighted sum on integer codes, im2col (a convolution as a weighted sum over windows), the output
shape of a convolution and the kernel of a dilated one."""

from __future__ import annotations

import collections
import dataclasses
import math
import weakref

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


def conv_shape(src_shape, kh: int, kw: int, strides, padding, channels: int) -> tuple[int, int, int]:
    """The (Ho, Wo, ``channels``) output of a ``kh`` x ``kw`` kernel over an (H, W, C) input with
    explicit ``padding`` [[top, bottom], [left, right]] and ``strides``."""
    (pt, pb), (pl, pr) = padding
    sh, sw = strides
    return ((src_shape[0] + pt + pb - kh) // sh + 1, (src_shape[1] + pl + pr - kw) // sw + 1, channels)


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


# ---------------------------------------------------------------------------- the exact sum
# float32 and float64 sums of integers are exact while every partial sum stays below these
EXACT_FLOAT32 = 2.0**24
# int64 sums: every partial sum, and the bias moved onto the sum's grid, stay below this
EXACT_INT64 = 2.0**62
# words per block of the popcount path: its (rows, n_out) temporaries stay in cache (256 KB) and
# each NumPy call does enough work to hide its own cost when n_out is small
_POPCOUNT_BLOCK = 1 << 15
# the kernels built, by their weight's memory (see kernel()), least recently used first
_KERNELS: collections.OrderedDict[tuple, Kernel] = collections.OrderedDict()
_MAX_KERNELS = 1024
_INT64 = np.dtype(np.int64)
# a binary layer narrower than this sums by popcount: a GEMM with few columns is slow per column
_POPCOUNT_NARROW = 64
# the time of a GEMM column per float path, relative to float32 (measured here: float64 about 2x)
_FLOAT_COST = {"float32": 1.0, "float64": 2.0}


@dataclasses.dataclass(frozen=True, eq=False)
class Kernel:
    """How one weighted node sums, decided once per node from its source's bounds, its weight
    codes and its fan-in (:func:`kernel`).

    ``path`` is ``"popcount"`` (inputs in {-1, 0, +1}, weights +-1: XOR and popcount of bit-packed
    codes), ``"float32"`` or ``"float64"`` (BLAS, while every partial sum, bias included, is
    an integer below 2**24 or 2**53 in units of the sum's grid, so nothing rounds), ``"int64"``
    (below 2**62) or ``"object"`` (Python ints). ``weight`` is the (n_in, n_out) weight in the
    path's dtype, already shifted onto the sum's grid (a bias finer than the products), or for
    popcount the (words, n_out) uint64 bits of ``weight > 0``; ``bias`` the bias codes on the
    sum's grid in the path's dtype (None without a bias); ``shift`` the left shift of a popcount
    or integer sum onto that grid; ``lsb_exp`` the sum's grid; ``cast`` False when the sum
    provably lies in the node's type on that grid, so the cast (its overflow pass) is skipped;
    ``dtype`` the dtype the path reads input codes in (im2col builds the windows in it).
    A float path may sum ``pack`` output columns in one BLAS column, column ``g * h + j`` (h =
    ceil(n_out / pack)) weighted by ``2**(g * pack_exp)``: while every such packed partial sum
    stays exact, one GEMM of ``h`` columns does the work of ``n_out`` (see :func:`_packing`)."""

    path: str
    weight: np.ndarray
    bias: np.ndarray | None
    shift: int
    lsb_exp: int
    cast: bool
    dtype: np.dtype
    n_in: int
    work: np.dtype = _INT64  # the popcount path's integer sums (int32 while they fit)
    out: np.dtype = _INT64  # the codes it returns: compact_dtype(node.type) when not cast
    nonzero: bool = False  # the popcount path's inputs are never 0 (a sign's output): no zero mask
    pack: int = 1  # the float paths: output columns summed together per BLAS column (see _packed)
    pack_exp: int = 0  # ... each 2**pack_exp times the one before
    n_out: int = 0
    key: tuple = ()  # weak references to the arrays it was built from and the values (see kernel())


def compact_dtype(t) -> np.dtype:
    """The narrowest of int8, int16, int32 and int64 holding every code of the FixedType ``t``
    (int64 past 64 bits too: such codes are cast, never stored compact). Codes travel between
    nodes in it, so the passes over them move an eighth of the bytes of int64 for binary ones."""
    for dt in (np.int8, np.int16, np.int32):
        info = np.iinfo(dt)
        if info.min <= t.min_code and t.max_code <= info.max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def _root(a):
    """The array that owns ``a``'s memory (a view's base), so a view built per call keys like its base."""
    while isinstance(a, np.ndarray) and a.base is not None and isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _same(key: tuple, arrays: tuple, values: tuple) -> bool:
    """A kernel's key names these arrays (by identity, through weak references) and values."""
    refs, vals = key
    return vals == values and all((r is None and a is None) or (r is not None and r() is a) for r, a in zip(refs, arrays))


def feature_bounds(node: Node, src: Node, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    """Per input feature of the weighted sum (an im2col window's ``kh*kw*C`` for a convolution,
    feature ``j`` reading channel ``j % C``), the bounds of the source's codes as float64 integers:
    the graph's interval bounds on the source's grid, the pad code joined where padding enters."""
    c = src.shape[-1]
    lo = np.broadcast_to(np.ldexp(np.asarray(src.lo, dtype=np.float64), -src.type.lsb_exp), (c,))
    hi = np.broadcast_to(np.ldexp(np.asarray(src.hi, dtype=np.float64), -src.type.lsb_exp), (c,))
    padding = node.attrs.get("padding")
    if padding is not None and any(np.ravel(padding)):
        pad = float(node.attrs["pad_code"])
        lo, hi = np.minimum(lo, pad), np.maximum(hi, pad)
    reps = n_in // c
    return np.tile(lo, reps), np.tile(hi, reps)


def kernel(node: Node, src: Node, w: np.ndarray) -> Kernel:
    """The :class:`Kernel` of ``node`` (dense, or a convolution seen as the dense sum ``w`` (n_in,
    n_out) over its windows) reading ``src``, built once and kept (by its weight array, so a
    conv1d's per-call 2-D twin finds it too) while the arrays and types it was built from are
    the node's, and dropped with the weight array. Weight, bias and bound arrays are taken as
    immutable once emulated."""
    weight = node.params["weight"]
    root = _root(weight)
    # the weight's memory: its root array and where in it the weight lies (slices of one array differ)
    where = (id(root), weight.__array_interface__["data"][0], weight.strides, weight.shape)
    arrays = (root, node.params.get("bias"), src.params["lo"], src.params["hi"], src.params.get("levels"))
    values = (src.op, src.shape, str(src.type), str(node.type), node.attrs.get("weight_type"), node.attrs.get("bias_type"))
    values += (repr(node.attrs.get("padding")), node.attrs.get("pad_code"), w.shape, where)
    cached = _KERNELS.get(where)
    if cached is not None and _same(cached.key, arrays, values):
        _KERNELS.move_to_end(where)
        return cached
    key = (tuple(None if a is None else weakref.ref(a) for a in arrays), values)
    built = dataclasses.replace(build_kernel(node, src, w, *feature_bounds(node, src, w.shape[0])), key=key)
    if cached is None:  # the entry goes when the weight's root array does (no live array shares its id)
        weakref.finalize(root, _KERNELS.pop, where, None)
    _KERNELS[where] = built
    while len(_KERNELS) > _MAX_KERNELS:
        _KERNELS.popitem(last=False)
    return built


def build_kernel(
    node: Node, src: Node, w: np.ndarray, lo: np.ndarray, hi: np.ndarray, path: str | None = None, pack: int | None = None
) -> Kernel:
    """The :class:`Kernel` of ``node`` for input codes within ``lo`` .. ``hi`` per feature (float64
    integers): the fastest exact path unless ``path`` names one, and for a float path as many
    columns packed as stay exact unless ``pack`` says how many (each must be exact: tests force
    every one)."""
    from ...fixed import dot_interval_codes

    w = np.asarray(w, dtype=np.int64)
    n_in, n_out = w.shape
    wt = node.fixed_attr("weight_type")
    prod_exp = src.type.lsb_exp + wt.lsb_exp
    bias, pshift, bshift, lsb_exp = None, 0, 0, prod_exp
    if "bias" in node.params:
        bt = node.fixed_attr("bias_type")
        bias = np.asarray(node.params["bias"], dtype=np.int64)
        if bt.lsb_exp >= prod_exp:
            bshift = bt.lsb_exp - prod_exp
        else:  # bias finer than the products: the sum moves onto the bias grid
            pshift, lsb_exp = prod_exp - bt.lsb_exp, bt.lsb_exp
    # every partial sum is at most this (an upper bound: float64 sums of non-negative terms, widened)
    big = np.maximum(np.abs(lo), np.abs(hi))
    products = (big @ np.abs(w).astype(np.float64)) * 2.0**pshift
    mag = products
    if bias is not None:
        mag = mag + np.abs(bias).astype(np.float64) * 2.0**bshift
    bound = float(mag.max(initial=0.0)) * (1 + 2.0**-20)
    code_max = float(big.max(initial=0.0))
    binary = n_in > 0 and bool(np.all(np.abs(w) == 1)) and float(lo.min()) >= -1 and float(hi.max()) <= 1
    fits = {
        "popcount": binary and n_in < 2**31 and bound < EXACT_INT64,
        "float32": bound < EXACT_FLOAT32 and code_max < EXACT_FLOAT32,
        "float64": bound < EXACT_FLOAT64 and code_max < EXACT_FLOAT64,
        "int64": bound < EXACT_INT64 and code_max < EXACT_INT64,
        "object": True,
    }
    w_max = float(np.abs(w).max(initial=0)) * 2.0**pshift
    # how many output columns each float path may pack into one (1: none), and its cost per
    # column of the weight relative to an unpacked float32 GEMM (float64 takes twice as long)
    packing = {
        dt: _packing(float(products.max(initial=0.0)) * (1 + 2.0**-20), w_max, limit, n_out) if fits[dt] else (1, 0)
        for dt, limit in (("float32", EXACT_FLOAT32), ("float64", EXACT_FLOAT64))
    }
    if path is None:
        path = next(p for p, ok in fits.items() if ok)
        floats = [dt for dt in ("float32", "float64") if fits[dt]]
        if floats and (path != "popcount" or n_out >= _POPCOUNT_NARROW):
            best = min(floats, key=lambda dt: _FLOAT_COST[dt] / packing[dt][0])
            # a wide binary layer: BLAS beats the popcount once it packs (it ties it unpacked)
            if path != "popcount" or _FLOAT_COST[best] / packing[best][0] < 1:
                path = best
    elif not fits[path]:
        raise ValueError(f"node {node.name!r}: the {path} path is not exact for these bounds and weights")
    if pack is not None and path in packing:
        if not 1 <= pack <= packing[path][0]:
            raise ValueError(f"node {node.name!r}: the {path} path cannot pack {pack} columns exactly")
        packing[path] = (pack, packing[path][1] if pack > 1 else 0)
    # the sum's exact range: with it inside the node's type on its grid, no cast is needed
    as_int = (lambda a: a.astype(np.int64)) if code_max < EXACT_INT64 else (lambda a: np.array([int(v) for v in a], dtype=object))
    klo, khi = dot_interval_codes(as_int(lo), as_int(hi), w)
    low = min((int(v) << pshift for v in klo), default=0)
    high = max((int(v) << pshift for v in khi), default=0)
    if bias is not None:
        low = min((int(a) << pshift) + (int(b) << bshift) for a, b in zip(klo, bias)) if n_out else 0
        high = max((int(a) << pshift) + (int(b) << bshift) for a, b in zip(khi, bias)) if n_out else 0
    t = node.type
    cast = not (t.lsb_exp == lsb_exp and t.code_dtype == np.int64 and t.min_code <= low and high <= t.max_code)
    b = None if bias is None else bias << bshift if bshift < 62 else bias.astype(object) * (1 << bshift)
    out = np.dtype(np.int64) if cast else compact_dtype(t)
    if path == "popcount":
        # the sums straight into the output codes when nothing is added or cast after them
        plain = not cast and bias is None and pshift == 0 and n_in <= np.iinfo(out).max  # the count of terms fits too
        work = out if plain else np.dtype(np.int32 if bound < 2.0**31 else np.int64)
        bp = None if b is None else np.asarray(b, dtype=work)
        # a sign's output holds no zero (levels +-1), nor does padding by a code other than 0: no zero mask to look for
        padding = node.attrs.get("padding")
        zero_pad = padding is not None and any(np.ravel(padding)) and int(node.attrs["pad_code"]) == 0
        signs = src.op == "threshold" and bool(np.isin(src.params["levels"], (-1, 1)).all()) and not zero_pad
        wb = pack_bits(w.T > 0, n_in)
        return Kernel(path, wb, bp, pshift, lsb_exp, cast, np.dtype(np.int8), n_in, work, out, nonzero=signs)
    if path in ("float32", "float64"):
        dt = np.dtype(path)
        p, e = packing[path]
        wf = w.astype(np.float64) * 2.0**pshift
        if p > 1:  # column g * h + j into packed column j, times 2**(g * e): exact integers below the limit
            h = -(-n_out // p)
            wf = np.pad(wf, ((0, 0), (0, h * p - n_out))).reshape(n_in, p, h)
            wf = np.einsum("igh,g->ih", wf, 2.0 ** (e * np.arange(p)))
        bf = None if b is None else np.asarray(b, dtype=np.float64).astype(dt)
        return Kernel(
            path, np.ascontiguousarray(wf.astype(dt)), bf, 0, lsb_exp, cast, dt, n_in, out=out, pack=p, pack_exp=e, n_out=n_out
        )
    if path == "int64":
        bi = None if b is None else np.asarray(b, dtype=np.int64)
        return Kernel(path, w.copy(), bi, pshift, lsb_exp, cast, _INT64, n_in)  # a copy: no reference to the node's weight
    bo = None if b is None else np.array([int(v) for v in np.ravel(b)], dtype=object)
    return Kernel(path, w.astype(object), bo, pshift, lsb_exp, cast, np.dtype(object), n_in)


def _packing(products: float, w_max: float, limit: float, n_out: int) -> tuple[int, int]:
    """``(pack, pack_exp)``: the most output columns one float GEMM column can carry exactly, and
    the power of two between them, for sums of products within +-``products`` (no bias) of
    weights within +-``w_max``, exact below ``limit`` (2**24 or 2**53).

    Column ``j`` of the packed weight is ``sum_g 2**(g e) w[:, g h + j]``. With ``2**e > 2 *
    products`` every packed partial sum is a sum of partial sums of the columns within
    ``products * sum_g 2**(g e)``: below ``limit`` it is an exact integer whatever order BLAS adds
    in, and so is each input times a packed weight. Each column's sum ``y_g`` then comes back
    exactly, from the top: ``y_g = rint(acc / 2**(g e))`` (the columns below add less than a
    half), ``acc -= y_g * 2**(g e)``."""
    e = max(1, math.floor(products * 2).bit_length()) if products >= 1 else 1  # 2**e > 2 * products
    pack = 1
    while pack < n_out:
        total = sum(2.0 ** (g * e) for g in range(pack + 1))
        if products * total >= limit or w_max * total >= limit:
            break
        pack += 1
    pack = -(-n_out // -(-n_out // pack)) if n_out else 1  # no empty group of columns
    return (pack, e) if pack > 1 else (1, 0)


def _unpack(k: Kernel, acc: np.ndarray, out: np.ndarray) -> None:
    """The ``k.n_out`` columns of the packed sums ``acc`` (M, h), each plus its bias, into the codes
    ``out`` (M, n_out) (``acc`` is consumed)."""
    h = acc.shape[1]
    part = np.empty_like(acc) if k.pack > 1 else None
    for g in range(k.pack - 1, -1, -1):
        cols = slice(g * h, min((g + 1) * h, k.n_out))
        if g:  # scaling by powers of two is exact: part is y_g * 2**(g e), then y_g
            scale = 2.0 ** (g * k.pack_exp)
            np.multiply(acc, 1 / scale, out=part)
            np.rint(part, out=part)
            np.multiply(part, scale, out=part)
            acc -= part
            np.multiply(part, 1 / scale, out=part)
            y = part[:, : cols.stop - cols.start]
        else:
            y = acc[:, : cols.stop - cols.start]
        if k.bias is not None:
            y += k.bias[cols]
        np.copyto(out[:, cols], y, casting="unsafe")  # exact integers: no rounding


def pack_bits(bits: np.ndarray, n: int) -> np.ndarray:
    """The (rows, ``n``) booleans ``bits`` as (words, rows) uint64, word ``j`` holding features
    ``64 j`` .. ``64 j + 63`` (zeros past ``n``): one packing for inputs and weights alike."""
    rows = bits.shape[0]
    words = max(1, -(-n // 64))
    packed = np.zeros((rows, words * 8), dtype=np.uint8)
    packed[:, : -(-n // 8)] = np.packbits(bits, axis=1)
    return np.ascontiguousarray(packed.view(np.uint64).T)


def _popcount_sum(k: Kernel, x: np.ndarray) -> np.ndarray:
    """``x @ w`` for (M, n_in) codes in {-1, 0, +1} and weights +-1: per word, XOR of the sign
    bits counts the products -1; a zero input (padding, a ternary code) is masked out of both the
    count of terms and the count of -1 products. (M, n_out) in ``k.work``."""
    m = x.shape[0]
    wb = k.weight
    words, n_out = wb.shape
    pos = pack_bits(x > 0, k.n_in)
    nonzero = None if k.nonzero else x != 0
    mask = None if nonzero is None or nonzero.all() else pack_bits(nonzero, k.n_in)
    terms = k.n_in if mask is None else nonzero.sum(axis=1, dtype=np.int64)[:, None]
    acc_t = np.uint16 if k.n_in < 2**16 else np.uint32
    out = np.empty((m, n_out), dtype=k.work)
    rows = max(16, _POPCOUNT_BLOCK // max(n_out, 1))
    tmp = np.empty((min(rows, m), n_out), dtype=np.uint64)
    cnt = np.empty(tmp.shape, dtype=np.uint8)
    acc = np.empty(tmp.shape, dtype=acc_t)
    for r in range(0, m, rows):
        n = min(rows, m - r)
        t, c, a = tmp[:n], cnt[:n], acc[:n]
        a[...] = 0
        for j in range(words):
            np.bitwise_xor(pos[j, r : r + n, None], wb[j], out=t)
            if mask is not None:
                np.bitwise_and(t, mask[j, r : r + n, None], out=t)
            np.bitwise_count(t, out=c)
            np.add(a, c, out=a)
        o = out[r : r + n]
        # in the output codes' dtype -2 * count may wrap, but adding the terms gives a code of the
        # node's type (it provably holds the sum), which wraps back exactly
        np.multiply(a, k.work.type(-2), out=o)
        o += terms if mask is None else terms[r : r + n]
    return out


def run_kernel(k: Kernel, node: Node, x: np.ndarray) -> np.ndarray:
    """The node's output codes of the weighted sum of ``x`` (..., n_in) codes by kernel ``k``."""
    lead = x.shape[:-1]
    x = x.reshape(-1, k.n_in)
    if k.path == "popcount":
        acc = _popcount_sum(k, x)
    elif k.path in ("float32", "float64") and k.pack > 1:
        acc = np.empty((x.shape[0], k.n_out), dtype=k.out)
        _unpack(k, x.astype(k.dtype, copy=False) @ k.weight, acc)
    elif k.path in ("float32", "float64"):
        acc = x.astype(k.dtype, copy=False) @ k.weight
        if k.bias is not None:
            acc += k.bias
        acc = acc.astype(k.out)
    else:
        acc = x.astype(k.dtype, copy=False) @ k.weight
    if k.path != "float32" and k.path != "float64":
        if k.shift:
            acc = acc << k.shift if k.path != "object" else acc * (1 << k.shift)
        if k.bias is not None:
            acc = acc + k.bias
    acc = acc.reshape(*lead, acc.shape[-1])
    return node.type.cast_codes(acc, k.lsb_exp) if k.cast else acc.astype(k.out, copy=False)


def weighted_sum(node: Node, src: Node, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w (+ bias)`` on integer codes, exactly, cast to the node's accumulator type (the cast
    skipped where the sum provably fits it), by the node's :func:`kernel`: float32 or float64
    BLAS while every partial sum is exact in it (output columns packed where they stay exact),
    bit-packed popcount for a narrow binary layer or a wide one that cannot pack, int64 or
    Python ints past that."""
    k = kernel(node, src, w)
    return run_kernel(k, node, x)


def im2col(x: np.ndarray, kh: int, kw: int, strides, padding, pad_code: int) -> np.ndarray:
    """The (N, Ho, Wo, kh*kw*C) windows of the (N, H, W, C) codes ``x`` in Keras's cross-correlation
    order (kh, kw, C), after padding with ``pad_code`` by ``padding`` [[top, bottom], [left, right]],
    in ``x``'s dtype."""
    (pt, pb), (pl, pr) = padding
    sh, sw = strides
    c = x.shape[-1]
    if pt or pb or pl or pr:
        x = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=x.dtype.type(int(pad_code)))
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::sh, ::sw]  # N,Ho,Wo,C,kh,kw
    return win.transpose(0, 1, 2, 4, 5, 3).reshape(*win.shape[:3], kh * kw * c)


def convolve(node: Node, src: Node, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cross-correlation as Keras computes it of the (N, H, W, C) codes ``x`` with the (kh, kw, C, F)
    kernel ``w`` under the node's strides, padding and pad code: im2col (in the dtype the node's
    kernel reads, so float32 windows take half the memory of int64 ones), then the weighted sum."""
    kh, kw, c, f = w.shape
    k = kernel(node, src, w.reshape(kh * kw * c, f))
    cols = im2col(x.astype(k.dtype, copy=False), kh, kw, node.attrs["strides"], node.attrs["padding"], node.attrs["pad_code"])
    return run_kernel(k, node, cols)
