"""Random models through the public API, checked Keras = emulator = C-simulation, bit for bit.

Hand-picked examples miss what users build; this generator builds what they might: chains of
``QuantDense`` / ``QuantConv2D`` (valid or same padding, strides, ``pad_values``, 1x1 kernels,
dilation), ``QuantDepthwiseConv2D`` (depth multipliers 1 to 3) and ``QuantSeparableConv2D``,
``MaxPooling2D`` ("valid" or "same"), ``AveragePooling2D`` (windows of any number of values, strides equal to them
or overlapping, after a quantizer or directly on an accumulator), global max and average pools
(keepdims or not), ``ZeroPadding2D``, ``Flatten``, ``Reshape``, the inference no-ops
(``Dropout``, ``GaussianNoise``, ``GaussianDropout``, ``AlphaDropout``, ``SpatialDropout2D``,
``ActivityRegularization``, ``Identity``), float or quantized biases, ``BatchNormalization``
with adversarial statistics (means exactly on accumulator values the inputs reach, gamma of both
signs and zero, tiny variance, betas that cancel after float32 rounding), elementwise
activations (as layers and as the layers' own ``activation``), every activation, input and
kernel quantizer and rounding/overflow mode of the catalogue (scaled kernels: XNOR,
magnitude-aware sign, QKeras alphas, DoReFa weights; DoReFa k-bit activations, quantized_relu
with a negative slope or an upper bound, power-of-two forms), a trailing softmax (which freeze
strips), Sequential and functional models, with Keras compiled with or without XLA. A third of
the seeds build 1-D models instead (``QuantConv1D`` with valid, same or causal padding, the 1-D
pools and ``ZeroPadding1D``), and a quarter of the rest branching functional models
(Bi-Real-style residual ``Add`` of a quantized shortcut and a block's quantized output,
``Concatenate`` of branches, a fan-out after a quantizer, sums of accumulators); some of these
merges read three or four tensors, one of them maybe twice. Some models end with a
``BatchNormalization`` (and maybe a softmax), mostly with power-of-two-friendly statistics: an
exact affine head. The forms freeze cannot deploy are drawn too and must be refused in one
sentence ("same" average pools, an average or a padding between a BatchNormalization and its
quantizer, a real-valued tensor that branches, a non-power-of-two scale that ends the model).
Inputs sit on grid points, between them, exactly on ties, one float32 ulp around ties and far
out of range.

The chain models also take the input's type as QKeras and larq users give it (:func:`_front_door`):
a leading ``QuantActivation`` instead of the first layer's ``input_quantizer``, a float first
layer frozen with ``input_type=`` (the inputs then on its grid; sometimes with float weights too,
which ``freeze(data=)`` calibrates on the inputs), the data in another shape with a
leading ``Flatten`` / ``Reshape`` (and ``Dropout``); QKeras's names (``QDense`` with a quantizer as
its ``activation=``, ``QActivation``), quantizers written with ``alpha=1``, and kernels whose codes
all round to zero. Each comes from a random stream of its own, so the models of earlier seeds
stay close to what they were.

Each model is frozen, its graph saved and loaded, and the emulator compared with
``model.predict`` at batch sizes 1 and 32 (exact equality); some are exported and
C-simulated in io_parallel or io_stream, with a random backend (Vitis, Vivado), strategy
(Latency, Resource) and reuse factors hls4ml keeps as given (model-wide or per weighted node).
Those are checked in a child process (:func:`check_in_child`): a C++ assertion in the loaded
C-simulation library ends that process only, as a ``crash`` outcome. Every outcome is one of

``ok``        all agree;
``refused``   freeze or export said why it cannot be exact (a one-sentence error);
``warned``    Keras differed where freeze had recorded why (``graph.meta["keras_caveats"]``):
              a documented limit of Keras's own float32 arithmetic, never silent;
``mismatch``  two paths disagree and nothing said so: a bug;
``crash``     a Python error instead of an answer: a bug;
``keras-error`` TensorFlow itself could not run the model (its runtime aborted, e.g. oneDNN
              without a primitive for a fused convolution and add): not edgebnn's, said.

A third of the models (seeds ``3k + 2``, :func:`random_model_1d`) are 1-D: ``QuantConv1D`` (valid,
same or causal padding, strides, dilation, ``pad_values``), ``MaxPooling1D`` ("valid" or "same"), ``AveragePooling1D``
(windows of any number of values), their global forms, ``ZeroPadding1D``, with the same
normalizations, activations and quantizers, and sometimes a ``Flatten`` and a ``QuantDense`` at the end.

``bench/fuzz.py`` runs it at length and saves every failing model with its inputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

ROUNDING = ("TRN", "TRN_ZERO", "RND", "RND_ZERO", "RND_INF", "RND_MIN_INF", "RND_CONV")
OVERFLOW = ("WRAP", "SAT", "SAT_ZERO", "SAT_SYM")
ACTIVATIONS = (
    "relu",
    "tanh",
    "sigmoid",
    "swish",
    "elu",
    "selu",
    "softplus",
    "gelu",
    "hard_sigmoid",
    "softsign",
    "mish",
    "linear",
)
STATUSES = ("ok", "refused", "warned", "mismatch", "crash", "keras-error")
# the "io type" of an outcome simulated as RTL (Verilator) instead of an hls4ml C-simulation
RTL = "rtl"


@dataclasses.dataclass
class Case:
    """One random model, its inputs and how it was made."""

    seed: int
    model: Any
    x: np.ndarray
    layers: list[str]  # one line per layer, for the report
    jit: bool
    strip_softmax: bool = False  # the model ends with a softmax that freeze strips
    input_type: str | None = None  # given to freeze: the first layer reads floats (the inputs are on its grid)
    output_quantizer: str | None = None  # given to freeze: the logits of a float head rounded onto a grid


@dataclasses.dataclass
class Outcome:
    seed: int
    status: str  # one of STATUSES
    message: str = ""
    csim: str | None = None  # io type when C-simulated
    layers: list[str] = dataclasses.field(default_factory=list)
    target: dict | None = None  # the other export options when C-simulated (backend, strategy, reuse_factor)
    ops: list[str] = dataclasses.field(default_factory=list)  # the frozen graph's ops
    forms: list[str] = dataclasses.field(default_factory=list)  # "<attribute>: <hardware form>" of its quantizers

    def line(self) -> str:
        t = dict(self.target or {})
        rf = t.pop("reuse_factor", None)
        rf = " ".join(f"{k}={v}" for k, v in rf.items()) if isinstance(rf, dict) else rf
        options = [*map(str, t.values()), *([] if rf is None else [f"rf {rf}"])]
        where = f" [{', '.join([self.csim, *options])}]" if self.csim else ""
        return f"seed {self.seed}{where}: {self.status}{': ' + self.message if self.message else ''}"


# ---------------------------------------------------------------------------- generator


def _fixed_quantizer(rng, bits_range=(2, 7), signed=None) -> str:
    bits = int(rng.integers(*bits_range, endpoint=True))
    keep_negative = bool(rng.integers(2)) if signed is None else signed
    integer = int(rng.integers(-1, bits))
    rounding = ROUNDING[rng.integers(len(ROUNDING))]
    overflow = OVERFLOW[rng.integers(len(OVERFLOW))]
    if overflow == "SAT_SYM" and not keep_negative:
        overflow = "SAT"
    alpha = ", alpha=1" if _SIDE[1].random() < ALPHA_ONE else ""
    return (
        f"quantized_bits({bits}, {integer}, keep_negative={keep_negative}, rounding={rounding!r}, overflow={overflow!r}{alpha})"
    )


def _activation_quantizer(rng, channels: int) -> str:
    kind = rng.choice(
        [
            "ste_sign",
            "approx_sign",
            "swish_sign",
            "ste_heaviside",
            "ste_tern",
            "binary",
            "binary01",
            "dorefa1",
            "bits",
            "bits",
            "bits",
            "relu",
            "tanh",
            "partial",
            "catalogue",
            "catalogue",
        ]
    )
    if kind == "catalogue":
        return _catalogue_activation(rng)
    if kind == "ste_tern":
        return f"ste_tern(threshold_value={float(rng.choice([0.0, 0.05, 0.5, 1.0]))})"
    if kind == "binary01":
        return "binary(use_01=True)"
    if kind == "dorefa1":
        return "dorefa_quantizer(k_bit=1)"
    if kind == "bits":
        return _fixed_quantizer(rng, (1, 6))
    if kind == "relu":
        return f"quantized_relu({int(rng.integers(1, 5))}, {int(rng.integers(0, 3))})"
    if kind == "tanh":
        return f"quantized_tanh({int(rng.integers(2, 5))})"
    if kind == "partial" and channels > 1:
        chosen = sorted(rng.choice(channels, size=int(rng.integers(1, channels)), replace=False).tolist())
        return f"partial('ste_sign', {chosen}, other={_fixed_quantizer(rng, (2, 4))!r})"
    return str(kind if kind != "partial" else "ste_sign")


def _scaled_kernel(rng) -> str:
    """A scaled kernel quantizer (codes in the MACs, the scale after the sum): XNOR per output
    channel or per tensor (a power of two or not), magnitude-aware sign, QKeras alphas (auto,
    auto_po2, a number, one per channel), DoReFa weights, QKeras binary/ternary with alpha."""
    kind = int(rng.integers(9))
    if kind == 0:
        return f"xnor_sign(per_channel={bool(rng.integers(2))}, po2={bool(rng.integers(2))})"
    if kind == 1:
        return "magnitude_aware_sign"
    if kind in (2, 3):
        bits, alpha = int(rng.integers(2, 6)), "auto" if kind == 2 else "auto_po2"
        return f"quantized_bits({bits}, {int(rng.integers(0, 2))}, alpha={alpha!r})"
    if kind == 4:
        return f"quantized_bits({int(rng.integers(2, 5))}, 0, alpha={float(rng.choice([0.5, 0.375, 0.3, 2.0, 1.25]))})"
    if kind == 5:
        return f"dorefa({int(rng.integers(2, 5))}, 'weights')"
    if kind == 6:
        return f"binary(alpha={str(rng.choice(['auto', 'auto_po2']))!r})"
    if kind == 7:
        return f"ternary(alpha={str(rng.choice(['auto', 'auto_po2']))!r})"
    return f"ternary(alpha={float(rng.choice([0.7, 0.25]))})"


def _catalogue_activation(rng) -> str:
    """An activation form beyond plain fixed point: DoReFa k-bit (a scale 1/(2**k - 1) after its
    codes), QKeras quantized_relu with a negative slope or an upper bound, power-of-two ones,
    QKeras's binary_tanh (-1 at 0) and quantized_sigmoid."""
    kind = int(rng.integers(6))
    side = _SIDE[2].random()  # QKeras's binary_tanh and quantized_sigmoid (issue 12), from the side stream
    if side < QKERAS_ACTIVATIONS / 2:
        return "binary_tanh"
    if side < QKERAS_ACTIVATIONS:
        bits = int(_SIDE[2].integers(1, 5))
        return f"quantized_sigmoid({bits}, symmetric={bool(_SIDE[2].random() < 0.3)})"
    if kind in (0, 1):
        return f"dorefa({int(rng.integers(2, 5))})"
    if kind == 2:
        bits = int(rng.integers(3, 6))
        return f"quantized_relu({bits}, {int(rng.integers(0, 3))}, negative_slope={float(rng.choice([0.25, 0.5, 0.125]))})"
    if kind == 3:
        return f"quantized_relu({int(rng.integers(2, 5))}, 1, relu_upper_bound={float(rng.choice([1.0, 1.5]))})"
    if kind == 4:
        return f"quantized_po2({int(rng.integers(2, 5))})"
    return f"quantized_relu_po2({int(rng.integers(2, 5))})"


