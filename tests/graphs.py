"""Small deployment graphs built by hand (no Keras), for tests of everything downstream, and
the helpers that export them and check their C-simulation (importable without TensorFlow)."""

import warnings

import numpy as np

from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, conv2d_node, dense_node, flatten_node, input_node, threshold_node

BINARY = FixedType(2, 2)  # codes -1, +1
PYNQ = {"name": "pynq-z2", "part": "xc7z020clg400-1", "clock_period_ns": 10}  # the board every export test targets


def edge_inputs(graph, n=300, seed=0):
    """Random inputs, exact rounding ties of the input type (k + 1/2 steps), values on the grid,
    values far beyond its range (saturation or wrap-around), and zeros."""
    t = graph.input.type
    shape = (n // 4, *graph.input.shape)
    rng = np.random.default_rng(seed)
    span = t.max - t.min
    uniform = rng.uniform(t.min - 0.3 * span, t.max + 0.3 * span, size=shape)
    ties = (rng.integers(t.min_code - 8, t.max_code + 8, size=shape) + 0.5) * t.lsb
    grid = rng.integers(t.min_code, t.max_code + 1, size=shape) * t.lsb
    far = rng.choice([-1e6, -3.0 * span, 3.0 * span, 1e6, 0.0], size=shape)
    return np.concatenate([uniform, ties, grid, far])


def assert_csim_equals_emulator(project, graph, x):
    from edgebnn.emulate import emulate

    got = project.predict(x)
    want = emulate(graph, x)
    assert got.dtype == np.float64 and got.shape == want.shape
    mismatches = np.flatnonzero((got != want).any(axis=tuple(range(1, got.ndim))))
    assert np.array_equal(got, want), f"{len(mismatches)} samples differ, first {x[mismatches[:1]]}"


def export_quietly(graph, path, **kwargs):
    from edgebnn.backends import hls4ml as hls

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hls.HLSExportWarning)
        return hls.export(graph, path, **kwargs)


def csim_verified(model, graph, x, path, io_type):
    """The verify report of ``model`` = ``graph``'s emulator = its C-simulation on ``x``, exported
    to ``path`` for pynq-z2 in ``io_type``."""
    from edgebnn.verify import verify

    project = export_quietly(graph, path, board=PYNQ, io_type=io_type)
    project.compile()
    return verify(model, graph, x, project=project)


