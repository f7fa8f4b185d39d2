"""AveragePooling2D end to end: the graph op (exact means on a finer grid), its cost, its hls4ml
export (C-simulation = emulator in io_parallel and io_stream) and its freeze from Keras."""

import numpy as np
import pytest

from edgebnn.emulate import emulate
from edgebnn.estimate import estimate
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, GraphError, avgpool2d_node, input_node


def pooled_graph(pool=(2, 2), strides=None, shape=(6, 4, 3), t="fixed<5,2,RND_CONV,SAT>"):
    inp = input_node("x", shape, FixedType.from_string(t))
    return Graph("avg", [inp, avgpool2d_node("avg", inp, pool, strides)])


@pytest.mark.parametrize("pool,strides", [((2, 2), None), ((2, 1), (1, 1)), ((1, 4), (2, 1)), ((4, 2), (1, 2)),
                                          ((1, 1), None)])
def test_means_are_exact_on_a_finer_grid(pool, strides):
    g = pooled_graph(pool, strides)
    t = g.input.type
    k = int(np.log2(pool[0] * pool[1]))
    assert g.output.type.lsb_exp == t.lsb_exp - k
    x = np.random.default_rng(0).uniform(-6, 6, size=(40, 6, 4, 3))
    q = t.quantize(x)
    sh, sw = strides or pool
    ho, wo = (6 - pool[0]) // sh + 1, (4 - pool[1]) // sw + 1
    want = np.stack([np.stack([q[:, i * sh:i * sh + pool[0], j * sw:j * sw + pool[1]].mean(axis=(1, 2))
                               for j in range(wo)], axis=1) for i in range(ho)], axis=1)
    got = emulate(g, x)
    assert got.shape == (40, ho, wo, 3)
    assert np.array_equal(got, want)  # a mean of 2**k values on one grid is exact in float64 too
    assert g.output.type.contains(got)


def test_a_window_that_is_not_a_power_of_two_is_refused():
    inp = input_node("x", (6, 6, 1), FixedType.from_string("fixed<5,2>"))
    with pytest.raises(ValueError, match="power of two"):
        avgpool2d_node("avg", inp, (3, 3))
    node = avgpool2d_node("avg", inp, (2, 2))
    node.attrs["pool"] = [3, 3]
    with pytest.raises(GraphError, match=r"graph node 'avg' \(avgpool2d\): a 3x3 window does not hold a power of two"):
        Graph("g", [inp, node])


def test_a_type_off_the_mean_grid_is_refused():
    g = pooled_graph()
    node = g.output
    node.type = g.input.type
    with pytest.raises(GraphError, match="step of 2\\*\\*-5"):
        Graph("g", g.nodes)


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_cost_is_adders_without_dsp(io_type):
    row = next(r for r in estimate(pooled_graph(), "pynq-z2", io_type=io_type).rows if r.op == "avgpool2d")
    assert row.dsp == 0 and row.lut > 0
    assert row.detail["adders"] == (3 if io_type == "io_stream" else 3 * 2 * 3) * 3  # 3 adders per 2x2 window
    bigger = next(r for r in estimate(pooled_graph((4, 4), shape=(8, 8, 3)), "pynq-z2", io_type=io_type).rows
                  if r.op == "avgpool2d")
    assert bigger.lut > row.lut


# --------------------------------------------------------------- exported and compiled once per graph
# (the conftest fixture `compiled` gives (name, graph, project) for each)
def pooled_chain(pool, strides=None, cast=None, shape=(6, 4, 3), t="fixed<5,2,RND_CONV,SAT>"):
    from edgebnn.graph import cast_node

    g = pooled_graph(pool, strides, shape, t)
    if cast is None:
        return g
    return Graph("avg_cast", [*g.nodes, cast_node("q", g.output, FixedType.from_string(cast), relu=True)])


CASES = {
    "parallel": (lambda: pooled_graph(), {}),
    "stream": (lambda: pooled_graph(), {"io_type": "io_stream"}),
    # overlapping windows (io_parallel only), then a rounding, saturating relu cast of the means
    "overlap_cast": (lambda: pooled_chain((2, 1), (1, 1), cast="ufixed<3,1,RND,SAT>"), {}),
    "wide_stream_cast": (lambda: pooled_chain((4, 2), (4, 2), cast="fixed<4,1,RND_ZERO,SAT_SYM>", shape=(8, 6, 2),
                                              t="ufixed<6,3,RND,SAT>"), {"io_type": "io_stream"}),
    "resource": (lambda: pooled_graph((1, 2)), {"strategy": "Resource", "reuse_factor": 2}),
}


def test_csim_equals_emulator(compiled):
    from graphs import assert_csim_equals_emulator, edge_inputs

    _, graph, project = compiled
    assert_csim_equals_emulator(project, graph, edge_inputs(graph, n=200))


def test_overlapping_windows_are_refused_in_io_stream(tmp_path):
    from graphs import PYNQ, export_quietly

    from edgebnn.errors import EdgebnnError

    with pytest.raises(EdgebnnError, match=r"graph node 'avg' \(avgpool2d\) pools \[2, 1\] windows with strides "
                                           r"\[1, 1\].*io_parallel or strides=pool_size"):
        export_quietly(pooled_graph((2, 1), (1, 1)), tmp_path / "p", board=PYNQ, io_type="io_stream")
    assert not (tmp_path / "p").exists()
