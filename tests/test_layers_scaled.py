"""Scaled quantizers in the layers: the codes are multiplied and summed first and the scale is
applied once after; the same forward in real arithmetic and the same gradients as the plain
product ``q_in(x) @ q_k(W)``, and the serialization unchanged."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from edgebnn import quantizers as q
from edgebnn.layers import QuantConv1D, QuantConv2D, QuantDense, QuantDepthwiseConv2D, QuantSeparableConv2D

SCALED = [
    "xnor_sign",
    "xnor_sign(per_channel=False)",
    "xnor_sign(scale_gradient=True)",
    "magnitude_aware_sign",
    "quantized_bits(4, 1, alpha='auto')",
    "quantized_bits(4, 1, alpha='auto_po2')",
    "quantized_bits(4, 1, alpha=0.3)",
    "dorefa(3, 'weights')",
    "binary(alpha='auto')",
    "ternary(alpha=0.7)",
]


@pytest.mark.parametrize("name", SCALED + ["dorefa(2)", "quantized_bits(3, 0, alpha=[0.5, 3.0, 1.0, 0.25])"])
def test_rescale_of_split_is_the_quantizer(name):
    """``rescale(*split(x))`` is ``q(x)`` bit for bit (DoReFa's weights: in real arithmetic,
    ``(2r - n) / n`` rounded once instead of ``2 (r / n) - 1``)."""
    quantizer = q.get(name)
    w = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    v, s = quantizer.split(w)
    got, want = np.asarray(quantizer.rescale(v, s)), np.asarray(quantizer(w))
    assert quantizer.hardware().type.contains(np.asarray(v))  # the unscaled values are on the base grid
    if name.startswith("dorefa(3"):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)
    else:
        assert np.array_equal(got, want)


def _old_forward(layer, x):
    """The plain product: quantized input times quantized kernel, scale inside the sum."""
    xq = x if layer.input_quantizer is None else layer.input_quantizer(x)
    if isinstance(layer, QuantDense):
        y = ops.matmul(xq, layer.quantized_kernel())
    else:
        from edgebnn.layers import _conv_input

        xq, padding, strides = _conv_input(layer, xq)
        y = layer._convolve(xq, strides, padding, None)
    return y if layer.bias is None else y + layer.bias


LAYERS = [
    lambda kq, iq: QuantDense(4, input_quantizer=iq, kernel_quantizer=kq),
    lambda kq, iq: QuantConv1D(4, 3, input_quantizer=iq, kernel_quantizer=kq),
    lambda kq, iq: QuantConv2D(4, 3, padding="same", input_quantizer=iq, kernel_quantizer=kq),
    lambda kq, iq: QuantDepthwiseConv2D(3, depth_multiplier=2, input_quantizer=iq, depthwise_quantizer=kq),
    lambda kq, iq: QuantSeparableConv2D(4, 3, input_quantizer=iq, depthwise_quantizer=kq, pointwise_quantizer=kq),
    # a depthwise scale per channel: applied between the two sums (one value: after both)
    lambda kq, iq: QuantSeparableConv2D(
        3, 2, depth_multiplier=2, input_quantizer=iq, depthwise_quantizer=kq, pointwise_quantizer="ste_sign"
    ),
]
SHAPES = [(3, 6), (3, 7, 3), (3, 5, 5, 3), (3, 5, 5, 3), (3, 5, 5, 3), (3, 4, 5, 2)]


@pytest.mark.parametrize("kq", SCALED)
@pytest.mark.parametrize("iq", [None, "dorefa(2)"])
@pytest.mark.parametrize("which", range(len(LAYERS)))
def test_exact_order_keeps_forward_and_gradients(kq, iq, which):
    """Every weighted layer: the same outputs and the same gradients w.r.t. its latent kernels
    and its inputs as the plain product, up to float32 rounding of the different order."""
    layer = LAYERS[which](kq, iq)
    rng = np.random.default_rng(which)
    x = tf.constant(rng.uniform(-0.2, 1.2, size=SHAPES[which]).astype(np.float32))
    layer(x)
    for w in layer.trainable_weights:
        w.assign(rng.normal(size=w.shape).astype(np.float32))
    grads = []
    for forward in (lambda: layer(x, training=True), lambda: _old_forward(layer, x)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward()
            loss = ops.sum(y * ops.reshape(ops.cos(ops.arange(ops.size(y), dtype="float32")), ops.shape(y)))
        grads.append((y.numpy(), *[g.numpy() for g in tape.gradient(loss, [x, *layer.trainable_weights])]))
    for new, old in zip(*grads):
        np.testing.assert_allclose(new, old, rtol=2e-5, atol=2e-5)


def test_serialization_is_unchanged():
    layer = QuantDense(3, input_quantizer="dorefa(2)", kernel_quantizer="xnor_sign", name="d")
    config = layer.get_config()
    assert config["kernel_quantizer"] == q.serialize(q.get("xnor_sign"))
    assert set(config) == set(QuantDense(3, name="d").get_config())
    again = QuantDense.from_config(config)
    assert (again.kernel_quantizer, again.input_quantizer) == (layer.kernel_quantizer, layer.input_quantizer)


def test_scale_along_the_reduction_axis_keeps_the_plain_product():
    """A QKeras scale along the input axis cannot follow the sum: the layer multiplies the scaled
    kernel as it stands; its float32 scales are not powers of two, so at inference the products
    are summed exactly in float64 and rounded once to float32, in training summed in float32."""
    layer = QuantDense(3, kernel_quantizer="quantized_bits(4, 1, alpha='auto', scale_axis=0)")
    x = (np.round(np.random.default_rng(1).normal(size=(2, 5)) * 8) / 8).astype(np.float32)  # sums exact in float64
    y = layer(x)
    assert layer.split_kernel()[1] is None
    kernel = np.asarray(layer.quantized_kernel())
    exact = (x.astype(np.float64) @ kernel.astype(np.float64)).astype(np.float32)
    assert np.array_equal(np.asarray(y), exact + np.asarray(layer.bias))
    trained = layer(x, training=True)
    assert np.array_equal(np.asarray(trained), np.asarray(ops.matmul(x, kernel) + layer.bias))
    assert keras.ops.shape(y) == (2, 3)


def test_saved_scaled_model_loads_and_predicts_the_same(tmp_path):
    from edgebnn.layers import QuantActivation, load_model

    model = keras.Sequential(
        [
            keras.Input((5,)),
            QuantDense(4, input_quantizer="quantized_bits(4, 1)", kernel_quantizer="xnor_sign", name="d1"),
            QuantDense(3, input_quantizer="dorefa(2)", kernel_quantizer="quantized_bits(4, 1, alpha='auto')", name="d2"),
            QuantActivation("quantized_bits(8, 3)"),
        ]
    )
    x = np.random.default_rng(2).normal(size=(16, 5)).astype(np.float32)
    model.save(tmp_path / "m.keras")
    again = load_model(tmp_path / "m.keras")
    assert np.array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize(
    "layer, message",
    [
        (
            QuantConv2D(4, 3, kernel_quantizer="quantized_bits(3, 0, alpha=[0.5, 1.5, 0.25, 3.0, 1.0])", name="c"),
            "layer 'c' (QuantConv2D): its kernel_quantizer quantized_bits(3, alpha=[0.5, 1.5, 0.25, 3.0, 1.0]) has 5 "
            "alpha values but the kernel has 4 channels on its last axis; give one alpha per channel or one for all",
        ),
        (
            QuantDepthwiseConv2D(3, depth_multiplier=2, depthwise_quantizer="partial('ste_sign', [0, 2])", name="dw"),
            "layer 'dw' (QuantDepthwiseConv2D): its depthwise_quantizer partial('ste_sign', [0, 2]) binarizes channel 2 "
            "but the kernel has 2 channels along axis -1; choose channels below 2",
        ),
    ],
)
def test_a_quantizer_that_does_not_fit_its_kernel_is_refused_when_the_layer_is_built(layer, message):
    """Not a TensorFlow shape error at the first call: one sentence naming the layer."""
    with pytest.raises(ValueError) as err:
        keras.Sequential([keras.Input((5, 5, 3)), layer])
    assert str(err.value).splitlines()[0] == message
