"""passes.affine: a BatchNormalization ending the model becomes an exact affine node when Keras's
float32 outputs lie on y = a * x + b on every reachable accumulator value, else it is refused."""

import warnings

import keras
import numpy as np
import pytest
from freeze_models import frozen_until

from edgebnn.emulate import emulate
from edgebnn.freeze import FreezeError, freeze, keras_logits, keras_reference
from edgebnn.freeze.passes import affine, thresholds
from edgebnn.layers import QuantDense

# gamma / sqrt(variance + epsilon) a power of two (or zero), mean and beta on a coarse grid
POW2 = ([0.5, -2.0, 0.0, 1.0], [0.25, -1.5, 3.0, 0.0], [1.0, -3.0, 0.5, 0.0], [4.0 - 1e-3, 1.0 - 1e-3, 0.25 - 1e-3, 16.0 - 1e-3])


def head(stats, softmax=False, bias=False):
    """Input -> QuantDense -> BN -> QuantDense (+-1) -> BN(stats) [-> softmax]: larq's classifier head."""
    model = keras.Sequential(
        [
            keras.Input((6,)),
            QuantDense(
                5, input_quantizer="quantized_bits(4, 0, keep_negative=False)", kernel_quantizer="ste_sign", use_bias=False
            ),
            keras.layers.BatchNormalization(),
            QuantDense(4, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=bias, name="d"),
            keras.layers.BatchNormalization(name="bn", epsilon=1e-3),
            *([keras.layers.Activation("softmax", name="sm")] if softmax else []),
        ]
    )
    model.get_layer("bn").set_weights([np.asarray(v, np.float32) for v in stats])
    if bias:
        model.get_layer("d").bias.assign(np.array([0.5, -1.0, 0.25, 2.0], np.float32))
    return model


def inputs(n=400):
    return np.random.default_rng(0).uniform(-1, 2, (n, 6)).astype(np.float32)


def test_the_affine_node_equals_keras_on_every_reachable_value():
    model = head(POW2)
    steps, freezing = frozen_until(model, "bn")
    assert steps["bn"].kind == "affine"
    node = affine.node(steps["bn"], freezing)
    assert node.op == "affine" and node.params["scale"].tolist() == [1, -8, 0, 1]  # 0.25, -2, 0, 0.25
    codes, values = thresholds.grid(freezing.nodes[-1], freezing.node)
    want = np.asarray(model.get_layer("bn")(values, training=False), np.float64)
    x = freezing.nodes[-1].type.from_codes(codes)
    a, b = (node.fixed_attr(f"{k}_type").from_codes(node.params[k]) for k in ("scale", "offset"))
    got = node.type.from_codes(node.type.codes(a * x + b))
    assert np.array_equal(got, want) and node.type.contains(want)


@pytest.mark.parametrize("softmax, bias", [(False, False), (True, False), (False, True)])
def test_a_model_ending_with_batchnorm_freezes_exactly(softmax, bias):
    model = head(POW2, softmax=softmax, bias=bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model, strip_softmax=softmax)
    assert graph.nodes[-1].op == "affine"
    keras_model = keras_logits(model) if softmax else model
    x = inputs()
    for batch in (1, 32):
        assert np.array_equal(emulate(graph, x), keras_model.predict(x, batch_size=batch, verbose=0))


def test_float32_rounded_batchnorm_is_refused_with_the_fix():
    model = head(([0.7] * 4, [0.1] * 4, [0.3] * 4, [1.1] * 4))
    with pytest.raises(FreezeError) as err:
        freeze(model)
    assert str(err.value) == (
        "layer 'bn' (BatchNormalization): the model ends with the real-valued outputs of bn, which Keras's float32 "
        "arithmetic does not compute as an exact fixed-point affine form a * x + b of the accumulator 'd'; freeze "
        "with output_quantizer='quantized_bits(11, 2)' (their range on a grid of 1/256: Keras's logits rounded the same "
        "way are what is verified, no training needed) or end the model with such a QuantActivation"
    )
    # the advice works: the rounded logits are exact for every batch size Keras runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model, output_quantizer="quantized_bits(11, 2)")
    x = inputs()
    reference = keras_reference(model, graph.meta)[0]
    for batch in (1, 32):
        assert np.array_equal(emulate(graph, x), reference.predict(x, batch_size=batch, verbose=0))


def test_a_scale_of_too_many_bits_is_refused(monkeypatch):
    monkeypatch.setattr(affine, "MAX_SCALE_BITS", 2)  # -2 and 0.25 on one grid need 5 bits
    with pytest.raises(FreezeError, match="not compute as an exact fixed-point affine form"):
        freeze(head(POW2))


def _constant_head(stats):
    """The head whose second accumulator is constant per channel (the first BN has gamma 0, so
    the signs are constant), the head's mean exactly that value."""
    model = head(stats)
    bn0 = model.layers[1]
    bn0.set_weights([np.zeros(5, np.float32), np.ones(5, np.float32), np.zeros(5, np.float32), np.ones(5, np.float32)])
    acc = keras.Model(model.inputs, model.get_layer("d").output).predict(inputs(4), verbose=0)
    assert np.all(acc == acc[0])
    gamma, beta, _, var = (np.asarray(v, np.float32) for v in stats)
    model.get_layer("bn").set_weights([gamma, beta, acc[0], var])
    return model


def test_a_channel_with_one_reachable_value_is_judged_by_the_layers_own_slope():
    """Seed 349 of the fuzzer: x == mean, so Keras gives beta without XLA, but its fused
    multiply-add (jit_compile) gives the rounding residue of mean * inv instead. The value alone
    fits any a * x + b; the slope one code away shows the scale of 24 bits, which is refused."""
    with pytest.raises(FreezeError, match="not compute as an exact fixed-point affine form"):
        freeze(_constant_head(([1.0] * 4, [0.0, -0.0, 1e-7, 0.0], [0.0] * 4, [1e-6] * 4)))
    model = _constant_head(POW2)  # a power-of-two slope: the product is exact, any order gives one result
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
    assert graph.nodes[-1].op == "affine"
    x = inputs()
    for jit in (False, True):
        model.compile(jit_compile=jit)
        assert np.array_equal(emulate(graph, x), model.predict(x, verbose=0)), jit
