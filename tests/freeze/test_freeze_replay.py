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
