"""The op table of the deployment graph (edgebnn/graph/ops/): every op's SPEC declares exactly the
params and attrs its builder writes, the graph refuses a node missing a required one, and both
validation and emulation dispatch through REGISTRY."""

import dataclasses
import re

import numpy as np
import pytest
from graphs import OP_GRAPHS, edge_inputs, every_op_graph

from edgebnn.emulate import emulate
from edgebnn.fixed import FixedType, on_grid
from edgebnn.graph import (
    OPS,
    REGISTRY,
    Graph,
    GraphError,
    spec,
)
from edgebnn.graph.ops import BOUNDS, OpSpec

GRAPH = every_op_graph(pad_code=1)
X = np.random.default_rng(1).uniform(-5, 5, size=(20, 5, 5, 2))
# each op's example node and the example graph holding it (GRAPH first, then tests/graphs.py's OP_GRAPHS)
EXAMPLE, HOME = {}, {}
GRAPHS = [GRAPH, *(build() for name, build in OP_GRAPHS.items() if name != "every_op")]
for _graph in GRAPHS:
    for _node in _graph.nodes:
        EXAMPLE.setdefault(_node.op, _node)
        HOME.setdefault(_node.op, _graph)


def inputs_of(graph):
    return X if graph is GRAPH else edge_inputs(graph, n=20)


def test_the_table_holds_every_op_in_order_and_the_example_covers_it():
    assert tuple(REGISTRY) == OPS
    assert OPS[:8] == ("input", "dense", "conv2d", "maxpool2d", "avgpool2d", "flatten", "threshold", "cast")
    assert set(EXAMPLE) == set(REGISTRY)
    for op, entry in REGISTRY.items():
        assert isinstance(entry, OpSpec) and entry.op == op
        n = len(EXAMPLE[op].inputs)
        assert entry.n_inputs <= n if entry.variadic else entry.n_inputs == n


@pytest.mark.parametrize("op", OPS)
def test_spec_declares_what_the_builder_writes(op):
    entry, node = REGISTRY[op], EXAMPLE[op]
    for kind, have, required, optional in (
        ("params", node.params, entry.params, entry.optional_params),
        ("attrs", node.attrs, entry.attrs, entry.optional_attrs),
    ):
        assert not set(required) & set(optional), kind
        assert set(required) <= set(have), f"{op}: the builder leaves out required {kind}"
        undeclared = set(have) - set(required) - set(optional) - (set(BOUNDS) if kind == "params" else set())
        assert not undeclared, f"{op}: the builder writes undeclared {kind} {sorted(undeclared)}"
        for meaning in {**required, **optional}.values():
            assert isinstance(meaning, str) and meaning and "\n" not in meaning


def test_the_examples_use_every_optional_key():
    nodes = [n for build in OP_GRAPHS.values() for n in build().nodes]
    for op, entry in REGISTRY.items():
        assert set(entry.optional_params) <= {k for n in nodes if n.op == op for k in n.params}, op
        assert set(entry.optional_attrs) <= {k for n in nodes if n.op == op for k in n.attrs}, op


REQUIRED = [
    (op, kind, key)
    for op, entry in REGISTRY.items()
    for kind, keys in (("params", entry.params), ("attrs", entry.attrs))
    for key in keys
]


def test_required_keys_are_declared():
    assert {"dense", "conv2d", "maxpool2d", "avgpool2d", "threshold", "cast"} <= {op for op, _, _ in REQUIRED}


def without(node, kind, key):
    kept = {k: v for k, v in getattr(node, kind).items() if k != key}
    return dataclasses.replace(node, **{kind: kept})


@pytest.mark.parametrize(("op", "kind", "key"), REQUIRED)
def test_a_node_missing_a_required_key_is_a_graph_error_naming_it(op, kind, key):
    i = HOME[op].nodes.index(EXAMPLE[op])
    nodes = [*HOME[op].nodes[:i], without(EXAMPLE[op], kind, key)]
    name = EXAMPLE[op].name
    with pytest.raises(GraphError, match=re.escape(f"graph node {name!r} ({op}): missing {kind}[{key!r}] (")):
        Graph("g", nodes)


@pytest.mark.parametrize("op", ["dense", "conv2d"])
def test_a_bias_without_its_type_is_refused(op):
    i = GRAPH.nodes.index(EXAMPLE[op])
    with pytest.raises(GraphError, match=re.escape(f"graph node {EXAMPLE[op].name!r} ({op}): bias needs shape")):
        Graph("g", [*GRAPH.nodes[:i], without(EXAMPLE[op], "attrs", "bias_type")])


def test_validation_runs_the_ops_own_check_from_the_table(monkeypatch):
    calls = []

    def spy(node, inputs, where):
        calls.append((node.name, [s.name for s in inputs], where))

    monkeypatch.setitem(REGISTRY, "flatten", dataclasses.replace(REGISTRY["flatten"], validate=spy))
    Graph("g", GRAPH.nodes)
    assert calls == [("flat", ["avg"], "graph node 'flat' (flatten)")]


