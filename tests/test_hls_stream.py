"""io_stream export: every op followed by every other op, C-simulation equal to the emulator bit for bit.

A few chains (one compiled project each) hold between them every ordered pair of ops that a
graph can have, every op after the input and every op as the output; a fast test checks the
coverage, so a new op or a dropped chain shows up here.
"""

import itertools
import os

import numpy as np
import pytest
from graphs import BINARY, PYNQ, assert_csim_equals_emulator, chain, edge_inputs, export_quietly

from edgebnn.backends import hls4ml as hls
from edgebnn.backends.hls4ml import exporter
from edgebnn.backends.hls4ml.model import Chain, hls_chain
from edgebnn.backends.hls4ml.ops.threshold import THRESHOLD_CLASS
from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, cast_node, conv2d_node, dense_node, flatten_node, input_node, threshold_node

OPS = ("dense", "conv2d", "maxpool2d", "flatten", "threshold", "cast")
PAD = ((1, 0), (0, 1))

CHAINS = {
    "image_to_cast": (
        (8, 8, 2),
        [
            "cast",
            ("conv2d", {"kernel": (2, 2), "filters": 3, "padding": PAD, "bias": True}),
            "maxpool2d",
            ("maxpool2d", {"pool": (1, 2)}),
            ("conv2d", {"kernel": (1, 1), "filters": 2}),
            "cast",
            "flatten",
            "threshold",
            ("threshold", {"type": "ufixed<2,1>", "k": 2}),
            ("dense", {"units": 5, "bias": True}),
            "flatten",
            ("cast", {"relu": True}),
        ],
    ),
    "image_to_threshold": (
        (9, 9, 2),
        [
            ("threshold", {"type": "int<2>", "k": 1}),
            ("conv2d", {"kernel": (3, 3), "filters": 3, "binary": True}),
            "conv2d",
            "threshold",
            "maxpool2d",
            "cast",
            "conv2d",
            "threshold",
            "flatten",
            "cast",
            "threshold",
            ("dense", {"units": 6}),
            "cast",
            ("dense", {"units": 4, "bias": True}),
            "threshold",
        ],
    ),
    "pool_first": (
        (8, 8, 2),
        [
            "maxpool2d",
            "threshold",
            ("maxpool2d", {"pool": (2, 1)}),
            "flatten",
            "flatten",
            ("dense", {"units": 6}),
            ("dense", {"units": 5, "bias": True}),
            "threshold",
            "cast",
            ("cast", {"relu": True}),
            "flatten",
            "threshold",
        ],
    ),
    "ends_on_pool": (
        (7, 6, 2),
        [
            ("conv2d", {"kernel": (2, 2), "filters": 3, "strides": (2, 1), "padding": PAD}),
            ("cast", {"relu": True}),
            "maxpool2d",
        ],
    ),
    "ends_on_conv": ((6, 5, 2), ["threshold", ("conv2d", {"kernel": (3, 3), "filters": 2, "strides": (1, 2)})]),
    "conv_flatten_dense": ((5, 4, 2), [("conv2d", {"filters": 3}), "flatten", "cast", ("dense", {"units": 4})]),
    "flatten_first": ((4, 3, 2), ["flatten", ("dense", {"units": 6, "binary": True}), "flatten"]),
}


def pairs(input_shape, ops):
    names = ["input"] + [op if isinstance(op, str) else op[0] for op in ops] + ["output"]
    return set(zip(names, names[1:]))


def possible_pairs():
    """Every (op, next op) a chain graph can have: conv2d and maxpool2d read (H, W, C), dense a
    flat tensor; threshold and cast keep their input's shape, so they can precede anything."""
    image = ("conv2d", "maxpool2d", "threshold", "cast")
    flat = ("dense", "flatten", "threshold", "cast")
    want = set()
    for a, b in itertools.product(OPS, OPS):
        if (b in ("conv2d", "maxpool2d") and a in image) or (b == "dense" and a in flat) or b in ("flatten", "threshold", "cast"):
            want.add((a, b))
    want |= {("input", b) for b in OPS if b != "dense"}  # a dense first needs a flat input: tests/test_hls.py
    want |= {(a, "output") for a in OPS}
    return want


