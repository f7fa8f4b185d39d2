"""passes.strip_softmax: the trailing softmax is left out only when asked."""

import keras
from freeze_models import dense_model, layers_of, run

from edgebnn.freeze.passes import strip_softmax


def test_a_trailing_softmax_layer_is_dropped_and_recorded():
    model = dense_model(keras.layers.Activation("softmax", name="p"), keras.layers.Dropout(0.1))
    out, planning = run(strip_softmax.run, layers_of(model), strip_softmax=True)
    assert [i.layer.name for i in out] == ["d", model.layers[-1].name] and planning.stripped.name == "p"


def test_a_trailing_quantdense_keeps_its_logits():
    model = dense_model(activation="softmax")
    out, planning = run(strip_softmax.run, layers_of(model), strip_softmax=True)
    assert len(out) == 1 and out[0].logits and planning.stripped is model.layers[0]


def test_nothing_is_stripped_unless_asked_or_not_last():
    model = dense_model(keras.layers.Activation("softmax"))
    out, planning = run(strip_softmax.run, layers_of(model))
    assert len(out) == 2 and planning.stripped is None
    model = dense_model(keras.layers.Activation("softmax"), keras.layers.Activation("relu"))
    out, planning = run(strip_softmax.run, layers_of(model), strip_softmax=True)
    assert len(out) == 3 and planning.stripped is None
