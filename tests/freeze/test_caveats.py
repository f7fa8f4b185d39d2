"""passes.caveats: XLA's scales, and layout-dependent activations, are recorded per node."""

import keras
from freeze_models import dense_model, frozen_until

from edgebnn.freeze.passes import build_node, caveats
from edgebnn.layers import QuantActivation
from edgebnn.quantizers import get


def _caveats(model, jit):
    steps, freezing = frozen_until(model, "q")
    freezing.jit = jit
    build_node.run(steps["q"], freezing)
    caveats.run(steps["q"], freezing)
    return freezing.caveats


def test_a_float_bias_under_xla_is_no_caveat():
    """The layers add a float bias to the exact sum under XLA too (layers.add_bias)."""
    model = dense_model(QuantActivation("ste_sign", name="q"), use_bias=True)
    assert _caveats(model, jit=True) == []
    assert _caveats(model, jit=False) == []


def test_a_layout_stable_activation_has_no_caveat():
    model = dense_model(keras.layers.Activation("tanh"), QuantActivation("quantized_bits(4, 1)", name="q"))
    assert _caveats(model, jit=False) == []


def test_a_scale_after_the_sum_under_xla_is_a_caveat():
    model = dense_model(QuantActivation("ste_sign", name="q"))
    model.layers[0].kernel_quantizer = get("xnor_sign")
    found = _caveats(model, jit=True)
    assert [(c["node"], c["layer"], c["kind"]) for c in found] == [("q", "d", "xla_scale")]
    assert found[0]["reason"].startswith("layer 'd' (QuantDense) multiplies its sums by its kernel scale (")
    assert _caveats(model, jit=False) == []