def test_chains_cover_every_pair():
    covered = set().union(*(pairs(*spec) for spec in CHAINS.values()))
    assert possible_pairs() - covered == set()


@pytest.fixture(scope="module", params=list(CHAINS))
def compiled(request, tmp_path_factory):
    shape, ops = CHAINS[request.param]
    graph = chain(ops, input_shape=shape, seed=len(request.param), name=request.param)
    project = export_quietly(graph, tmp_path_factory.mktemp("stream") / request.param, board=PYNQ, io_type="io_stream")
    project.compile()
    return request.param, graph, project


@pytest.mark.slow
def test_chain_csim_equals_emulator(compiled, capfd):
    _, graph, project = compiled
    x = edge_inputs(graph, n=200)
    assert_csim_equals_emulator(project, graph, x)
    assert len(np.unique(emulate(graph, x), axis=0)) > 10  # the outputs really vary
    # every stream is read empty: no layer reads or writes packets of the wrong size
    assert "leftover data" not in capfd.readouterr().out


@pytest.mark.slow
def test_chain_thresholds_hit_exactly(compiled):
    """Samples where some threshold's input sits exactly on one of its thresholds."""
    _, graph, project = compiled
    t = graph.input.type
    rng = np.random.default_rng(3)
    x = t.from_codes(rng.integers(t.min_code, t.max_code + 1, size=(2000, *graph.input.shape)))
    values = emulate(graph, x, return_all=True)
    on = np.zeros(len(x), dtype=bool)
    for node in graph.nodes:
        if node.op == "threshold":
            src = graph[node.inputs[0]]
            codes = src.type.codes(values[src.name]).reshape(len(x), -1, src.shape[-1])
            on |= (codes[..., None] == node.params["thresholds"][None, None]).any(axis=(1, 2, 3))
    if any(node.op == "threshold" for node in graph.nodes):
        assert on.sum() >= 20
    assert_csim_equals_emulator(project, graph, x[on][:150] if on.any() else x[:150])


# --------------------------------------------------------------- D7: a requantization right after a flatten
def flatten_requantize(seed=0):
    """The smallest case seen: (3, 2, 1) -> conv2d (2 filters, kernel (2, 1), 4-bit input, binary
    kernel) -> cast to fixed<4,3> -> flatten -> sign threshold -> dense(3), binary."""
    rng = np.random.default_rng(seed)
    inp = input_node("input", (3, 2, 1), FixedType.from_string("fixed<4,1,RND_CONV,SAT>"))
    conv = conv2d_node("conv", inp, rng.choice([-1, 1], size=(2, 1, 1, 2)), BINARY)
    cast = cast_node("cast", conv, FixedType.from_string("fixed<4,3,RND_CONV,SAT>"), relu=False)
    flat = flatten_node("flatten", cast)
    n = flat.shape[0]
    sign = threshold_node("sign", flat, rng.integers(-2, 3, size=(n, 1)), np.tile([[-1, 1]], (n, 1)), BINARY)
    dense = dense_node("dense", sign, rng.choice([-1, 1], size=(n, 3)), BINARY)
    return Graph("flatten_requantize", [inp, conv, cast, flat, sign, dense])


