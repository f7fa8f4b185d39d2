"""Keras's own inference arithmetic on accumulator values: the one place freeze runs Keras on
grids of accumulator values (thresholds, the pool-move check, the layout caveat)."""

from __future__ import annotations

import keras
import numpy as np

from .forms import codes_of
from .items import FloatOp, Step


def run_ops(step: Step, x, start: int = 0, stop: int | None = None, quantize: bool = True):
    """The float ops ``start:stop`` of a requantization step on the Keras tensor ``x``, then
    (with ``quantize``) its quantizer, as the model computes them at inference (the codes of a
    scaled quantizer, whose scale a later float op applies)."""
    for op in step.float_ops[start:stop]:
        x = op.fn(x)
    return codes_of(step.quantizer, x) if quantize else x


class _Replay(keras.layers.Layer):
    """The float ops ``start:stop`` of one requantization step, then (with ``quantize``) its
    quantizer, as one layer."""

    def __init__(self, step: Step, start: int = 0, stop: int | None = None, quantize: bool = True, **kwargs):
        super().__init__(**kwargs)
        self._step = step
        self._range = (start, stop)
        self._quantize = quantize

    def call(self, x):
        start, stop = self._range
        return run_ops(self._step, x, start, stop, self._quantize)


# rows of a replayed tensor come in multiples of this (4096, the largest batch, is one of them)
VECTOR_ROWS = 64


def evaluate(step: Step, values: np.ndarray, jit: bool, rank: int = 1, **replay) -> np.ndarray:
    """Run the step's float ops and quantizer (or the part ``replay`` selects, see
    :func:`run_ops`) through Keras ``predict``, as the model does.

    ``values`` is (n, channels); it is given the ``rank`` (batch axis not counted) of the
    model's tensor there ((n, 1, 1, C) after a convolution) so the same kernels (e.g.
    TensorFlow's fused 4-D batch norm) run. The rows are padded (repeating the last) to a
    multiple of :data:`VECTOR_ROWS`, so that every batch holds a multiple of 64 elements and
    TensorFlow computes every value in its vectorized body, never in the scalar tail of a
    tensor: that is the one layout :func:`layout_flips` compares the scalar path with."""
    rank = _read_rank(step, rank, values.shape[-1])
    n = len(values)
    padded = np.concatenate([values, np.repeat(values[-1:], -n % VECTOR_ROWS, axis=0)]) if n else values
    shaped = padded.reshape((len(padded),) + (1,) * (rank - 1) + values.shape[1:])
    inp = keras.Input(shape=shaped.shape[1:], dtype="float32")
    model = keras.Model(inp, _Replay(step, **replay)(inp))
    model.jit_compile = jit
    out = model.predict(shaped, batch_size=min(len(padded), 4096), verbose=0)
    return np.asarray(out, dtype=np.float64)[:n].reshape(values.shape)


def _read_rank(step: Step, rank: int, channels: int) -> int:
    """The rank a BatchNormalization among the step's float ops was built for, where it differs
    from the accumulator's with the same channels: a view between them (a Reshape((C,)) of a
    (1, 1, C) accumulator, moved after the quantizer, fuzz seed 1384), since the layer checks
    its input's rank. Else ``rank``, the accumulator's (the other float ops broadcast)."""
    for op in step.float_ops:
        if isinstance(op.layer, keras.layers.BatchNormalization):
            try:
                shape = tuple(op.layer.input.shape)
            except (AttributeError, ValueError):  # a layer called more than once has no single input
                continue
            if len(shape) > 1 and shape[-1] == channels:
                return len(shape) - 1
    return rank


class _Apply(keras.layers.Layer):
    def __init__(self, op: FloatOp, **kwargs):
        super().__init__(**kwargs)
        self._op = op

    def call(self, x):
        return self._op.fn(x)


# how far (in ulps) TensorFlow's scalar and vectorized float32 activations may differ; measured
# up to 16 (elu near zero) over sigmoid, swish, softplus, mish, gelu, elu, selu, log_sigmoid, celu
LAYOUT_ULPS = 64


