"""freeze.lower: the handler table, looked up along the MRO, and what each handler yields."""

import keras
import pytest
from freeze_models import dense_model

from edgebnn.freeze import FreezeError
from edgebnn.freeze.items import FloatOp, Layer, Quantize, Step
from edgebnn.freeze.lower import HANDLERS, handler_for, run, unsupported
from edgebnn.freeze.lower import conv1d as conv1d_module
from edgebnn.freeze.lower import noop as noop_module
from edgebnn.layers import QuantConv1D, QuantDense


def lowered(layer, logits=False):
    return list(run(iter([Layer(layer, logits)]), None))


def test_lookup_walks_the_mro_and_unknown_layers_get_the_sentence():
    assert handler_for(keras.layers.SpatialDropout2D(0.1)) is noop_module
    assert handler_for(QuantConv1D(2, 3)) is conv1d_module  # a Conv1D has its own handler, not QuantConv2D's
    assert str(unsupported(keras.layers.Dense(2, name="x"))) == (
        "layer 'x' (Dense) has float weights, which cannot be deployed bit for bit; use edgebnn.layers.QuantDense with a "
        "kernel_quantizer (e.g. 'ste_sign', or 'quantized_bits(8, 0, alpha=1)' for a layer kept near full precision) and "
        "train again"
    )
    assert "edgebnn.layers.QuantSeparableConv2D" in str(unsupported(keras.layers.SeparableConv2D(2, 3)))
    msg = str(unsupported(keras.layers.LayerNormalization(name="x")))
    assert msg == (
        "layer 'x' (LayerNormalization) cannot be frozen; supported layers are QuantDense, QuantConv2D, "
        "BatchNormalization, QuantActivation, elementwise Activation, MaxPooling2D, AveragePooling2D, "
        "Flatten, Reshape, the inference no-ops (Dropout, SpatialDropout, GaussianNoise, GaussianDropout, "
        "AlphaDropout, ActivityRegularization, Identity), QuantDepthwiseConv2D, QuantSeparableConv2D, QuantConv1D, "
        "MaxPooling1D, GlobalMaxPooling1D, AveragePooling1D, GlobalAveragePooling1D, ZeroPadding1D, Add, Concatenate, "
        "GlobalMaxPooling2D, GlobalAveragePooling2D and ZeroPadding2D"
    )
    assert len(HANDLERS) == 28
    with pytest.raises(FreezeError, match="has float weights"):
        lowered(keras.layers.Dense(2, name="x"))


def test_a_weighted_layer_lowers_to_its_input_quantizer_accumulator_bias_and_activation():
    model = dense_model(units=2, use_bias=True, activation="relu")
    items = lowered(model.layers[0])
    assert [type(i) for i in items] == [Quantize, Step, FloatOp, FloatOp]
    assert items[0].name == "d_input" and items[0].which == "input_quantizer"
    assert items[1].kind == "dense" and items[2].bias and items[3].relu
    assert [type(i) for i in lowered(model.layers[0], logits=True)] == [Quantize, Step, FloatOp]  # no activation


def test_handlers_refuse_by_layer():
    with pytest.raises(FreezeError, match=r"layer 'd' \(QuantDense\) has a float kernel"):
        lowered(QuantDense(2, input_quantizer="quantized_bits(4, 2)", name="d"))
    with pytest.raises(FreezeError, match=r"layer 'p' \(Activation\) applies softmax"):
        lowered(keras.layers.Activation("softmax", name="p"))
    assert lowered(keras.layers.Activation("linear")) == [] and lowered(keras.layers.Dropout(0.5)) == []


def test_every_handler_module_has_what_the_table_promises():
    for cls, module in HANDLERS.items():
        assert isinstance(module.LABEL, str) and callable(module.lower), cls
        if hasattr(module, "KIND"):
            assert callable(module.keras_eval) and callable(module.node), cls
