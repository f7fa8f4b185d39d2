"""passes.move_after_quantizer: Flatten / MaxPooling2D among float ops move after their quantizer."""

import pytest
from freeze_models import op, quantize, run, step

from edgebnn.freeze import FreezeError
from edgebnn.freeze.passes import move_after_quantizer


def test_moved_after_the_quantizer_in_order_and_the_pool_marked():
    acc, bias, pool, bn, flat, q = step("conv2d"), op("c"), step("maxpool2d"), op("bn"), step("flatten"), quantize()
    out, _ = run(move_after_quantizer.run, [acc, bias, pool, bn, flat, q])
    assert out == [acc, bias, bn, q, pool, flat]
    assert pool.ops_before == 1 and pool.moved_from is q and flat.moved_from is None


def test_directly_on_an_accumulator_or_a_quantized_tensor_nothing_moves():
    items = [step("conv2d"), step("maxpool2d"), op(), quantize(), step("maxpool2d"), step("flatten")]
    out, _ = run(move_after_quantizer.run, list(items))
    assert out == items and items[1].moved_from is None


def test_a_per_channel_op_or_quantizer_after_a_moved_flatten_is_refused():
    with pytest.raises(
        FreezeError,
        match=r"layer 'bn' \(Activation\) normalizes the flattened real-valued outputs "
        r"of c; quantize before 'flatten' \(Flatten\)",
    ):
        run(move_after_quantizer.run, [step("conv2d"), op("c"), step("flatten"), op("bn", per_channel=True)])
    with pytest.raises(
        FreezeError,
        match=r"treats the features of the flattened tensor differently, but the "
        r"real-valued outputs of c before 'flatten'",
    ):
        run(
            move_after_quantizer.run,
            [step("conv2d"), op("c"), step("flatten"), quantize("partial('ste_sign', [0], other='quantized_bits(4, 2)')")],
        )


def test_a_reshape_moves_like_a_flatten_and_one_that_keeps_the_channels_meets_a_per_channel_op():
    import keras

    from edgebnn.freeze.items import Step

    def reshape(shape_in, shape_out):
        model = keras.Sequential([keras.Input(shape_in), keras.layers.Reshape(shape_out, name="r")])
        return Step("r", "reshape", model.layers[-1])

    acc, bias, q = step("conv2d"), op("c"), quantize()
    keeps, mixes = reshape((2, 3, 4), (6, 1, 4)), reshape((2, 3, 4), (4, 6))
    bn = op("bn", per_channel=True)
    out, _ = run(move_after_quantizer.run, [acc, bias, keeps, bn, q])
    assert out == [acc, bias, bn, q, keeps]
    with pytest.raises(FreezeError, match=r"normalizes the flattened real-valued outputs of c; quantize before 'r' \(Reshape\)"):
        run(move_after_quantizer.run, [step("conv2d"), op("c"), mixes, op("bn", per_channel=True), quantize()])


def test_a_1d_max_pool_moves_like_a_2d_one():
    acc, bias, pool, bn, q = step("conv1d"), op("c"), step("maxpool1d"), op("bn"), quantize()
    out, _ = run(move_after_quantizer.run, [acc, bias, pool, bn, q])
    assert out == [acc, bias, bn, q, pool]
    assert pool.ops_before == 1 and pool.moved_from is q


def test_the_flatten_of_a_global_pool_is_named_after_the_pool():
    import keras

    from edgebnn.freeze.items import Step

    layer = keras.layers.GlobalMaxPooling1D(name="gmp")
    pool, flat = Step("gmp", "maxpool1d", layer), Step("gmp_flatten", "flatten", layer)
    with pytest.raises(FreezeError) as err:
        run(move_after_quantizer.run, [step("conv1d"), op("c"), pool, flat, op("bn", per_channel=True)])
    assert str(err.value) == (
        "layer 'bn' (Activation) normalizes the flattened real-valued outputs of c; quantize before 'gmp' "
        "(GlobalMaxPooling1D) or normalize before it"
    )
