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
    padded = _pad_rows(values)
    shaped = padded.reshape((len(padded),) + (1,) * (rank - 1) + values.shape[1:])
    model = _replay_model(step, shaped.shape[1:], jit, replay)
    out = predict(model, shaped, batch_size=4096)
    return np.asarray(out, dtype=np.float64)[:n].reshape(values.shape)


def _pad_rows(values: np.ndarray) -> np.ndarray:
    """``values`` with its last row repeated to a multiple of :data:`VECTOR_ROWS` rows."""
    n = len(values)
    return np.concatenate([values, np.repeat(values[-1:], -n % VECTOR_ROWS, axis=0)]) if n else values


def predict(model: keras.Model, x: np.ndarray, batch_size: int) -> np.ndarray:
    """``model.predict(x, batch_size=batch_size)``: the same traced predict function on the same
    batches (the last one partial), each given to it as one tensor (``predict_on_batch``) instead
    of through a tf.data pipeline, which costs more than the small tensors a replay computes."""
    batches = [model.predict_on_batch(x[i : i + batch_size]) for i in range(0, len(x), batch_size)]
    return np.concatenate([np.asarray(b) for b in batches]) if batches else np.asarray(model.predict(x, verbose=0))


def _replay_model(step: Step, shape: tuple, jit: bool, replay: dict):
    """The Keras model that replays ``step`` (the part ``replay`` selects) on tensors of ``shape``,
    built once per step and kept on it: its ``predict`` function is traced once, not on every
    :func:`evaluate` (a bisection evaluates the same step a dozen times)."""
    key = (shape, jit, tuple(sorted(replay.items())))
    if key not in step.replays:
        inp = keras.Input(shape=shape, dtype="float32")
        step.replays[key] = keras.Model(inp, _Replay(step, **replay)(inp))
        step.replays[key].jit_compile = jit
    return step.replays[key]


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
    scalar = predict(alone, before[rows, cols].reshape(-1, 1), batch_size=1).astype(np.float32).reshape(-1)
    moved = vector.copy()
    moved[rows, cols] = scalar
    return int(_flipped(step, i, vector, moved, out_codes, out_type, jit, rank).sum())


def eager_flips(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int) -> int:
    """How many accumulator values' quantized outputs change when the float op ``i`` of
    ``step`` is computed eagerly (as ``model(x)`` does, one TensorFlow kernel per op) instead of
    in ``model.predict``'s compiled graph, where TensorFlow may rewrite it (oneDNN runs mish as
    one fused kernel: -0.0 where eager mish gives -1.6e-10 at x = -25.8, fuzz seed 36003).

    Only values whose quantized output changes when the op's result moves by
    :data:`LAYOUT_ULPS` ulps are compared (-0.0 is next to every negative value)."""
    op = step.float_ops[i]
    vector, risky = _near_steps(step, i, values, out_codes, out_type, jit, rank)
    if not risky.any():
        return 0
    before = evaluate(step, values, jit, rank, stop=i, quantize=False).astype(np.float32)
    padded = _pad_rows(before)  # as evaluate pads: the vectorized body, whose layout is compared elsewhere
    eager = np.asarray(keras.ops.convert_to_numpy(op.fn(keras.ops.convert_to_tensor(padded))), dtype=np.float32)[: len(before)]
    moved = np.where(risky, eager, vector)
    return int(_flipped(step, i, vector, moved, out_codes, out_type, jit, rank).sum())


def _bn_forms(bn, x: np.ndarray):
    """The two float32 forms of ``x * inv + (beta - mean * inv)`` (TensorFlow's batch
    normalization at inference) of the BatchNormalization ``bn``: one fused multiply-add (the
    product exact, one rounding) and a rounded product then a rounded sum."""
    c = x.shape[-1]
    if hasattr(bn, "inference_parameters"):  # QBatchNormalization: its quantized parameters
        gamma, beta, mean, variance = bn.inference_parameters()
    else:
        weights = {w.path.rsplit("/", 1)[-1]: w for w in bn.weights}
        gamma, beta = weights.get("gamma"), weights.get("beta")
        mean, variance = weights["moving_mean"], weights["moving_variance"]
    gamma = keras.ops.ones((c,)) if gamma is None else gamma
    beta = keras.ops.zeros((c,)) if beta is None else beta
    inv = keras.ops.rsqrt(variance + bn.epsilon) * gamma  # as TensorFlow's batch_normalization
    offset = beta - mean * inv
    inv, offset = (np.asarray(keras.ops.convert_to_numpy(t), dtype=np.float32) for t in (inv, offset))
    fused = (x.astype(np.float64) * inv.astype(np.float64) + offset.astype(np.float64)).astype(np.float32)
    return fused, (x * inv) + offset


def _bn_replay(step: Step, i: int, values, jit: bool, rank: int):
    """The BatchNormalization of float op ``i``: its input and its (vectorized) output on
    ``values``, as float32."""
    x = evaluate(step, values, jit, rank, stop=i, quantize=False).astype(np.float32)
    return x, evaluate(step, values, jit, rank, stop=i + 1, quantize=False).astype(np.float32)


