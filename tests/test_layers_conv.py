"""Quantized convolutions against a plain NumPy computation, and .keras round trips."""

import keras
import numpy as np
import pytest

import edgebnn  # noqa: F401
from edgebnn import quantizers as qz
from edgebnn.layers import (
    QuantActivation,
    QuantConv1D,
    QuantConv2D,
    QuantDense,
    QuantDepthwiseConv2D,
    QuantSeparableConv2D,
)

RNG = np.random.default_rng(1)


def sign(x):
    return np.where(x < 0, -1.0, 1.0)


def np_conv(x, w, stride, pads, pad_value, dilation=1):
    """channels_last N-d convolution of x (batch, *spatial, cin) with w (*k, cin, cout) after
    padding each spatial axis by ``pads[i] = (before, after)`` with ``pad_value``."""
    x = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=pad_value).astype(np.float64)
    ks = w.shape[:-2]
    out_shape = [(x.shape[1 + i] - ((k - 1) * dilation + 1)) // stride + 1 for i, k in enumerate(ks)]
    out = np.zeros((x.shape[0], *out_shape, w.shape[-1]))
    for pos in np.ndindex(*out_shape):
        for off in np.ndindex(*ks):
            idx = tuple(p * stride + o * dilation for p, o in zip(pos, off))
            out[(slice(None), *pos)] += x[(slice(None), *idx)] @ w[off]
    return out


def np_depthwise(x, w, stride, pads, pad_value):
    """w: (kh, kw, cin, mult); output channel c * mult + m, as Keras orders them."""
    cin, mult = w.shape[-2:]
    outs = [
        np_conv(x[..., c : c + 1], w[:, :, c : c + 1, m : m + 1], stride, pads, pad_value)
        for c in range(cin)
        for m in range(mult)
    ]
    return np.concatenate(outs, axis=-1)


def keras_out(layer, x):
    model = keras.Sequential([keras.Input(x.shape[1:]), layer])
    return model, model.predict(x, verbose=0)


# (stride, input size, "same" padding split for a 3-wide kernel, as TensorFlow splits it)
CASES = [(1, 5, (1, 1)), (2, 6, (0, 1)), (2, 5, (1, 1))]


@pytest.mark.parametrize("pad_value", [0.0, 1.0, -1.0])
@pytest.mark.parametrize("stride,size,pad", CASES)
def test_conv2d_binary_matches_numpy(pad_value, stride, size, pad):
    x = RNG.normal(size=(3, size, size, 2)).astype(np.float32)
    layer = QuantConv2D(
        4,
        3,
        strides=stride,
        padding="same",
        input_quantizer="ste_sign",
        kernel_quantizer="ste_sign",
        use_bias=False,
        pad_values=pad_value,
    )
    _, got = keras_out(layer, x)
    w = sign(keras.ops.convert_to_numpy(layer.kernel))
    want = np_conv(sign(x), w, stride, [pad, pad], pad_value)
    assert np.array_equal(got, want)


def test_pad_values_change_the_border_only():
    x = RNG.normal(size=(2, 5, 5, 3)).astype(np.float32)
    outs = {}
    for pv in (0.0, 1.0):
        layer = QuantConv2D(
            2,
            3,
            padding="same",
            input_quantizer="ste_sign",
            kernel_quantizer="ste_sign",
            kernel_initializer=keras.initializers.Constant(1.0),
            use_bias=False,
            pad_values=pv,
        )
        outs[pv] = keras_out(layer, x)[1]
    assert np.array_equal(outs[0.0][:, 1:-1, 1:-1], outs[1.0][:, 1:-1, 1:-1])
    assert not np.array_equal(outs[0.0], outs[1.0])
    # with an all-ones kernel the corner sees 5 padded ones instead of zeros
    assert np.array_equal(outs[1.0][:, 0, 0] - outs[0.0][:, 0, 0], np.full((2, 2), 5 * 3.0))


@pytest.mark.parametrize("pad_value", [0.0, 1.0, -1.0])
def test_conv1d_binary_matches_numpy_with_bias(pad_value):
    x = RNG.normal(size=(2, 7, 3)).astype(np.float32)
    layer = QuantConv1D(
        5,
        3,
        strides=2,
        padding="same",
        input_quantizer="ste_sign",
        kernel_quantizer="ste_sign",
        bias_quantizer="quantized_bits(4, 1)",
        bias_initializer="random_normal",
        pad_values=pad_value,
    )
    _, got = keras_out(layer, x)
    w = sign(keras.ops.convert_to_numpy(layer.kernel))
    b = np.round(keras.ops.convert_to_numpy(layer.bias) * 4) / 4  # step 2**-2, values well inside the range
    want = np_conv(sign(x), w, 2, [(1, 1)], pad_value) + b  # size 7, stride 2: total padding 2
    assert np.array_equal(got, want)
    assert np.array_equal(keras.ops.convert_to_numpy(layer.quantized_bias()), b)


def test_conv1d_causal():
    x = RNG.normal(size=(2, 6, 2)).astype(np.float32)
    layer = QuantConv1D(
        3, 3, dilation_rate=2, padding="causal", input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False
    )
    _, got = keras_out(layer, x)
    want = np_conv(sign(x), sign(keras.ops.convert_to_numpy(layer.kernel)), 1, [(4, 0)], 0.0, dilation=2)
    assert np.array_equal(got, want)
    with pytest.raises(ValueError, match="causal"):
        QuantConv1D(3, 3, padding="causal", pad_values=1.0)


@pytest.mark.parametrize("pad_value", [0.0, 1.0, -1.0])
@pytest.mark.parametrize("stride,size,pad", CASES)
def test_depthwise_binary_matches_numpy(pad_value, stride, size, pad):
    x = RNG.normal(size=(2, size, size, 3)).astype(np.float32)
    layer = QuantDepthwiseConv2D(
        3,
        strides=stride,
        depth_multiplier=2,
        padding="same",
        input_quantizer="ste_sign",
        depthwise_quantizer="ste_sign",
        use_bias=False,
        pad_values=pad_value,
    )
    _, got = keras_out(layer, x)
    w = sign(keras.ops.convert_to_numpy(layer.kernel))
    assert np.array_equal(got, np_depthwise(sign(x), w, stride, [pad, pad], pad_value))


@pytest.mark.parametrize("pad_value", [0.0, 1.0, -1.0])
@pytest.mark.parametrize("stride,size,pad", CASES)
def test_separable_binary_matches_numpy(pad_value, stride, size, pad):
    x = RNG.normal(size=(2, size, size, 3)).astype(np.float32)
    layer = QuantSeparableConv2D(
        4,
        3,
        strides=stride,
        depth_multiplier=2,
        padding="same",
        input_quantizer="ste_sign",
        depthwise_quantizer="ste_sign",
        pointwise_quantizer="ste_sign",
        use_bias=False,
        pad_values=pad_value,
    )
    _, got = keras_out(layer, x)
    wd = sign(keras.ops.convert_to_numpy(layer.depthwise_kernel))
    wp = sign(keras.ops.convert_to_numpy(layer.pointwise_kernel))
    want = np_depthwise(sign(x), wd, stride, [pad, pad], pad_value) @ wp[0, 0]
    assert np.array_equal(got, want)


def test_channels_first_is_refused():
    for make in (
        lambda: QuantConv2D(2, 3, data_format="channels_first"),
        lambda: QuantDepthwiseConv2D(3, data_format="channels_first"),
        lambda: QuantSeparableConv2D(2, 3, data_format="channels_first"),
    ):
        with pytest.raises(ValueError, match="channels_last.* only"):
            make()


def test_quantizers_are_kept_as_given():
    kq = qz.get("quantized_bits(4, 0, symmetric=True)")
    layer = QuantConv2D(2, 3, kernel_quantizer=kq, input_quantizer="ste_sign")
    assert layer.kernel_quantizer is kq
    assert layer.input_quantizer == qz.get("ste_sign") and layer.bias_quantizer is None
    assert QuantDense(2, kernel_quantizer=kq).kernel_quantizer is kq


# ----------------------------------------------------------------------------- save/load

IN_Q = "quantized_bits(6, 2)"
B_Q = "quantized_bits(8, 3)"


def round_trip_models():
    return {
        "dense": (
            (6,),
            QuantDense(
                5,
                input_quantizer=IN_Q,
                kernel_quantizer="ste_sign",
                bias_quantizer=B_Q,
                bias_initializer="random_normal",
                activation="relu",
            ),
        ),
        "conv1d": (
            (7, 3),
            QuantConv1D(
                4,
                3,
                padding="same",
                strides=2,
                input_quantizer="ste_sign",
                kernel_quantizer="ste_sign",
                bias_quantizer=B_Q,
                bias_initializer="random_normal",
                pad_values=-1.0,
            ),
        ),
        "conv2d": (
            (6, 6, 3),
            QuantConv2D(
                4,
                (3, 2),
                padding="same",
                strides=(2, 1),
                dilation_rate=1,
                input_quantizer=IN_Q,
                kernel_quantizer="quantized_bits(4, 0)",
                bias_quantizer=B_Q,
                bias_initializer="random_normal",
                pad_values=1.0,
            ),
        ),
        "depthwise": (
            (5, 5, 3),
            QuantDepthwiseConv2D(
                3,
                depth_multiplier=2,
                padding="same",
                input_quantizer="ste_sign",
                depthwise_quantizer="ste_sign",
                bias_quantizer=B_Q,
                bias_initializer="random_normal",
                pad_values=1.0,
            ),
        ),
        "separable": (
            (5, 5, 3),
            QuantSeparableConv2D(
                4,
                3,
                padding="same",
                input_quantizer="ste_sign",
                depthwise_quantizer="ste_sign",
                pointwise_quantizer="ste_sign",
                bias_quantizer=B_Q,
                bias_initializer="random_normal",
                pad_values=-1.0,
            ),
        ),
    }


@pytest.mark.parametrize("kind", list(round_trip_models()))
def test_keras_round_trip_each_layer(kind, tmp_path):
    shape, layer = round_trip_models()[kind]
    model = keras.Sequential([keras.Input(shape), layer, QuantActivation("quantized_bits(8, 4)")])
    x = RNG.normal(size=(8, *shape)).astype(np.float32)
    path = tmp_path / f"{kind}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)  # safe_mode on, no custom_objects
    assert np.array_equal(model.predict(x, verbose=0), loaded.predict(x, verbose=0))
    assert type(loaded.layers[0]) is type(layer)
    for key in layer._quantizer_keys:
        assert getattr(loaded.layers[0], key) == getattr(layer, key), key
    assert loaded.layers[0].get_config() == layer.get_config()
