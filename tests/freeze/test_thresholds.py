"""passes.thresholds: thresholds replay Keras on every accumulator value, per channel."""

import keras
import numpy as np
import pytest
from freeze_models import dense_model, frozen_until

from edgebnn.freeze import FreezeError
from edgebnn.freeze.passes import thresholds
from edgebnn.layers import QuantActivation, QuantDense


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


def test_an_accumulator_too_wide_to_enumerate_is_refused_unless_provably_monotone(monkeypatch):
    curve = dense_model(keras.layers.BatchNormalization(), keras.layers.Activation("tanh"), QuantActivation("ste_sign", name="q"))
    steps, freezing = frozen_until(curve, "q")
    monkeypatch.setattr(thresholds, "MAX_ENUMERATION", 4)
    with pytest.raises(FreezeError, match=r"too many to derive thresholds by enumeration \(and its float ops or quantizer"):
        thresholds.node(steps["q"], freezing)
    # a BatchNormalization and a sign: bisection gives the node enumeration gives
    model = dense_model(keras.layers.BatchNormalization(), QuantActivation("ste_sign", name="q"))
    steps, freezing = frozen_until(model, "q")
    bisected = thresholds.node(steps["q"], freezing)
    monkeypatch.setattr(thresholds, "MAX_ENUMERATION", 1 << 24)
    enumerated = thresholds.node(steps["q"], freezing)
    assert np.array_equal(bisected.params["levels"], enumerated.params["levels"])
    moving = np.any(enumerated.params["levels"] != enumerated.params["levels"][:, :1], axis=1)
    assert np.array_equal(bisected.params["thresholds"][moving], enumerated.params["thresholds"][moving])


def _binary_head(quantizer, means, n_in=5):
    """Input -> QuantDense -> BN -> QuantDense (+-1 inputs and weights, n_in of them) -> BN (the
    given means, gamma 1, variance 1 - epsilon) -> QuantActivation(quantizer)."""
    model = keras.Sequential(
        [
            keras.Input((6,)),
            QuantDense(
                n_in, input_quantizer="quantized_bits(4, 0, keep_negative=False)", kernel_quantizer="ste_sign", use_bias=False
            ),
            keras.layers.BatchNormalization(),
            QuantDense(len(means), input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="d"),
            keras.layers.BatchNormalization(name="bn", epsilon=1e-3),
            QuantActivation(quantizer, name="q"),
        ]
    )
    c = len(means)
    model.get_layer("bn").set_weights(
        [np.ones(c, np.float32), np.zeros(c, np.float32), np.asarray(means, np.float32), np.full(c, 1 - 1e-3, np.float32)]
    )
    return model


def _keras_on(model, values):
    return np.asarray(model.get_layer("q")(model.get_layer("bn")(values, training=False), training=False), np.float64)


def test_thresholds_sit_on_reachable_values_only_and_shrink():
    """5 terms of +-1 sum to an odd number: a ternary quantizer whose zero level Keras gives only
    at even sums (means on even values) costs one threshold per channel instead of two."""
    model = _binary_head("ste_tern", means=[0.0, 2.0, -2.0, 4.0])
    steps, freezing = frozen_until(model, "q")
    node = thresholds.node(steps["q"], freezing)
    src = freezing.nodes[-1]
    assert node.params["step"].tolist() == [2] * 4 and node.params["base"].tolist() == [1] * 4
    codes, values = thresholds.grid(src, freezing.node)
    assert np.all(codes % 2 == 1)  # only odd sums are enumerated
    want = node.type.codes(_keras_on(model, values))
    assert np.array_equal(thresholds.levels_at(node, codes), want)  # exact on every reachable value
    assert np.all((node.params["thresholds"] - 1) % 2 == 0)  # each threshold is a reachable value
    every, every_values = thresholds.grid(src)  # all integers: Keras's zero level at the even sums too
    changes = (np.diff(node.type.codes(_keras_on(model, every_values)), axis=0) != 0).sum(axis=0)
    assert changes.max() == 2 and node.params["thresholds"].shape[1] == 1


@pytest.mark.parametrize(
    "quantizer, most",
    [("ste_sign", 1), ("ste_tern", 2), ("quantized_bits(3, 2)", 7), ("quantized_relu(2, 1)", 3)],
)
def test_one_threshold_op_serves_sign_ternary_and_k_bit_outputs(quantizer, most):
    model = _binary_head(quantizer, means=[0.5, -1.5, 2.0], n_in=7)
    steps, freezing = frozen_until(model, "q")
    node = thresholds.node(steps["q"], freezing)
    assert node.op == "threshold" and 1 <= node.params["thresholds"].shape[1] <= most
    codes, values = thresholds.grid(freezing.nodes[-1], freezing.node)
    assert np.array_equal(thresholds.levels_at(node, codes), node.type.codes(_keras_on(model, values)))