# kernel forms on a grid other than binary and plain fixed point, deployed as codes of their type
GRID_KERNELS = (
    "ternary",
    "ste_tern",
    "ste_tern(ternary_weight_networks=True)",
    "quantized_po2(4)",
    "ste_heaviside",
    "quantized_tanh(3)",
    "partial('ste_sign', [0], other='quantized_bits(3, 0)')",
)


def _kernel_quantizer(rng) -> str:
    r = rng.random()
    if r < 0.45:
        return "ste_sign"
    if r < 0.6:
        return str(rng.choice(["ste_sign(0.5)", "approx_sign", "swish_sign", "binary"]))
    if r < 0.68:
        return _scaled_kernel(rng)
    if r < 0.72:
        return str(rng.choice(GRID_KERNELS))
    bits = int(rng.integers(2, 6))
    if r < 0.85:
        return f"quantized_bits({bits}, {int(rng.integers(0, 2))})"
    return (
        f"quantized_bits({bits}, {int(rng.integers(-1, 3))}, symmetric={bool(rng.integers(2))}, "
        f"rounding={ROUNDING[rng.integers(len(ROUNDING))]!r}, overflow={OVERFLOW[rng.integers(3)]!r})"
    )


# the draws of kernel forms added after the long runs: a stream of their own per model, so the
# models of earlier seeds stay what they were
# summed scales; QKeras's alpha=1 and all-zero kernels; "same" max pools (issue 12)
_SIDE = [np.random.default_rng(0), np.random.default_rng(0), np.random.default_rng(0)]
SAME_POOLS = 0.25  # how often a max pool (2-D or 1-D) has padding="same"
ZERO_BIASES = 0.1  # how often a layer's bias is all zeros (a float one: an affine node that changes nothing)
FUSED_BATCHNORMS = 0.3  # how often a QuantDense/QuantConv2D + BatchNormalization becomes QKeras's fused layer
QKERAS_ACTIVATIONS = 0.3  # how often a catalogue activation is binary_tanh or quantized_sigmoid (half each)
# how often a model's thresholds are found by bisection wherever the step is provably monotone
# (freeze bisects only accumulators too wide to enumerate; the stream [seed, 10])
BISECTED = 0.3
QBATCHNORMS = 0.15  # how often a plain BatchNormalization becomes QKeras's QBatchNormalization
OUTPUT_QUANTIZERS = 0.4  # how often a model ending with a BatchNormalization is frozen with an output_quantizer
# the forms drawn from the side stream [seed, 8] (and [seed, 9]); off, a seed builds the model it built before them
SIDE_FORMS = (
    "SAME_POOLS", "ZERO_BIASES", "FUSED_BATCHNORMS", "QKERAS_ACTIVATIONS", "QBATCHNORMS", "OUTPUT_QUANTIZERS", "FLOAT_STEMS",
)  # fmt: skip
# how often a float first layer (no input_quantizer, a given input_type) has float weights too, which
# freeze calibrates on the case's inputs (the stream [seed, 11])
FLOAT_STEMS = 0.5


@contextlib.contextmanager
def without_side_forms():
    """Build models without the side-stream forms (:data:`SIDE_FORMS`): the models of seeds an
    earlier long run found, as it found them."""
    saved = {name: globals()[name] for name in SIDE_FORMS}
    globals().update(dict.fromkeys(SIDE_FORMS, 0.0))
    try:
        yield
    finally:
        globals().update(saved)


SUMMED_SCALE = 0.12  # how often a kernel becomes one scaled along an axis its layer sums over
ALPHA_ONE = 0.08  # how often a fixed-point quantizer is written with alpha=1, as hls4ml's tutorials write it
TINY_WEIGHTS = 0.05  # how often a layer's latent kernel is tiny (all its codes zero under a fixed-point quantizer)


def _side_stream(seed: int) -> None:
    _SIDE[0] = np.random.default_rng([seed, 4])
    _SIDE[1] = np.random.default_rng([seed, 6])
    _SIDE[2] = np.random.default_rng([seed, 8])


def _summed_scale(kq: str, shape: tuple, summed: tuple) -> str:
    """Sometimes (else ``kq``) a kernel form of the kernel ``shape`` whose scales vary along one
    of the ``summed`` axes: XNOR along any axis, chosen slices of an axis XNOR-binarized with one
    scale each (the rest another form), QKeras alphas along an axis; half of them powers of two
    (a float32 sum of integers), half float32 scales such as mean|W| (the layer sums exactly in
    float64 and rounds once, ``layers.sums_exactly``)."""
    rng = _SIDE[0]
    if rng.random() >= SUMMED_SCALE:
        return kq
    po2 = rng.random() < 0.5
    axis = int(rng.choice(summed))
    kind = int(rng.integers(4))
    if kind == 0:
        clip = rng.choice([None, 1.0])
        return f"xnor_sign(axis={axis}, po2={po2}, clip_value={clip}, scale_gradient={bool(rng.integers(2))})"
    if kind == 3:
        return f"quantized_bits({int(rng.integers(2, 5))}, 0, alpha={'auto_po2' if po2 else 'auto'!r}, scale_axis={axis})"
    n = shape[axis]
    chosen = sorted(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist())
    other = str(
        rng.choice(["quantized_bits(4, 0)", "quantized_bits(3, 1)", "ste_sign", "ternary", f"xnor_sign(axis=None, po2={po2})"])
    )
    inner = f"xnor_sign(axis={axis}, clip_value={rng.choice([None, 1.0])}, po2={po2})"
    if kind == 2:  # the XNOR form on the rest, another one on the chosen slices
        inner, other = other, f"xnor_sign(axis={axis}, po2={po2})"
    return f"partial({inner}, {chosen}, axis={axis}, other={other})"


def _input_quantizer(rng) -> str:
    r = rng.random()
    if r < 0.1:
        return f"quantized_relu({int(rng.integers(2, 7))}, {int(rng.integers(0, 3))})"
    if r < 0.15:
        return f"quantized_tanh({int(rng.integers(2, 6))})"
    return _fixed_quantizer(rng, (2, 7))


_LINES_ONLY = [False]  # layer_lines: draw the layers, build no model


def layer_lines(seed: int) -> list[str]:
    """The layer lines of :func:`random_model`'s model of ``seed``, drawn as it draws them but
    without building the model, setting its weights (a prediction per BatchNormalization) or
    compiling it: a cheap look at what a seed holds before building the ones wanted."""
    _LINES_ONLY[0] = True
    try:
        return random_model(seed).layers
    finally:
        _LINES_ONLY[0] = False


def _jit(model) -> bool:
    """Whether Keras compiled ``model`` under XLA (it may have declined); False for no model."""
    return model is not None and bool(model.jit_compile)