def every_op_graph(pad_code=0) -> Graph:
    """One node of every graph op: input -> conv2d ('same' padding with ``pad_code``, bias) ->
    maxpool2d -> avgpool2d -> flatten -> dense (bias) -> cast -> threshold."""
    from edgebnn.graph import avgpool2d_node, cast_node, conv2d_node, flatten_node, maxpool2d_node

    rng = np.random.default_rng(0)
    wt, bt = FixedType.from_string("fixed<3,3>"), FixedType.from_string("fixed<8,4>")
    inp = input_node("in", (5, 5, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    conv = conv2d_node(
        "conv",
        inp,
        rng.integers(-3, 4, (3, 3, 2, 3)),
        wt,
        padding=((1, 1), (1, 1)),
        pad_code=pad_code,
        bias=rng.integers(-20, 20, 3),
        bias_type=bt,
    )
    pool = maxpool2d_node("pool", conv)
    avg = avgpool2d_node("avg", pool, (2, 1))
    flat = flatten_node("flat", avg)
    dense = dense_node("dense", flat, rng.integers(-3, 4, (6, 4)), wt, bias=rng.integers(-20, 20, 4), bias_type=bt)
    cast = cast_node("cast", dense, FixedType.from_string("ufixed<4,2,RND,SAT>"), relu=True)
    thr = threshold_node("thr", cast, [[2, 9], [0, 15], [5, 5], [1, 3]], [[-2, 0, 1]] * 4, FixedType(2, 2))
    return Graph("every_op", [inp, conv, pool, avg, flat, dense, cast, thr])


def depthwise_graph() -> Graph:
    """The depthwise family: input -> depthwise_conv2d (depth multiplier 2, 'same' padding, bias)
    -> cast -> a separable pair (a 2x2 depthwise_conv2d at stride (1, 2), then a 1x1 conv2d with
    bias reading its accumulator) -> threshold -> a dilated conv2d (a 2x2 kernel at dilation 2:
    its 3x3 kernel with zeros between the taps) -> cast."""
    from edgebnn.graph import cast_node, conv2d_node, depthwise_conv2d_node
    from edgebnn.graph.ops._weighted import dilated

    rng = np.random.default_rng(1)
    wt, bt = FixedType.from_string("fixed<3,3>"), FixedType.from_string("fixed<8,4>")
    inp = input_node("in", (6, 7, 2), FixedType.from_string("fixed<5,2,RND_CONV,SAT>"))
    dw = depthwise_conv2d_node(
        "dw", inp, rng.integers(-3, 4, (3, 3, 2, 2)), wt, padding=((1, 1), (1, 1)), bias=rng.integers(-20, 20, 4), bias_type=bt
    )
    cast = cast_node("cast", dw, FixedType.from_string("fixed<5,3,RND,SAT>"), relu=False)
    sep_dw = depthwise_conv2d_node("sep_dw", cast, rng.integers(-3, 4, (2, 2, 4, 1)), wt, strides=(1, 2))
    sep_pw = conv2d_node("sep_pw", sep_dw, rng.integers(-3, 4, (1, 1, 4, 3)), wt, bias=rng.integers(-20, 20, 3), bias_type=bt)
    c = sep_pw.shape[-1]
    thr = threshold_node("thr", sep_pw, [[-30, 10]] * c, [[-1, 0, 1]] * c, FixedType(2, 2))
    dil = conv2d_node("dil", thr, dilated(rng.integers(-3, 4, (2, 2, 3, 2)), (2, 2)), wt)
    out = cast_node("out", dil, FixedType.from_string("fixed<4,3,RND_CONV,SAT>"), relu=True)
    return Graph("depthwise", [inp, dw, cast, sep_dw, sep_pw, thr, dil, out])


def lattice_graph(seed=0) -> Graph:
    """Thresholds on the accumulator's lattice (``edgebnn.graph.lattice``), as freeze places them:
    input -> dense (+-1 weights) -> sign -> dense (+-1 weights, 7 binary inputs: odd sums, step 2)
    -> 3-level threshold onto odd codes (-3, -1, 1) -> dense (weights +-2 on inputs of step 2: step
    4, a bias offset) -> ternary threshold.
    The last two compare in fewer bits (``compare_shift``)."""
    from edgebnn.graph.lattice import lattice, on_lattice

    rng = np.random.default_rng(seed)
    nodes = [input_node("x", (6,), FixedType.from_string("ufixed<4,0,RND_CONV,SAT>"))]

    def thresholded(name, src, levels, out_type):
        base, step = lattice(src, {n.name: n for n in nodes}.__getitem__)
        lo, hi = on_lattice(src.type.codes(src.lo), src.type.codes(src.hi), base, step)
        k = len(levels) - 1
        t = np.sort([lo + step * rng.integers(0, (hi - lo) // step + 1) for _ in range(k)], axis=0).T
        return threshold_node(name, src, t, [levels] * len(base), out_type, lattice=(base, step))

    d0 = dense_node("d0", nodes[0], rng.choice([-1, 1], (6, 7)), BINARY)
    nodes.append(d0)
    nodes.append(thresholded("sign0", d0, [-1, 1], BINARY))
    d1 = dense_node("d1", nodes[-1], rng.choice([-1, 1], (7, 5)), BINARY)
    nodes.append(d1)
    nodes.append(thresholded("q1", d1, [-3, -1, 1], FixedType(3, 3)))
    d2 = dense_node("d2", nodes[-1], 2 * rng.choice([-1, 1], (5, 3)), FixedType(3, 3), rng.integers(-3, 4, 3), FixedType(4, 4))
    nodes.append(d2)
    nodes.append(thresholded("q2", d2, [-1, 0, 1], FixedType(2, 2)))
    return Graph("lattice", nodes)


def affine_graph(seed=0) -> Graph:
    """Exact affine forms (what a BatchNormalization ending a model becomes), per channel after a
    convolution and on a flat vector: input -> conv2d -> affine (scales a power of two, odd, zero)
    -> flatten -> dense -> affine (negative and fractional scales, offsets)."""
    from edgebnn.graph import affine_node, conv2d_node, flatten_node

    rng = np.random.default_rng(seed)
    inp = input_node("x", (4, 4, 2), FixedType.from_string("fixed<5,2,RND_CONV,SAT>"))
    conv = conv2d_node("c", inp, rng.integers(-2, 2, (2, 2, 2, 3)), FixedType(2, 2))
    a0 = affine_node("a0", conv, [4, 3, 0], FixedType.from_string("ufixed<3,1>"), [1, -6, 5], FixedType(4, 2))
    flat = flatten_node("f", a0)
    dense = dense_node("d", flat, rng.integers(-1, 2, (27, 4)), BINARY)
    a1 = affine_node(
        "a1", dense, [-8, 1, 5, -1], FixedType.from_string("fixed<5,1>"), [3, 0, -7, 12], FixedType.from_string("fixed<6,3>")
    )
    return Graph("affine", [inp, conv, a0, flat, dense, a1])


def ops_1d_graph() -> Graph:
    """The 1-D ops: input (12, 2) -> conv1d (padding [1, 1], bias) -> maxpool1d (overlapping
    windows of 3 at stride 2) -> sumpool1d
    (overlapping windows of 3 values) -> zeropad1d -> avgpool1d -> zeropad1d of a non-zero code (a
    QuantConv1D's pad_values) -> conv1d (a dilated kernel: zero middle tap) -> maxpool1d over the
    whole length (a global max pool) -> flatten -> dense -> threshold."""
    from edgebnn.graph import avgpool1d_node, conv1d_node, flatten_node, maxpool1d_node, sumpool1d_node, zeropad1d_node

    rng = np.random.default_rng(1)
    wt, bt = FixedType.from_string("fixed<3,3>"), FixedType.from_string("fixed<8,4>")
    inp = input_node("in", (12, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    conv = conv1d_node(
        "conv", inp, rng.integers(-3, 4, (3, 2, 3)), wt, padding=(1, 1), bias=rng.integers(-20, 20, 3), bias_type=bt
    )
    pool = maxpool1d_node("pool", conv, 3, 2)  # overlapping windows
    sums = sumpool1d_node("sum", pool, 3, 1)
    pad = zeropad1d_node("pad", sums, (2, 2))
    avg = avgpool1d_node("avg", pad, 2)
    kernel = rng.integers(-3, 4, (3, 3, 2))
    kernel[1] = 0  # dilation 2 as freeze writes it
    padv = zeropad1d_node("padv", avg, (1, 1), pad_code=-3)
    conv2 = conv1d_node("conv2", padv, kernel, wt)
    glob = maxpool1d_node("glob", conv2, 3)
    flat = flatten_node("flat", glob)
    dense = dense_node("dense", flat, rng.integers(-3, 4, (2, 3)), wt)
    thr = threshold_node("thr", dense, [[-9, 4], [0, 15], [5, 5]], [[-2, 0, 1]] * 3, FixedType(2, 2))
    return Graph("ops_1d", [inp, conv, pool, sums, pad, avg, padv, conv2, glob, flat, dense, thr])


def dag_graph() -> Graph:
    """Branches and merges: input -> conv1 -> thr1, which three nodes read (conv2, add1, cat);
    conv2 -> cast2 (a finer grid than thr1's) -> add1 = thr1 + cast2 -> cat = [add1, thr1]
    (channels), which two 1x1 convolutions read, whose accumulators add2 sums -> flatten -> dense."""
    from edgebnn.graph import add_node, cast_node, concatenate_node, conv2d_node, flatten_node

    rng = np.random.default_rng(3)
    wt, bt = FixedType.from_string("fixed<3,3>"), FixedType.from_string("fixed<8,4>")
    inp = input_node("in", (4, 4, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    conv1 = conv2d_node("conv1", inp, rng.integers(-3, 4, (3, 3, 2, 3)), wt, padding=((1, 1), (1, 1)))
    lo, hi = conv1.type.codes(conv1.lo), conv1.type.codes(conv1.hi)
    t = np.sort(rng.integers(lo[:, None], hi[:, None] + 1, size=(3, 3)), axis=1)
    thr1 = threshold_node("thr1", conv1, t, [[-2, -1, 0, 1], [1, 0, -1, -2], [-2, -1, 0, 1]], FixedType(2, 2))
    conv2 = conv2d_node("conv2", thr1, rng.integers(-3, 4, (1, 1, 3, 3)), wt)
    cast2 = cast_node("cast2", conv2, FixedType.from_string("ufixed<4,2,RND,SAT>"), relu=True)
    add1 = add_node("add1", [thr1, cast2])
    cat = concatenate_node("cat", [add1, thr1])
    conv3a = conv2d_node("conv3a", cat, rng.integers(-3, 4, (1, 1, 6, 2)), wt, bias=rng.integers(-20, 20, 2), bias_type=bt)
    conv3b = conv2d_node("conv3b", cat, rng.integers(-3, 4, (1, 1, 6, 2)), wt)
    add2 = add_node("add2", [conv3a, conv3b])
    flat = flatten_node("flat", add2)
    dense = dense_node("dense", flat, rng.integers(-3, 4, (32, 3)), wt)
    return Graph("dag", [inp, conv1, thr1, conv2, cast2, add1, cat, conv3a, conv3b, add2, flat, dense])


# every graph op sits in one of these example graphs (tests/test_conformance.py walks them all,
# one C-simulation per graph and io type); a new family of ops adds its own graph here
def ops_2d_graph() -> Graph:
    """The 2-D view and window ops: input -> pad2d (a non-zero code) -> sumpool2d (3x3 windows,
    stride 2) -> threshold -> reshape (3, 3, 2) -> (3, 6, 1) -> conv2d -> maxpool2d (overlapping
    2x2 windows at stride 1) -> sumpool2d over the whole (1, 4) window (a global average's sum) ->
    threshold -> flatten -> dense."""
    from edgebnn.emulate import emulate
    from edgebnn.graph import conv2d_node, flatten_node, maxpool2d_node, pad2d_node, reshape_node, sumpool2d_node

    rng = np.random.default_rng(3)
    it = FixedType.from_string("fixed<6,2,RND_CONV,SAT>")
    x = rng.uniform(it.min, it.max, size=(256, 5, 6, 2))
    nodes = [input_node("in", (5, 6, 2), it)]

    def add_threshold(name, out_type, k=3):
        src = nodes[-1]
        c = src.shape[-1]
        codes = src.type.codes(emulate(Graph("partial", list(nodes)), x, return_all=True)[src.name]).reshape(-1, c)
        t = np.quantile(codes, np.linspace(0, 1, k + 2)[1:-1], axis=0, method="nearest").T.astype(np.int64)
        levels = np.round(np.linspace(out_type.min_code, out_type.max_code, k + 1)).astype(np.int64)
        nodes.append(threshold_node(name, src, t, np.tile(levels, (c, 1)), out_type))

    nodes.append(pad2d_node("pad", nodes[-1], ((1, 1), (0, 1)), pad_code=-5))
    nodes.append(sumpool2d_node("sum", nodes[-1], (3, 3), (2, 2)))
    add_threshold("q0", FixedType.from_string("fixed<3,1>"), k=7)  # 7 thresholds: the binary search
    nodes.append(reshape_node("view", nodes[-1], (3, 6, 1)))
    wt = FixedType.from_string("fixed<3,3>")
    nodes.append(conv2d_node("conv", nodes[-1], rng.integers(-3, 4, (2, 2, 1, 3)), wt))
    nodes.append(maxpool2d_node("mp", nodes[-1], (2, 2), (1, 1)))  # overlapping windows (io_stream: EdgebnnPool2D)
    nodes.append(sumpool2d_node("gsum", nodes[-1], tuple(nodes[-1].shape[:2])))
    add_threshold("q1", FixedType.from_string("ufixed<2,2>"))
    nodes.append(flatten_node("flat", nodes[-1]))
    nodes.append(dense_node("dense", nodes[-1], rng.integers(-3, 4, (3, 4)), wt))
    return Graph("ops_2d", nodes)


def merge3_graph() -> Graph:
    """Merges of more than two inputs: input -> conv1, which thr1 and cast3 (a fine grid) read;
    thr1 -> conv2 -> cast2; add3 = cast2 + thr1 + cast3; cat = [thr1, thr1, add3, cast2]
    (channels; thr1 twice, so io_stream starts its chain at the second input) -> flatten -> dense."""
    from edgebnn.graph import add_node, cast_node, concatenate_node, conv2d_node, flatten_node

    rng = np.random.default_rng(5)
    wt = FixedType.from_string("fixed<3,3>")
    inp = input_node("in", (3, 3, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    conv1 = conv2d_node("conv1", inp, rng.integers(-3, 4, (3, 3, 2, 3)), wt, padding=((1, 1), (1, 1)))
    lo, hi = conv1.type.codes(conv1.lo), conv1.type.codes(conv1.hi)
    t = np.sort(rng.integers(lo[:, None], hi[:, None] + 1, size=(3, 3)), axis=1)
    thr1 = threshold_node("thr1", conv1, t, [[-2, -1, 0, 1], [1, 0, -1, -2], [-2, -1, 0, 1]], FixedType(2, 2))
    cast3 = cast_node("cast3", conv1, FixedType.from_string("fixed<5,1,RND,SAT>"), relu=False)
    conv2 = conv2d_node("conv2", thr1, rng.integers(-3, 4, (1, 1, 3, 3)), wt)
    cast2 = cast_node("cast2", conv2, FixedType.from_string("ufixed<4,2,RND,SAT>"), relu=True)
    add3 = add_node("add3", [cast2, thr1, cast3])
    cat = concatenate_node("cat", [thr1, thr1, add3, cast2])
    flat = flatten_node("flat", cat)
    dense = dense_node("dense", flat, rng.integers(-3, 4, (108, 3)), wt)
    return Graph("merge3", [inp, conv1, thr1, cast3, conv2, cast2, add3, cat, flat, dense])


OP_GRAPHS = {
    "every_op": every_op_graph,
    "depthwise": depthwise_graph,
    "lattice": lattice_graph,
    "affine": affine_graph,
    "ops_1d": ops_1d_graph,
    "dag": dag_graph,
    "ops_2d": ops_2d_graph,
    "merge3": merge3_graph,
}


def binary_mlp(sizes=(16, 12, 8, 4), seed=0, input_type="ufixed<8,0,RND_CONV,SAT>", out_levels=None, out_thresholds=5):
    """Input -> [dense(binary weights) -> sign threshold] * n -> dense, random thresholds.

    With ``out_levels`` (a FixedType string) the last dense gets a multi-level threshold of
    ``out_thresholds`` thresholds per channel.
    """
    rng = np.random.default_rng(seed)
    nodes = [input_node("input", (sizes[0],), FixedType.from_string(input_type))]
    for i, n_out in enumerate(sizes[1:]):
        src = nodes[-1]
        w = rng.choice(np.array([-1, 1]), size=(src.shape[-1], n_out))
        d = dense_node(f"dense{i}", src, w, BINARY)
        nodes.append(d)
        last = i == len(sizes) - 2
        if last and out_levels is None:
            break
        lo = d.type.codes(d.lo)
        hi = d.type.codes(d.hi)
        if not last:
            t = rng.integers(lo, hi + 1)[:, None]
            sign = rng.choice(np.array([-1, 1]), size=n_out)
            levels = np.stack([-sign, sign], axis=1)
            nodes.append(threshold_node(f"sign{i}", d, t, levels, BINARY))
        else:
            ot = FixedType.from_string(out_levels)
            k = out_thresholds
            t = np.sort(rng.integers(lo[:, None], hi[:, None] + 1, size=(n_out, k)), axis=1)
            levels = np.sort(rng.integers(ot.min_code, ot.max_code + 1, size=(n_out, k + 1)), axis=1)
            nodes.append(threshold_node(f"levels{i}", d, t, levels, ot))
    return Graph("binary_mlp", nodes)


def calibrated_mlp(
    sizes=(16, 12, 8, 4),
    seed=0,
    input_type="fixed<7,2,RND_CONV,SAT>",
    weight_type="fixed<3,1>",
    bias_type="fixed<6,2>",
    act_type="ufixed<2,1>",
    act_thresholds=3,
    input_levels=None,
    out_levels="fixed<6,3,RND_CONV,SAT>",
    weight_codes=None,
    act_levels=None,
    n_calib=512,
):
    """Input -> [threshold on the input] -> [dense(multi-bit weights, bias) -> k-level threshold] * n.

    Thresholds sit at quantiles of each channel's values on random inputs, so outputs vary and
    some inputs land exactly on a threshold. ``input_levels`` (a FixedType string) first
    requantizes the input itself; ``out_levels=None`` ends on the last dense accumulator.
    ``weight_codes`` / ``act_levels`` restrict weights / hidden activations to those codes
    (e.g. (-1, 1) for a BNN); by default weights span their type and levels spread over it.
    """
    from edgebnn.emulate import emulate

    rng = np.random.default_rng(seed)
    it, wt, bt, at = (FixedType.from_string(s) for s in (input_type, weight_type, bias_type, act_type))
    x = rng.uniform(it.min, it.max, size=(n_calib, sizes[0]))
    nodes = [input_node("input", (sizes[0],), it)]

    def add_threshold(name, out_type, k, levels=None):
        src = nodes[-1]
        values = emulate(Graph("partial", list(nodes)), x, return_all=True)[src.name]
        quantiles = np.linspace(0, 1, k + 2)[1:-1]
        t = np.quantile(src.type.codes(values), quantiles, axis=0, method="nearest").T.astype(np.int64)
        if levels is None:  # evenly spread over the type: every level distinct when it fits
            levels = np.round(np.linspace(out_type.min_code, out_type.max_code, k + 1)).astype(np.int64)
        levels = np.array(np.broadcast_to(levels, (t.shape[0], k + 1)))
        nodes.append(threshold_node(name, src, t, levels, out_type))

    if input_levels is not None:
        add_threshold("input_levels", FixedType.from_string(input_levels), 3)
    for i, n_out in enumerate(sizes[1:]):
        src = nodes[-1]
        if weight_codes is None:
            w = rng.integers(wt.min_code, wt.max_code + 1, size=(src.shape[-1], n_out))
        else:
            w = rng.choice(np.asarray(weight_codes), size=(src.shape[-1], n_out))
        b = rng.integers(bt.min_code, bt.max_code + 1, size=n_out)
        nodes.append(dense_node(f"dense{i}", src, w, wt, b, bt))
        if i < len(sizes) - 2:
            add_threshold(f"act{i}", at, act_thresholds, act_levels)
        elif out_levels is not None:
            ot = FixedType.from_string(out_levels)
            k = 5
            levels = np.sort(rng.integers(ot.min_code, ot.max_code + 1, size=(n_out, k + 1)), axis=1)
            add_threshold(f"levels{i}", ot, k, levels)
    return Graph("calibrated_mlp", nodes)


def conv_net(
    seed=0,
    input_shape=(5, 5, 2),
    input_type="ufixed<8,0,RND_CONV,SAT>",
    convs=({"kernel": (3, 3), "filters": 3, "padding": ((1, 1), (1, 1))}, {"kernel": (3, 3), "filters": 3}),
    weight_type="int<2>",
    weight_codes=(-1, 1),
    bias_type=None,
    act_type="int<2>",
    act_levels=(-1, 1),
    act_thresholds=1,
    n_out=4,
    out_levels=None,
    n_calib=256,
    pad_code=0,
    pools=None,
):
    """Input -> [conv2d -> calibrated threshold] * n -> flatten -> dense [-> calibrated threshold].

    Each entry of ``convs`` gives ``kernel``, ``filters`` and optional ``strides`` / ``padding``
    (explicit amounts). Thresholds sit at per-channel quantiles of the accumulator on random
    inputs, so outputs vary and ties occur. ``weight_codes=None`` spans the whole weight type;
    ``bias_type`` (a FixedType string) adds a random bias to every conv and the dense.
    ``pad_code`` is the first conv's padding value (non-zero ones are refused by export).
    ``pools`` maps a conv index to a list of maxpool2d specs ``{"pool", "strides", "where"}``:
    ``where`` "acc" pools the accumulator (before the threshold), "act" the thresholded output.
    """
    from edgebnn.emulate import emulate
    from edgebnn.graph import conv2d_node, flatten_node, maxpool2d_node

    rng = np.random.default_rng(seed)
    it, wt, at = (FixedType.from_string(s) for s in (input_type, weight_type, act_type))
    bt = None if bias_type is None else FixedType.from_string(bias_type)
    x = rng.uniform(it.min, it.max, size=(n_calib, *input_shape))
    nodes = [input_node("input", tuple(input_shape), it)]

    def weights(shape):
        if weight_codes is None:
            return rng.integers(wt.min_code, wt.max_code + 1, size=shape)
        return rng.choice(np.asarray(weight_codes), size=shape)

    def bias(n):
        return None if bt is None else rng.integers(bt.min_code, bt.max_code + 1, size=n)

    def add_threshold(name, out_type, k, levels=None):
        src = nodes[-1]
        values = emulate(Graph("partial", list(nodes)), x, return_all=True)[src.name]
        c = src.shape[-1]
        quantiles = np.linspace(0, 1, k + 2)[1:-1]
        codes = src.type.codes(values).reshape(-1, c)
        t = np.quantile(codes, quantiles, axis=0, method="nearest").T.astype(np.int64)
        if levels is None:
            levels = np.round(np.linspace(out_type.min_code, out_type.max_code, k + 1)).astype(np.int64)
        levels = np.array(np.broadcast_to(levels, (c, k + 1)))
        nodes.append(threshold_node(name, src, t, levels, out_type))

    for i, spec in enumerate(convs):
        src = nodes[-1]
        kh, kw = spec["kernel"]
        w = weights((kh, kw, src.shape[-1], spec["filters"]))
        nodes.append(
            conv2d_node(
                f"conv{i}",
                src,
                w,
                wt,
                strides=spec.get("strides", (1, 1)),
                padding=spec.get("padding", ((0, 0), (0, 0))),
                pad_code=pad_code if i == 0 else 0,
                bias=bias(spec["filters"]),
                bias_type=bt,
            )
        )
        specs = (pools or {}).get(i, [])
        for where in ("acc", "act"):
            for j, p in enumerate(s for s in specs if s.get("where", "act") == where):
                nodes.append(maxpool2d_node(f"pool{i}_{where}{j}", nodes[-1], p["pool"], p.get("strides")))
            if where == "acc":
                add_threshold(f"act{i}", at, act_thresholds, act_levels)
    nodes.append(flatten_node("flatten", nodes[-1]))
    nodes.append(dense_node("dense", nodes[-1], weights((nodes[-1].shape[0], n_out)), wt, bias(n_out), bt))
    if out_levels is not None:
        add_threshold("levels", FixedType.from_string(out_levels), 5)
    return Graph("conv_net", nodes)


def chain(ops, input_shape=(6, 6, 2), input_type="ufixed<6,0,RND_CONV,SAT>", seed=0, n_calib=256, name="chain"):
    """Input -> ``ops`` in order: a chain of any nodes, for tests of how ops follow each other.

    Each entry is an op name or ``(op, options)``:
    ``dense`` {units, binary, bias}; ``conv2d`` {kernel, filters, strides, padding, binary, bias};
    ``maxpool2d`` {pool, strides}; ``flatten``; ``threshold`` {type, k}; ``cast`` {type, relu}.
    Weights are random codes of fixed<3,1> (``binary``: +-1 codes of int<2>), with a random
    fixed<5,2> bias when ``bias``. Thresholds sit at per-channel quantiles of their input on
    random inputs (channels are the last axis: after a flatten, every flat feature), so outputs
    vary and ties occur; levels spread over ``type`` (default fixed<4,2>). A cast without ``type``
    rounds (RND_CONV) one fractional bit off its input and saturates (SAT) about the top fifth.
    """
    import math

    from edgebnn.emulate import emulate
    from edgebnn.graph import cast_node, conv2d_node, flatten_node, maxpool2d_node

    rng = np.random.default_rng(seed)
    it = FixedType.from_string(input_type)
    x = rng.uniform(it.min, it.max, size=(n_calib, *input_shape))
    nodes = [input_node("input", tuple(input_shape), it)]

    def values():
        return emulate(Graph("partial", list(nodes)), x, return_all=True)[nodes[-1].name]

    def weights(shape, binary):
        if binary:
            return rng.choice(np.array([-1, 1]), size=shape), BINARY
        wt = FixedType.from_string("fixed<3,1>")
        return rng.integers(wt.min_code, wt.max_code + 1, size=shape), wt

    def bias(n, wanted):
        bt = FixedType.from_string("fixed<5,2>")
        return (rng.integers(bt.min_code, bt.max_code + 1, size=n), bt) if wanted else (None, None)

    for i, entry in enumerate(ops):
        op, opt = (entry, {}) if isinstance(entry, str) else entry
        src = nodes[-1]
        label = f"{op}{i}"
        if op == "dense":
            w, wt = weights((src.shape[-1], opt.get("units", 4)), opt.get("binary", False))
            b, bt = bias(w.shape[1], opt.get("bias", False))
            nodes.append(dense_node(label, src, w, wt, b, bt))
        elif op == "conv2d":
            kh, kw = opt.get("kernel", (2, 2))
            w, wt = weights((kh, kw, src.shape[-1], opt.get("filters", 2)), opt.get("binary", False))
            b, bt = bias(w.shape[3], opt.get("bias", False))
            nodes.append(
                conv2d_node(
                    label,
                    src,
                    w,
                    wt,
                    strides=opt.get("strides", (1, 1)),
                    padding=opt.get("padding", ((0, 0), (0, 0))),
                    bias=b,
                    bias_type=bt,
                )
            )
        elif op == "maxpool2d":
            nodes.append(maxpool2d_node(label, src, opt.get("pool", (2, 2)), opt.get("strides")))
        elif op == "flatten":
            nodes.append(flatten_node(label, src))
        elif op == "threshold":
            out_type = FixedType.from_string(opt.get("type", "fixed<4,2>"))
            k = opt.get("k", 3)
            c = src.shape[-1]
            codes = src.type.codes(values()).reshape(-1, c)
            t = np.quantile(codes, np.linspace(0, 1, k + 2)[1:-1], axis=0, method="nearest").T.astype(np.int64)
            levels = np.round(np.linspace(out_type.min_code, out_type.max_code, k + 1)).astype(np.int64)
            nodes.append(threshold_node(label, src, t, np.tile(levels, (c, 1)), out_type))
        elif op == "cast":
            relu = opt.get("relu", False)
            out_type = opt.get("type")
            if out_type is None:
                v = values()
                top = float(np.quantile(np.abs(np.maximum(v, 0) if relu else v), 0.8)) + src.type.lsb
                integer = math.floor(math.log2(top)) + (not relu)  # the largest value is below top
                frac = src.type.fractional - 1
                out_type = FixedType(max(2, integer + frac), max(integer, 2 - frac), not relu, "RND_CONV", "SAT")
            else:
                out_type = FixedType.from_string(out_type)
            nodes.append(cast_node(label, src, out_type, relu=relu))
        else:
            raise ValueError(f"unknown op {op!r}")
    return Graph(name, nodes)


def fuzz_cases(holds, n: int, start: int = 0, limit: int = 300) -> list:
    """The first ``n`` fuzzer models (seeds from ``start``) whose layer lines satisfy ``holds``:
    tests of a generated layer find their models by what they hold, not by pinned seeds."""
    from edgebnn import fuzz

    cases = []
    for seed in range(start, start + limit):
        if holds(fuzz.layer_lines(seed)):  # drawn, not built: only the seeds wanted are built
            case = fuzz.random_model(seed)
            assert holds(case.layers), case.layers
            cases.append(case)
            if len(cases) == n:
                return cases
    raise AssertionError(f"fewer than {n} of {limit} fuzzer models from seed {start} hold what the test needs")


def keras_edge_inputs(n, seed, shape):
    """Keras inputs for a model whose input quantizer has the step 1/16: on that grid, exact ties,
    one float32 ulp around ties, out of range both ways."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(-4, 20, size=(n, *shape))
    tie = ((codes + 0.5) / 16).astype(np.float32)
    kind = rng.integers(0, 5, size=codes.shape)
    x = np.where(kind == 0, codes / 16, tie).astype(np.float32)
    x = np.where(kind == 2, np.nextafter(tie, np.float32(np.inf)), x)
    x = np.where(kind == 3, np.nextafter(tie, np.float32(-np.inf)), x)
    return np.where(kind == 4, rng.choice(np.array([-1e3, 0.0, 1e3], np.float32), codes.shape), x)


# -------------------------------------------------------------- graphs built directly (estimates)
W8 = FixedType(8, 1)


def dense_graph(
    n_in=64, n_out=32, weight_type=W8, input_type="fixed<8,3>", seed=0, zero_fraction=0.0, weight=None, bias=None, bias_type=None
):
    """Input -> one dense with random weight codes over the whole range of ``weight_type``."""
    rng = np.random.default_rng(seed)
    if weight is None:
        weight = rng.integers(weight_type.min_code, weight_type.max_code + 1, size=(n_in, n_out))
        weight[rng.random(weight.shape) < zero_fraction] = 0
    weight = np.asarray(weight)
    inp = input_node("input", (weight.shape[0],), FixedType.from_string(input_type))
    return Graph("dense_graph", [inp, dense_node("dense", inp, weight, weight_type, bias, bias_type)])


def conv_graph(
    h=6,
    w=5,
    c=3,
    f=4,
    k=(3, 3),
    strides=(1, 1),
    padding=((1, 1), (1, 1)),
    seed=0,
    weight_type=W8,
    input_type="fixed<8,3>",
    sign=True,
):
    """Input (h, w, c) -> conv2d -> [sign threshold per channel] -> flatten."""
    rng = np.random.default_rng(seed)
    weight = rng.integers(weight_type.min_code, weight_type.max_code + 1, size=(*k, c, f))
    inp = input_node("input", (h, w, c), FixedType.from_string(input_type))
    conv = conv2d_node("conv", inp, weight, weight_type, strides, padding)
    nodes = [inp, conv]
    if sign:
        lo, hi = conv.type.codes(conv.lo), conv.type.codes(conv.hi)
        t = rng.integers(lo, hi + 1)[:, None]
        nodes.append(threshold_node("sign", conv, t, np.tile([-1, 1], (f, 1)), BINARY))
    nodes.append(flatten_node("flat", nodes[-1]))
    return Graph("conv_graph", nodes), weight
