"""freeze.forms: a quantizer's hardware form lowered to (type, codes), or refused by layer."""

import numpy as np
import pytest

from edgebnn.freeze import FreezeError, forms
from edgebnn.layers import QuantDense


def _layer(kernel_quantizer):
    layer = QuantDense(2, input_quantizer="quantized_bits(4, 2)", kernel_quantizer=kernel_quantizer, name="d")
    layer.build((None, 3))
    return layer


def test_binary_weights_become_codes_on_their_grid():
    layer = _layer("ste_sign")
    layer.kernel.assign(np.array([[0.3, -0.2], [-1.0, 2.0], [0.0, 0.1]], np.float32))
    t, codes = forms.on_declared_grid(layer, "kernel_quantizer", layer.quantized_kernel())
    assert np.array_equal(t.from_codes(codes), np.asarray(layer.quantized_kernel()))


def test_scaled_weights_become_codes_of_their_base_form():
    """The layer sums the codes and applies the scale after: the kernel is its codes (shifted onto
    a finer grid when every scale is a power of two)."""
    for q in ("magnitude_aware_sign", "xnor_sign", "quantized_bits(4, 0, alpha='auto')", "dorefa(k_bit=2, mode='weights')"):
        layer = _layer(q)
        t, codes = forms.kernel(layer)
        values = np.asarray(layer.split_kernel()[0])
        assert forms.folds_scale(layer) and np.array_equal(t.from_codes(codes), values)
    layer = _layer("xnor_sign(po2=True)")
    t, codes = forms.kernel(layer)
    assert not forms.folds_scale(layer) and np.array_equal(t.from_codes(codes), np.asarray(layer.quantized_kernel()))


def test_scaled_biases_and_forms_without_hardware_are_refused():
    layer = _layer("ste_sign")
    layer.bias_quantizer = layer.kernel_quantizer = forms.qz.get("xnor_sign")
    with pytest.raises(
        FreezeError,
        match=r"layer 'd' \(QuantDense\): its bias_quantizer .* multiplies the "
        r"weights by a scale.*; use a bias_quantizer without a scale",
    ):
        forms.on_declared_grid(layer, "bias_quantizer", layer.quantized_bias())
    with pytest.raises(FreezeError, match=r"layer 'd' \(QuantDense\): its kernel_quantizer cannot be deployed"):
        forms.hardware(_layer("noop(8)").kernel_quantizer, _layer("noop(8)"), "kernel_quantizer")


@pytest.mark.parametrize(
    "q",
    [
        "ste_tern",
        "ternary",
        "ste_tern(ternary_weight_networks=True)",
        "ste_heaviside",
        "quantized_po2(4)",
        "quantized_tanh(3)",
        "partial('ste_sign', [1], other='quantized_bits(4, 0)')",
    ],
)
def test_weights_of_every_form_on_a_grid_become_codes(q):
    """Weights are constants: ternary, unipolar, power-of-two, grid and partial forms on one grid
    are integer codes of that type (exactly the quantized kernel)."""
    layer = _layer(q)
    layer.kernel.assign(np.array([[0.3, -0.2], [-1.0, 2.0], [0.0, 0.7]], np.float32))
    t, codes = forms.on_declared_grid(layer, "kernel_quantizer", layer.quantized_kernel())
    assert np.array_equal(t.from_codes(codes), np.asarray(layer.quantized_kernel()))


def test_input_type_is_the_conversion_of_the_first_input_quantizer():
    from edgebnn.freeze.items import Quantize

    layer = _layer("ste_sign")
    first = Quantize(layer, layer.input_quantizer, "input_quantizer", "d_input")
    assert str(forms.input_type(first)) == "fixed<4,3,RND_CONV,SAT>"  # QKeras: sign bit not counted
    with pytest.raises(FreezeError, match="its input_quantizer ste_sign gives binary values, not the plain ap_fixed"):
        forms.input_type(Quantize(layer, layer.kernel_quantizer, "input_quantizer", "d_input"))