def random_model(seed: int, n_inputs: int = 64) -> Case:
    """A random model of edgebnn layers (weights and statistics set, not trained) and inputs."""
    import keras

    from ..training.layers import QuantActivation, QuantConv2D, QuantDense

    _side_stream(seed)
    if seed % 3 == 2:  # a third of the models are 1-D
        return random_model_1d(seed, n_inputs)
    if np.random.default_rng((seed, 1)).random() < BRANCHING:  # its own stream: the chains of other seeds stay
        return _branching_model(seed, n_inputs)
    rng = np.random.default_rng(seed)
    head_rng = np.random.default_rng([seed, 2])  # the affine heads' draws: other seeds keep their models
    repeat_rng = np.random.default_rng([seed, 3])  # a QuantActivation repeated as the next input_quantizer
    conv = bool(rng.integers(2))
    if conv:
        shape = (int(rng.integers(2, 7)), int(rng.integers(2, 7)), int(rng.integers(1, 4)))
    else:
        shape = (int(rng.integers(2, 13)),)
    in_q = _input_quantizer(rng)
    layers: list = []
    text: list[str] = []
    cur = shape
    next_input_q: str | None = in_q
    n_blocks = int(rng.integers(1, 4))

    def add(layer, line):
        layers.append(layer)
        text.append(line)

    for block in range(n_blocks):
        last = block == n_blocks - 1
        spatial = len(cur) == 3
        bias = bool(rng.integers(2))
        bias_q = None if not bias or rng.random() < 0.6 else _fixed_quantizer(rng, (3, 6), signed=True)
        kq = _kernel_quantizer(rng)
        act = None
        if rng.random() < 0.2:
            act = "relu" if rng.random() < 0.5 else str(rng.choice(ACTIVATIONS))
        dense_softmax = last and not spatial and rng.random() < 0.08
        if dense_softmax:
            act = "softmax"
        common = dict(input_quantizer=next_input_q, kernel_quantizer=kq, use_bias=bias, bias_quantizer=bias_q, activation=act)
        if spatial and (block == 0 or not last or rng.random() < 0.5):
            kh = int(rng.integers(1, cur[0] + 1)) if rng.random() < 0.8 else 1
            kw = int(rng.integers(1, cur[1] + 1)) if rng.random() < 0.8 else 1
            kh, kw = min(kh, 3), min(kw, 3)
            strides = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
            padding = str(rng.choice(["valid", "same"]))
            pad_values = 0.0
            if padding == "same" and next_input_q and "sign" in next_input_q and rng.random() < 0.5:
                pad_values = float(rng.choice([1.0, -1.0]))
            elif padding == "same" and rng.random() < 0.1:  # on the input's grid or not
                pad_values = float(rng.choice([1.0, -1.0, 0.5, 0.3]))
            filters = int(rng.integers(1, 5))
            common.update(_dilation(rng, cur, (kh, kw), strides, padding, allow_strides=False))
            depthwise = _depthwise_conv(rng, cur, common, (kh, kw), strides, padding, pad_values)
            if depthwise is not None:
                cur = depthwise(add)
            else:
                common["kernel_quantizer"] = _summed_scale(kq, (kh, kw, cur[2], filters), (0, 1, 2))
                layer = QuantConv2D(filters, (kh, kw), strides=strides, padding=padding, pad_values=pad_values, **common)
                cur = _conv_shape(cur, (kh, kw), strides, padding, common.get("dilation_rate"), filters)
                add(
                    layer,
                    f"QuantConv2D({filters}, ({kh}, {kw}), strides={strides}, padding={padding!r}, "
                    f"pad_values={pad_values}, {_args(common)})",
                )
        else:
            if spatial:
                add(keras.layers.Flatten(), "Flatten()")
                cur = (int(np.prod(cur)),)
            units = int(rng.integers(1, 9))
            common["kernel_quantizer"] = _summed_scale(kq, (cur[0], units), (0,))
            add(QuantDense(units, **common), f"QuantDense({units}, {_args(common)})")
            cur = (units,)
        # float ops after the accumulator, then the requantization (or none at the end)
        pool = len(cur) == 3 and min(cur[:2]) >= 2 and rng.random() < 0.35
        pool_at = int(rng.integers(0, 3)) if pool else -1
        # an average pool too: after the accumulator, before its quantizer (mostly refused) or after it
        avg_at = int(rng.choice([0, 0, 1, 2, 2])) if len(cur) == 3 and rng.random() < 0.6 else -1
        ops_done = 0
        float_acc = act is not None or (bias and bias_q is None)  # float ops right after the accumulator

        def maybe_pool(at, pending, pool_at=pool_at, avg_at=avg_at):
            """The pools at position ``at``; ``pending``: float ops run since the accumulator, where
            an average is refused (made only sometimes, for the refusal)."""
            nonlocal cur
            if len(cur) != 3:  # a global pool or a Reshape made it flat
                return
            if pool_at == at and min(cur[:2]) >= 2:  # (an average before it may have shrunk the tensor)
                p = (2, 2) if rng.random() < 0.7 else (min(cur[0], 3), min(cur[1], 2))
                s = p if rng.random() < 0.7 else (1, 1)
                same = False
                if rng.random() < 0.04:  # on the grid or refused, as the rules say
                    add(keras.layers.AveragePooling2D(p, strides=s), f"AveragePooling2D({p}, strides={s})")
                elif rng.random() < 0.04 or _SIDE[2].random() < SAME_POOLS:
                    same = True
                    add(
                        keras.layers.MaxPooling2D(p, strides=s, padding="same"), f"MaxPooling2D({p}, strides={s}, padding='same')"
                    )
                else:
                    add(keras.layers.MaxPooling2D(p, strides=s), f"MaxPooling2D({p}, strides={s})")
                if same:
                    cur = (-(-cur[0] // s[0]), -(-cur[1] // s[1]), cur[2])
                else:
                    cur = ((cur[0] - p[0]) // s[0] + 1, (cur[1] - p[1]) // s[1] + 1, cur[2])
            if avg_at == at and min(cur[:2]) >= 2 and (not pending or rng.random() < 0.12):
                cur = _average_pool(rng, cur, add)
                if at == 2 and text[-1].startswith("AveragePooling2D") and not _power_of_two_window(text[-1]):
                    _quantize_after(rng, cur, add)  # the division needs a quantizer after it
            if len(cur) == 3:
                cur = _views_2d(rng, cur, add, at, pending)

        maybe_pool(0, float_acc)
        if dense_softmax or (last and rng.random() < 0.15 and act is None):
            break  # the model ends with the accumulator
        if rng.random() < 0.7:
            bn = {}
            if rng.random() < 0.3:
                bn = {
                    "center": bool(rng.integers(2)),
                    "scale": bool(rng.integers(2)),
                    "epsilon": float(rng.choice([1e-5, 1e-3, 0.1])),
                }
            add(keras.layers.BatchNormalization(**bn), f"BatchNormalization({_args(bn)})")
            ops_done += 1
            if last and act is None and _batchnorm_head(head_rng, layers[-1]):
                break  # the model ends with the BatchNormalization: an affine node, or refused
        maybe_pool(1, float_acc or ops_done > 0)
        if rng.random() < 0.35:
            a = str(rng.choice(ACTIVATIONS))
            add(keras.layers.Activation(a), f"Activation({a!r})")
        if rng.random() < 0.1:
            add(keras.layers.Dropout(0.5), "Dropout(0.5)")
        if rng.random() < 0.1:
            _inference_noop(rng, cur, add)
        q = _activation_quantizer(rng, cur[-1])
        if last or rng.random() < 0.5:
            add(QuantActivation(q), f"QuantActivation({q!r})")
            # sometimes the next layer quantizes its input again with the same quantizer (a cast to
            # the type the tensor already has, or a threshold onto the same levels)
            next_input_q = q if repeat_rng.random() < 0.1 else None
            channels = cur[-1]
            maybe_pool(2, False)
            if next_input_q is not None and next_input_q.startswith("partial(") and cur[-1] != channels:
                next_input_q = None  # a view changed the channels its chosen ones index (seed 49003)
        else:
            next_input_q = q
    strip = dense_softmax
    if not strip and text[-1].startswith(("QuantDense", "QuantActivation")) and rng.random() < 0.1:
        softmax = keras.layers.Softmax() if rng.random() < 0.5 else keras.layers.Activation("softmax")
        add(softmax, f"{type(softmax).__name__}()")
        strip = True
    strip = _softmax_after_head(head_rng, text, add) or strip
    output_quantizer = _output_quantizer(seed, text)
    model, x, input_type = _assemble(seed, rng, shape, layers, text, in_q, n_inputs)
    if output_quantizer is not None:
        text[-1] += f"  # freeze(output_quantizer={output_quantizer!r})"
    # Keras may have declined XLA
    return Case(seed, model, x, text, _jit(model), strip or output_quantizer is not None, input_type, output_quantizer)


def _output_quantizer(seed: int, text: list) -> str | None:
    """Sometimes (the stream ``[seed, 9]``), for a model that ends with a BatchNormalization (and
    a softmax), the ``output_quantizer`` freeze is given: larq's float head rounded onto a grid."""
    rng = np.random.default_rng([seed, 9])
    ends = [line for line in text if not line.startswith(("Activation('softmax')", "Softmax("))]
    if not ends or not ends[-1].startswith("BatchNormalization") or rng.random() >= OUTPUT_QUANTIZERS:
        return None
    integer = int(rng.integers(0, 6))
    bits = integer + 1 + int(rng.integers(1, 9))
    return f"quantized_bits({bits}, {integer})"


def _qkeras_names(seed: int, layers: list, text: list) -> None:
    """Sometimes QKeras's names (the stream ``[seed, 7]``): a ``QuantDense`` directly followed by
    a ``QuantActivation`` becomes one ``QDense(..., activation=<quantizer>)``, a
    ``QuantActivation`` a ``QActivation(activation=...)``, and (the side stream) a plain
    ``QuantDense`` / ``QuantConv2D`` and the BatchNormalization after it QKeras's fused
    ``QDenseBatchnorm`` / ``QConv2DBatchnorm``, or a plain BatchNormalization QKeras's
    ``QBatchNormalization``. Edits ``layers`` and ``text``."""
    import keras

    from ..training.layers import QActivation, QDense, QuantActivation, QuantDense

    rng = np.random.default_rng([seed, 7])
    i = 0
    while i < len(layers):
        layer, after = layers[i], layers[i + 1] if i + 1 < len(layers) else None
        plain = type(layer) is QuantDense and layer.activation in (None, keras.activations.linear)
        if plain and type(after) is QuantActivation and rng.random() < 0.5:
            q = after.quantizer
            layers[i : i + 2] = [
                QDense(
                    layer.units,
                    input_quantizer=layer.input_quantizer,
                    kernel_quantizer=layer.kernel_quantizer,
                    use_bias=layer.use_bias,
                    bias_quantizer=layer.bias_quantizer,
                    activation=q,
                )
            ]
            text[i : i + 2] = [f"Q{text[i][len('Quant') : -1]}, activation={q!r})  # QKeras's name"]
        elif _foldable(layer, after) and _SIDE[2].random() < FUSED_BATCHNORMS:
            layers[i : i + 2] = [_fused(layer, after)]
            text[i : i + 2] = [f"{type(layers[i]).__name__}({text[i][text[i].index('(') + 1 : -1]})  # a folded BatchNorm"]
        elif type(layer) is QuantActivation and rng.random() < 0.1:
            layers[i] = QActivation(activation=layer.quantizer)
            text[i] = f"QActivation(activation={layer.quantizer!r})"
        elif type(layer) is keras.layers.BatchNormalization and _SIDE[2].random() < QBATCHNORMS:
            layers[i] = _qbatchnorm(layer)
            text[i] = f"QBatchNormalization({text[i][text[i].index('(') + 1 : -1]})  # QKeras's po2 parameter quantizers"
        i += 1


def _qbatchnorm(bn):
    """A ``QBatchNormalization`` (QKeras's default parameter quantizers) of ``bn``'s arguments."""
    from ..training.layers import QBatchNormalization

    return QBatchNormalization(axis=bn.axis, momentum=bn.momentum, epsilon=bn.epsilon, center=bn.center, scale=bn.scale)


def _foldable(layer, after) -> bool:
    """A plain ``QuantDense`` / ``QuantConv2D`` (no activation) followed by a BatchNormalization
    of QKeras's defaults (last axis, scale and center): QKeras's fused layer can stand for both."""
    import keras

    from ..training.layers import QuantConv2D, QuantDense

    return (
        type(layer) in (QuantDense, QuantConv2D)
        and layer.activation in (None, keras.activations.linear)
        and isinstance(after, keras.layers.BatchNormalization)
        and after.scale
        and after.center
        and after.axis in (-1, [-1])
    )


def _fused(layer, bn):
    """QKeras's ``QDenseBatchnorm`` / ``QConv2DBatchnorm`` of a weighted layer and the BatchNorm after it."""
    from ..training.layers import QConv2DBatchnorm, QDenseBatchnorm, QuantDense

    common = dict(
        input_quantizer=layer.input_quantizer,
        kernel_quantizer=layer.kernel_quantizer,
        bias_quantizer=layer.bias_quantizer,
        use_bias=layer.use_bias,
        epsilon=bn.epsilon,
        folding_mode=str(_SIDE[2].choice(["ema_stats_folding", "batch_stats_folding"])),
    )
    if type(layer) is QuantDense:
        return QDenseBatchnorm(layer.units, **common)
    conv = dict(strides=layer.strides, padding=layer.padding, dilation_rate=layer.dilation_rate, pad_values=layer.pad_values)
    return QConv2DBatchnorm(layer.filters, layer.kernel_size, **conv, **common)


# leading QuantActivations that are no plain conversion to a fixed-point type (QKeras's
# QActivation("quantized_relu_po2(4, 4)") on the input): with freeze(input_type=) they
# requantize the converted input
LEADING_REQUANTIZERS = ("quantized_relu_po2(4, 4)", "quantized_po2(4, 2)", "ste_sign", "ste_heaviside", "dorefa(2)")


def _assemble(seed, rng, shape, layers, text, in_q, n_inputs):
    """(model, inputs, input type): the drawn ``layers`` named as QKeras would name them, behind
    their front door, as a Sequential or (a fifth of the seeds) the same chain as a functional
    model, its weights set from ``rng`` and compiled (a third of the seeds under XLA)."""
    import keras

    _qkeras_names(seed, layers, text)
    model_shape, input_type, inputs_for = _front_door(seed, shape, layers, text, in_q)
    functional = rng.random() < 0.2  # the same chain as a functional model
    if functional:
        text.insert(0, "functional")
    if _LINES_ONLY[0]:
        return None, None, input_type
    if functional:
        inputs = h = keras.Input(model_shape)
        for layer in layers:
            h = layer(h)
        model = keras.Model(inputs, h, name=f"fuzz_{seed}")
    else:
        model = keras.Sequential([keras.Input(model_shape)] + layers, name=f"fuzz_{seed}")
    x = inputs_for(_inputs(rng, in_q, shape, n_inputs))
    _set_weights(model, rng, x)
    model.compile(jit_compile=bool(rng.random() < 0.3))
    return model, x, input_type


def _front_door(seed: int, shape: tuple, layers: list, text: list, in_q: str):
    """Sometimes the input's type given as users of QKeras and larq give it (the stream
    ``[seed, 5]``: other seeds keep their models): a leading ``QuantActivation`` instead of the
    first layer's ``input_quantizer``, or no input quantizer at all and ``freeze(input_type=)``
    (the inputs put on its grid), or a leading ``QuantActivation`` that is no plain conversion
    (:data:`LEADING_REQUANTIZERS`) on the type ``freeze(input_type=)`` gives; and sometimes the
    model's input in another shape of the same size with a ``Flatten`` or ``Reshape`` (and a
    ``Dropout``) before the first layer. Edits
    ``layers`` and ``text``; returns (the model's input shape, the input type or None, the
    function making the model's inputs from inputs of ``shape``)."""
    import keras

    from .. import forms
    from ..fixed import FixedType
    from ..training import quantizers
    from ..training.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense

    rng = np.random.default_rng([seed, 5])
    first, input_type = layers[0], None
    r = rng.random()
    if getattr(first, "input_quantizer", None) is not None and r < 0.2:
        first.input_quantizer = None
        text[0] = text[0].replace(f"input_quantizer={in_q!r}", "input_quantizer=None")
        hw = quantizers.get(in_q).hardware()
        if r < 0.1 or not isinstance(hw, forms.Fixed):
            layers.insert(0, QuantActivation(in_q))
            text.insert(0, f"QuantActivation({in_q!r})")
            text[1] += "  # its input_quantizer: the QuantActivation before it"
        else:
            input_type = str(hw.type)
            text[0] += f"  # no input_quantizer: freeze(input_type={input_type!r})"
            if type(first) in (QuantDense, QuantConv1D, QuantConv2D) and np.random.default_rng([seed, 11]).random() < FLOAT_STEMS:
                first.kernel_quantizer = None  # a float stem: freeze(data=x) calibrates it
                text[0] += "; float kernel: freeze(data=x) calibrates it"
    elif getattr(first, "input_quantizer", None) is not None and r < 0.26:
        hw = quantizers.get(in_q).hardware()
        if isinstance(hw, forms.Fixed):  # a leading quantizer that is no plain conversion, on the given type
            lead = str(rng.choice(LEADING_REQUANTIZERS))
            input_type = str(hw.type)
            layers.insert(0, QuantActivation(lead))
            text.insert(0, f"QuantActivation({lead!r})  # no plain conversion: freeze(input_type={input_type!r})")
    model_shape = shape
    if rng.random() < 0.15:
        size = int(np.prod(shape))
        if len(shape) == 1:  # the data come as (L, C) or (H, W, C)
            model_shape = (size, 1) if rng.random() < 0.5 else (1, size, 1)
            layers.insert(0, keras.layers.Flatten())
            text.insert(0, "Flatten()")
        else:
            model_shape = (size,)
            layers.insert(0, keras.layers.Reshape(shape))
            text.insert(0, f"Reshape({shape})")
        if rng.random() < 0.3:
            layers.insert(0, keras.layers.Dropout(0.3))
            text.insert(0, "Dropout(0.3)")
        text[0] = f"{text[0]}  # the input as {model_shape}"

    def inputs_for(x):
        if input_type is not None:
            x = FixedType.from_string(input_type).quantize(x).astype(np.float32)
        return x.reshape((len(x), *model_shape))

    return model_shape, input_type, inputs_for


def _conv_shape(cur, kernel, strides, padding, dilation, channels) -> tuple:
    """The (Ho, Wo, ``channels``) output of a convolution over the (H, W, C) tensor ``cur``."""
    if padding == "same":
        return (-(-cur[0] // strides[0]), -(-cur[1] // strides[1]), channels)
    (kh, kw), (dh, dw) = kernel, dilation or (1, 1)
    return ((cur[0] - (kh - 1) * dh - 1) // strides[0] + 1, (cur[1] - (kw - 1) * dw - 1) // strides[1] + 1, channels)


def _dilation(rng, cur, kernel, strides, padding, allow_strides: bool) -> dict:
    """Sometimes a ``dilation_rate`` (2 or 3 per axis) for a convolution over ``cur``: its dilated
    kernel still fits a "valid" input; with strides only where Keras allows them
    (``allow_strides``: the depthwise layers; Conv2D refuses strides with dilation)."""
    if rng.random() > 0.25 or (not allow_strides and max(strides) > 1):
        return {}
    rate = []
    for size, k in zip(cur[:2], kernel):
        d = int(rng.integers(2, 4))
        if padding == "valid" and k > 1:
            d = min(d, (size - 1) // (k - 1))
        rate.append(max(d, 1))
    return {"dilation_rate": tuple(rate)} if max(rate) > 1 else {}


def _depthwise_conv(rng, cur, common, kernel, strides, padding, pad_values):
    """Sometimes (else None) a ``QuantDepthwiseConv2D`` (depth multiplier 1 to 3) or a
    ``QuantSeparableConv2D`` (its own pointwise quantizer) in place of a ``QuantConv2D``, with the
    block's kernel, strides, padding, ``pad_values``, quantizers and options (a dilation with
    strides too, which Keras allows for these layers): a function that adds the layer and returns
    the output shape."""
    from ..training.layers import QuantDepthwiseConv2D, QuantSeparableConv2D

    if rng.random() > 0.35:
        return None
    opts = {k: v for k, v in common.items() if k != "kernel_quantizer"}
    opts["depthwise_quantizer"] = common["kernel_quantizer"]
    if "dilation_rate" not in opts:
        opts.update(_dilation(rng, cur, kernel, strides, padding, allow_strides=True))
    multiplier = int(rng.integers(1, 4))
    geometry = dict(strides=strides, padding=padding, pad_values=pad_values, depth_multiplier=multiplier)
    opts["depthwise_quantizer"] = _summed_scale(opts["depthwise_quantizer"], (*kernel, cur[2], multiplier), (0, 1, 2))
    if rng.random() < 0.5:
        layer = QuantDepthwiseConv2D(kernel, **geometry, **opts)
        line = f"QuantDepthwiseConv2D({kernel}, {_args(geometry)}, {_args(opts)})"
        channels = cur[2] * multiplier
    else:
        channels = int(rng.integers(1, 5))
        opts["pointwise_quantizer"] = _summed_scale(_kernel_quantizer(rng), (1, 1, cur[2] * multiplier, channels), (2,))
        layer = QuantSeparableConv2D(channels, kernel, **geometry, **opts)
        line = f"QuantSeparableConv2D({channels}, {kernel}, {_args(geometry)}, {_args(opts)})"
    shape = _conv_shape(cur, kernel, strides, padding, opts.get("dilation_rate"), channels)

    def add(add_layer):
        add_layer(layer, line)
        return shape

    return add


def _batchnorm_head(rng, layer) -> bool:
    """Whether the model ends with this BatchNormalization (larq's classifier head, no quantizer
    after it); most such heads get power-of-two-friendly statistics (:func:`pow2_bn`)."""
    if rng.random() >= 0.3:
        return False
    layer.edgebnn_fuzz_pow2 = bool(rng.random() < 0.7)
    return True


def _softmax_after_head(rng, text, add) -> bool:
    """Sometimes a softmax after a BatchNormalization head (frozen with strip_softmax=True)."""
    import keras

    if not text[-1].startswith("BatchNormalization") or rng.random() >= 0.3:
        return False
    add(keras.layers.Activation("softmax"), "Activation('softmax')")
    return True


def pow2_bn(acc_values: np.ndarray, rng, epsilon: float) -> list[np.ndarray]:
    """(gamma, beta, mean, var) as float32 whose inference is an exact affine form in float32:
    gamma / sqrt(var + epsilon) a power of two or zero, means on values the channel takes, betas
    on a coarse binary grid (an occasional channel with any beta, which makes it refused)."""
    c = acc_values.shape[-1]
    mean = acc_values[rng.integers(len(acc_values), size=c), np.arange(c)]
    root = 2.0 ** rng.integers(-2, 3, c)
    var = (root**2 - np.float32(epsilon)).astype(np.float32)
    gamma = rng.choice([1.0, -1.0, 0.5, -2.0, 0.0, 4.0], c) * root
    beta = rng.integers(-8, 9, c) / 4.0
    beta = np.where(rng.random(c) < 0.05, rng.normal(size=c), beta)
    return [np.asarray(v, dtype=np.float32) for v in (gamma, beta, mean, var)]


# the fraction of seeds that make a branching model (_branching_model)
BRANCHING = 0.25


def _branching_model(seed: int, n_inputs: int) -> Case:
    """A functional model with branches and merges: a stem (QuantConv2D or QuantDense, its
    input_quantizer the model's input type), then blocks of Bi-Real-style residuals (a quantized
    shortcut added to a block's quantized output), concatenations of branches (one may be the
    quantized tensor itself: a fan-out after a quantizer), sums of two accumulators, each merge
    followed by float ops and a quantizer or read directly; then a pool, a Flatten and a last
    QuantDense, or the last merge itself. Sometimes a form freeze refuses: a real-valued tensor
    that branches, a merge of a real-valued tensor, a concatenation along another axis."""
    import keras

    rng = np.random.default_rng((seed, 2))
    spatial = rng.random() < 0.75
    shape = (int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(1, 4))) if spatial else (int(rng.integers(2, 9)),)
    in_q = _input_quantizer(rng)
    text: list[str] = ["functional"]
    inputs = keras.Input(shape)
    h = _stem(rng, inputs, in_q, spatial, text)
    for _ in range(int(rng.integers(1, 4))):
        h = _merge_block(rng, h, spatial, text)
    if rng.random() < 0.8:
        if spatial and rng.random() < 0.3 and min(h.shape[1:3]) >= 2:
            h = _apply(keras.layers.MaxPooling2D((2, 2)), h, text, "MaxPooling2D((2, 2))")
        if spatial:
            h = _apply(keras.layers.Flatten(), h, text, "Flatten()")
        iq = None if rng.random() < 0.5 else _fixed_quantizer(rng, (2, 6))
        kq = _kernel_quantizer(rng)
        units = int(rng.integers(1, 6))
        kq = _summed_scale(kq, (int(h.shape[-1]), units), (0,))
        h = _apply(
            _weighted(spatial=False, units=units, iq=iq, kq=kq),
            h,
            text,
            f"QuantDense({units}, input_quantizer={iq!r}, kernel_quantizer={kq!r}, use_bias=False)",
        )
    if _LINES_ONLY[0]:
        return Case(seed, None, None, text, False)
    model = keras.Model(inputs, h, name=f"fuzz_{seed}")
    x = _inputs(rng, in_q, shape, n_inputs)
    _set_weights(model, rng, x)
    model.compile(jit_compile=bool(rng.random() < 0.2))
    return Case(seed, model, x, text, _jit(model))


def _apply(layer, h, text: list[str], line: str):
    """``layer`` called on ``h`` (one tensor or a list), its line added to ``text``."""
    out = layer(h)
    names = ", ".join(_producer(t) for t in (h if isinstance(h, list) else [h]))
    text.append(f"{layer.name} = {line}({names})")
    return out


def _producer(tensor) -> str:
    """The name of the layer that made the Keras tensor (as freeze's messages name it)."""
    history = getattr(tensor, "_keras_history", None)
    return history[0].name if history else tensor.name


def _weighted_kernel(spatial: bool, kernel, c_in: int, units: int):
    """(kernel shape, the axes its sum runs over) of :func:`_weighted`'s layer."""
    return ((*kernel, c_in, units), (0, 1, 2)) if spatial else ((c_in, units), (0,))


def _weighted(spatial: bool, units: int, iq, kq, kernel=(1, 1), bias_q=None, use_bias=False):
    """A QuantConv2D ("same" padding, stride 1) or QuantDense layer."""
    from ..training.layers import QuantConv2D, QuantDense

    common = dict(input_quantizer=iq, kernel_quantizer=kq, use_bias=use_bias, bias_quantizer=bias_q)
    if spatial:
        return QuantConv2D(units, kernel, padding="same", **common)
    return QuantDense(units, **common)


def _requantize(rng, h, text: list[str], bn: bool = True, pool: bool = False):
    """Float ops (BatchNormalization, sometimes an activation) and a QuantActivation after ``h``;
    with ``pool`` a MaxPooling2D before the quantizer (freeze moves it after)."""
    import keras

    from ..training.layers import QuantActivation

    if bn:
        h = _apply(keras.layers.BatchNormalization(), h, text, "BatchNormalization()")
    if pool and len(h.shape) == 4 and min(h.shape[1:3]) >= 2:
        h = _apply(keras.layers.MaxPooling2D((2, 2)), h, text, "MaxPooling2D((2, 2))")
    if rng.random() < 0.2:
        a = str(rng.choice(["relu", "tanh", "hard_sigmoid", "linear"]))
        h = _apply(keras.layers.Activation(a), h, text, f"Activation({a!r})")
    q = _activation_quantizer(rng, int(h.shape[-1]))
    return _apply(QuantActivation(q), h, text, f"QuantActivation({q!r})")


def _stem(rng, inputs, in_q: str, spatial: bool, text: list[str]):
    """The first weighted layer and, mostly, its requantization."""
    c = int(rng.integers(1, 4))
    kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4))) if spatial else (1, 1)
    kq = _summed_scale(_kernel_quantizer(rng), *_weighted_kernel(spatial, kernel, int(inputs.shape[-1]), c))
    h = _apply(
        _weighted(spatial, c, in_q, kq, kernel),
        inputs,
        text,
        f"stem({c}, {kernel}, input_quantizer={in_q!r}, kernel_quantizer={kq!r})",
    )
    if rng.random() < 0.8:
        h = _requantize(rng, h, text, pool=rng.random() < 0.25)
    return h


def _branch(rng, h, spatial: bool, channels: int, text: list[str], quantize: bool):
    """A weighted layer reading ``h`` (an input quantizer or none), then its requantization
    (``quantize``) or its accumulator (a quantized bias at most)."""
    kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4))) if spatial and rng.random() < 0.6 else (1, 1)
    iq = None if rng.random() < 0.5 else str(rng.choice(["ste_sign", _fixed_quantizer(rng, (2, 5))]))
    kq = _kernel_quantizer(rng) if rng.random() < 0.5 else "ste_sign"
    bias_q = _fixed_quantizer(rng, (3, 6), signed=True) if not quantize and rng.random() < 0.3 else None
    kq = _summed_scale(kq, *_weighted_kernel(spatial, kernel, int(h.shape[-1]), channels))
    layer = _weighted(spatial, channels, iq, kq, kernel, bias_q=bias_q, use_bias=bias_q is not None)
    out = _apply(
        layer, h, text, f"conv({channels}, {kernel}, input_quantizer={iq!r}, kernel_quantizer={kq!r}, bias_quantizer={bias_q!r})"
    )
    return _requantize(rng, out, text, bn=rng.random() < 0.8) if quantize else out


