"""passes.input_quantizer: the first quantizer (or the given input type) becomes the input step, before any
leading views."""

import pytest
from freeze_models import quantize, run, step

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
        (None, "is the first layer and reads floats: give it a fixed-point input_quantizer.*or freeze with the data's type"),
        ("ste_sign", "gives binary values, not the plain ap_fixed conversion"),
    ],
)
def test_an_input_quantizer_that_is_not_a_conversion_is_refused(q, words):
    from edgebnn.freeze.passes import input_quantizer

    with pytest.raises(FreezeError, match=words):
        run(input_quantizer.run, [_first(q)])


def test_leading_views_follow_the_input_step():
    from edgebnn.freeze.passes import input_quantizer

    flatten, first, later = step("flatten"), _first("quantized_bits(4, 2)"), quantize()
    out, _ = run(input_quantizer.run, [flatten, first, later])
    assert out[0].kind == "input" and out[0].quantizer is first.quantizer
    assert len(out) == 3 and out[1] is flatten and out[2] is later


def test_a_given_input_type_makes_the_input_step_of_a_float_first_layer():
    from edgebnn.fixed import FixedType
    from edgebnn.freeze.passes import input_quantizer

    t = FixedType.from_string("fixed<6,2,RND,SAT>")
    dense = step("dense", "d")
    out, _ = run(input_quantizer.run, [_first(None), dense], input_type=t)
    assert (out[0].kind, out[0].sources, out[0].quantizer.type) == ("input", ["d"], t) and out[1:] == [dense]
    with pytest.raises(FreezeError, match=r"sets the input's type with its input_quantizer .* input_type='fixed<6,2,RND,SAT>'"):
        run(input_quantizer.run, [_first("quantized_bits(4, 2)"), dense], input_type=t)
