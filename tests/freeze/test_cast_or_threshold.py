"""passes.cast_or_threshold: a plain conversion after relus only becomes a cast step."""

from freeze_models import op, quantize, run

from edgebnn.freeze.items import Step
from edgebnn.freeze.passes import cast_or_threshold


def _req(quantizer, *ops):
    q = quantize(quantizer)
    return Step("q", "requant", q.layer, q.quantizer, list(ops))


def test_cast_only_for_a_conversion_after_relus():
    steps = [
        _req("quantized_bits(4, 2)", op(relu=True)),
        _req("quantized_bits(4, 2)"),
        _req("quantized_bits(4, 2)", op(relu=True), op("bn")),
        _req("ste_sign", op(relu=True)),
    ]
    out, _ = run(cast_or_threshold.run, steps)
    assert [s.kind for s in out] == ["cast", "cast", "requant", "requant"]