def _merge_block(rng, h, spatial: bool, text: list[str]):
    """One block merging branches of ``h`` (see :func:`_branching_model`)."""
    import keras

    c = int(h.shape[-1])
    kind = str(rng.choice(["residual", "residual", "concat", "accumulators"])) if rng.random() > 0.08 else "refused"
    if kind == "residual":  # Bi-Real: the quantized shortcut plus the block's quantized output
        y = _branch(rng, h, spatial, c, text, quantize=True)
        shortcut = _apply(keras.layers.Dropout(0.5), h, text, "Dropout(0.5)") if rng.random() < 0.15 else h
        more = _more_inputs(rng, [shortcut, y], lambda: _branch(rng, h, spatial, c, text, quantize=True))
        out = _apply(keras.layers.Add(), more, text, "Add()")
    elif kind == "concat":  # two branches, or the quantized tensor itself beside one
        a = h if rng.random() < 0.4 else _branch(rng, h, spatial, int(rng.integers(1, 3)), text, quantize=rng.random() < 0.7)
        b = _branch(rng, h, spatial, int(rng.integers(1, 3)), text, quantize=rng.random() < 0.7)
        pair = [a, b] if rng.random() < 0.5 else [b, a]
        more = _more_inputs(
            rng, pair, lambda: _branch(rng, h, spatial, int(rng.integers(1, 3)), text, quantize=rng.random() < 0.7)
        )
        out = _apply(keras.layers.Concatenate(), more, text, "Concatenate()")
    elif kind == "accumulators":  # two accumulators of one tensor, summed before any float op
        units = int(rng.integers(1, 4))
        a = _branch(rng, h, spatial, units, text, quantize=False)
        b = _branch(rng, h, spatial, units, text, quantize=False)
        more = _more_inputs(rng, [a, b], lambda: _branch(rng, h, spatial, units, text, quantize=False))
        out = _apply(keras.layers.Add(), more, text, "Add()")
    else:
        return _refused_block(rng, h, spatial, text)
    if rng.random() < 0.6:  # a threshold after the merge; else the next layer reads it as it is
        out = _requantize(rng, out, text, bn=rng.random() < 0.8)
    return out


