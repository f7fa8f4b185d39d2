"""passes.input_quantizer: the first layer's input_quantizer becomes the input step."""

import pytest
from freeze_models import quantize, run

from edgebnn.freeze import FreezeError
from edgebnn.freeze.items import Quantize
from edgebnn.layers import QuantDense


def _first(input_quantizer):
    layer = QuantDense(2, input_quantizer=input_quantizer, kernel_quantizer="ste_sign", name="d")
    return Quantize(layer, layer.input_quantizer, "input_quantizer", "d_input")


def test_the_first_quantizer_becomes_the_input_step_and_later_ones_stay():
    from edgebnn.freeze.passes import input_quantizer

    later = quantize()
    out, _ = run(input_quantizer.run, [_first("quantized_bits(4, 2)"), later])
    assert (out[0].name, out[0].kind, out[0].sources) == ("input", "input", ["d"]) and out[1] is later


@pytest.mark.parametrize(
    "q, words",
    [
        (None, "is the first layer and needs a fixed-point input_quantizer"),
        ("ste_sign", "gives binary values, not the plain ap_fixed conversion"),
    ],
)
def test_an_input_quantizer_that_is_not_a_conversion_is_refused(q, words):
    from edgebnn.freeze.passes import input_quantizer

    with pytest.raises(FreezeError, match=words):
        run(input_quantizer.run, [_first(q)])
