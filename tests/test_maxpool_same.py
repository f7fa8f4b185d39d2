"""MaxPooling2D(padding="same"): a pad2d node of the lowest code the tensor reaches, then the
valid pool; Keras = emulator exactly (batch 1 and 32, node by node), and the C-simulation in both
io types."""

import warnings

import keras
import numpy as np
import pytest
from bn import adversarial_on_inputs
from graphs import fuzz_cases, keras_edge_inputs

from edgebnn.emulate import emulate
from edgebnn.freeze import freeze, trace
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense

IN_Q = "quantized_bits(5, 1, keep_negative=False)"  # step 1/16, as keras_edge_inputs


def pooled(where: str, pool, strides, out_q="ste_sign", shape=(7, 8, 2), use_bias=False):
    """conv -> the same pool ``where``: after its quantizer, among the float ops before it (moved
    after it by freeze), or on the accumulator before the normalization; then a dense layer."""
    conv = QuantConv2D(3, 3, padding="same", input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=use_bias, name="c")
    pool_layer = keras.layers.MaxPooling2D(pool, strides=strides, padding="same", name="mp")
    bn, q = keras.layers.BatchNormalization(name="bn"), QuantActivation(out_q, name="q")
    middle = {"after_quantizer": [bn, q, pool_layer], "moved": [bn, pool_layer, q], "on_accumulator": [pool_layer, bn, q]}[where]
    dense = QuantDense(4, input_quantizer=None if out_q == "ste_sign" else IN_Q, kernel_quantizer="ste_sign", name="d")
    return keras.Sequential([keras.Input(shape), conv, *middle, keras.layers.Flatten(name="f"), dense])


def frozen(model, x, seed):
    adversarial_on_inputs(model, x, seed)
    bn = model.get_layer("bn")
    gamma, beta, mean, var = bn.get_weights()
    bn.set_weights([np.abs(gamma), beta, mean, var])  # a pool moved after the quantizer needs it non-decreasing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return freeze(model)


@pytest.mark.parametrize("where", ["after_quantizer", "moved", "on_accumulator"])
@pytest.mark.parametrize("pool,strides", [((2, 2), (2, 2)), ((3, 3), (2, 2)), ((3, 2), (1, 1)), ((2, 3), (3, 1))])
def test_same_max_pools_freeze_exactly(where, pool, strides):
    out_q = "ste_sign" if where != "after_quantizer" else "quantized_bits(3, 1)"  # a signed grid: its min is below 0
    model = pooled(where, pool, strides, out_q)
    x = keras_edge_inputs(160, 3, (7, 8, 2))
    graph = frozen(model, x, 5)
    ops = [n.op for n in graph.nodes]
    assert ops[ops.index("maxpool2d") - 1] == "pad2d"
    pad, mp = graph["mp_pad"], graph["mp"]
    assert mp.shape == tuple(model.get_layer("mp").output.shape[1:])  # TensorFlow's split of the padding
    real = graph[pad.inputs[0]]
    assert np.array_equal(mp.lo, real.lo) and np.array_equal(mp.hi, real.hi)  # a maximum of real elements
    assert real.type.from_codes(pad.attrs["pad_code"]) <= real.lo.min()  # below every reachable value
    for batch in (1, 32):
        assert np.array_equal(emulate(graph, x), model.predict(x, batch_size=batch, verbose=0)), batch
    k, e = trace(model, x), emulate(graph, x, return_all=True)
    assert "mp_pad" not in k  # Keras never holds the padded tensor
    for node in graph.nodes[1:]:
        if node.name != "mp_pad":
            assert np.array_equal(k[node.name].reshape(e[node.name].shape), e[node.name]), node.name
    assert len(np.unique(e["mp"])) > 1  # the pool sees more than one value


def test_a_same_pool_before_a_decreasing_requantization_is_refused_as_a_valid_one():
    model = pooled("on_accumulator", (3, 3), (2, 2), use_bias=True)  # a float bias: the pool moves
    x = keras_edge_inputs(40, 1, (7, 8, 2))
    adversarial_on_inputs(model, x, 2)
    bn = model.get_layer("bn")
    gamma, beta, mean, var = bn.get_weights()
    bn.set_weights([-np.abs(gamma) - 0.5, beta, mean, var])
    with pytest.raises(Exception, match=r"layer 'mp' \(MaxPooling2D\) sits between c.bias and the quantizer of 'q'"):
        freeze(model)


def test_fuzzed_models_hold_same_max_pools_that_freeze():
    from edgebnn import fuzz

    cases = fuzz_cases(lambda layers: any("MaxPooling" in line and "padding='same'" in line for line in layers), 6)
    outcomes = [fuzz.check(case) for case in cases]
    assert not [o for o in outcomes if o.status in ("mismatch", "crash")], [o.line() for o in outcomes]
    assert [o.status for o in outcomes].count("ok") >= 2, [o.line() for o in outcomes]


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_verify_end_to_end(io_type, tmp_path):
    from graphs import csim_verified

    model = pooled("moved", (2, 2), (2, 2))  # io_stream pools windows of their stride only
    x = keras_edge_inputs(100, 4, (7, 8, 2))
    report = csim_verified(model, frozen(model, x, 6), x, tmp_path / "prj", io_type)
    assert (report.samples, report.keras_vs_emulator, report.emulator_vs_csim) == (100, 0, 0), report.describe()
