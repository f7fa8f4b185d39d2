import json

import keras
import pytest

import edgebnn  # noqa: F401
from edgebnn.config import build_model, load_config
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense, QuantDepthwiseConv2D, QuantSeparableConv2D
from edgebnn.summary import summary


def test_digits_bnn_by_hand():
    model = build_model(load_config("examples/digits_bnn.yaml"), (64,))
    s = summary(model)
    d0, bn0, d1, bn1, d2, bn2, act = s.layers
    assert (d0.input_bits, d0.params, d0.macs) == (8, {1: 64 * 128}, {(8, 1): 64 * 128})
    assert (bn0.params, bn0.trainable_params, bn0.macs) == ({32: 4 * 128}, 2 * 128, {})
    assert (d1.input_bits, d1.params, d1.macs) == (1, {1: 128 * 128}, {(1, 1): 128 * 128})
    assert (d2.params, d2.macs) == ({1: 1280}, {(1, 1): 1280})
    assert (act.input_bits, act.params, act.macs, act.output_shape) == (None, {}, {}, (None, 10))
    assert s.params == {1: 25856, 32: 1064}
    assert s.memory_bytes == (25856 + 32 * 1064) / 8 == 7488
    assert s.macs == {(1, 1): 17664, (8, 1): 8192} and s.mac_count == 25856
    assert s.binarized_mac_ratio == 17664 / 25856 and s.ternarized_mac_ratio == 0.0


def conv_model():
    return keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            QuantConv2D(3, 3, padding="same", input_quantizer="quantized_bits(4, 0)", kernel_quantizer="ste_sign", name="conv"),
            QuantActivation("ste_sign", name="act1"),
            QuantDepthwiseConv2D(3, strides=2, padding="same", depthwise_quantizer="ste_sign", use_bias=False, name="dw"),
            QuantSeparableConv2D(
                4,
                3,
                input_quantizer="ste_sign",
                depthwise_quantizer="ste_sign",
                pointwise_quantizer="quantized_bits(2, 0)",
                use_bias=False,
                name="sep",
            ),
            QuantActivation("ste_sign", name="act2"),
            keras.layers.Flatten(name="flat"),
            QuantDense(2, kernel_quantizer="quantized_bits(2, 0)", name="dense"),
        ],
        name="small",
    )


def test_conv_model_by_hand():
    s = summary(conv_model())
    by = {l.name: l for l in s.layers}
    # conv: 3x3x2x3 binary kernel on 6x6 outputs, float bias
    assert by["conv"].params == {1: 54, 32: 3} and by["conv"].macs == {(4, 1): 54 * 36}
    # depthwise: no input_quantizer, but a QuantActivation(ste_sign) feeds it -> 1-bit inputs
    assert by["dw"].input_bits == 1 and by["dw"].output_shape == (None, 3, 3, 3)
    assert by["dw"].params == {1: 27} and by["dw"].macs == {(1, 1): 27 * 9}
    # separable, valid 3x3 on 3x3 -> 1x1: depthwise 27 binary MACs, pointwise on the float accumulator
    assert by["sep"].params == {1: 27, 2: 12} and by["sep"].macs == {(1, 1): 27, (32, 2): 12}
    # the binary activation passes through Flatten into the dense layer
    assert by["flat"].input_bits == 1 and by["dense"].input_bits == 1
    assert by["dense"].params == {2: 8, 32: 2} and by["dense"].macs == {(1, 2): 8}
    assert s.params == {1: 108, 2: 20, 32: 5}
    assert s.memory_bytes == (108 + 2 * 20 + 32 * 5) / 8 == 38.5
    assert s.mac_count == 1944 + 243 + 27 + 12 + 8
    assert s.binarized_mac_ratio == 270 / 2234 and s.ternarized_mac_ratio == 8 / 2234


def test_outputs_are_printable_and_json():
    s = summary(conv_model())
    text = s.table()
    assert str(s) == text and "Binarized MAC ratio: 0.1209" in text and "Ternarized MAC ratio: 0.0036" in text
    lines = text.splitlines()
    assert any(l.startswith("dw ") and "243" in l for l in lines)
    d = json.loads(json.dumps(s.to_dict()))
    assert d["params"] == {"1": 108, "2": 20, "32": 5}
    assert d["macs"] == {"1x1": 270, "1x2": 8, "32x2": 12, "4x1": 1944}
    assert d["layers"][0]["output_shape"] == [None, 6, 6, 3]


def test_functional_model_and_float_layers():
    inp = keras.Input((4,))
    out = keras.layers.Dense(3)(QuantActivation("ste_sign")(inp))
    s = summary(keras.Model(inp, out))
    dense = s.layers[-1]
    assert dense.input_bits is None and dense.macs == {(32, 32): 12} and dense.params == {32: 15}
    assert s.binarized_mac_ratio == 0.0


def test_unbuilt_model_is_refused():
    with pytest.raises(ValueError, match="not built"):
        summary(keras.Sequential([QuantDense(2)]))


def test_package_attribute_is_callable():
    import edgebnn.summary  # the submodule import binds edgebnn.summary to the module

    s = edgebnn.summary(conv_model())
    assert s.mac_count == 2234


@pytest.mark.parametrize(
    "alias,bits", [("ste_sign", 1), ("ste_tern", 2), ("ste_heaviside", 1), ("quantized_bits(6, 2)", 6), ("noop(precision=3)", 3)]
)
def test_bits_from_the_quantizer_catalogue(alias, bits):
    from edgebnn.quantizers import get
    from edgebnn.summary import quantizer_bits

    assert quantizer_bits(get(alias)) == bits


def test_ternary_weights_count_as_ternarized():
    model = keras.Sequential(
        [
            keras.Input((5,)),
            QuantDense(4, input_quantizer="ste_sign", kernel_quantizer="ste_tern", use_bias=False),
            QuantDense(2, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False),
        ]
    )
    s = summary(model)
    assert s.params == {1: 8, 2: 20} and s.macs == {(1, 1): 8, (1, 2): 20}
    assert s.ternarized_mac_ratio == 20 / 28 and s.binarized_mac_ratio == 8 / 28
