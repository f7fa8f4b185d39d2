"""passes.fold_float_ops: float ops and the quantizer ending them become one requant step."""

import pytest
from freeze_models import op, quantize, run, step

from edgebnn.freeze import FreezeError
from edgebnn.freeze.items import Quantize
from edgebnn.freeze.passes import fold_float_ops
from edgebnn.layers import QuantDense


def test_float_ops_and_their_quantizer_fold_into_a_requant_step():
    acc, a, b, q, pool = step("dense"), op("d"), op("bn"), quantize(name="q"), step("maxpool2d")
    pool.moved_from = q
    out, _ = run(fold_float_ops.run, [acc, a, b, q, pool])
    req = out[1]
    assert out == [acc, req, pool] and req.kind == "requant" and req.float_ops == [a, b]
    assert req.sources == ["d", "bn", "q"] and pool.moved_from is req


def _no_input_quantizer():
    layer = QuantDense(2, kernel_quantizer="ste_sign", name="e")
    return Quantize(layer, None, "input_quantizer", "e_input")


def test_real_valued_values_entering_a_layer_or_ending_the_model_are_refused():
    with pytest.raises(FreezeError, match=r"layer 'e' \(QuantDense\) receives real-valued inputs from d, bn; give it "):
        run(fold_float_ops.run, [step("dense"), op("d"), op("bn"), _no_input_quantizer()])
    with pytest.raises(FreezeError, match="the model ends with real-valued outputs of d that hardware cannot"):
        run(fold_float_ops.run, [step("dense"), op("d"), step("flatten")])
    out, _ = run(fold_float_ops.run, [step("dense"), _no_input_quantizer(), step("dense", "e")])
    assert [s.name for s in out] == ["dense", "e"]  # no float ops: the missing quantizer is nothing


def test_batchnorm_and_float_bias_ending_the_model_become_an_affine_step():
    import keras

    from edgebnn.freeze.items import FloatOp

    bn = keras.layers.BatchNormalization(name="bn")
    a, b = op("d.bias", bias=True), FloatOp("bn", lambda x: x, layer=bn, per_channel=True)
    out, _ = run(fold_float_ops.run, [step("dense"), a, b])
    assert [s.kind for s in out] == ["dense", "affine"] and out[1].float_ops == [a, b] and out[1].name == "bn"
    with pytest.raises(FreezeError, match="the model ends with real-valued outputs of bn that hardware cannot"):
        run(fold_float_ops.run, [step("dense"), b, step("flatten")])  # a step behind it: not the end
