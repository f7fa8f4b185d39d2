"""The hls4ml backend's op table: one lowering module per graph op, each with the whole interface,
an op without one refused with one sentence (no compile, no hls4ml import for the table)."""

import os
import types

import numpy as np
import pytest
from graphs import BINARY, binary_mlp, chain

from edgebnn.backends.hls4ml.ops import INTERFACE, LOWERINGS, conv2d, flatten, lowering
from edgebnn.errors import EdgebnnError
from edgebnn.graph import OPS


def test_every_graph_op_has_a_lowering_in_the_graphs_order():
    # the order is the one the refusal lists ("export supports input, dense, ... nodes")
    assert tuple(LOWERINGS) == OPS


@pytest.mark.parametrize("op", list(LOWERINGS))
def test_each_lowering_has_the_whole_interface(op):
    module = LOWERINGS[op]
    assert module.__name__ == f"edgebnn.backends.hls4ml.ops.{op}"  # one file named after the op
    for name in INTERFACE:
        assert hasattr(module, name), f"{module.__name__} has no {name}"
        if name == "ELEMENTWISE":
            assert isinstance(module.ELEMENTWISE, bool)
        else:
            assert isinstance(getattr(module, name), types.FunctionType), name


def test_only_threshold_and_cast_move_before_a_flatten():
    assert {op for op, module in LOWERINGS.items() if module.ELEMENTWISE} == {"threshold", "cast"}


def test_unknown_op_is_refused_with_one_sentence_and_nothing_written(tmp_path):
    from edgebnn.backends.hls4ml import export

    graph = binary_mlp(sizes=(4, 3, 2), seed=3)
    graph.nodes[2].op = "lstm"
    want = (
        f"graph node {graph.nodes[2].name!r} (lstm) cannot be exported to hls4ml; "
        "export supports input, dense, conv2d, maxpool2d, avgpool2d, flatten, threshold, cast, sumpool2d, reshape, pad2d nodes"
    )
    with pytest.raises(EdgebnnError) as err:
        lowering(graph.nodes[2])
    assert str(err.value) == want
    with pytest.raises(EdgebnnError) as err:
        export(graph, tmp_path / "prj")
    assert str(err.value) == want
    assert os.listdir(tmp_path) == []


def test_lowering_of_each_node_is_its_ops_module():
    graph = chain(["conv2d", "maxpool2d", "threshold", "flatten", "cast", ("dense", {"units": 3})], input_shape=(6, 6, 2))
    assert [lowering(node).__name__.rsplit(".", 1)[1] for node in graph.nodes] == [node.op for node in graph.nodes]


def test_conv2d_class_and_layers_after_hls4mls_flows():
    graph = chain(
        [("conv2d", {"kernel": (1, 1), "filters": 2}), ("conv2d", {"kernel": (2, 2), "padding": ((1, 0), (0, 1))})],
        input_shape=(4, 4, 2),
    )
    _, pointwise, padded = graph.nodes
    assert conv2d.hls_class(pointwise) == "PointwiseConv2D" and conv2d.hls_class(padded) == "Conv2D"
    # io_stream moves the padding into a ZeroPadding2D layer of the input's type
    assert conv2d.hls_layers(padded, pointwise, "c", "io_stream", False) == [
        ("zp2d_c", "ZeroPadding2D", pointwise),
        ("c", "Conv2D", padded),
    ]
    assert conv2d.hls_layers(padded, pointwise, "c", "io_parallel", False) == [("c", "Conv2D", padded)]
    assert conv2d.hls_layers(pointwise, graph.input, "p", "io_stream", True) == [("p", "PointwiseConv2D", pointwise)]


def test_a_final_flatten_is_dropped_or_repacked():
    graph = chain(["flatten", ("dense", {"units": 3}), "flatten"], input_shape=(2, 2, 2))
    _, first, dense, last = graph.nodes
    assert flatten.hls_layers(first, graph.input, "f", "io_stream", False) == [("f", "Reshape", first)]
    assert flatten.hls_layers(last, dense, "f", "io_parallel", True) == []
    assert flatten.hls_layers(last, dense, "f", "io_stream", True) == [("repack_f", "Repack", last)]
    assert flatten.config_names("f", True) == ["f", "repack_f"] and flatten.config_names("f", False) == ["f"]


def test_weighted_ops_share_their_precisions_and_ternary_weights():
    graph = binary_mlp(sizes=(4, 3), seed=1)
    dense = graph.nodes[1]
    p = lowering(dense).precisions(dense, graph.input)
    assert p["accum"] == p["result"] == f"fixed<{dense.type.width},{dense.type.integer},TRN,WRAP,0>"
    # +-1 codes of an int<2> type: hls4ml's exact 'weight_ternary' product
    assert dense.fixed_attr("weight_type") == BINARY and p["weight"] == "int<2>"
    dense.params["weight"] = np.where(dense.params["weight"] > 0, 1, -2)
    assert lowering(dense).precisions(dense, graph.input)["weight"] == "fixed<2,2,TRN,WRAP,0>"
