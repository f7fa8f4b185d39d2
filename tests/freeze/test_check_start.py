"""passes.check_start: the model starts with a layer whose handler starts a chain."""

import keras
import pytest
from freeze_models import dense_model, layers_of, run

from edgebnn.freeze import FreezeError
from edgebnn.freeze.items import Layer
from edgebnn.freeze.passes import check_start


def test_a_layer_before_the_first_weighted_one_is_refused():
    items = [Layer(keras.layers.Dense(2, name="x"))] + layers_of(dense_model())  # not even looked up
    with pytest.raises(FreezeError) as err:
        run(check_start.run, items)
    assert str(err.value) == (
        "layer 'x' (Dense) comes before the first QuantDense, QuantConv2D, QuantDepthwiseConv2D, QuantSeparableConv2D "
        "or QuantConv1D; the model must start with one whose input_quantizer sets the input's fixed-point type"
    )


def test_a_model_without_a_weighted_layer_is_refused():
    with pytest.raises(FreezeError, match="the model has no QuantDense, QuantConv2D, .* or QuantConv1D layer; nothing to freeze"):
        run(check_start.run, [])


def test_a_weighted_start_passes_everything_through():
    items = layers_of(dense_model(keras.layers.Dense(2)))
    assert run(check_start.run, items)[0] == items
