"""passes.thresholds: thresholds replay Keras on every accumulator value, per channel."""

import keras
import numpy as np
import pytest
from freeze_models import dense_model, frozen_until

from edgebnn.freeze import FreezeError
from edgebnn.freeze.passes import thresholds
from edgebnn.layers import QuantActivation


def test_the_threshold_node_reproduces_keras_on_every_accumulator_value():
    model = dense_model(keras.layers.BatchNormalization(name="bn"), QuantActivation("quantized_bits(3, 1)", name="q"))
    model.get_layer("bn").set_weights(
        [np.asarray(v, np.float32) for v in ([0.7, -1.3, 0.0], [0.1, 0.2, -0.3], [0.5, -0.25, 0.0], [1.0, 0.5, 2.0])]
    )
    steps, freezing = frozen_until(model, "q")
    node = thresholds.node(steps["q"], freezing)
    codes, values = thresholds.grid(freezing.nodes[-1])
    want = model.get_layer("q")(model.get_layer("bn")(values, training=False), training=False)
    want_codes = node.type.codes(np.asarray(want, np.float64))
    assert np.array_equal(thresholds.levels_at(node, codes), want_codes)
    assert len(np.unique(want_codes[:, 0])) > 2  # several levels: a real multi-threshold
    assert np.all(node.params["levels"][2] == node.params["levels"][2, 0])  # gamma 0: constant


def test_an_accumulator_too_wide_to_enumerate_is_refused(monkeypatch):
    model = dense_model(keras.layers.BatchNormalization(), QuantActivation("ste_sign", name="q"))
    steps, freezing = frozen_until(model, "q")
    monkeypatch.setattr(thresholds, "MAX_ENUMERATION", 4)
    with pytest.raises(FreezeError, match="too many to derive thresholds by enumeration"):
        thresholds.node(steps["q"], freezing)
