"""Global 1-D pools exported as hls4ml's ``GlobalPooling1D``: a maxpool1d or avgpool1d node whose
window is its whole input (what freeze writes for ``GlobalMaxPooling1D`` /
``GlobalAveragePooling1D``, keepdims or not) is that layer in both io types, C-simulated bit for
bit against the emulator (one compile per io type for the pools inside a design, one more for a
pool that is the design's output), and costed as hls4ml builds it: in io_stream one running
maximum or sum per channel instead of a window of every position. The random-model fuzzer
counts the export as a form of its own, so its C-simulations reach it in both io types."""

import pathlib

import numpy as np
import pytest
from graphs import PYNQ, assert_csim_equals_emulator, edge_inputs, export_quietly

from edgebnn import fuzz
from edgebnn.backends.hls4ml import ops
from edgebnn.backends.hls4ml.model import hls_chain
from edgebnn.estimate import estimate
from edgebnn.fixed import FixedType
from edgebnn.graph import (
    Graph,
    avgpool1d_node,
    concatenate_node,
    conv1d_node,
    dense_node,
    flatten_node,
    input_node,
    maxpool1d_node,
)

W = FixedType.from_string("fixed<3,3>")


def global_pools_graph() -> Graph:
    """input (8, 2) of signed values -> conv1d (8, 3) with negative weights -> a global max
    (maxpool1d over the 8 positions) and a global average (avgpool1d over the 8, a power of two),
    each flattened (``keepdims=False``) -> concatenate (6,) -> dense; and a pool over the whole
    length, a max and an average, that a concatenate reads as (1, 3) (``keepdims=True``), which
    stay Pooling1D layers."""
    rng = np.random.default_rng(5)
    inp = input_node("in", (8, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    conv = conv1d_node("conv", inp, rng.integers(-3, 4, (3, 2, 3)), W, padding=(1, 1))
    gmax = maxpool1d_node("gmax", conv, 8)
    gavg = avgpool1d_node("gavg", conv, 8)
    fmax, favg = flatten_node("fmax", gmax), flatten_node("favg", gavg)
    keep = maxpool1d_node("keep", conv, 8)
    keepavg = avgpool1d_node("keepavg", conv, 8)
    kept = concatenate_node("kept", [keep, keepavg])
    fkept = flatten_node("fkept", kept)
    cat = concatenate_node("cat", [fmax, favg, fkept])
    dense = dense_node("dense", cat, rng.integers(-3, 4, (12, 4)), W)
    return Graph("global_pools", [inp, conv, gmax, gavg, fmax, favg, keep, keepavg, kept, fkept, cat, dense])


GRAPH = global_pools_graph()


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_a_flattened_window_of_the_whole_input_is_hls4mls_global_pooling(io_type):
    chain = hls_chain(GRAPH, io_type)
    classes = {n.name: ops.lowering(n).hls_class(n) for n in chain.nodes if n.op in ("maxpool1d", "avgpool1d")}
    assert classes == {
        "gmax": "GlobalPooling1D",
        "gavg": "GlobalPooling1D",
        "keep": "Pooling1D",
        "keepavg": "Pooling1D",
    }
    conv, gmax, gavg = chain["conv"], chain["gmax"], chain["gavg"]
    assert ops.maxpool1d.layer(gmax, conv) == dict(class_name="GlobalMaxPooling1D", data_format="channels_last", n_in=8, n_filt=3)
    assert ops.avgpool1d.layer(gavg, conv)["class_name"] == "GlobalAveragePooling1D"
    assert ops.maxpool1d.layer(chain["keep"], conv)["class_name"] == "MaxPooling1D"
    # the division by 8 keeps the accumulator's fraction bits: the exact sum's grid, 3 more integer bits
    assert ops.avgpool1d.precisions(gavg, conv) == {
        "accum": ops.common.precision(gavg.type.replace(width=gavg.type.width + 3, integer=gavg.type.integer + 3)),
        "result": ops.common.precision(gavg.type),
    }


@pytest.fixture(scope="module", params=["io_parallel", "io_stream"])
def project(request, tmp_path_factory):
    project = export_quietly(GRAPH, tmp_path_factory.mktemp(request.param) / "p", board=PYNQ, io_type=request.param)
    project.compile()
    return project


@pytest.mark.csim
def test_global_pools_simulate_exactly(project):
    x = edge_inputs(GRAPH, n=400)
    x[:20] = -np.abs(x[:20]) - 0.5  # every value negative: the running maximum starts below them all
    assert_csim_equals_emulator(project, GRAPH, x)


@pytest.mark.csim
def test_the_project_builds_the_global_layers(project):
    cpp = (pathlib.Path(project.path) / "firmware" / "myproject.cpp").read_text()
    assert cpp.count("nnet::global_pooling1d_cl<") == 2 and cpp.count("nnet::pooling1d_cl<") == 2


def test_io_stream_keeps_one_running_value_per_channel():
    stream = {r.name: r for r in estimate(GRAPH, "pynq-z2", io_type="io_stream").rows}
    parallel = {r.name: r for r in estimate(GRAPH, "pynq-z2", io_type="io_parallel").rows}
    for name in ("gmax", "gavg"):
        row = stream[name]
        assert row.detail["global"] and row.ii == 8  # one input position per cycle
        assert row.bram18 == 0 and row.detail["line_buffer_lut"] == 0
        # a comparator or adder per channel, not the 7 of a window of 8 positions
        assert row.lut < parallel[name].lut
    assert stream["gmax"].detail["comparators"] == 3 and stream["gavg"].detail["adders"] == 3
    assert parallel["gmax"].detail["comparators"] == 3 * 7 and parallel["gavg"].detail["adders"] == 3 * 7


def output_pool_graph() -> Graph:
    """input (8, 2) -> conv1d (8, 3) -> a max over the 8 positions that is the design's output,
    kept as (1, 3) (``keepdims=True``): hls4ml's ``GlobalPooling1D`` writes the 3 values."""
    rng = np.random.default_rng(7)
    inp = input_node("in", (8, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    conv = conv1d_node("conv", inp, rng.integers(-3, 4, (3, 2, 3)), W, padding=(1, 1))
    return Graph("output_pool", [inp, conv, maxpool1d_node("gmax", conv, 8)])


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_a_global_pool_as_the_output_simulates_exactly(io_type, tmp_path):
    graph = output_pool_graph()
    gmax = hls_chain(graph, io_type)["gmax"]
    assert ops.lowering(gmax).hls_class(gmax) == "GlobalPooling1D"
    project = export_quietly(graph, tmp_path / "p", board=PYNQ, io_type=io_type)
    project.compile()
    x = edge_inputs(graph, n=200)
    x[:10] = -np.abs(x[:10]) - 0.5
    assert_csim_equals_emulator(project, graph, x)


def test_the_fuzzer_counts_the_global_export_as_a_form():
    assert fuzz.export_forms(GRAPH) == ["export: avgpool1d as GlobalPooling1D", "export: maxpool1d as GlobalPooling1D"]
    assert fuzz.export_forms(output_pool_graph()) == ["export: maxpool1d as GlobalPooling1D"]