def _near_steps(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int):
    """The float op ``i``'s results on ``values`` (float32) and the mask of those whose quantized
    output changes when that result moves by :data:`LAYOUT_ULPS` ulps."""
    vector = evaluate(step, values, jit, rank, stop=i + 1, quantize=False).astype(np.float32)
    step_size = np.float32(LAYOUT_ULPS) * np.abs(np.spacing(vector))
    risky = np.zeros(out_codes.shape, dtype=bool)
    for moved in (vector + step_size, vector - step_size):
        risky |= out_type.codes(evaluate(step, moved.astype(np.float32), jit, rank, start=i + 1)) != out_codes
    return vector, risky


def near_steps(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int) -> int:
    """How many accumulator values' quantized outputs change when the float op ``i`` of
    ``step`` moves by :data:`LAYOUT_ULPS` ulps (``values`` -> ``out_codes`` as thresholds follow)."""
    return int(_near_steps(step, i, values, out_codes, out_type, jit, rank)[1].sum())


def layout_flips(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int) -> int:
    """How many accumulator values' quantized outputs change when the float op ``i`` of
    ``step`` is computed alone in a one-element tensor (TensorFlow's scalar path) instead of in
    one large tensor (its vectorized body, which ``values`` -> ``out_codes`` followed).

    Only values whose quantized output changes when the op's result moves by
    :data:`LAYOUT_ULPS` ulps are evaluated again alone."""
    op = step.float_ops[i]
    vector, risky = _near_steps(step, i, values, out_codes, out_type, jit, rank)
    if not risky.any():
        return 0
    rows, cols = np.nonzero(risky)
    before = evaluate(step, values, jit, rank, stop=i, quantize=False).astype(np.float32)
    inp = keras.Input(shape=(1,), dtype="float32")
    alone = keras.Model(inp, _Apply(op)(inp))
    alone.jit_compile = jit
    scalar = np.asarray(alone.predict(before[rows, cols].reshape(-1, 1), batch_size=1, verbose=0), dtype=np.float32).reshape(-1)
    differ = scalar != vector[rows, cols]
    if not differ.any():
        return 0
    moved = vector.copy()
    moved[rows[differ], cols[differ]] = scalar[differ]
    return int(np.sum(out_type.codes(evaluate(step, moved, jit, rank, start=i + 1)) != out_codes))


def fma_flips(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int) -> int:
    """How many accumulator values' quantized outputs change when the BatchNormalization of
    float op ``i`` computes ``x * inv + (beta - mean * inv)`` as one fused multiply-add (as XLA
    compiles it inside a model: ``jit_compile``) instead of a rounded product and a sum (as
    TensorFlow does without XLA, and the replay here). Where ``x`` equals the mean the product
    and the offset cancel: their sum is 0 or ``beta``, the fused form gives the rounding residue of
    ``mean * inv`` instead, whose sign a sign quantizer then follows (fuzz seed 1255)."""
    bn = step.float_ops[i].layer
    x = evaluate(step, values, jit, rank, stop=i, quantize=False).astype(np.float32)
    vector = evaluate(step, values, jit, rank, stop=i + 1, quantize=False).astype(np.float32)
    weights = {w.path.rsplit("/", 1)[-1]: w for w in bn.weights}
    c = x.shape[-1]
    gamma = weights["gamma"] if "gamma" in weights else keras.ops.ones((c,))
    beta = weights["beta"] if "beta" in weights else keras.ops.zeros((c,))
    inv = keras.ops.rsqrt(weights["moving_variance"] + bn.epsilon) * gamma  # as TensorFlow's batch_normalization
    offset = beta - weights["moving_mean"] * inv
    inv, offset = (np.asarray(keras.ops.convert_to_numpy(t), dtype=np.float64) for t in (inv, offset))
    fused = (x.astype(np.float64) * inv + offset).astype(np.float32)  # the product exact in float64, one rounding
    differ = fused != vector
    if not differ.any():
        return 0
    moved = np.where(differ, fused, vector)
    return int(np.sum(out_type.codes(evaluate(step, moved, jit, rank, start=i + 1)) != out_codes))
