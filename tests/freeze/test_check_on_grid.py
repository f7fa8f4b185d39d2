"""passes.check_on_grid: an average pool reads a quantized tensor or an accumulator, never real values."""

import pytest
from freeze_models import op, quantize, run, step

from edgebnn.freeze import FreezeError
from edgebnn.freeze.passes import check_on_grid


def test_a_pool_on_a_quantized_tensor_or_an_accumulator_passes_unchanged():
    items = [step("conv2d", "c"), step("avgpool2d", "a"), op("bn"), quantize(), step("avgpool2d", "b")]
    out, _ = run(check_on_grid.run, items)
    assert out == items


def test_a_pool_among_float_ops_is_refused_with_where_to_pool_instead():
    with pytest.raises(
        FreezeError,
        match=r"layer 'a' \(Layer\) averages the real-valued outputs of bn, "
        r"whose float32 mean cannot be moved past them exactly; pool after the "
        r"activation .* or directly on the accumulator of 'c', before the",
    ):
        run(check_on_grid.run, [step("conv2d", "c"), op("bn"), step("avgpool2d", "a"), quantize()])
    with pytest.raises(FreezeError, match=r"accumulator of 'c' \(with a quantized bias or none\)"):
        run(check_on_grid.run, [step("conv2d", "c"), op("c.bias", bias=True), step("avgpool2d", "a"), quantize()])


def test_1d_average_pools_and_zero_paddings_follow_the_same_rule():
    items = [step("conv1d", "c"), step("zeropad1d", "z"), step("avgpool1d", "a"), op("bn"), quantize(), step("zeropad1d")]
    out, _ = run(check_on_grid.run, items)
    assert out == items
    with pytest.raises(FreezeError, match=r"layer 'a' \(Layer\) averages the real-valued outputs of bn"):
        run(check_on_grid.run, [step("conv1d", "c"), op("bn"), step("avgpool1d", "a"), quantize()])
    with pytest.raises(FreezeError) as err:
        run(check_on_grid.run, [step("conv1d", "c"), op("bn"), step("zeropad1d", "z"), quantize()])
    assert str(err.value) == (
        "layer 'z' (Layer) pads the real-valued outputs of bn with zeros the quantizer after it would see unchanged; "
        "pad after the activation (after the QuantActivation that quantizes them) or directly on the accumulator of "
        "'c', before the normalization"
    )


def test_a_window_sum_and_a_padding_read_a_grid_too():
    items = [step("conv2d", "c"), step("pad2d", "z"), step("sumpool2d", "s"), op("s (division by 9)"), quantize()]
    out, _ = run(check_on_grid.run, items)
    assert out == items
    with pytest.raises(FreezeError, match=r"layer 's' \(Layer\) averages the real-valued outputs of bn,"):
        run(check_on_grid.run, [step("conv2d", "c"), op("bn"), step("sumpool2d", "s"), quantize()])
    with pytest.raises(
        FreezeError,
        match=r"layer 'z' \(Layer\) pads the real-valued outputs of bn, which the graph holds only as the "
        r"thresholds of their quantizer; pad after the quantizer \(e.g. a QuantActivation\) or directly on the "
        r"accumulator, before the float ops",
    ):
        run(check_on_grid.run, [step("conv2d", "c"), op("bn"), step("pad2d", "z"), quantize()])
