"""freeze.plan: the passes run as one lazy stream, so a model is refused at its first failing
layer, whichever pass refuses it."""

import keras
import pytest
from freeze_models import dense_model

from edgebnn.freeze import FreezeError, plan
from edgebnn.layers import QuantDense


def test_the_first_failing_layer_is_named_even_when_a_later_one_fails_in_an_earlier_pass():
    # 'e' fails in fold_float_ops (the 7th pass), 'x' in lower (the 3rd): 'e' comes first
    model = dense_model(QuantDense(2, kernel_quantizer="ste_sign", name="e"), keras.layers.Dense(2, name="x"), use_bias=True)
    with pytest.raises(FreezeError, match=r"layer 'e' \(QuantDense\) receives real-valued inputs from d"):
        plan(model)
    # without the float bias 'e' is fine, and the unknown layer is refused
    model = dense_model(QuantDense(2, kernel_quantizer="ste_sign", name="e"), keras.layers.Dense(2, name="x"))
    with pytest.raises(FreezeError, match=r"layer 'x' \(Dense\) has float weights.*use edgebnn.layers.QuantDense"):
        plan(model)
