"""export of conv2d and flatten: hls4ml C-simulation equals the emulator bit for bit."""

import os

import numpy as np
import pytest
from graphs import PYNQ, assert_csim_equals_emulator, calibrated_mlp, conv_net, edge_inputs, export_quietly

from edgebnn.backends import hls4ml as hls
from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, cast_node, conv2d_node, flatten_node, input_node

MULTIBIT = dict(
    seed=1,
    weight_type="fixed<3,1>",
    weight_codes=None,
    bias_type="fixed<6,2>",
    act_type="ufixed<2,1>",
    act_levels=None,
    act_thresholds=3,
    out_levels="fixed<6,3,RND_CONV,SAT>",
)


def conv_cast_flat(seed=0):
    """Input -> conv2d (bias, padding) -> relu cast onto a rounding, saturating type -> flatten as the
    last node (hls4ml drops it in io_parallel and repacks the stream in io_stream)."""
    rng = np.random.default_rng(seed)
    inp = input_node("input", (4, 4, 2), FixedType.from_string("fixed<6,2,RND_CONV,SAT>"))
    conv = conv2d_node(
        "conv",
        inp,
        rng.integers(-4, 4, size=(2, 3, 2, 3)),
        FixedType.from_string("fixed<3,1>"),
        padding=((0, 1), (1, 1)),
        bias=rng.integers(-8, 8, size=3),
        bias_type=FixedType.from_string("fixed<5,2>"),
    )
    cast = cast_node("cast", conv, FixedType.from_string("ufixed<4,2,RND_CONV,SAT>"), relu=True)
    return Graph("conv_cast_flat", [inp, conv, cast, flatten_node("flat", cast)])


POINTWISE = ({"kernel": (1, 1), "filters": 3}, {"kernel": (1, 1), "filters": 3, "strides": (2, 1), "padding": ((1, 0), (0, 1))})
POOLS = {0: [{"pool": (2, 2), "where": "acc"}], 1: [{"pool": (2, 1), "strides": (1, 1), "where": "act"}]}
POOLS_STREAM = {0: [{"pool": (2, 2), "where": "act"}], 1: [{"pool": (1, 2), "where": "acc"}]}

# --------------------------------------------------------------- exported and compiled once per graph
# (the conftest fixture `compiled` gives (name, graph, project) for each)
CASES = {
    # a BNN: +-1 weights (hls4ml's ternary product), 'same' padding as explicit zeros, sign activations
    "conv_bnn": (lambda: conv_net(), {}),
    # multi-bit weights with bias, stride 2 with asymmetric padding, 2-bit activations, graph ends on a threshold
    "conv_multibit": (
        lambda: conv_net(
            convs=(
                {"kernel": (3, 3), "filters": 3, "strides": (2, 2), "padding": ((0, 1), (1, 0))},
                {"kernel": (2, 2), "filters": 3},
            ),
            **MULTIBIT,
        ),
        {},
    ),
    # Resource strategy transposes conv weights to (F, kh, kw, C) inside hls4ml
    "conv_resource": (
        lambda: conv_net(
            convs=(
                {"kernel": (2, 2), "filters": 4, "padding": ((1, 0), (0, 1))},
                {"kernel": (3, 3), "filters": 2, "strides": (2, 1)},
            ),
            **{**MULTIBIT, "seed": 3},
        ),
        {"backend": "Vivado", "strategy": "Resource", "reuse_factor": 2},
    ),
    "conv_cast_flat": (conv_cast_flat, {}),
    # io_stream: the threshold's stream version, pixels of n_chan values, the flatten folded away
    "conv_bnn_stream": (lambda: conv_net(), {"io_type": "io_stream"}),
    "conv_multibit_stream": (
        lambda: conv_net(
            convs=(
                {"kernel": (3, 3), "filters": 3, "strides": (2, 2), "padding": ((0, 1), (1, 0))},
                {"kernel": (2, 2), "filters": 3},
            ),
            **MULTIBIT,
        ),
        {"io_type": "io_stream"},
    ),
    "conv_cast_flat_stream": (conv_cast_flat, {"io_type": "io_stream"}),
    # max pooling on an accumulator and on thresholded outputs (overlapping, stride 1, odd sizes dropped)
    "conv_pool": (lambda: conv_net(input_shape=(9, 9, 2), pools=POOLS, **{**MULTIBIT, "seed": 4}), {}),
    "conv_pool_bnn": (lambda: conv_net(input_shape=(9, 9, 2), pools=POOLS_STREAM), {}),
    "conv_pool_stream": (lambda: conv_net(input_shape=(9, 9, 2), pools=POOLS_STREAM), {"io_type": "io_stream"}),
    # overlapping windows in io_stream: edgebnn's EdgebnnPool2D (hls4ml's own asserts strides = pool)
    "conv_pool_overlap_stream": (lambda: conv_net(input_shape=(9, 9, 2), pools=POOLS), {"io_type": "io_stream"}),
    # 1x1 kernels: hls4ml's PointwiseConv2D (D3), stride 1 and stride (2, 1) with padding
    "pointwise": (lambda: conv_net(input_shape=(5, 4, 2), convs=POINTWISE, **{**MULTIBIT, "seed": 5}), {}),
    "pointwise_bnn_stream": (lambda: conv_net(input_shape=(5, 4, 2), convs=POINTWISE), {"io_type": "io_stream"}),
    "pointwise_resource": (
        lambda: conv_net(input_shape=(5, 4, 2), convs=POINTWISE, **{**MULTIBIT, "seed": 6}),
        {"backend": "Vivado", "strategy": "Resource", "reuse_factor": {"conv0": 2, "conv1": 3, "dense": 5}},
    ),
    "pointwise_resource_stream": (
        lambda: conv_net(input_shape=(5, 4, 2), convs=POINTWISE, **{**MULTIBIT, "seed": 7}),
        # reuse factors above n_in: io_stream convolutions take them (io_parallel ones assert)
        {"strategy": "Resource", "reuse_factor": {"conv0": 6, "conv1": 9, "dense": 90}, "io_type": "io_stream"},
    ),
    # a flat network in io_stream: one packet per vector
    "mlp_stream": (lambda: calibrated_mlp(input_levels="ufixed<3,1>"), {"io_type": "io_stream"}),
}