def _more_inputs(rng, inputs: list, make) -> list:
    """Sometimes the inputs of a merge of three or four: ``inputs`` with one or two more, each a
    new branch (``make()``) or at times one of them again, in a random order (hls4ml builds it as
    a chain of two-input merges)."""
    if rng.random() >= 0.3:
        return inputs
    extra = [inputs[rng.integers(len(inputs))] if rng.random() < 0.25 else make() for _ in range(1 if rng.random() < 0.7 else 2)]
    out = [*inputs, *extra]
    return [out[i] for i in rng.permutation(len(out))]


def _refused_block(rng, h, spatial: bool, text: list[str]):
    """A merge freeze must refuse in one sentence: a real-valued tensor that branches, a merge
    of a real-valued tensor, or (spatial) a concatenation along the width."""
    import keras

    c = int(h.shape[-1])
    r = rng.random()
    acc = _branch(rng, h, spatial, c, text, quantize=False)
    real = _apply(keras.layers.BatchNormalization(), acc, text, "BatchNormalization()")
    if r < 0.4:  # fans out before its quantizer
        q = _requantize(rng, real, text, bn=False)
        return _apply(keras.layers.Add(), [real, q], text, "Add()")
    if r < 0.7 or not spatial:  # a merge of a real-valued tensor with a quantized one
        return _apply(keras.layers.Add(), [real, h], text, "Add()")
    q = _requantize(rng, real, text, bn=False)
    return _apply(keras.layers.Concatenate(axis=2), [q, h], text, "Concatenate(axis=2)")