def test_the_input_count_comes_from_the_spec(monkeypatch):
    monkeypatch.setitem(REGISTRY, "cast", dataclasses.replace(REGISTRY["cast"], n_inputs=2))
    with pytest.raises(GraphError, match=re.escape("graph node 'cast' (cast): takes 2 input(s), has 1")):
        Graph("g", GRAPH.nodes)


def test_unknown_op_names_every_known_one():
    with pytest.raises(GraphError, match=re.escape("here: unknown op; this edgebnn knows " + ", ".join(OPS))):
        spec("conv9d", "here")
    bad = dataclasses.replace(EXAMPLE["cast"], op="conv9d")
    with pytest.raises(GraphError, match=re.escape("graph node 'cast' (conv9d): unknown op")):
        Graph("g", [*GRAPH.nodes[:5], bad])


@pytest.mark.parametrize("op", OPS)
def test_emulate_dispatches_by_table(op, monkeypatch):
    graph, x = HOME[op], inputs_of(HOME[op])
    right = emulate(graph, x, return_all=True)
    name = EXAMPLE[op].name
    original = REGISTRY[op].execute
    seen = []

    def wrong(node, inputs, codes):
        seen.append(([s.name for s in inputs], len(codes)))
        return original(node, inputs, codes) ^ 1  # every code off by one

    monkeypatch.setitem(REGISTRY, op, dataclasses.replace(REGISTRY[op], execute=wrong))
    got = emulate(graph, x, return_all=True)
    assert seen[0] == (list(EXAMPLE[op].inputs), max(1, len(EXAMPLE[op].inputs)))
    assert len(seen) == sum(n.op == op for n in graph.nodes)
    assert np.all(got[name] != right[name])
    monkeypatch.undo()
    assert all(np.array_equal(v, emulate(graph, x, return_all=True)[k]) for k, v in right.items())


@pytest.mark.parametrize("index", range(len(GRAPHS)))
def test_the_example_runs_every_kernel_on_its_own_range(index):
    graph = GRAPHS[index]
    out = emulate(graph, inputs_of(graph), return_all=True)
    for node in graph.nodes:
        v = out[node.name]
        assert v.shape == (len(out[graph.input.name]), *node.shape)
        axes = tuple(range(v.ndim - 1))
        assert np.all(v.min(axis=axes) >= node.lo) and np.all(v.max(axis=axes) <= node.hi), node.name
    assert all(
        len(np.unique(out[n.name])) > 1 for n in graph.nodes if n.op == "threshold"
    )  # the thresholds are reached, not all below or above


def test_summary_adds_each_ops_description():
    lines = GRAPH.summary().splitlines()
    assert lines[0] == "graph every_op: 8 nodes"
    dense = next(line for line in lines if line.split()[0] == "dense")
    thr = next(line for line in lines if line.split()[0] == "thr")
    flat = next(line for line in lines if line.split()[0] == "flat")
    assert dense.endswith(f"{EXAMPLE['dense'].type} weight {FixedType.from_string('fixed<3,3>')}")
    assert thr.endswith(" 2 threshold(s)/channel")
    assert flat.endswith(str(EXAMPLE["flatten"].type))


def test_on_grid_rounds_without_overflow():
    t = FixedType.from_string("ufixed<2,2,RND,SAT>")  # codes 0..3
    assert np.array_equal(on_grid(np.array([-0.7, 5.0, 2.5, 1.2]), t), [-1.0, 5.0, 3.0, 1.0])
    assert np.array_equal(t.quantize(np.array([-0.7, 5.0, 2.5, 1.2])), [0.0, 3.0, 3.0, 1.0])


# ------------------------------------------------------------ bounds derived again at load
@pytest.mark.parametrize("name", sorted(OP_GRAPHS))
def test_every_ops_bounds_are_derived_again_at_load(tmp_path, name):
    """Each op's rebuild gives the bounds its builder gave: graphs over every op load back."""
    graph = OP_GRAPHS[name]()
    graph.save(tmp_path / "g.npz")
    loaded = Graph.load(tmp_path / "g.npz")
    assert [n.op for n in loaded.nodes] == [n.op for n in graph.nodes]
    assert {n.op for g in OP_GRAPHS.values() for n in g().nodes} == set(OPS)
    assert all(REGISTRY[op].rebuild is not None for op in OPS)


@pytest.mark.parametrize("key, edit", [("hi", lambda b: b - 1.0), ("lo", lambda b: b + 0.5), ("hi", lambda b: b[:-1])])
def test_a_graph_file_with_edited_bounds_is_refused_naming_the_node(tmp_path, key, edit):
    """A graph written with bounds that its weights do not give (edited by hand or by another
    tool, its checksum written again) is refused at load in one line naming the node, before
    the emulator's fast paths could rely on them; nothing is written."""
    graph = every_op_graph()
    node = next(n for n in graph.nodes if n.op == "dense")
    node.params[key] = edit(np.asarray(node.params[key], dtype=np.float64))
    graph.save(tmp_path / "g.npz")  # save checks the structure and the type, not the derivation
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(GraphError) as err:
        Graph.load(tmp_path / "g.npz")
    message = str(err.value)
    assert f"node {node.name!r} (dense): stored bounds params[{key!r}]" in message, message
    assert "differ from those its weights and inputs give" in message and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == before