@pytest.mark.parametrize("io_type", ["io_stream", "io_parallel"])
def test_requantization_after_flatten(tmp_path, io_type, capfd):
    """D7: in io_stream hls4ml's flatten is a view of the pixel stream, and an activation after it
    read pixel packets while writing whole-vector packets (0 where only -1/+1 can occur)."""
    graph = flatten_requantize()
    project = export_quietly(graph, tmp_path / "prj", io_type=io_type)
    if io_type == "io_stream":  # the threshold runs on the pixels, the flatten after it
        classes = [layer.class_name for layer in project.model.get_layers()]
        assert classes == ["Input", "Conv2D", "Activation", THRESHOLD_CLASS, "Reshape", "Dense"]
    x = edge_inputs(graph, n=400)
    assert_csim_equals_emulator(project, graph, x)
    assert len(np.unique(emulate(graph, x), axis=0)) > 5
    assert "leftover data" not in capfd.readouterr().out
    traced = project.trace(x[:5])
    values = emulate(graph, x[:5], return_all=True)
    for name, got in traced.items():
        assert np.array_equal(got, values[name]), name
    assert {"conv", "cast", "sign", "dense"} <= set(traced)
    if io_type == "io_stream":  # the flatten hls4ml runs holds the threshold's results, so it is not reported
        assert "flatten" not in traced


def test_stream_chain_order(tmp_path):
    """The layers hls4ml gets in io_stream: requantizations after flattens move before them, in order,
    and the flattens keep their names and take the moved nodes' type (no compile)."""
    graph = CHAINS["pool_first"]
    graph = chain(graph[1], input_shape=graph[0])
    lowered = hls_chain(graph, "io_stream")
    ops = [(n.name, n.op) for n in lowered.nodes]
    assert [name for name, _ in ops] == [
        "input",
        "maxpool2d0",
        "threshold1",
        "maxpool2d2",
        "flatten3",
        "flatten4",
        "dense5",
        "dense6",
        "threshold7",
        "cast8",
        "cast9",
        "threshold11",
        "flatten10",
    ]
    assert lowered.moved == {"flatten10"}
    assert lowered["flatten10"].type == lowered["threshold11"].type
    assert lowered["threshold11"].shape == (5,)
    assert hls_chain(graph, "io_parallel").nodes == graph.nodes
    project = export_quietly(graph, tmp_path / "prj", io_type="io_stream")
    with open(os.path.join(project.path, "firmware", "myproject.cpp")) as fh:
        code = fh.read()
    assert "repack_stream" in code  # the final flatten repacks the stream into one packet


def test_packet_mismatch_stops_export(tmp_path, monkeypatch):
    """The post-flow check would have caught D7: without the reordering hls4ml streams the
    threshold after a flatten in pixel packets of 2 values and writes packets of 8."""
    monkeypatch.setattr(exporter, "hls_chain", lambda graph, io_type: Chain(list(graph.nodes)))
    with pytest.raises(RuntimeError, match=r"layer 'sign' in packets of 2 values and writes packets of 8"):
        hls.export(flatten_requantize(), tmp_path / "prj", io_type="io_stream")
    assert os.listdir(tmp_path) == []


def test_one_row_kernel_with_a_row_stride_is_refused_in_io_stream(tmp_path, monkeypatch):
    """hls4ml's io_stream convolution takes a one-row kernel for a 1D one and ignores the row
    stride: every row is convolved, the extra outputs stay in the stream (the fuzzer found it)."""
    graph = chain([("conv2d", {"kernel": (1, 3), "strides": (2, 1)}), "threshold"], input_shape=(6, 4, 2))
    with pytest.raises(EdgebnnError, match=r"one-row kernel \(1, 3\) with a row stride of 2"):
        hls.export(graph, tmp_path / "prj", io_type="io_stream")
    assert os.listdir(tmp_path) == []
    export_quietly(graph, tmp_path / "par", io_type="io_parallel")  # io_parallel convolves it right
    # without the refusal: the C-simulation reports the leftover data, which the project records
    monkeypatch.setattr(exporter, "check_graph", lambda graph, io_type="io_parallel": None)
    project = export_quietly(graph, tmp_path / "prj", io_type="io_stream").compile()
    x = edge_inputs(graph, 20)
    csim = project.predict(x)
    assert any("leftover data" in w for w in project.stream_warnings), project.stream_warnings
    assert not np.array_equal(csim, emulate(graph, x))