def _flipped(step: Step, i: int, vector, alternative, out_codes, out_type, jit: bool, rank: int) -> np.ndarray:
    """The mask of quantized outputs that change where float op ``i``'s result is
    ``alternative`` instead of ``vector`` (equal where it does not move)."""
    differ = alternative != vector
    if not differ.any():
        return np.zeros(out_codes.shape, dtype=bool)
    moved = np.where(differ, alternative, vector)
    return out_type.codes(evaluate(step, moved, jit, rank, start=i + 1)) != out_codes


def fma_flips(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int) -> int:
    """How many accumulator values' quantized outputs change when the BatchNormalization of
    float op ``i`` computes ``x * inv + (beta - mean * inv)`` as one fused multiply-add (as XLA
    compiles it inside a model: ``jit_compile``) instead of a rounded product and a sum (as
    TensorFlow does without XLA, and the replay here). Where ``x`` equals the mean the product
    and the offset cancel: their sum is 0 or ``beta``, the fused form gives the rounding residue of
    ``mean * inv`` instead, whose sign a sign quantizer then follows (fuzz seed 1255)."""
    x, vector = _bn_replay(step, i, values, jit, rank)
    fused, _ = _bn_forms(step.float_ops[i].layer, x)
    return int(_flipped(step, i, vector, fused, out_codes, out_type, jit, rank).sum())


def xla_flips(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int) -> int:
    """How many accumulator values' quantized outputs, as the model computes them under XLA
    (``values`` -> ``out_codes``, replayed with ``jit``), change on another path Keras takes:
    the BatchNormalization of float op ``i`` fused into one multiply-add inside the model
    (:func:`fma_flips`), or the whole step without XLA, as eager ``model(x)`` computes it (a
    rounded product and sum, TensorFlow's own kernels)."""
    x, vector = _bn_replay(step, i, values, jit, rank)
    fused, _ = _bn_forms(step.float_ops[i].layer, x)
    flips = _flipped(step, i, vector, fused, out_codes, out_type, jit, rank)
    if jit:
        flips |= out_type.codes(evaluate(step, values, False, rank)) != out_codes
    return int(flips.sum())


# batch sizes at which :func:`batch_flips` runs a normalization in the model's own sample shape:
# with them every element of a sample falls in the last, partial vector of some batch's tensor
# (16 float32 lanes on AVX-512, 8 on AVX)
BATCH_SIZES = tuple(range(1, 17))


def batch_flips(step: Step, i: int, values, out_codes, out_type, jit: bool, rank: int) -> int:
    """How many accumulator values' quantized outputs change when the BatchNormalization of
    float op ``i`` runs on one batch of the model's own tensors of 1 to 16 samples instead of in
    one large tensor (as ``values`` -> ``out_codes`` followed). TensorFlow's CPU kernel computes
    ``x * inv + offset`` as a fused multiply-add in its vectorized body and as a rounded product
    and sum in the partial vector at a tensor's end, so where an accumulator value lies on the
    mean the two differ, and so may the quantized outputs (fuzz seed 40145, at batch size 1).

    Only values where the two forms give different quantized outputs are run again, in a
    tensor of the layer's own input shape whose every position holds them, so the check
    counts a value only where TensorFlow really computes it the other way."""
    op = step.float_ops[i]
    x, vector = _bn_replay(step, i, values, jit, rank)
    fused, rounded = _bn_forms(op.layer, x)
    candidates = _flipped(step, i, vector, fused, out_codes, out_type, jit, rank)
    candidates |= _flipped(step, i, vector, rounded, out_codes, out_type, jit, rank)
    rows = np.flatnonzero(candidates.any(axis=1))
    if not len(rows):
        return 0
    sample = _sample_shape(op.layer, rank, x.shape[-1])
    inp = keras.Input(shape=sample, dtype="float32")
    alone = keras.Model(inp, _Apply(op)(inp))
    alone.jit_compile = jit
    one = np.broadcast_to(x[rows].reshape((len(rows),) + (1,) * (len(sample) - 1) + x.shape[1:]), (len(rows),) + sample)
    wide = vector[rows]
    seen = wide.copy()
    for b in BATCH_SIZES:  # batch j of b samples holds candidate row j at every position
        out = predict(alone, np.repeat(one, b, axis=0), batch_size=b).astype(np.float32)
        out = out.reshape((len(rows), b * int(np.prod(sample[:-1]))) + x.shape[1:])
        other = out != wide[:, None, :]
        if other.any():  # one value that TensorFlow computed the other way, per row and channel
            first = np.argmax(other, axis=1)
            pick = np.take_along_axis(out, first[:, None, :], axis=1)[:, 0, :]
            seen = np.where(other.any(axis=1) & (seen == wide), pick, seen)
    moved = vector.copy()
    moved[rows] = seen
    return int(_flipped(step, i, vector, moved, out_codes, out_type, jit, rank).sum())


def _sample_shape(bn, rank: int, channels: int) -> tuple:
    """One sample's shape at the normalization's input (batch axis not counted): the layer's own
    where known, else ``rank`` axes ending with the channels."""
    try:
        shape = tuple(bn.input.shape)[1:]
    except (AttributeError, ValueError):  # a layer called more than once has no single input
        shape = ()
    if shape and shape[-1] == channels and all(isinstance(d, int) for d in shape):
        return shape
    return (1,) * (rank - 1) + (channels,)
