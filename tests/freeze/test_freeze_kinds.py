"""freeze.kinds: every step kind the passes make has a Keras evaluation and a node builder."""

import keras
import numpy as np
from freeze_models import conv_model, grid_inputs

from edgebnn.emulate import emulate
from edgebnn.freeze import freeze, plan, trace
from edgebnn.freeze.kinds import KINDS
from edgebnn.layers import QuantActivation


def test_each_kind_traces_like_its_node():
    model = conv_model(
        keras.layers.Activation("relu"),
        keras.layers.MaxPooling2D(2),
        QuantActivation("quantized_bits(3, 1)"),
        keras.layers.Flatten(),
        keras.layers.BatchNormalization(),
        QuantActivation("ste_sign"),
    )
    kinds = [s.kind for s in plan(model)]
    assert kinds == ["input", "conv2d", "cast", "maxpool2d", "flatten", "requant"] and set(kinds) <= set(KINDS)
    graph = freeze(model)
    x = grid_inputs(20, np.random.default_rng(0), (6, 6, 1))
    steps, nodes = trace(model, x), emulate(graph, x, return_all=True)
    for name, value in steps.items():
        assert np.array_equal(value.reshape(nodes[name].shape), nodes[name]), name
