"""The emulator's fast paths (graph/ops/_weighted.py, threshold.py, emulate.py) against a plain
integer reference: each weighted-sum path forced on small nodes (popcount, float32, float64, int64,
Python ints), the path chosen at each exactness limit, saturated inputs and extreme weight codes,
the skipped overflow cast, the vectorized thresholds and the chunked batch, all with np.array_equal."""

import dataclasses
import importlib
import tracemalloc

import numpy as np
import pytest
from graphs import BINARY, OP_GRAPHS, edge_inputs

from edgebnn.emulate import emulate
from edgebnn.fixed import FixedType
from edgebnn.graph import (
    REGISTRY,
    Graph,
    conv1d_node,
    conv2d_node,
    dense_node,
    depthwise_conv2d_node,
    flatten_node,
    input_node,
    maxpool2d_node,
    threshold_node,
)
from edgebnn.graph.ops import _weighted
from edgebnn.graph.ops.depthwise_conv2d import full_kernel

emulate_module = importlib.import_module("edgebnn.emulate")  # the module (edgebnn.emulate is also the function)
PATHS = ("popcount", "float32", "float64", "int64", "object")


# ------------------------------------------------------------------ the plain integer reference
def _ref_im2col(x, kh, kw, strides, padding, pad_code):
    (pt, pb), (pl, pr) = padding
    x = np.pad(x.astype(object), ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=int(pad_code))
    n, h, w, c = x.shape
    rows = []
    for i in range(0, h - kh + 1, strides[0]):
        cols = [x[:, i : i + kh, j : j + kw, :].reshape(n, -1) for j in range(0, w - kw + 1, strides[1])]
        rows.append(np.stack(cols, axis=1))
    return np.stack(rows, axis=1)


def ref_weighted(node, src, x):
    """Python-int sum of products and bias, then the node type's cast: no float, no shortcut."""
    w = node.params["weight"]
    if node.op == "depthwise_conv2d":
        w = full_kernel(w)
    if node.op == "conv1d":
        (s,), (left, right) = node.attrs["strides"], node.attrs["padding"]
        cols = _ref_im2col(x[:, None], 1, w.shape[0], (1, s), ((0, 0), (left, right)), node.attrs["pad_code"])[:, 0]
    elif node.op in ("conv2d", "depthwise_conv2d"):
        kh, kw = w.shape[:2]
        cols = _ref_im2col(x, kh, kw, node.attrs["strides"], node.attrs["padding"], node.attrs["pad_code"])
    else:
        cols = x.astype(object)
    acc = cols @ w.reshape(-1, w.shape[-1]).astype(object)
    lsb = src.type.lsb_exp + node.fixed_attr("weight_type").lsb_exp
    if "bias" in node.params:
        bt = node.fixed_attr("bias_type")
        bias = node.params["bias"].astype(object)
        if bt.lsb_exp >= lsb:
            acc = acc + bias * (1 << (bt.lsb_exp - lsb))
        else:
            acc, lsb = acc * (1 << (lsb - bt.lsb_exp)) + bias, bt.lsb_exp
    return node.type.cast_codes(acc, lsb)


def ref_threshold(node, x):
    t, levels = node.params["thresholds"], node.params["levels"]
    flat = x.reshape(-1, t.shape[0]).astype(object)
    counts = sum((flat >= t[:, k]).astype(np.int64) for k in range(t.shape[1])) + np.zeros(flat.shape, np.int64)
    return np.take_along_axis(levels.T, counts, axis=0).reshape(x.shape) if len(flat) else counts.reshape(x.shape)


def ref_emulate(graph, x):
    """Every node's codes by the reference kernels above (other ops by their own execute)."""
    codes = {graph.input.name: graph.input.type.codes(np.asarray(x, dtype=np.float64))}
    for node in graph.compute_nodes():
        srcs = [graph[s] for s in node.inputs]
        xs = [codes[s] for s in node.inputs]
        if node.op in ("dense", "conv2d", "depthwise_conv2d", "conv1d"):
            codes[node.name] = ref_weighted(node, srcs[0], xs[0])
        elif node.op == "threshold":
            codes[node.name] = ref_threshold(node, xs[0])
        else:
            codes[node.name] = REGISTRY[node.op].execute(node, srcs, xs)
    return codes