def test_csim_equals_emulator(compiled):
    _, graph, project = compiled
    x = edge_inputs(graph, n=120)
    assert_csim_equals_emulator(project, graph, x)
    assert len(np.unique(emulate(graph, x), axis=0)) > 10  # the outputs really vary


def test_inputs_near_first_thresholds(compiled):
    """Constant inputs one or a few codes apart, over the whole input range: first-layer sums
    step through their range and meet the calibrated thresholds."""
    _, graph, project = compiled
    t = graph.input.type
    codes = np.arange(t.min_code, t.max_code + 1, max(1, (t.max_code - t.min_code) // 60))
    values = t.from_codes(codes).reshape(-1, *[1] * len(graph.input.shape))
    x = np.broadcast_to(values, (len(codes), *graph.input.shape)).copy()
    assert_csim_equals_emulator(project, graph, x)


def test_project_has_the_graph_layers(compiled):
    _, graph, project = compiled
    classes = [layer.class_name for layer in project.model.get_layers()]
    convs = [node for node in graph.nodes if node.op == "conv2d"]
    n_pointwise = sum(node.params["weight"].shape[:2] == (1, 1) for node in convs)
    assert classes.count("Conv2D") == len(convs) - n_pointwise
    assert classes.count("PointwiseConv2D") == n_pointwise  # hls4ml's class for 1x1 kernels
    pools = [node for node in graph.nodes if node.op == "maxpool2d"]
    strided = [node for node in pools if node.attrs["pool"] != node.attrs["strides"]]  # overlapping windows
    assert (classes.count("Pooling2D"), classes.count("EdgebnnPool2D")) == (len(pools) - len(strided), len(strided))
    with open(os.path.join(project.path, "firmware", "myproject.cpp")) as fh:
        code = fh.read()
    assert code.count("nnet::conv_2d_cl") == len(convs) - n_pointwise
    assert code.count("nnet::pointwise_conv_2d_cl") == n_pointwise
    assert code.count("nnet::edgebnn_pool2d") == len(strided)


def test_nonzero_padding_value_is_refused(tmp_path):
    graph = conv_net(input_type="fixed<8,1,RND_CONV,SAT>", pad_code=-128)
    with pytest.raises(EdgebnnError, match=r"'conv0' .*zeros only.*pad_values=0"):
        hls.export(graph, tmp_path / "prj", board=PYNQ)
    assert not (tmp_path / "prj").exists()


def test_valid_conv_ignores_padding_value(tmp_path):
    """pad_code only matters where padding exists: a 'valid' conv with any pad_code exports."""
    graph = conv_net(
        input_type="fixed<8,1,RND_CONV,SAT>",
        pad_code=5,
        convs=({"kernel": (3, 3), "filters": 3}, {"kernel": (3, 3), "filters": 2}),
    )
    project = export_quietly(graph, tmp_path / "prj", board=PYNQ)
    assert [layer.class_name for layer in project.model.get_layers()][1] == "Conv2D"


WITH_THRESHOLDS = [name for name, (build, _) in CASES.items() if any(n.op == "threshold" for n in build().nodes)]


@pytest.mark.parametrize("compiled", WITH_THRESHOLDS, indirect=True)
def test_first_thresholds_hit_exactly(compiled):
    """Samples (picked from many random grid inputs by the emulator) where some first-layer
    accumulator sits exactly on its threshold."""
    _, graph, project = compiled
    first = next(n for n in graph.nodes if n.op == "threshold")
    src = graph[first.inputs[0]]
    t = graph.input.type
    rng = np.random.default_rng(7)
    x = t.from_codes(rng.integers(t.min_code, t.max_code + 1, size=(4000, *graph.input.shape)))
    acc = src.type.codes(emulate(graph, x, return_all=True)[src.name]).reshape(len(x), -1, src.shape[-1])
    on = (acc[..., None] == first.params["thresholds"][None, None]).any(axis=(1, 2, 3))
    assert on.sum() >= 20
    assert_csim_equals_emulator(project, graph, x[on][:100])


@pytest.mark.parametrize("compiled", ["pointwise_resource", "pointwise_resource_stream"], indirect=True)
def test_pointwise_reuse_factor_is_built_as_given(compiled):
    """hls4ml rebuilds a 1x1 Conv2D as PointwiseConv2D from the configuration: the reuse factor
    configured (valid, checked by export) is the one it keeps."""
    name, graph, project = compiled
    rf = project.target.reuse_factors(graph)
    for layer in project.model.get_layers():
        if layer.class_name in ("PointwiseConv2D", "Dense"):
            assert layer.get_attr("reuse_factor") == rf[layer.name]
    assert project.warnings == []


def test_resource_reuse_factor_above_the_kernel_is_refused_in_io_parallel(tmp_path):
    """hls4ml's io_parallel Resource convolution asserts rf <= kh*kw*C (an abort in the
    C-simulation); io_stream takes the same reuse factor."""
    graph = CASES["pointwise_resource_stream"][0]()
    with pytest.raises(
        EdgebnnError,
        match=r"reuse factor 6 of node 'conv0' \(conv2d, 2 x 3 weights\) is not one hls4ml's Resource strategy "
        r"in io_parallel builds as given; use one of 1, 2 there",
    ):
        hls.export(graph, tmp_path / "prj", board=PYNQ, strategy="Resource", reuse_factor={"conv0": 6})
    assert os.listdir(tmp_path) == []


def _above_the_kernel():
    """(graph name, node, op, n_in, n_out, rf): every node hls4ml builds as a convolution in the op
    graphs, with a reuse factor valid for its matrix but above its im2col rows."""
    from graphs import OP_GRAPHS

    from edgebnn.backends.hls4ml import reuse
    from edgebnn.backends.hls4ml.cost.blocks import valid_reuse_factors

    cases = []
    for gname, make in OP_GRAPHS.items():
        for name, (op, n_in, n_out) in reuse.matrices(make()).items():
            above = [rf for rf in valid_reuse_factors(n_in, n_out) if rf > n_in]
            if op in reuse.CONVOLUTIONS and above:
                cases.append((gname, name, op, n_in, n_out, above[0]))
    return cases


def test_every_convolution_op_is_among_the_cases_above_the_kernel():
    """The op graphs give each op hls4ml builds as a convolution a case for the test below."""
    from edgebnn.backends.hls4ml import reuse

    assert {c[2] for c in _above_the_kernel()} == set(reuse.CONVOLUTIONS)


@pytest.mark.parametrize(("gname", "name", "op", "n_in", "n_out", "rf"), _above_the_kernel())
def test_a_resource_reuse_factor_above_any_convolutions_kernel_is_refused_in_io_parallel(
    tmp_path, gname, name, op, n_in, n_out, rf
):
    """conv_1d_resource_cl and conv_2d_resource_cl assert rf <= k*C, which aborts the process:
    conv1d, conv2d, the conv2d of a depthwise node's full kernel and a sum pool's identity
    convolution are refused before anything is written."""
    from graphs import OP_GRAPHS

    with pytest.raises(EdgebnnError) as err:
        hls.export(OP_GRAPHS[gname](), tmp_path / "prj", board=PYNQ, strategy="Resource", reuse_factor={name: rf})
    assert str(err.value).startswith(
        f"reuse factor {rf} of node {name!r} ({op}, {n_in} x {n_out} weights) is not one hls4ml's Resource strategy "
        "in io_parallel builds as given; use one of "
    ), str(err.value)
    assert os.listdir(tmp_path) == []


def test_the_run_configs_reuse_check_sees_the_graphs_matrices():
    """Before training, the run config's reuse factors are checked on the Keras layers under the
    names and matrices the graph's nodes will have (conv1d, depthwise, separable's two nodes)."""
    import keras

    from edgebnn.backends.hls4ml import reuse
    from edgebnn.layers import QuantConv1D, QuantDense, QuantDepthwiseConv2D, QuantSeparableConv2D

    kw = dict(input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False)
    x1 = keras.Input((8, 3))
    one = keras.Model(x1, QuantDense(2, name="d", **kw)(keras.layers.Flatten()(QuantConv1D(4, 3, name="c1", **kw)(x1))))
    x2 = keras.Input((6, 6, 3))
    dkw = dict(input_quantizer="ste_sign", depthwise_quantizer="ste_sign", use_bias=False)
    h = QuantDepthwiseConv2D(3, depth_multiplier=2, name="dw", **dkw)(x2)
    sep = QuantSeparableConv2D(5, 3, depth_multiplier=2, pointwise_quantizer="ste_sign", name="sep", **dkw)
    two = keras.Model(x2, sep(h))
    assert reuse.matrices_of_model(one) == {"c1": ("conv1d", 9, 4), "d": ("dense", 24, 2)}
    assert reuse.matrices_of_model(two) == {
        "dw": ("depthwise_conv2d", 27, 6),
        "sep_depthwise": ("depthwise_conv2d", 54, 12),
        "sep": ("conv2d", 12, 5),
    }
