"""freeze.replay: Keras's arithmetic on accumulator values, with the model's tensor rank."""

import keras
import numpy as np
from freeze_models import op, quantize

from edgebnn.freeze import replay
from edgebnn.freeze.items import Step


def test_evaluate_runs_the_float_ops_and_the_quantizer_or_a_part():
    q = quantize("ste_sign")
    shift = op("s")
    shift.fn = lambda x: keras.ops.add(x, -0.5)
    step = Step("q", "requant", q.layer, q.quantizer, [shift])
    values = np.array([[0.0, 1.0], [0.25, 0.75]], dtype=np.float32)
    assert np.array_equal(replay.evaluate(step, values, False, rank=3), [[-1.0, 1.0], [-1.0, 1.0]])
    assert np.array_equal(replay.evaluate(step, values, False, stop=1, quantize=False), values - 0.5)


def test_every_value_is_replayed_in_the_vectorized_body_never_in_a_scalar_tail():
    # TensorFlow's float32 sigmoid(1e-7) is 0.5 in its vectorized body and 0.50000006 in the scalar
    # tail of a tensor whose size is not a multiple of its packets; DoReFa's 1-bit rounding (half
    # to even) turns that into 0 or 1. A model's own tensors keep such a value in the vectorized
    # body (as batch 1 and 32 of a fuzzed model did), so the replay must too, at any length
    q = quantize("dorefa_quantizer(k_bit=1)")
    sigmoid = op("a")
    sigmoid.fn = keras.activations.sigmoid
    step = Step("q", "requant", q.layer, q.quantizer, [sigmoid])
    big = replay.evaluate(step, np.full((128, 1), 1e-7, dtype=np.float32), False)
    for n in (1, 17, 33, 65):
        assert np.array_equal(replay.evaluate(step, np.full((n, 1), 1e-7, dtype=np.float32), False), big[:n])
    assert np.all(big == 0.0)
