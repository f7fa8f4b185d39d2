"""The hls4ml cost table: one cost function per graph op with one signature, every op of the
graph costed, free or refused with a reason, and the estimator dispatching through the table."""

import inspect
import re

import pytest
from graphs import binary_mlp

from edgebnn.backends.hls4ml.cost import COSTS, FREE, KNOWN_OPS, REFUSED, WEIGHTED_OPS
from edgebnn.estimate import EstimateError, estimate
from edgebnn.graph import OPS


def test_every_graph_op_is_costed_free_or_refused():
    for op in OPS:
        assert (op in COSTS) + (op in FREE) + (op in REFUSED) == 1, op
    assert set(COSTS) | set(FREE) | set(REFUSED) == set(OPS)  # no entry for an op the graph does not have
    assert all(isinstance(why, str) and why for why in {**FREE, **REFUSED}.values())
    assert tuple(COSTS) == KNOWN_OPS and set(WEIGHTED_OPS) <= set(COSTS)


def test_every_cost_function_has_the_same_signature():
    params = {op: list(inspect.signature(f).parameters) for op, f in COSTS.items()}
    assert all(p == ["node", "src", "rf", "ctx", "widths", "warnings", "live"] for p in params.values()), params


def test_estimate_dispatches_through_the_table(monkeypatch):
    g = binary_mlp()
    real, seen = COSTS["threshold"], []

    def spy(node, *args):
        seen.append(node.name)
        return real(node, *args)

    monkeypatch.setitem(COSTS, "threshold", spy)
    est = estimate(g, "pynq-z2")
    assert seen and seen == [n.name for n in g.compute_nodes() if n.op == "threshold"]
    assert [r.name for r in est.rows] == [n.name for n in g.compute_nodes()]


def test_an_op_the_table_lacks_is_named_with_the_ops_it_models():
    g = binary_mlp()
    node = g.compute_nodes()[1]
    node.op = "lstm"  # past the graph's own check, as a graph from a newer edgebnn would be
    message = (
        f"graph node {node.name!r}: estimate does not know op 'lstm' yet; it models dense, conv2d, "
        "maxpool2d, avgpool2d, flatten, threshold, cast, sumpool2d, reshape, pad2d (update edgebnn or estimate a graph "
        "without this node)"
    )
    with pytest.raises(EstimateError, match=re.escape(message)):
        estimate(g, "pynq-z2")


def test_a_refused_op_stops_with_its_reason(monkeypatch):
    g = binary_mlp()
    monkeypatch.setitem(REFUSED, "dense", "no model for it yet")
    first = next(n for n in g.compute_nodes() if n.op == "dense")
    with pytest.raises(
        EstimateError, match=re.escape(f"graph node {first.name!r}: estimate cannot cost op 'dense': no model for it yet")
    ):
        estimate(g, "pynq-z2")
