"""passes.check_start: the model starts with a layer whose handler starts a chain."""

import keras
import pytest
from freeze_models import dense_model, layers_of, run

from edgebnn.freeze import FreezeError
from edgebnn.freeze.items import Layer
from edgebnn.freeze.passes import check_start


def test_a_layer_before_the_first_weighted_one_is_refused():
    items = [Layer(keras.layers.BatchNormalization(name="x"))] + layers_of(dense_model())  # not even looked up
    with pytest.raises(FreezeError) as err:
        run(check_start.run, items)
    assert str(err.value) == (
        "layer 'x' (BatchNormalization) comes before any layer that sets the input's fixed-point type; start the model with a "
        "QuantDense, QuantConv2D, QuantActivation, QuantDepthwiseConv2D, QuantSeparableConv2D or QuantConv1D that does "
        "(a QuantActivation('quantized_bits(8, 0, keep_negative=False)') or a layer's input_quantizer), or freeze with "
        "input_type='ufixed<8,0>'"
    )


def test_a_float_first_layer_is_refused_for_its_float_weights_not_for_the_input_type():
    items = [Layer(keras.layers.Conv2D(2, 3, name="stem"))] + layers_of(dense_model())
    with pytest.raises(FreezeError) as err:
        run(check_start.run, items)
    assert str(err.value).startswith(
        "layer 'stem' (Conv2D) has float weights, which cannot be deployed bit for bit; use edgebnn.layers.QuantConv2D"
    )


def test_a_model_without_a_weighted_layer_is_refused():
    with pytest.raises(FreezeError, match="has no QuantDense, QuantConv2D, QuantActivation, .* layer; nothing to freeze"):
        run(check_start.run, [])


def test_a_weighted_start_passes_everything_through():
    items = layers_of(dense_model(keras.layers.Dense(2)))
    assert run(check_start.run, items)[0] == items


def test_views_and_no_ops_may_come_first_and_a_quant_activation_may_start():
    from edgebnn.layers import QuantActivation

    views = [Layer(keras.layers.Flatten()), Layer(keras.layers.Dropout(0.1)), Layer(keras.layers.Reshape((4,)))]
    items = views + [Layer(QuantActivation("quantized_bits(8, 0)"))] + layers_of(dense_model())
    assert run(check_start.run, items)[0] == items


def test_with_an_input_type_any_layer_may_start():
    from edgebnn.fixed import FixedType

    items = [Layer(keras.layers.BatchNormalization())] + layers_of(dense_model())
    assert run(check_start.run, items, input_type=FixedType.from_string("ufixed<8,0>"))[0] == items