def assert_emulates_as_reference(graph, x, **kwargs):
    want = ref_emulate(graph, x)
    got = emulate(graph, x, return_all=True, **kwargs)
    for node in graph.nodes:
        assert np.array_equal(got[node.name], node.type.from_codes(want[node.name])), node.name


def forced(node, src, x, path):
    """``node``'s output codes on ``x`` by the kernel of ``path`` (ValueError when it is not exact)."""
    w = node.params["weight"]
    w = w.reshape(-1, w.shape[-1])
    k = _weighted.build_kernel(node, src, w, *_weighted.feature_bounds(node, src, w.shape[0]), path=path)
    return _weighted.run_kernel(k, node, x)


def chosen(node, src):
    w = node.params["weight"]
    return _weighted.kernel(node, src, w.reshape(-1, w.shape[-1])).path


def extreme_codes(t, shape, rng):
    """Codes of ``t``: mostly its two ends (saturated inputs), some random."""
    c = rng.choice([t.min_code, t.max_code], size=shape)
    mix = rng.random(shape) < 0.3
    c[mix] = rng.integers(t.min_code, t.max_code + 1, size=int(mix.sum()))
    return c


# ------------------------------------------------------------------ each path, forced
def _dense(in_t, w_t, n_in, n_out, rng, bias_t=None, extreme=True):
    inp = input_node("x", (n_in,), in_t)
    w = extreme_codes(w_t, (n_in, n_out), rng) if extreme else rng.integers(w_t.min_code, w_t.max_code + 1, (n_in, n_out))
    bias = None if bias_t is None else extreme_codes(bias_t, (n_out,), rng)
    return inp, dense_node("d", inp, w, w_t, bias, bias_t)


@pytest.mark.parametrize("path", PATHS[1:])
@pytest.mark.parametrize("bias", [None, "fixed<9,3>", "fixed<12,12>"])  # finer and coarser than the products
def test_each_path_equals_the_integer_reference(path, bias):
    rng = np.random.default_rng(len(path))
    in_t, w_t = FixedType.from_string("fixed<6,2,RND_CONV,SAT>"), FixedType.from_string("fixed<5,1>")
    bias_t = None if bias is None else FixedType.from_string(bias)
    inp, node = _dense(in_t, w_t, 37, 9, rng, bias_t)
    x = extreme_codes(in_t, (50, 37), rng)
    assert np.array_equal(forced(node, inp, x, path), ref_weighted(node, inp, x))


