"""passes.check_pool_move: a pool moved after a requantization must commute with it."""

import keras
import numpy as np
import pytest
from freeze_models import conv_model, frozen_until

from edgebnn.freeze import FreezeError
from edgebnn.freeze.passes import build_node, check_pool_move
from edgebnn.layers import QuantActivation


def _model(gamma):
    model = conv_model(
        keras.layers.MaxPooling2D(2, name="mp"),
        keras.layers.BatchNormalization(name="bn"),
        QuantActivation("ste_sign", name="s"),
        use_bias=True,
    )
    model.get_layer("bn").set_weights([np.asarray(v, np.float32) for v in (gamma, [0.1, -0.2], [0.3, -0.5], [1.0, 2.0])])
    model.get_layer("c").bias.assign(np.asarray([0.25, -0.5], np.float32))
    return model


def _checked(gamma):
    steps, freezing = frozen_until(_model(gamma), "mp")
    build_node.run(steps["s"], freezing)  # the requant node comes first: the pool moved after it
    check_pool_move.run(steps["mp"], freezing)


def test_a_decreasing_requantization_is_refused_and_an_increasing_one_passes():
    with pytest.raises(
        FreezeError,
        match=r"layer 'mp' \(MaxPooling2D\) sits between c\.bias and the quantizer of "
        r"'s'.*decreases in channel\(s\) \[1\]",
    ):
        _checked([1.0, -1.5])
    _checked([1.0, 1.5])


def test_a_pool_that_did_not_move_is_not_checked():
    model = conv_model(keras.layers.MaxPooling2D(2, name="mp"), QuantActivation("ste_sign", name="s"))
    steps, freezing = frozen_until(model, "mp")
    assert steps["mp"].moved_from is None
    check_pool_move.run(steps["mp"], freezing)  # nothing to replay: no node needed