def _average_pool(rng, cur, add) -> tuple:
    """Add an ``AveragePooling2D`` to an (H, W, C) tensor ``cur`` and return its output shape:
    mostly a window of a power of two of values (2x2 most often) at strides equal to it or
    overlapping; often one of 3, 6 or 9 values (a sum, its division folded into the next
    quantizer); sometimes a form freeze refuses (padding="same")."""
    import keras

    h, w = cur[0], cur[1]
    r = rng.random()
    padding = "valid"
    if r < 0.4 and max(h, w) >= 3:  # divides by 3, 6 or 9: a sum and its division into the next quantizer
        p = (3 if h >= 3 else int(rng.integers(1, h + 1)), 3 if w >= 3 else int(rng.integers(1, w + 1)))
    else:
        fits = [q for q in ((2, 1), (1, 2), (1, 1), (4, 4), (2, 4), (4, 2), (4, 1)) if q[0] <= h and q[1] <= w]
        p = (2, 2) if rng.random() < 0.55 or not fits else fits[rng.integers(len(fits))]
        if r > 0.95:  # border windows divide by fewer values: refused
            padding = "same"
    t = rng.random()
    s = p if t < 0.6 else (1, 1) if t < 0.85 else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    line = f"AveragePooling2D({p}, strides={s}" + (", padding='same')" if padding == "same" else ")")
    add(keras.layers.AveragePooling2D(p, strides=s, padding=padding), line)
    if padding == "same":  # the output Keras gives (the layers after it depend on the shape, e.g. a Reshape)
        return (-(-h // s[0]), -(-w // s[1]), cur[2])
    return ((h - p[0]) // s[0] + 1, (w - p[1]) // s[1] + 1, cur[2])


def random_model_1d(seed: int, n_inputs: int = 64) -> Case:
    """A random model on an (L, C) input: ``QuantConv1D`` blocks (valid, same or causal padding,
    strides, dilation, ``pad_values``, one-tap kernels), the 1-D pools, ``ZeroPadding1D``,
    BatchNormalization, activations and quantizers as :func:`random_model` makes them, and
    sometimes a ``Flatten`` and a ``QuantDense`` at the end."""
    import keras

    from ..training.layers import QuantActivation, QuantConv1D, QuantDense

    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(2, 17)), int(rng.integers(1, 4)))
    in_q = _input_quantizer(rng)
    layers: list = []
    text: list[str] = []
    next_input_q: str | None = in_q
    cur = shape
    n_blocks = int(rng.integers(1, 4))

    def add(layer, line):
        layers.append(layer)
        text.append(line)

    for block in range(n_blocks):
        last = block == n_blocks - 1
        bias = bool(rng.integers(2))
        bias_q = None if not bias or rng.random() < 0.6 else _fixed_quantizer(rng, (3, 6), signed=True)
        act = None
        if rng.random() < 0.2:
            act = "relu" if rng.random() < 0.5 else str(rng.choice(ACTIVATIONS))
        common = dict(
            input_quantizer=next_input_q,
            kernel_quantizer=_kernel_quantizer(rng),
            use_bias=bias,
            bias_quantizer=bias_q,
            activation=act,
        )
        if len(cur) == 2 and (block == 0 or not last or rng.random() < 0.6):
            layer, line, cur = _conv1d(rng, cur, next_input_q, common, QuantConv1D)
            add(layer, line)
        else:
            if len(cur) == 2:
                add(keras.layers.Flatten(), "Flatten()")
                cur = (int(np.prod(cur)),)
            units = int(rng.integers(1, 9))
            common["kernel_quantizer"] = _summed_scale(common["kernel_quantizer"], (cur[0], units), (0,))
            add(QuantDense(units, **common), f"QuantDense({units}, {_args(common)})")
            cur = (units,)
        float_acc = act is not None or (bias and bias_q is None)
        at = {int(rng.integers(0, 3)): "pool"} if len(cur) == 2 and rng.random() < 0.6 else {}
        if len(cur) == 2 and rng.random() < 0.3:
            at.setdefault(int(rng.choice([0, 2, 2, 1])), "pad")
        if last and rng.random() < 0.15 and act is None:
            if at.get(0) == "pool":
                cur = _pool_1d(rng, cur, add, pending=float_acc)
            break  # the model ends with the accumulator (or a pool of it)
        for position in range(3):
            what = at.get(position)
            if position == 1 and rng.random() < 0.7:
                add(keras.layers.BatchNormalization(), "BatchNormalization()")
                float_acc = True
            if position == 2:
                if rng.random() < 0.35:
                    a = str(rng.choice(ACTIVATIONS))
                    add(keras.layers.Activation(a), f"Activation({a!r})")
                q = _activation_quantizer(rng, cur[-1])
                if last or rng.random() < 0.5:
                    add(QuantActivation(q), f"QuantActivation({q!r})")
                    next_input_q, float_acc = None, False
                else:
                    next_input_q = q
                    what = None  # the next layer's input quantizer comes after any pool here
            if what == "pool" and len(cur) == 2:
                cur = _pool_1d(rng, cur, add, pending=float_acc, after=position == 2)
            elif what == "pad" and len(cur) == 2 and (not float_acc or rng.random() < 0.1):
                pad = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
                add(keras.layers.ZeroPadding1D(pad), f"ZeroPadding1D({pad})")
                cur = (cur[0] + pad[0] + pad[1], cur[1])
    model, x, input_type = _assemble(seed, rng, shape, layers, text, in_q, n_inputs)
    return Case(seed, model, x, text, _jit(model), input_type=input_type)


def _conv1d(rng, cur, input_q, common, cls):
    """A ``QuantConv1D`` on an (L, C) tensor ``cur``: (layer, its line, its output shape)."""
    length = cur[0]
    k = int(rng.integers(1, min(3, length) + 1))
    strides = int(rng.integers(1, 3))
    dilation = 1
    if strides == 1 and k > 1 and rng.random() < 0.3:
        dilation = int(rng.integers(2, 4))
    extent = (k - 1) * dilation + 1
    padding = str(rng.choice(["valid", "same", "same", "causal"] if extent <= length else ["same", "causal"]))
    pad_values = 0.0
    if padding == "same" and input_q and "sign" in input_q and rng.random() < 0.5:
        pad_values = float(rng.choice([1.0, -1.0]))
    elif padding == "same" and rng.random() < 0.1:  # on the input's grid or not
        pad_values = float(rng.choice([1.0, -1.0, 0.5, 0.3]))
    filters = int(rng.integers(1, 5))
    common["kernel_quantizer"] = _summed_scale(common["kernel_quantizer"], (k, cur[1], filters), (0, 1))
    layer = cls(filters, k, strides=strides, padding=padding, dilation_rate=dilation, pad_values=pad_values, **common)
    out = (length - extent) // strides + 1 if padding == "valid" else -(-length // strides)
    line = (
        f"QuantConv1D({filters}, {k}, strides={strides}, padding={padding!r}, dilation_rate={dilation}, "
        f"pad_values={pad_values}, {_args(common)})"
    )
    return layer, line, (out, filters)


def _pool_1d(rng, cur, add, pending: bool, after: bool = False) -> tuple:
    """Add a 1-D pool to an (L, C) tensor ``cur`` and return its output shape: a max or average
    pool (windows of a power of two of values; often 3, 5 or 6 values: a sum, its division folded
    into the next quantizer; "same" padding, refused for an average), or a global one (flat output
    unless ``keepdims``; an average over any length). ``pending``: float ops run since the
    accumulator, where averages are refused, so they are made only sometimes there; ``after``:
    the pool reads a quantizer's output, so an average not over a power of two of values gets a
    quantizer after it (the division needs one)."""
    import keras

    length, c = cur
    r = rng.random()
    average = rng.random() < (0.1 if pending else 0.5)
    if r < 0.2:
        keepdims = bool(rng.random() < 0.2)
        cls = keras.layers.GlobalAveragePooling1D if average else keras.layers.GlobalMaxPooling1D
        add(cls(keepdims=keepdims), f"{cls.__name__}(keepdims={keepdims})")
        out = (1, c) if keepdims else (c,)
        if average and after and length & (length - 1):
            _quantize_after(rng, out, add)
        return out
    sums = [q for q in (3, 5, 6) if q <= length]
    if average and sums and rng.random() < 0.35:
        p = sums[rng.integers(len(sums))]
    else:
        fits = [q for q in (2, 2, 1, 4) if q <= length] or [1]
        p = fits[rng.integers(len(fits))]
    t = rng.random()
    s = p if t < 0.6 else 1 if t < 0.85 else int(rng.integers(1, 3))
    padding = "same" if rng.random() < 0.04 or (not average and _SIDE[2].random() < SAME_POOLS) else "valid"
    cls = keras.layers.AveragePooling1D if average else keras.layers.MaxPooling1D
    add(cls(p, strides=s, padding=padding), f"{cls.__name__}({p}, strides={s}, padding={padding!r})")
    out = (-(-length // s), c) if padding == "same" else ((length - p) // s + 1, c)
    if average and after and p & (p - 1):
        _quantize_after(rng, out, add)
    return out


def _power_of_two_window(line: str) -> bool:
    """The ``AveragePooling2D((ph, pw), ...)`` line's window holds a power of two of values."""
    ph, pw = (int(d) for d in line.split("(", 2)[2].split(")")[0].split(","))
    return (ph * pw) & (ph * pw - 1) == 0


def _quantize_after(rng, cur, add) -> None:
    """End a real-valued tensor (a division by a window size) with a random QuantActivation."""
    from ..training.layers import QuantActivation

    q = _activation_quantizer(rng, cur[-1])
    add(QuantActivation(q), f"QuantActivation({q!r})")


def _views_2d(rng, cur, add, at: int, pending: bool) -> tuple:
    """Sometimes add a 2-D view or window layer to an (H, W, C) tensor ``cur`` at position ``at``
    (0: on the accumulator, 1: among the float ops, 2: after the quantizer) and return the new
    shape: a ``GlobalMaxPooling2D`` / ``GlobalAveragePooling2D`` (keepdims or not; an average over
    any number of values), a ``ZeroPadding2D``, or a ``Reshape`` (to one axis, or to three that
    keep, split or merge the channels). A global average or a padding among float ops is
    refused; a Reshape there moves after the quantizer (refused before a per-channel op when it
    mixes channels); an average of a number of values not a power of two after the quantizer gets
    a quantizer after it."""
    import keras

    h, w, c = cur
    r = rng.random()
    if r < 0.04 and (not pending or rng.random() < 0.3):
        keep = bool(rng.integers(2))
        if rng.random() < 0.5:
            add(keras.layers.GlobalMaxPooling2D(keepdims=keep), f"GlobalMaxPooling2D(keepdims={keep})")
        else:
            add(keras.layers.GlobalAveragePooling2D(keepdims=keep), f"GlobalAveragePooling2D(keepdims={keep})")
            if at == 2 and (h * w) & (h * w - 1):
                _quantize_after(rng, (1, 1, c), add)
        return (1, 1, c) if keep else (c,)
    if r < 0.07 and (not pending or rng.random() < 0.2):
        pad = tuple((int(rng.integers(0, 2)), int(rng.integers(0, 3))) for _ in range(2))
        add(keras.layers.ZeroPadding2D(pad), f"ZeroPadding2D({pad})")
        return (h + sum(pad[0]), w + sum(pad[1]), c)
    if r < 0.1:
        shapes = [(h * w * c,), (w, h, c), (h * w, 1, c), (h, w * c, 1)] + ([(h, w * c // 2, 2)] if c % 2 == 0 else [])
        shape = shapes[int(rng.integers(len(shapes)))]
        add(keras.layers.Reshape(shape), f"Reshape({shape})")
        return shape
    return cur


def _inference_noop(rng, cur, add) -> None:
    """Add a layer that is the identity at inference (freeze drops it)."""
    import keras

    choices = [
        (keras.layers.GaussianNoise(0.5), "GaussianNoise(0.5)"),
        (keras.layers.GaussianDropout(0.3), "GaussianDropout(0.3)"),
        (keras.layers.AlphaDropout(0.3), "AlphaDropout(0.3)"),
        (keras.layers.ActivityRegularization(0.01, 0.01), "ActivityRegularization(0.01, 0.01)"),
        (keras.layers.Identity(), "Identity()"),
    ]
    if len(cur) == 3:
        choices.append((keras.layers.SpatialDropout2D(0.3), "SpatialDropout2D(0.3)"))
    layer, line = choices[int(rng.integers(len(choices)))]
    add(layer, line)


@contextlib.contextmanager
def xla_allowed():
    """Keras silently drops ``jit_compile=True`` while TensorFlow's op determinism is on
    (:func:`edgebnn.train.seed_everything` turns it on); turn it off for the block so XLA
    models are built as asked, and restore it after."""
    import keras

    if keras.backend.backend() != "tensorflow":
        yield
        return
    from tensorflow.python.framework import config  # the switch has no public "off"

    was = config.is_op_determinism_enabled()
    config.disable_op_determinism()
    try:
        yield
    finally:
        if was:
            config.enable_op_determinism()


def _args(kwargs) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if v is not None)


def _inputs(rng, in_q: str, shape, n: int) -> np.ndarray:
    """Inputs on the input grid, between grid points, exactly on ties, one float32 ulp around
    ties, and out of range."""
    from ..training import quantizers

    t = quantizers.get(in_q).hardware().type
    size = n * int(np.prod(shape))
    codes = rng.integers(t.min_code - 3, t.max_code + 4, size=size).astype(np.float64)
    kind = rng.integers(0, 6, size=size)
    lsb = 2.0**t.lsb_exp
    v = codes * lsb
    v = np.where(kind == 1, (codes + 0.5) * lsb, v)  # ties
    v = np.where(kind == 2, (codes + rng.random(size)) * lsb, v)  # between
    v32 = v.astype(np.float32)
    tie = ((codes + 0.5) * lsb).astype(np.float32)
    v32 = np.where(kind == 3, np.nextafter(tie, np.float32(np.inf)), v32)
    v32 = np.where(kind == 4, np.nextafter(tie, np.float32(-np.inf)), v32)
    v32 = np.where(kind == 5, rng.choice(np.array([0.0, -0.0, 1e3, -1e3, 1e-30], dtype=np.float32), size), v32)
    return v32.reshape((n, *shape))


def _set_weights(model, rng, x) -> None:
    """Latent weights spread over each quantizer's range; BatchNormalization statistics taken
    from the values the inputs actually reach there (ties on purpose), layer by layer."""
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            probe = keras.Model(model.inputs, layer.input)
            acc = np.asarray(probe.predict(x, verbose=0, batch_size=len(x)), dtype=np.float32)
            acc = acc.reshape(-1, acc.shape[-1])
            make = pow2_bn if getattr(layer, "edgebnn_fuzz_pow2", False) else adversarial_bn
            gamma, beta, mean, var = make(acc, rng, layer.epsilon)
            layer.set_weights(([gamma] if layer.scale else []) + ([beta] if layer.center else []) + [mean, var])
        elif layer.weights:
            new = []
            tiny = _SIDE[1].random() < TINY_WEIGHTS  # a kernel whose codes all round to zero (but a sign's)
            zero_bias = _SIDE[2].random() < ZERO_BIASES  # a bias as Keras initializes it
            for var, w in zip(layer.weights, layer.get_weights()):
                if var.name in FOLDED_STATS:  # a folded BatchNorm (QKeras's fused layers)
                    new.append(FOLDED_STATS[var.name](_SIDE[2], w.shape).astype(w.dtype))
                    continue
                scale = (1e-4 if tiny else 1.0) if w.ndim > 1 else 2.0
                if zero_bias and var.name == "bias":
                    scale = 0.0
                new.append((rng.uniform(-1.5, 1.5, size=w.shape) * scale).astype(np.float32))
            layer.set_weights(new)


# a folded BatchNorm's statistics (the side stream): gamma of both signs, zero and powers of two
# (a folded kernel then lands on its quantizer's grid points and ties), variances of 1 - epsilon too
FOLDED_STATS = {
    "gamma": lambda r, shape: r.choice([1.0, -1.0, 0.0, 0.5, 2.0, 0.37, -1.7], shape),
    "beta": lambda r, shape: r.choice([0.0, 0.25, -0.5, 1.3], shape) * r.integers(0, 2, shape) + r.normal(size=shape) * 0.3,
    "moving_mean": lambda r, shape: r.normal(size=shape),
    "moving_variance": lambda r, shape: r.choice([1.0 - 1e-3, 0.25 - 1e-3, 0.3, 2.0, 4.0 - 1e-3], shape),
    "iteration": lambda r, shape: np.zeros(shape),
}


def adversarial_bn(acc_values: np.ndarray, rng, epsilon: float = 1e-3) -> list[np.ndarray]:
    """(gamma, beta, mean, var) as float32 for channels of ``acc_values`` (samples, C): means
    exactly on values the channel takes (outputs exactly 0 there), gamma of both signs and
    zero, tiny variances, betas that cancel mean * inv after float32 rounding, random ones."""
    c = acc_values.shape[-1]
    pick = lambda: acc_values[rng.integers(len(acc_values), size=c), np.arange(c)]
    mean = pick()
    var = rng.choice([1.0, 0.3, 2.0**-6, 7.0, 1e-6], c)
    gamma = rng.choice([1.0, -1.0, 0.0, -0.0, 0.37, -2.5, 1e-3], c)
    inv = (1.0 / np.sqrt(var.astype(np.float32) + np.float32(epsilon))).astype(np.float32) * gamma.astype(np.float32)
    beta = rng.choice([0.0, -0.0, 1e-7, -1e-7], c)
    shift = pick().astype(np.float32) - mean
    beta = np.where(rng.random(c) < 0.4, (shift * inv).astype(np.float32), beta)  # ties after rounding
    beta = np.where(rng.random(c) < 0.2, rng.normal(size=c), beta)
    return [np.asarray(v, dtype=np.float32) for v in (gamma, beta, mean, var)]


# ------------------------------------------------------------------------------- checks


# the batch sizes at which check compares Keras's predict with the emulator (XLA compiles a
# matrix-vector product at 1 differently), then None: eager model(x), Keras's path without XLA
KERAS_BATCHES = (1, 7, 32, None)


def check(
    case: Case, io_type: str | None = None, workdir: str | os.PathLike | None = None, target: dict | None = None
) -> Outcome:
    """Freeze, save/load, emulate, compare with Keras (predict at batch sizes 1, 7 and 32, and
    eager ``model(x)``: :data:`KERAS_BATCHES`), and with ``io_type`` also export and
    C-simulate, with the export options ``target`` (backend, strategy, reuse_factor; random
    ones from the case's seed when None, see :func:`random_target`); never raises for what the
    model does."""
    out = Outcome(case.seed, "ok", csim=io_type, layers=case.layers, target=target)
    try:
        _check(case, io_type, workdir, out)
    except Exception as err:  # noqa: BLE001 - the fuzzer reports every failure as data
        from ..errors import EdgebnnError

        if isinstance(err, EdgebnnError):
            out.status, out.message = "refused", str(err)
        elif _tensorflow_runtime_error(err):
            out.status, out.message = "keras-error", _runtime_error_text(err)
        else:
            tb = traceback.extract_tb(err.__traceback__)[-1]
            out.status = "crash"
            out.message = f"{type(err).__name__}: {err} ({os.path.basename(tb.filename)}:{tb.lineno})"
    return out


def _tensorflow_runtime_error(err: BaseException) -> bool:
    """TensorFlow's runtime failing to run a graph it built (fuzz seed 262: oneDNN found no
    primitive for a convolution fused with an Add that reads one tensor twice, in the model's
    own ``predict``), not an error of edgebnn's code."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(err, (tf.errors.AbortedError, tf.errors.InternalError))


def _runtime_error_text(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).splitlines() if "exception" in ln.lower() or "error" in ln.lower()]
    return f"TensorFlow could not run the model: {type(err).__name__}: {lines[-1] if lines else err}"


def _check(case: Case, io_type, workdir, out: Outcome) -> None:
    from ..emulate import emulate
    from ..freeze import freeze, keras_logits, keras_reference
    from ..freeze.calibrate import float_layers
    from ..freeze.passes import thresholds
    from ..graph import Graph
    from ..verify import verify

    bisected = np.random.default_rng([case.seed, 10]).random() < BISECTED  # thresholds by bisection where monotone
    with warnings.catch_warnings(), thresholds.bisecting() if bisected else contextlib.nullcontext():
        warnings.simplefilter("ignore")
        # a float layer is calibrated on the case's inputs; the bound is loose: an untrained
        # model's predictions sit on a knife's edge, and exactness, not accuracy, is checked here
        calibrated = {"data": case.x, "max_accuracy_drop": 100.0} if float_layers(case.model) else {}
        graph = freeze(
            case.model,
            strip_softmax=case.strip_softmax,
            input_type=case.input_type,
            output_quantizer=case.output_quantizer,
            **calibrated,
        )
    out.ops = sorted({node.op for node in graph.nodes})
    out.forms = quantizer_forms(case.model) + front_forms(case) + export_forms(graph)
    if bisected and any(node.op == "threshold" for node in graph.nodes):
        out.forms.append("freeze: thresholds by bisection")
    keras_model, stripped = keras_reference(case.model, graph.meta)
    keras_model = keras_logits(keras_model) if stripped else keras_model
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = pathlib.Path(tmp) / "graph.npz"
        graph.save(path)
        graph = Graph.load(path)
        emu = emulate(graph, case.x)
        for batch in KERAS_BATCHES:  # predict at each batch size, then eager model(x) (None)
            if batch is None:
                ker = np.asarray(keras_model(case.x, training=False))
            else:
                ker = keras_model.predict(case.x, batch_size=batch, verbose=0)
            if not np.array_equal(np.asarray(ker, dtype=np.float64).reshape(emu.shape), emu):
                report = verify(case.model, graph, case.x, keras_output=ker)
                first = report.first_mismatches[0] if report.first_mismatches else None
                path = "eager model(x)" if batch is None else f"batch {batch}"
                text = f"Keras ({path}) vs emulator: {report.keras_vs_emulator} samples differ"
                if first:
                    text += f"; first at node {first.layer!r} (from {first.source}), sample {first.sample}"
                if _explained(first, report.caveats):
                    out.status, out.message = "warned", f"{text}; recorded: {report.caveats[0]['kind']}"
                else:
                    out.status, out.message = "mismatch", text
                    return
        if io_type is None:
            return
        if io_type == RTL:
            _check_rtl(graph, case, pathlib.Path(tmp) / "rtl", out)
            return
        from ..backends.hls4ml import export

        if out.target is None:
            out.target = random_target(np.random.default_rng([case.seed, 1]), graph, io_type)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            project = export(graph, pathlib.Path(tmp) / "prj", io_type=io_type, **out.target)
        project.compile()
        report = verify(None, graph, case.x, project=project)
        if report.stream_leftovers:
            out.status = "mismatch"
            out.message = f"C-simulation ({io_type}) left data in a stream: {report.stream_leftovers[0]}"
        elif report.emulator_vs_csim:
            out.status = "mismatch"
            out.message = f"emulator vs C-simulation ({io_type}): {report.emulator_vs_csim} samples differ"
            if report.first_mismatches:
                first = report.first_mismatches[0]
                out.message += f"; first at node {first.layer!r} (from {first.source}), sample {first.sample}"


def random_folding(rng, graph) -> dict:
    """A random PE x SIMD for every folded node of ``graph`` (divisors of its sizes, at most
    4096 products per cycle, so the simulation stays small)."""
    from ..backends.rtl import folding
    from ..backends.rtl.ops import LOWERINGS

    out = {}
    for node in graph.nodes:
        module = LOWERINGS.get(node.op)
        if module is None or not module.FOLDED:
            continue
        outputs, inputs = module.fold_sizes(node, graph.sources(node))
        simd = int(rng.choice(folding.divisors(inputs)))
        pes = [d for d in folding.divisors(outputs) if d * simd <= folding.DEFAULT_PRODUCTS] or [1]
        out[node.name] = [int(rng.choice(pes)), simd]
    return out


def _check_rtl(graph, case: Case, path: pathlib.Path, out: Outcome) -> None:
    """Export ``graph`` as RTL with a random folding (the case's seed), simulate it with
    Verilator and compare with the emulator node by node; ``out.target`` records the folding."""
    from ..backends.rtl import export
    from ..verify import verify

    if out.target is None:
        out.target = {"folding": random_folding(np.random.default_rng([case.seed, 2]), graph)}
    project = export(graph, path, folding=out.target["folding"])
    project.compile()
    report = verify(None, graph, case.x, rtl=project)
    if report.emulator_vs_rtl:
        out.status = "mismatch"
        out.message = f"emulator vs RTL simulation: {report.emulator_vs_rtl} samples differ"
        if report.first_mismatches:
            first = report.first_mismatches[0]
            out.message += f"; first at node {first.layer!r} (from {first.source}), sample {first.sample}"


QUANTIZER_ATTRS = ("input_quantizer", "kernel_quantizer", "depthwise_quantizer", "pointwise_quantizer", "quantizer")


def quantizer_forms(model) -> list[str]:
    """The hardware forms of the model's quantizers, as ``"<attribute>: <form>"`` (a scaled or
    partial form with its base: ``"kernel_quantizer: scaled ternary"``), and the layers that sum
    exactly in float64 (:func:`~edgebnn.training.layers.sums_exactly`) or sum a DoReFa activation's
    codes (:func:`~edgebnn.training.layers.reads_codes`)."""
    from ..training.layers import reads_codes, sums_exactly

    found = set()
    for layer in model.layers:
        for attr in QUANTIZER_ATTRS:
            q = getattr(layer, attr, None)
            if q is None or not hasattr(q, "hardware"):
                continue
            hw = q.hardware()
            kind = hw.kind
            if hasattr(hw, "base"):
                kind += f" {hw.base.kind}"
            elif hasattr(hw, "chosen"):
                kind += f" {hw.chosen.kind}/{hw.rest.kind if hw.rest is not None else 'float'}"
            if getattr(hw, "axis", None) not in (None, -1):  # scales or channels along another axis than the last
                kind += " (not along the last axis)"
            if kind == "fixed" and getattr(q, "alpha", None) is not None:  # QKeras's alpha=1: the plain grid
                kind += " (alpha=1)"
            if type(q).__name__ in ("BinaryTanh", "QuantizedSigmoid"):  # forms of their own rounding (issue 12)
                kind += f" ({type(q).__name__})"
            found.add(f"{attr}: {kind}")
        if hasattr(layer, "_tagged_kernels") and sums_exactly(layer):
            found.add("layer: float32 scales along the sum (exact float64 sum rounded once)")
        if hasattr(layer, "_tagged_kernels") and reads_codes(layer) is not None:
            found.add("layer: sums a DoReFa activation's codes (divided once)")
    return sorted(found)


def front_forms(case: Case) -> list[str]:
    """How the model's input gets its type (``"input: QuantActivation"``, ``"input: input_type"``),
    the views before it (``"input: Flatten first"``), QKeras's layer names it uses, its "same"
    max pools and its pools of overlapping or gapped windows: the front-door and layer forms the
    C-simulations cover like quantizer forms."""
    import keras

    from ..freeze.calibrate import float_layers
    from ..training.layers import QuantActivation

    found = ["input: input_type"] if case.input_type else []
    found += ["output: output_quantizer"] if case.output_quantizer else []
    found += ["layer: float weights calibrated (freeze data=)"] if float_layers(case.model) else []
    for layer in case.model.layers:
        if isinstance(layer, keras.layers.Flatten | keras.layers.Reshape | keras.layers.Dropout):
            found.append(f"input: {type(layer).__name__} first")
            continue
        if isinstance(layer, QuantActivation):
            found.append("input: QuantActivation requantizing input_type" if case.input_type else "input: QuantActivation")
        break
    qkeras = {type(layer).__name__ for layer in case.model.layers} & {
        "QDense",
        "QConv2D",
        "QActivation",
        "QDenseBatchnorm",
        "QConv2DBatchnorm",
        "QBatchNormalization",
    }
    pools = (keras.layers.MaxPooling1D, keras.layers.MaxPooling2D)
    same = {type(layer).__name__ for layer in case.model.layers if isinstance(layer, pools) and layer.padding == "same"}
    windows = (*pools, keras.layers.AveragePooling1D, keras.layers.AveragePooling2D)
    strided = {
        type(layer).__name__
        for layer in case.model.layers
        if isinstance(layer, windows) and tuple(layer.strides) != tuple(layer.pool_size)
    }
    return (
        found
        + [f"layer: {name} (QKeras's name)" for name in sorted(qkeras)]
        + [f"layer: {name}(padding='same')" for name in sorted(same)]
        + [f"layer: {name}(strides != pool_size)" for name in sorted(strided)]
    )


def export_forms(graph) -> list[str]:
    """The ops that the hls4ml export builds as another layer than usual, as forms the
    C-simulations cover: a 1-D pool over its whole input that only flattens read (a global pool
    without ``keepdims``) is hls4ml's ``GlobalPooling1D`` (``"export: maxpool1d as
    GlobalPooling1D"``), whose io_stream form keeps a running value per channel."""
    from ..backends.hls4ml.ops._pooling import global1d

    found = set()
    for node in graph.compute_nodes():
        srcs = graph.sources(node)
        if srcs and global1d(node, srcs[0], graph.readers(node)):
            found.add(f"export: {node.op} as GlobalPooling1D")
    return sorted(found)


def random_target(rng, graph, io_type: str) -> dict:
    """Random export options for ``graph`` that hls4ml builds exactly as given: backend, strategy
    and a reuse factor, model-wide or per weighted node, among those it keeps there
    (``backends.hls4ml.reuse``; any of 1..8 under Latency)."""
    from ..backends.hls4ml import reuse

    backend = str(rng.choice(["Vitis", "Vivado"]))
    strategy = str(rng.choice(["Latency", "Resource"]))
    weighted = reuse.matrices(graph)
    choices = {name: reuse.allowed(*m, strategy, io_type) or list(range(1, 9)) for name, m in weighted.items()}
    common = sorted(set.intersection(*(set(c) for c in choices.values()))) if choices else [1]
    if choices and rng.random() < 0.5:
        rf = {name: int(rng.choice(c)) for name, c in choices.items()}
    else:
        rf = int(rng.choice(common))
    return {"backend": backend, "strategy": strategy, "reuse_factor": rf}


def _explained(first, caveats) -> bool:
    """A Keras mismatch that freeze recorded: at a node it named (or, where eager Keras agrees,
    in ``predict`` alone, which a batch-layout caveat covers), or anywhere when float32 cannot
    hold the accumulators."""
    if any(c["kind"] == "float32" for c in caveats):
        return True
    if first is None or not caveats:
        return False
    node = first.layer.split(" (model.predict only")[0]
    return node in {c["node"] for c in caveats} or "model.predict only" in first.layer


# --------------------------------------------------------------------------------- runs


@dataclasses.dataclass
class Summary:
    seed: int
    outcomes: list[Outcome]

    def counts(self, csim: bool | None = None, rtl: bool = False) -> dict[str, int]:
        """Outcomes per status: all, or those C-simulated (``csim``) or not, or with ``rtl`` those RTL-simulated."""
        if rtl:
            chosen = [o for o in self.outcomes if o.csim == RTL]
        else:
            chosen = [o for o in self.outcomes if csim is None or (o.csim not in (None, RTL)) == csim]
        return {s: sum(o.status == s for o in chosen) for s in STATUSES}

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("mismatch", "crash")]

    def coverage(self) -> dict[str, dict[str, int]]:
        """For each graph op and quantizer form: in how many models that agreed it took part,
        emulated (``"emulated"``) and C-simulated per io type."""
        table: dict[str, dict[str, int]] = {}
        for o in self.outcomes:
            if o.status != "ok":
                continue
            for key in [*o.ops, *o.forms]:
                row = table.setdefault(key, {"emulated": 0, "io_parallel": 0, "io_stream": 0, RTL: 0})
                row["emulated"] += 1
                if o.csim:
                    row[o.csim] += 1
        return table

    def line(self) -> str:
        c = self.counts()
        n_csim = sum(o.csim not in (None, RTL) for o in self.outcomes)
        cs = self.counts(csim=True)
        rs = self.counts(rtl=True)
        n_rtl = sum(o.csim == RTL for o in self.outcomes)
        return (
            f"fuzz: {len(self.outcomes)} models (seed {self.seed}): {c['ok']} ok, {c['refused']} refused, "
            f"{c['warned']} warned, {c['mismatch']} mismatches, {c['crash']} crashes; "
            f"C-simulated {n_csim}: {cs['ok']} ok, {cs['mismatch']} mismatches, {cs['crash']} crashes"
            + (f"; RTL-simulated {n_rtl}: {rs['ok']} ok, {rs['mismatch']} mismatches, {rs['crash']} crashes" if n_rtl else "")
            + (f"; {c['keras-error']} models TensorFlow itself could not run" if c["keras-error"] else "")
        )


def run(
    models: int,
    csim: int = 0,
    seed: int = 0,
    save_dir: str | os.PathLike | None = None,
    progress: Callable[[Outcome], None] | None = None,
    rtl: int = 0,
) -> Summary:
    """Check ``models`` random models with seeds ``seed, seed + 1, ...``; up to ``csim`` of
    those that agree with Keras are also C-simulated, each in the io type where it takes a graph
    op or quantizer form not yet C-simulated there (the one with more of them, else alternating
    io_parallel and io_stream), so rare ops reach both io types; of the agreeing models that add
    nothing new, every fourth is C-simulated too (alternating), for the export options and
    weights. Up to ``rtl`` agreeing models (each one not C-simulated) are exported as RTL with a
    random folding and simulated with Verilator instead. Failing models are saved under
    ``save_dir`` (see :func:`save_failure`)."""
    import keras

    outcomes = []
    io_types = ("io_parallel", "io_stream")
    simulated = rtl_simulated = 0
    simulated_keys: dict[str, set[str]] = {t: set() for t in io_types}  # ops and forms C-simulated ok
    agreed_without_news = 0
    with xla_allowed():
        for s in range(seed, seed + models):
            keras.backend.clear_session()
            try:
                case = random_model(s)
            except Exception as err:  # noqa: BLE001 - reproduced by its seed alone
                if _tensorflow_runtime_error(err):
                    outcomes.append(Outcome(s, "keras-error", f"generator: {_runtime_error_text(err)}"))
                else:
                    outcomes.append(Outcome(s, "crash", f"generator: {type(err).__name__}: {err}"))
                if progress:
                    progress(outcomes[-1])
                continue
            outcome = check(case)
            io_type = None
            if simulated < csim and outcome.status in ("ok", "warned"):
                turn = io_types[simulated % 2]
                io_type = _new_coverage(outcome, simulated_keys, turn)
                agreed_without_news = agreed_without_news + (io_type is None)
                if io_type is None and agreed_without_news % 4 == 0:
                    io_type = turn
            if io_type is None and rtl_simulated < rtl and outcome.status in ("ok", "warned"):
                io_type = RTL
                rtl_simulated += 1
            if io_type is not None:  # the C-simulation library is loaded into, and may abort, the process running it
                outcome = check_in_child(s, io_type)
                outcome.layers = outcome.layers or case.layers
                if outcome.status in ("ok", "warned", "mismatch", "crash") and io_type != RTL:
                    simulated += 1
                if outcome.status == "ok" and io_type != RTL:
                    simulated_keys[io_type] |= {*outcome.ops, *outcome.forms}
            if outcome.status == "refused" and io_type is not None and "export" not in outcome.message:
                outcome.csim = None
            outcomes.append(outcome)
            if save_dir is not None and outcome.status in ("mismatch", "crash"):
                save_failure(case, outcome, save_dir)
            if progress:
                progress(outcome)
    return Summary(seed, outcomes)


# marks the child's outcome on its stdout, after whatever the C-simulation printed there
_OUTCOME_MARK = "edgebnn-fuzz-outcome: "
# seconds a child may take: export, g++ and the C-simulation of one model take minutes at most
CHILD_TIMEOUT = 1800


def check_in_child(
    seed: int,
    io_type: str | None,
    target: dict | None = None,
    replay: str | os.PathLike | None = None,
    timeout: float = CHILD_TIMEOUT,
    command: list[str] | None = None,
) -> Outcome:
    """:func:`check` of the model of ``seed`` (or of the saved failure ``replay``) in a fresh
    Python process (``python -m edgebnn.fuzz``, ``command`` to replace it). The C-simulation
    library runs inside the process that loads it, so a C++ assertion or fault there would end
    the whole run; here it ends the child only, and is a ``crash`` outcome naming the signal and
    the last line the child wrote to stderr (hls4ml's assertion text)."""
    spec = {"seed": seed, "io_type": io_type, "target": target, "replay": None if replay is None else str(replay)}
    argv = command or [sys.executable, "-m", "edgebnn.testing.fuzz", json.dumps(spec)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    root = str(pathlib.Path(__file__).resolve().parents[1])  # this edgebnn, wherever it is imported from
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    failed = Outcome(seed, "crash", csim=io_type, target=target)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        failed.message = f"the check did not finish within {timeout:g} s (a C-simulation that never returns?)"
        return failed
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_OUTCOME_MARK):
            return Outcome(**json.loads(line[len(_OUTCOME_MARK) :]))
    code = proc.returncode
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    last = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    failed.message = f"the checking process ended by {how} without an outcome" + (f": {last[-1]}" if last else "")
    return failed


def _child(argv: list[str]) -> int:
    """``python -m edgebnn.fuzz SPEC``: :func:`check` of the case SPEC names (JSON of
    :func:`check_in_child`), its outcome printed as one marked JSON line."""
    spec = json.loads(argv[0])
    with xla_allowed():
        case = load_failure(spec["replay"]) if spec.get("replay") else random_model(spec["seed"])
        outcome = check(case, spec["io_type"], target=spec.get("target"))
    print(_OUTCOME_MARK + json.dumps(dataclasses.asdict(outcome)), flush=True)
    return 0


def _new_coverage(outcome: Outcome, simulated: dict[str, set[str]], turn: str) -> str | None:
    """The io type to C-simulate an agreeing model in: where more of its ops and quantizer forms
    were not C-simulated yet (``turn`` on a tie), None when it adds nothing in either."""
    keys = {*outcome.ops, *outcome.forms}
    new = {t: len(keys - done) for t, done in simulated.items()}
    best = max(new.values())
    if best == 0:
        return None
    return turn if new[turn] == best else next(t for t, n in new.items() if n == best)


def save_failure(case: Case, outcome: Outcome, save_dir) -> pathlib.Path:
    """``save_dir/seed-N/``: ``model.keras``, ``inputs.npz`` and ``outcome.json``; replay it with
    ``python bench/fuzz.py --replay save_dir/seed-N``."""
    folder = pathlib.Path(save_dir) / f"seed-{case.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    case.model.save(folder / "model.keras")
    np.savez(folder / "inputs.npz", x=case.x)
    info = dataclasses.asdict(outcome) | {
        "jit": case.jit,
        "strip_softmax": case.strip_softmax,
        "input_type": case.input_type,
        "output_quantizer": case.output_quantizer,
    }
    (folder / "outcome.json").write_text(json.dumps(info, indent=2) + "\n")
    return folder


def load_failure(folder) -> Case:
    """The case saved by :func:`save_failure` (loaded with Keras ``safe_mode``)."""
    from ..training.layers import load_model

    folder = pathlib.Path(folder)
    info = json.loads((folder / "outcome.json").read_text())
    model = load_model(folder / "model.keras")
    model.compile(jit_compile=info["jit"])
    with np.load(folder / "inputs.npz", allow_pickle=False) as data:
        x = data["x"]
    return Case(
        info["seed"],
        model,
        x,
        info["layers"],
        info["jit"],
        info.get("strip_softmax", False),
        info.get("input_type"),
        info.get("output_quantizer"),
    )


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