@pytest.mark.parametrize("path", ["float32", "float64"])
@pytest.mark.parametrize("bias", [None, "fixed<10,2>", "fixed<12,12>"])  # finer and coarser than the products
@pytest.mark.parametrize("n_out", [1, 2, 5, 9, 64])
def test_packed_columns_equal_the_reference(path, bias, n_out):
    """A float path summing several output columns in one BLAS column, each count of columns
    forced up to the most that stay exact (and one more refused), with saturated inputs, extreme
    weights and a bias finer or coarser than the products: the integer reference's codes."""
    rng = np.random.default_rng(n_out)
    in_t, w_t = FixedType.from_string("fixed<4,2,RND_CONV,SAT>"), FixedType.from_string("fixed<5,1>")
    bias_t = None if bias is None else FixedType.from_string(bias)
    inp, node = _dense(in_t, w_t, 9, n_out, rng, bias_t)
    x = extreme_codes(in_t, (50, 9), rng)
    x[0], x[1] = in_t.max_code, in_t.min_code  # every product at its largest, both signs
    want = ref_weighted(node, inp, x)
    w = node.params["weight"]
    bounds = _weighted.feature_bounds(node, inp, 9)
    pack = 1
    while True:
        try:
            k = _weighted.build_kernel(node, inp, w, *bounds, path=path, pack=pack)
        except ValueError as err:
            assert "cannot pack" in str(err)
            break
        assert k.pack == pack and np.array_equal(_weighted.run_kernel(k, node, x), want), pack
        pack += 1
    # sums within 1152 (4608 with the finer bias's grid): float32 holds two, float64 four (three)
    most = {"float32": 1 if bias == "fixed<10,2>" else 2, "float64": 3 if bias == "fixed<10,2>" else 4}[path]
    most = min(n_out, most)
    assert pack - 1 == -(-n_out // -(-n_out // most))  # as many as leave no group of columns empty


def test_wide_layers_pack_their_columns():
    """The layers of a 784-1024-1024-10 MLP: 4-bit ones pack three columns into float64, binary
    ones two into float32, the 10-wide binary head sums by popcount."""
    rng = np.random.default_rng(3)
    u4 = input_node("x", (784,), FixedType.from_string("ufixed<4,0,RND_CONV,SAT>"))
    d4 = dense_node("d", u4, rng.integers(-8, 8, (784, 1024)), FixedType.from_string("fixed<4,1>"))
    sign = threshold_node("s", u4, np.full((784, 1), 8), [[-1, 1]] * 784, BINARY)
    db = dense_node("b", sign, rng.choice([-1, 1], (784, 1024)), BINARY)
    head = dense_node("h", sign, rng.choice([-1, 1], (784, 10)), BINARY)
    kernels = {n.name: _weighted.kernel(n, src, n.params["weight"]) for n, src in ((d4, u4), (db, sign), (head, sign))}
    assert (kernels["d"].path, kernels["d"].pack) == ("float64", 3)
    assert (kernels["b"].path, kernels["b"].pack) == ("float32", 2)
    assert kernels["h"].path == "popcount"
    x = rng.uniform(0, 1, (30, 784))
    assert_emulates_as_reference(Graph("int4", [u4, d4]), x)
    assert_emulates_as_reference(Graph("binary", [u4, sign, db]), x)


@pytest.mark.parametrize("path", PATHS)
def test_binary_inputs_and_weights_take_any_path_alike(path):
    rng = np.random.default_rng(1)
    for n_in in (1, 63, 64, 65, 200):
        src = input_node("x", (n_in,), FixedType.from_string("ufixed<2,0,RND_CONV,SAT>"))
        sign = threshold_node("s", src, np.ones((n_in, 1)), [[-1, 1]] * n_in, BINARY)
        node = dense_node("d", sign, rng.choice([-1, 1], (n_in, 7)), BINARY, rng.integers(-9, 9, 7), FixedType(5, 5))
        x = rng.choice([-1, 1], (40, n_in))
        x[0], x[1] = 1, -1  # every product +1 or every product -1: the sum at its bounds
        assert np.array_equal(forced(node, sign, x, path), ref_weighted(node, sign, x)), n_in
        assert chosen(node, sign) == "popcount"


def test_popcount_into_codes_narrower_than_the_fan_in():
    """168 +-1 inputs of which 100 are constant (a sign whose levels are both +1): the sum spans
    only 68 + |the constant part|, so the accumulator's codes are int8 although the fan-in, 168,
    is not one (the fuzzed max-pool models froze such a node)."""
    rng = np.random.default_rng(12)
    src = input_node("x", (168,), FixedType.from_string("ufixed<2,0,RND_CONV,SAT>"))
    levels = [[1, 1]] * 100 + [[-1, 1]] * 68
    sign = threshold_node("s", src, np.ones((168, 1)), levels, BINARY)
    w = rng.choice([-1, 1], (168, 4))
    w[:100] = np.resize([1, -1], (100, 1))  # the constant part sums to 0
    node = dense_node("d", sign, w, BINARY)
    assert chosen(node, sign) == "popcount" and _weighted.compact_dtype(node.type) == np.int8
    x = rng.choice([-1, 1], (30, 168))
    x[:, :100] = 1
    assert np.array_equal(REGISTRY["dense"].execute(node, [sign], [x.astype(np.int8)]), ref_weighted(node, sign, x))


def test_popcount_masks_zero_inputs():
    """Inputs in {-1, 0, +1} (a ternary threshold) with +-1 weights still take the popcount path;
    a zero adds nothing, in the count of terms as in the count of -1 products."""
    rng = np.random.default_rng(2)
    src = input_node("x", (70,), FixedType.from_string("fixed<4,2,RND_CONV,SAT>"))
    tern = threshold_node("t", src, [[-2, 2]] * 70, [[-1, 0, 1]] * 70, FixedType(2, 2))
    node = dense_node("d", tern, rng.choice([-1, 1], (70, 5)), BINARY)
    assert chosen(node, tern) == "popcount"
    x = rng.choice([-1, 0, 1], (60, 70))
    x[0] = 0
    assert np.array_equal(forced(node, tern, x, "popcount"), ref_weighted(node, tern, x))


def test_a_path_that_is_not_exact_is_refused():
    inp = input_node("x", (1024,), FixedType(8, 8))
    node = dense_node("d", inp, np.full((1024, 2), -128), FixedType(8, 8))
    with pytest.raises(ValueError, match="float32 path is not exact"):
        forced(node, inp, np.zeros((1, 1024), np.int64), "float32")
    with pytest.raises(ValueError, match="popcount path is not exact"):
        forced(node, inp, np.zeros((1, 1024), np.int64), "popcount")


# ------------------------------------------------------------------ the limits
@pytest.mark.parametrize(
    ("width", "n_in", "path"),
    [
        (8, 1023, "float32"),  # 1023 * 2**14 < 2**24
        (8, 1024, "float64"),  # = 2**24: float32 could round a partial sum
        (27, 1, "float64"),  # 2**52 < 2**53
        (27, 2, "int64"),  # = 2**53
        (31, 3, "int64"),  # 3 * 2**60 < 2**62
        (31, 4, "object"),  # = 2**62
        (40, 2, "object"),
    ],
)
def test_the_path_at_each_exactness_limit(width, n_in, path):
    """Inputs and weights of fixed<W,W>: every product at most 2**(2W-2) in magnitude, so the
    bound is n_in * 2**(2W-2); at the limit the sum of saturated inputs and extreme weights is
    exact on the chosen path and equals the reference."""
    t = FixedType(width, width)
    rng = np.random.default_rng(width + n_in)
    inp = input_node("x", (n_in,), t)
    w = np.stack([np.full(n_in, t.min_code), np.full(n_in, t.max_code), rng.choice([t.min_code, t.max_code], n_in)], axis=1)
    node = dense_node("d", inp, w, t)
    assert chosen(node, inp) == path
    x = np.concatenate([np.full((2, n_in), t.min_code), np.full((2, n_in), t.max_code), extreme_codes(t, (6, n_in), rng)])
    x[1, ::2] = t.max_code - 1  # odd partial sums: a float path past its limit would round them
    want = ref_weighted(node, inp, x)
    assert np.array_equal(forced(node, inp, x, path), want)
    assert np.array_equal(emulate(Graph("g", [inp, node]), t.from_codes(x)), node.type.from_codes(want))


def test_float32_just_below_its_limit_is_exact():
    """A bound of 2**24 - 4096: float32, and an odd sum near it comes out exact; a bound of
    2**24 takes float64."""
    t = FixedType(13, 13)  # codes -4096..4095
    inp = input_node("x", (2,), t)
    node = dense_node("d", inp, [[-2048], [2047]], t)
    assert chosen(node, inp) == "float32"
    x = np.array([[-4096, 4095], [4095, -4096], [-4096, -4096]])
    assert np.array_equal(forced(node, inp, x, "float32"), ref_weighted(node, inp, x))
    assert int(ref_weighted(node, inp, x)[0, 0]) == 2**23 + 4095 * 2047  # odd, above 2**23
    assert chosen(dense_node("d", inp, [[-2048], [-2048]], t), inp) == "float64"


# ------------------------------------------------------------------ the overflow cast
def test_the_cast_is_skipped_only_when_the_sum_fits_the_accumulator():
    rng = np.random.default_rng(4)
    inp, node = _dense(FixedType.from_string("fixed<5,2,RND_CONV,SAT>"), FixedType(3, 3), 20, 6, rng)
    w = node.params["weight"]
    assert not _weighted.kernel(node, inp, w).cast
    narrow = with_type(node, FixedType(node.type.width - 3, node.type.integer - 3, overflow="WRAP"))
    k = _weighted.kernel(narrow, inp, w)
    assert k.cast
    x = extreme_codes(inp.type, (80, 20), rng)
    got = _weighted.run_kernel(k, narrow, x)
    assert np.array_equal(got, ref_weighted(narrow, inp, x))
    assert got.min() >= narrow.type.min_code and got.max() <= narrow.type.max_code


def with_type(node, t):
    """``node`` with the accumulator type ``t`` (and its range as bounds)."""
    return dataclasses.replace(
        node, type=t, params={**node.params, "lo": np.full(node.shape[-1], t.min), "hi": np.full(node.shape[-1], t.max)}
    )


def test_a_kernel_is_built_once_and_rebuilt_for_new_arrays():
    rng = np.random.default_rng(5)
    inp, node = _dense(FixedType(4, 4), FixedType(3, 3), 8, 3, rng)
    w = node.params["weight"]
    first = _weighted.kernel(node, inp, w)
    assert _weighted.kernel(node, inp, w) is first
    node.params["weight"] = w.copy()
    assert _weighted.kernel(node, inp, node.params["weight"]) is not first
    gone = id(w)
    del w, first
    node.params["weight"] = node.params["weight"].copy()
    assert all(where[0] != gone for where in _weighted._KERNELS)  # dropped with its weight array


def test_slices_of_one_weight_array_are_kernels_of_their_own():
    rng = np.random.default_rng(11)
    inp = input_node("x", (8,), FixedType(4, 4))
    both = rng.integers(-4, 4, (8, 6))
    a, b = dense_node("a", inp, both[:, :3], FixedType(3, 3)), dense_node("b", inp, both[:, 3:], FixedType(3, 3))
    assert a.params["weight"].base is b.params["weight"].base is both
    x = extreme_codes(inp.type, (20, 8), rng)
    for node in (a, b, a, b):
        assert np.array_equal(REGISTRY["dense"].execute(node, [inp], [x]), ref_weighted(node, inp, x))


# ------------------------------------------------------------------ convolutions
@pytest.mark.parametrize("pad_code", [0, 1, -1])
def test_binary_convolutions_take_popcount_with_any_padding(pad_code):
    rng = np.random.default_rng(6)
    inp = input_node("x", (7, 6, 3), FixedType.from_string("fixed<4,2,RND_CONV,SAT>"))
    sign = threshold_node("s", inp, [[0]] * 3, [[-1, 1]] * 3, BINARY)
    conv = conv2d_node("c", sign, rng.choice([-1, 1], (3, 3, 3, 5)), BINARY, padding=((1, 1), (1, 0)), pad_code=pad_code)
    pool = maxpool2d_node("p", conv)
    sign2 = threshold_node("s2", pool, rng.integers(-5, 5, (5, 1)), [[-1, 1]] * 5, BINARY)
    conv2 = conv2d_node("c2", sign2, rng.choice([-1, 1], (2, 2, 5, 4)), BINARY, strides=(1, 2), pad_code=pad_code)
    flat = flatten_node("f", conv2)
    graph = Graph(
        "bcnn",
        [inp, sign, conv, pool, sign2, conv2, flat, dense_node("d", flat, rng.choice([-1, 1], (flat.shape[0], 3)), BINARY)],
    )
    assert chosen(conv, sign) == chosen(conv2, sign2) == "popcount"
    # a sign's +-1 needs no zero mask unless zero padding brings zeros in
    assert _weighted.kernel(conv, sign, conv.params["weight"].reshape(-1, 5)).nonzero == (pad_code != 0)
    assert_emulates_as_reference(graph, edge_inputs(graph, n=40))


def test_every_example_graph_emulates_as_the_reference():
    for build in OP_GRAPHS.values():
        graph = build()
        assert_emulates_as_reference(graph, edge_inputs(graph, n=24))
        assert_emulates_as_reference(graph, edge_inputs(graph, n=24), batch_size=5)


def test_depthwise_and_conv1d_keep_one_kernel_per_node():
    rng = np.random.default_rng(7)
    inp = input_node("x", (5, 5, 2), FixedType.from_string("fixed<5,2,RND_CONV,SAT>"))
    dw = depthwise_conv2d_node("dw", inp, rng.integers(-3, 4, (3, 3, 2, 2)), FixedType(3, 3), padding=((1, 1), (1, 1)))
    graph = Graph("dw", [inp, dw])
    x = edge_inputs(graph, n=16)
    emulate(graph, x)
    before = dict(_weighted._KERNELS)
    emulate(graph, x)
    assert _weighted._KERNELS.keys() == before.keys() and all(_weighted._KERNELS[k] is v for k, v in before.items())
    row = input_node("r", (9, 2), FixedType.from_string("fixed<5,2,RND_CONV,SAT>"))
    c1 = conv1d_node(
        "c1", row, rng.integers(-3, 4, (3, 2, 4)), FixedType(3, 3), padding=(1, 1), bias=[1, 2, 3, -4], bias_type=FixedType(6, 4)
    )
    g1 = Graph("c1", [row, c1])
    assert_emulates_as_reference(g1, edge_inputs(g1, n=16))
    n = len(_weighted._KERNELS)
    emulate(g1, edge_inputs(g1, n=16))
    assert len(_weighted._KERNELS) == n


# ------------------------------------------------------------------ thresholds
@pytest.mark.parametrize("k", [0, 1, 2, 3, 15, 300])
@pytest.mark.parametrize("even", [True, False])
def test_thresholds_equal_the_reference(k, even):
    rng = np.random.default_rng(k)
    c = 6
    src = input_node("x", (4, c), FixedType(12, 12))
    t = np.sort(rng.integers(-2048, 2048, (c, k)), axis=1)
    t[0] = -2048  # every input reaches them all
    if k:
        t[1] = 2047  # only the largest input reaches them
    out_t = FixedType(12, 12)
    levels = np.arange(k + 1)[None] * rng.integers(-3, 4, (c, 1)) + rng.integers(-100, 100, (c, 1))
    if not even:
        levels = np.sort(rng.integers(-2048, 2048, (c, k + 1)), axis=1)
    node = threshold_node("t", src, t, levels, out_t)
    x = rng.integers(-2048, 2048, (30, 4, c))
    x[0] = 2047
    x[1] = -2048
    if k:
        x[2] = t[None, None, :, k // 2]  # exactly on a threshold: reached
    got = REGISTRY["threshold"].execute(node, [src], [x])
    assert got.dtype == np.int16 and np.array_equal(got, ref_threshold(node, x))  # fixed<12,12>'s compact codes
    assert REGISTRY["threshold"].execute(node, [src], [x[:0]]).shape == (0, 4, c)


@pytest.mark.parametrize("gaps", ["one", "power of two", "odd", "per channel"])
@pytest.mark.parametrize("width", [8, 12, 20])
@pytest.mark.parametrize("k", [2, 15, 40])
def test_evenly_spaced_thresholds_equal_the_reference(gaps, width, k):
    """Evenly spaced thresholds (a k-bit quantizer's, or one per reachable code of a float head)
    counted by a division: the first threshold at either end of the input type (differences
    past the codes' dtype), codes on, beside and beyond every threshold, even and uneven levels."""
    rng = np.random.default_rng(k * width)
    c = 5
    src = input_node("x", (c,), FixedType(width, width))
    lo, hi = src.type.min_code, src.type.max_code
    gap = {"one": np.ones(c, int), "power of two": np.full(c, 8), "odd": np.full(c, 3), "per channel": np.array([1, 2, 3, 5, 7])}
    g = gap[gaps]
    k = min(k, (hi - lo) // int(g.max()) + 1)  # as many as the type holds
    first = rng.integers(lo, hi - g * (k - 1) + 1)
    first[0], first[1] = lo, hi - g[1] * (k - 1)  # the thresholds at the type's two ends
    t = first[:, None] + g[:, None] * np.arange(k)
    assert (np.diff(t, axis=1) == g[:, None]).all() and t.min() >= lo and t.max() <= hi
    out_t = FixedType(8, 8)
    x = np.concatenate([t.T - 1, t.T, t.T + 1, np.full((1, c), lo), np.full((1, c), hi), rng.integers(lo, hi + 1, (40, c))])
    x = np.clip(x, lo, hi).astype(src.type.code_dtype).astype(_weighted.compact_dtype(src.type))
    for levels in (np.arange(k + 1)[None] * np.ones((c, 1), int) - 3, np.sort(rng.integers(-128, 128, (c, k + 1)), axis=1)):
        node = threshold_node("t", src, t, levels, out_t)
        got = REGISTRY["threshold"].execute(node, [src], [x])
        assert got.dtype == np.int8 and np.array_equal(got, ref_threshold(node, x))


def test_many_uneven_thresholds_with_repeats_equal_the_reference():
    """More thresholds than a compare each is worth (a binary search per channel), some repeated
    (a channel with fewer levels than the others), uneven levels."""
    rng = np.random.default_rng(5)
    c, k = 4, 500
    src = input_node("x", (c,), FixedType(16, 16))
    t = np.sort(rng.integers(-3000, 3000, (c, k)), axis=1)
    t[2, 300:] = t[2, 299]  # repeated: all reached at once
    levels = np.sort(rng.integers(-(2**15), 2**15, (c, k + 1)), axis=1)
    node = threshold_node("t", src, t, levels, FixedType(16, 16))
    x = np.concatenate([t.T, t.T - 1, rng.integers(-(2**15), 2**15, (100, c))]).astype(np.int16)
    assert np.array_equal(REGISTRY["threshold"].execute(node, [src], [x]), ref_threshold(node, x))


@pytest.mark.parametrize("per_channel", [False, True])
def test_levels_further_apart_than_the_codes_dtype_holds(per_channel):
    """A sign onto -100 / +100 (a step of 200, beyond int8, the codes' dtype) and a ternary onto
    -120 / 0 / +120: the level form wraps in int8 and comes back exact."""
    src = input_node("x", (3,), FixedType(8, 8))
    out_t = FixedType(8, 8)
    x = np.arange(-128, 128).repeat(3).reshape(-1, 3)
    other = {2: [-90, 110], 3: [-127, -7, 113]}  # another channel's evenly spaced levels
    for t, levels in (([[0]] * 3, [[-100, 100]] * 3), ([[-5, 5]] * 3, [[-120, 0, 120]] * 3)):
        if per_channel:
            levels = [levels[0], other[len(levels[0])], levels[0]]
        node = threshold_node("t", src, t, levels, out_t)
        got = REGISTRY["threshold"].execute(node, [src], [x.astype(np.int8)])
        assert np.array_equal(got, ref_threshold(node, x))


# ------------------------------------------------------------------ chunks
def _bcnn(size=12, channels=8):
    rng = np.random.default_rng(8)
    inp = input_node("x", (size, size, 3), FixedType.from_string("ufixed<8,0,RND_CONV,SAT>"))
    conv = conv2d_node("c", inp, rng.integers(-1, 1, (3, 3, 3, channels)) * 2 + 1, BINARY, padding=((1, 1), (1, 1)))
    sign = threshold_node("s", conv, rng.integers(-(2**9), 2**9, (channels, 1)), [[-1, 1]] * channels, BINARY)
    conv2 = conv2d_node("c2", sign, rng.choice([-1, 1], (3, 3, channels, channels)), BINARY, padding=((1, 1), (1, 1)))
    pool = maxpool2d_node("p", conv2)
    flat = flatten_node("f", pool)
    return Graph(
        "bcnn", [inp, conv, sign, conv2, pool, flat, dense_node("d", flat, rng.choice([-1, 1], (flat.shape[0], 10)), BINARY)]
    )


def test_chunks_change_nothing():
    graph = _bcnn()
    x = np.random.default_rng(9).uniform(-0.2, 1.2, (23, 12, 12, 3))
    whole = emulate(graph, x, batch_size=23)
    every = emulate(graph, x, batch_size=23, return_all=True)
    for b in (1, 4, 22, 100):
        assert np.array_equal(emulate(graph, x, batch_size=b), whole)
        got = emulate(graph, x, batch_size=b, return_all=True)
        assert all(np.array_equal(got[k], v) for k, v in every.items())
    assert_emulates_as_reference(graph, x[:6], batch_size=4)
    with pytest.raises(ValueError, match="batch_size"):
        emulate(graph, x, batch_size=0)


def test_memory_is_bounded_by_the_chunk_not_the_batch(monkeypatch):
    graph = _bcnn(size=16, channels=16)
    monkeypatch.setattr(emulate_module, "CHUNK_BYTES", 4 << 20)
    peaks = []
    for n in (64, 512):
        x = np.random.default_rng(n).uniform(0, 1, (n, 16, 16, 3))
        tracemalloc.start()
        emulate(graph, x)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # eight times the batch: the peak grows by the outputs (10 float64 per sample), not the windows
    assert peaks[1] < peaks[0] + 512 * 10 * 8 + (1 << 20), peaks


def test_codes_written_in_a_compact_dtype_are_the_codes():
    t = FixedType.from_string("fixed<6,2,RND_CONV,SAT>")
    x = np.random.default_rng(10).normal(0, 3, 1000)
    x[:3] = [np.inf, -np.inf, 0.5]
    x[:2] = 0.0
    want = t.codes(x)
    got = t.codes(x, dtype=np.int8)
    assert got.dtype == np.int8 and np.array_equal(got, want)
    wide = FixedType(60, 10, rounding="RND")  # the wide path, then converted
    assert np.array_equal(wide.codes(x, dtype=np.int64), wide.codes(x))
    with pytest.raises(ValueError, match="does not hold every code"):
        FixedType.from_string("ufixed<8,0>").codes(x, dtype=np.int8)
