"""The merge ops add and concatenate (graph/ops/add.py, concatenate.py): exact types from the
inputs' grids and bounds, validation, emulation, the graph's DAG checks; their hls4ml lowering's
refusals, layer list and chain of two-input merges; their estimate (io_stream Clone rows, the slowest path, live outputs)."""

import re

import numpy as np
import pytest
from graphs import dag_graph, edge_inputs

from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError
from edgebnn.estimate import estimate
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, GraphError, Node, add_node, cast_node, concatenate_node, conv2d_node, dense_node, input_node

WT = FixedType.from_string("fixed<3,3>")


def sources():
    """An input, a cast on a coarse grid (steps of 2) and one on a fine grid (steps of 1/4)."""
    inp = input_node("in", (3, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    coarse = cast_node("coarse", inp, FixedType.from_string("ufixed<3,4,TRN,SAT>"), relu=True)
    fine = cast_node("fine", inp, FixedType.from_string("fixed<5,3,RND,SAT>"), relu=False)
    return inp, coarse, fine


def test_add_sums_exactly_on_the_finest_grid():
    inp, coarse, fine = sources()
    s = add_node("s", [coarse, fine, fine])
    assert (
        s.type.lsb_exp == -2 and np.array_equal(s.lo, coarse.lo + 2 * fine.lo) and np.array_equal(s.hi, coarse.hi + 2 * fine.hi)
    )
    graph = Graph("g", [inp, coarse, fine, s])
    x = edge_inputs(graph, n=400)
    out = emulate(graph, x, return_all=True)
    assert np.array_equal(out["s"], out["coarse"] + 2 * out["fine"])
    assert s.type.contains(out["s"]) and out["s"].min() == s.type.from_codes(s.type.codes(s.lo.min()))


def test_concatenate_holds_every_input_exactly():
    inp, coarse, fine = sources()
    c = concatenate_node("c", [fine, coarse])
    assert c.shape == (3, 4) and c.type.lsb_exp == -2 and c.type.contains(coarse.hi) and c.type.contains(fine.lo)
    graph = Graph("g", [inp, coarse, fine, c])
    out = emulate(graph, edge_inputs(graph, n=400), return_all=True)
    assert np.array_equal(out["c"], np.concatenate([out["fine"], out["coarse"]], axis=-1))


def test_wide_sums_are_exact_in_python_integers():
    from edgebnn.graph import REGISTRY

    wide, fine = FixedType(60, 70), FixedType(20, 0)  # steps of 2**10 and of 2**-20
    a = Node("a", "cast", [], (2,), wide, {"lo": np.full(2, wide.min), "hi": np.full(2, wide.max)})
    b = Node("b", "cast", [], (2,), fine, {"lo": np.full(2, fine.min), "hi": np.full(2, fine.max)})
    s = add_node("s", [a, b])
    assert s.type.width == 91 and s.type.lsb_exp == -20
    codes = [np.array([[2**59 - 1, -(2**59)]]), np.array([[2**19 - 1, -(2**19)]])]
    got = REGISTRY["add"].execute(s, [a, b], codes)
    assert got.tolist() == [[(2**59 - 1) * 2**30 + 2**19 - 1, -(2**59) * 2**30 - 2**19]]


def test_the_graph_checks_merges_and_its_one_output():
    inp, coarse, fine = sources()
    with pytest.raises(GraphError, match=re.escape("graph node 's' (add): takes 2 or more input(s), has 1")):
        Graph("g", [inp, coarse, Node("s", "add", ["coarse"], (3, 2), coarse.type, {"lo": coarse.lo, "hi": coarse.hi})])
    d = dense_node("d", coarse, np.ones((2, 3), dtype=int), WT)
    bad = add_node("s", [coarse, coarse])
    bad.inputs = ["coarse", "d"]
    with pytest.raises(
        GraphError, match=re.escape("graph node 's' (add): adds inputs of its own shape (3, 2), got [(3, 2), (3, 3)]")
    ):
        Graph("g", [inp, coarse, d, bad])
    with pytest.raises(
        GraphError, match=re.escape("graph node 'coarse' (cast) is read by no node; a graph has one output, its last node")
    ):
        Graph("g", [inp, coarse, fine])


def test_save_load_keeps_a_dag(tmp_path):
    graph = dag_graph()
    graph.save(tmp_path / "g.npz")
    again = Graph.load(tmp_path / "g.npz")
    assert [n.inputs for n in again.nodes] == [n.inputs for n in graph.nodes]
    x = edge_inputs(graph, n=40)
    assert np.array_equal(emulate(again, x), emulate(graph, x))
    assert "cat                  concatenate (4, 4, 6)" in graph.summary() and "<- add1, thr1" in graph.summary()


def test_hls4ml_builds_three_inputs_as_a_chain_and_refuses_one_stream_read_twice(tmp_path):
    from edgebnn.backends.hls4ml.exporter import check_graph

    inp, coarse, fine = sources()
    check_graph(Graph("g", [inp, coarse, fine, add_node("s", [coarse, fine, fine])]), "io_stream")
    twice = Graph("g", [inp, coarse, add_node("s", [coarse, coarse])])
    check_graph(twice, "io_parallel")
    with pytest.raises(EdgebnnError, match=re.escape("reads 'coarse' twice, which hls4ml's io_stream cannot do")):
        check_graph(twice, "io_stream")
    thrice = Graph("g", [inp, coarse, add_node("s", [coarse, coarse, coarse])])
    check_graph(thrice, "io_parallel")
    with pytest.raises(EdgebnnError, match=re.escape("reads 'coarse' 3 times, which hls4ml's io_stream cannot do")):
        check_graph(thrice, "io_stream")


def test_a_merge_of_more_inputs_is_a_chain_of_two_input_merges_with_exact_types():
    from graphs import merge3_graph

    from edgebnn.backends.hls4ml.model import hls_chain, hls_names, layer_list

    graph = merge3_graph()
    cast2, thr1, cast3 = graph.sources(graph["add3"])
    for io_type in ("io_parallel", "io_stream"):
        chain = hls_chain(graph, io_type)
        # the partial sum has the exact type of cast2 + thr1; the node's type holds all three
        assert chain["add3_part1"].inputs == ["cast2", "thr1"] and chain["add3"].inputs == ["add3_part1", "cast3"]
        assert chain["add3_part1"].type == add_node("p", [cast2, thr1]).type != graph["add3"].type
        # thr1 twice: io_parallel joins the two copies first, io_stream starts at thr1 + add3
        # (a layer cannot read one stream twice) and then joins the first thr1 on the left
        want = {
            "io_parallel": [
                ("cat_part1", ["thr1", "thr1"]),
                ("cat_part2", ["cat_part1", "add3"]),
                ("cat", ["cat_part2", "cast2"]),
            ],
            "io_stream": [("cat_part1", ["thr1", "add3"]), ("cat_part2", ["thr1", "cat_part1"]), ("cat", ["cat_part2", "cast2"])],
        }[io_type]
        assert [(n.name, n.inputs) for n in chain.nodes if n.name.startswith("cat")] == want
        assert {chain[name].type for name, _ in want} == {graph["cat"].type}
        assert [chain[name].shape for name, _ in want] == [(3, 3, 6), (3, 3, 9), (3, 3, 12)]
        layers = layer_list(chain, hls_names(graph, chain))
        assert all(len(entry.get("inputs", [])) <= 2 for entry in layers)
    # a graph node already called like a partial result keeps its name; the partial one gets another
    inp, coarse, fine = sources()
    clash = cast_node("s_part1", inp, FixedType.from_string("fixed<5,3,RND,SAT>"), relu=False)
    g = Graph("g", [inp, coarse, fine, clash, add_node("s", [coarse, fine, clash])])
    assert [n.name for n in hls_chain(g, "io_parallel").nodes][-2:] == ["s_part1_", "s"]
    names = hls_names(g, hls_chain(g, "io_parallel"))
    assert names["s_part1"] == "s_part1" and names["s_part1_"] == "s_part1_"


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_estimate_costs_the_chain_of_merges(io_type):
    from graphs import merge3_graph

    graph = merge3_graph()
    rows = {r.name: r for r in estimate(graph, "pynq-z2", io_type=io_type).rows}
    add3, cat = rows["add3"], rows["cat"]
    units = 3 if io_type == "io_stream" else 27  # io_stream builds one pixel's adders
    part_bits = add_node("p", graph.sources(graph["add3"])[:2]).type.width
    assert add3.detail["merges"] == 2 and add3.detail["adders"] == 2 * units
    assert add3.detail["adder_bits"] == units * (part_bits + graph["add3"].type.width)
    assert cat.detail["merges"] == 3 and cat.detail["inputs"] == 4
    if io_type == "io_stream":
        assert cat.latency > 3 * 9 and cat.ii == 9  # three merges of nine pixels each, and their streams
        # the only LUTs are its streams: 9-pixel FIFOs are SRL32s, a LUT per bit of a pixel's word
        # (the partial results of 6 and 9 channels and the output's 12, all of the concatenate's type)
        assert cat.lut == (6 + 9 + 12) * graph["cat"].type.width
        word = graph["thr1"].shape[-1] * graph["thr1"].type.width  # one pixel of thr1
        clone = rows["clone_thr1"]  # conv2, add3's merge and two of cat's: a 9-deep SRL FIFO each
        assert (clone.ff, clone.lut, clone.bram18) == (4 * word, 4 * word, 0)
    else:  # wiring: its only LUTs are the DATAFLOW channel its output array becomes (a conv graph)
        assert cat.detail["dataflow_channels"] >= int(np.prod(graph["cat"].shape))  # its output and partial results
        assert cat.lut == cat.detail["dataflow_channel_lut"] > 0 and cat.latency == 0 and "clone_thr1" not in rows


def test_the_layer_list_names_every_input_and_io_stream_moves_a_flatten_read_once():
    from edgebnn.backends.hls4ml.model import hls_chain, hls_names, layer_list

    graph = dag_graph()
    names = hls_names(graph)
    layers = {entry["name"]: entry for entry in layer_list(hls_chain(graph, "io_parallel"), names)}
    assert layers["add1"]["inputs"] == ["thr1", "cast2"] and layers["add1"]["class_name"] == "Merge"
    assert layers["cat"] | {} == {
        "name": "cat",
        "inputs": ["add1", "thr1"],
        "class_name": "Concatenate",
        "op": "concatenate3d",
        "axis": -1,
    }
    # a cast read only through a flatten runs before it in io_stream; the dense then reads the flatten
    inp = input_node("in", (2, 2, 2), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    c = conv2d_node("c", inp, np.ones((1, 1, 2, 2), dtype=int), WT)
    from edgebnn.graph import flatten_node

    flat = flatten_node("flat", c)
    cast = cast_node("cast", flat, FixedType.from_string("ufixed<3,1,RND,SAT>"), relu=True)
    dense_in = dense_node("d", cast, np.ones((8, 2), dtype=int), WT)
    chain = hls_chain(Graph("g", [inp, c, flat, cast, dense_in]), "io_stream")
    assert [(n.name, n.inputs) for n in chain.nodes] == [
        ("in", []),
        ("c", ["in"]),
        ("cast", ["c"]),
        ("flat", ["cast"]),
        ("d", ["flat"]),
    ]


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_estimate_walks_the_dag(io_type):
    graph = dag_graph()
    est = estimate(graph, "pynq-z2", io_type=io_type)
    rows = {r.name: r for r in est.rows}
    clones = {name for name in rows if name.startswith("clone_")}
    assert clones == ({"clone_thr1", "clone_cat"} if io_type == "io_stream" else set())
    if clones:  # three copies of thr1's 16-pixel stream, each an SRL32 FIFO with its output word registered
        thr1 = graph["thr1"]
        word = thr1.shape[-1] * thr1.type.width
        assert (rows["clone_thr1"].ff, rows["clone_thr1"].lut) == (3 * word, 3 * word)
    path = est.latency_path
    assert path[0] == "conv1" and path[-1] == "dense" and ("conv3a" in path) != ("conv3b" in path)
    on_path = [rows[name] for name in path]
    if io_type == "io_stream":  # DATAFLOW: the slowest process on the path, plus the others' tails
        slowest = max(on_path, key=lambda r: r.ii)
        tails = [r.latency if r.op == "dense" else max(r.latency - r.ii, 1) for r in on_path if r is not slowest]
        assert est.latency_cycles == slowest.latency + sum(tails) < sum(r.latency for r in on_path)
    else:
        assert est.latency_cycles == sum(r.latency for r in on_path) <= sum(r.latency for r in est.rows)
        assert rows["cat"].lut == rows["cat"].detail["dataflow_channel_lut"]  # wiring and its channel
    assert rows["add1"].lut > 0
    assert est.to_dict()["latency_path"] == list(path)
