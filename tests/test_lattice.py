"""graph.lattice: per channel the reachable codes of a node lie on base + k * step; checked
against every input of small nodes (brute force), and used by the threshold's compare."""

import itertools

import numpy as np
from graphs import BINARY, lattice_graph

from edgebnn.emulate import emulate
from edgebnn.fixed import FixedType
from edgebnn.graph import (
    Graph,
    avgpool2d_node,
    conv2d_node,
    dense_node,
    flatten_node,
    input_node,
    maxpool2d_node,
    pad2d_node,
    threshold_node,
)
from edgebnn.graph.lattice import lattice
from edgebnn.graph.ops.threshold import compare_shift


def _source(nodes):
    return {n.name: n for n in nodes}.__getitem__


def _binary_input(shape):
    """An input and a sign threshold on it: every element -1 or +1."""
    inp = input_node("x", shape, FixedType.from_string("ufixed<2,0,RND_CONV,SAT>"))
    c = shape[-1]
    return inp, threshold_node("s", inp, np.ones((c, 1)), [[-1, 1]] * c, BINARY)


def _reached(nodes, x):
    return emulate(Graph("g", nodes), x, return_all=True)


def test_binary_sums_are_odd_or_even_and_the_lattice_is_tight():
    inp, sign = _binary_input((5,))
    rng = np.random.default_rng(0)
    w = rng.choice([-1, 1], (5, 4)) * np.array([1, 3, 1, 1])  # channel 1: a common factor 3
    w[:, 3] = [1, -1, 1, 0, 0]  # channel 3: two zero weights, an odd count of terms
    d = dense_node("d", sign, w, FixedType(3, 3), [0, 0, 5, 0], FixedType(4, 4))
    base, step = lattice(d, _source([inp, sign, d]))
    assert step.tolist() == [2, 6, 2, 2] and base.tolist() == [1, 3, 0, 1]
    x = np.array(list(itertools.product([0.0, 0.75], repeat=5)))  # every sign pattern
    acc = d.type.codes(_reached([inp, sign, d], x)["d"])
    for c in range(4):
        values = np.unique(acc[:, c])
        assert np.all((values - base[c]) % step[c] == 0)
        assert np.gcd.reduce(np.diff(values)) == step[c]  # tight: no coarser lattice holds


def test_convolutions_read_the_pad_code_at_the_border():
    inp, sign = _binary_input((4, 4, 2))
    w = np.random.default_rng(1).choice([-1, 1], (3, 3, 2, 2))
    valid = conv2d_node("c", sign, w, BINARY)
    same = conv2d_node("c", sign, w, BINARY, padding=((1, 1), (1, 1)))
    assert lattice(valid, _source([inp, sign]))[1].tolist() == [2, 2]
    assert lattice(same, _source([inp, sign]))[1].tolist() == [1, 1]  # 18 terms inside, 8 at a corner
    pool = avgpool2d_node("a", valid, (2, 2))
    flat = flatten_node("f", pool)
    base, step = lattice(flat, _source([inp, sign, valid, pool]))
    assert step.tolist() == [2] * 2 and len(base) == 2  # window sums of 4 values on step 2, per flat feature
    x = np.random.default_rng(2).choice([0.0, 0.75], (200, 4, 4, 2))
    codes = pool.type.codes(_reached([inp, sign, valid, pool], x)["a"]).reshape(-1, 2)
    assert np.all((codes - base) % step == 0)


def test_the_threshold_compares_without_the_bits_its_lattice_fixes():
    graph = lattice_graph()
    shifts = {n.name: compare_shift(n, graph[n.inputs[0]].type.width) for n in graph.nodes if n.op == "threshold"}
    assert shifts == {"sign0": 0, "q1": 1, "q2": 2}
    from edgebnn.backends.hls4ml.ops.threshold import compare_type
    from edgebnn.estimate import estimate

    q2 = graph["q2"]
    assert str(compare_type(q2, graph["d2"])) == "fixed<4,6>"  # TRN, WRAP: the default modes
    row = next(r for r in estimate(graph, "pynq-z2").rows if r.name == "q2")
    assert row.detail["input_bits"] == 4


def test_a_threshold_off_its_lattice_is_refused():
    import pytest

    from edgebnn.graph import GraphError

    graph = lattice_graph()
    graph["q2"].params["thresholds"] = graph["q2"].params["thresholds"] + 1
    with pytest.raises(GraphError, match="thresholds must lie on the lattice of its inputs"):
        graph.validate()


def test_a_padding_adds_its_code_and_a_pool_after_it_keeps_that():
    """A "same" max pool's padding of a level (-1 of signs) keeps the odd lattice; one of 0 does not."""
    inp, sign = _binary_input((3, 3, 2))
    x = np.array([np.reshape(bits, (3, 3, 2)) for bits in itertools.product([0.0, 0.75], repeat=18)][::997])
    for pad, want in [(-1, [2, 2]), (0, [1, 1])]:
        p = pad2d_node("p", sign, ((1, 0), (0, 1)), pad)
        mp = maxpool2d_node("mp", p, (2, 2), (2, 2))
        nodes = [inp, sign, p, mp]
        for node in (p, mp):
            base, step = lattice(node, _source(nodes))
            assert step.tolist() == want, (pad, node.name)
            codes = node.type.codes(_reached(nodes, x)[node.name]).reshape(-1, 2)
            assert np.all(np.mod(codes - base, step) == 0)  # every reached code on it
