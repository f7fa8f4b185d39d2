"""Random models through the public API, checked Keras = emulator = C-simulation, bit for bit.

Hand-picked examples miss what users build; this generator builds what they might: chains of
``QuantDense`` / ``QuantConv2D`` (valid or same padding, strides, ``pad_values``, 1x1 kernels),
``MaxPooling2D``, ``AveragePooling2D`` (windows of a power of two of values, strides equal to
them or overlapping, after a quantizer or directly on an accumulator), ``Flatten``, ``Dropout``,
float or quantized biases, ``BatchNormalization`` with adversarial statistics (means exactly on
accumulator values the inputs reach, gamma of both signs and zero, tiny variance, betas that
cancel after float32 rounding), elementwise activations (as layers and as the layers' own
``activation``), every activation, input and kernel quantizer and rounding/overflow mode freeze
accepts (and the forms it cannot deploy yet, which must be refused in one sentence: ternary,
power-of-two, XNOR and DoReFa kernels, dilation, "same" pooling, an average between a
BatchNormalization and its quantizer), a trailing softmax frozen with ``strip_softmax=True``,
Sequential and functional models, with Keras compiled with or without XLA. The 2-D views and
windows come too: global max and average pools (keepdims or not), averages over 3, 6 or 9 values
(a quantizer after them), ``ZeroPadding2D``, ``Reshape`` and the inference no-ops
(``GaussianNoise``, ``GaussianDropout``, ``AlphaDropout``, ``SpatialDropout2D``,
``ActivityRegularization``, ``Identity``). Inputs sit on grid points, between them, exactly on
ties, one float32 ulp around ties and far out of range.

Each model is frozen, its graph saved and loaded, and the emulator compared with
``model.predict`` at batch sizes 1 and 32 (exact equality); some are exported and
C-simulated in io_parallel or io_stream. Every outcome is one of

``ok``        all agree;
``refused``   freeze or export said why it cannot be exact (a one-sentence error);
``warned``    Keras differed where freeze had recorded why (``graph.meta["keras_caveats"]``):
              a documented limit of Keras's own float32 arithmetic, never silent;
``mismatch``  two paths disagree and nothing said so: a bug;
``crash``     a Python error instead of an answer: a bug.

``bench/fuzz.py`` runs it at length and saves every failing model with its inputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
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
STATUSES = ("ok", "refused", "warned", "mismatch", "crash")


@dataclasses.dataclass
class Case:
    """One random model, its inputs and how it was made."""

    seed: int
    model: Any
    x: np.ndarray
    layers: list[str]  # one line per layer, for the report
    jit: bool
    strip_softmax: bool = False  # the model ends with a softmax that freeze strips


@dataclasses.dataclass
class Outcome:
    seed: int
    status: str  # one of STATUSES
    message: str = ""
    csim: str | None = None  # io type when C-simulated
    layers: list[str] = dataclasses.field(default_factory=list)

    def line(self) -> str:
        where = f" [{self.csim}]" if self.csim else ""
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
    return f"quantized_bits({bits}, {integer}, keep_negative={keep_negative}, rounding={rounding!r}, overflow={overflow!r})"


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
        ]
    )
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


# kernel quantizers freeze cannot deploy yet (scaled forms): each must be a one-sentence refusal, not a crash
UNDEPLOYED_KERNELS = ("xnor_sign", "dorefa(2, 'weights')", "magnitude_aware_sign", "quantized_bits(4, 1, alpha='auto')")
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
    if r < 0.63:
        return str(rng.choice(UNDEPLOYED_KERNELS))
    if r < 0.72:
        return str(rng.choice(GRID_KERNELS))
    bits = int(rng.integers(2, 6))
    if r < 0.85:
        return f"quantized_bits({bits}, {int(rng.integers(0, 2))})"
    return (
        f"quantized_bits({bits}, {int(rng.integers(-1, 3))}, symmetric={bool(rng.integers(2))}, "
        f"rounding={ROUNDING[rng.integers(len(ROUNDING))]!r}, overflow={OVERFLOW[rng.integers(3)]!r})"
    )


def _input_quantizer(rng) -> str:
    r = rng.random()
    if r < 0.1:
        return f"quantized_relu({int(rng.integers(2, 7))}, {int(rng.integers(0, 3))})"
    if r < 0.15:
        return f"quantized_tanh({int(rng.integers(2, 6))})"
    return _fixed_quantizer(rng, (2, 7))


def random_model(seed: int, n_inputs: int = 64) -> Case:
    """A random model of edgebnn layers (weights and statistics set, not trained) and inputs."""
    import keras

    from .layers import QuantActivation, QuantConv2D, QuantDense

    rng = np.random.default_rng(seed)
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
            if rng.random() < 0.03 and strides == (1, 1) and padding == "same":  # not deployable: refused
                common["dilation_rate"] = (2, 2)
            layer = QuantConv2D(filters, (kh, kw), strides=strides, padding=padding, pad_values=pad_values, **common)
            if padding == "same":
                cur = (-(-cur[0] // strides[0]), -(-cur[1] // strides[1]), filters)
            else:
                cur = ((cur[0] - kh) // strides[0] + 1, (cur[1] - kw) // strides[1] + 1, filters)
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
                if rng.random() < 0.04:  # on the grid or refused, as the rules say
                    add(keras.layers.AveragePooling2D(p, strides=s), f"AveragePooling2D({p}, strides={s})")
                elif rng.random() < 0.04:
                    add(
                        keras.layers.MaxPooling2D(p, strides=s, padding="same"), f"MaxPooling2D({p}, strides={s}, padding='same')"
                    )
                else:
                    add(keras.layers.MaxPooling2D(p, strides=s), f"MaxPooling2D({p}, strides={s})")
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
            next_input_q = None
            maybe_pool(2, False)
        else:
            next_input_q = q
    strip = dense_softmax
    if not strip and text[-1].startswith(("QuantDense", "QuantActivation")) and rng.random() < 0.1:
        softmax = keras.layers.Softmax() if rng.random() < 0.5 else keras.layers.Activation("softmax")
        add(softmax, f"{type(softmax).__name__}()")
        strip = True
    if rng.random() < 0.2:  # the same chain as a functional model
        inputs = h = keras.Input(shape)
        for layer in layers:
            h = layer(h)
        model = keras.Model(inputs, h, name=f"fuzz_{seed}")
        text.insert(0, "functional")
    else:
        model = keras.Sequential([keras.Input(shape)] + layers, name=f"fuzz_{seed}")
    x = _inputs(rng, in_q, shape, n_inputs)
    _set_weights(model, rng, x)
    model.compile(jit_compile=bool(rng.random() < 0.3))
    return Case(seed, model, x, text, bool(model.jit_compile), strip)  # Keras may have declined XLA


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
    # "same" pads to a larger output: the "valid" shape keeps the next kernels within it
    return ((h - p[0]) // s[0] + 1, (w - p[1]) // s[1] + 1, cur[2])


def _power_of_two_window(line: str) -> bool:
    """The ``AveragePooling2D((ph, pw), ...)`` line's window holds a power of two of values."""
    ph, pw = (int(d) for d in line.split("(", 2)[2].split(")")[0].split(","))
    return (ph * pw) & (ph * pw - 1) == 0


def _quantize_after(rng, cur, add) -> None:
    """End a real-valued tensor (a division by a window size) with a random QuantActivation."""
    from .layers import QuantActivation

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
    from . import quantizers

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
            gamma, beta, mean, var = adversarial_bn(acc, rng, layer.epsilon)
            layer.set_weights(([gamma] if layer.scale else []) + ([beta] if layer.center else []) + [mean, var])
        elif layer.weights:
            new = []
            for w in layer.get_weights():
                scale = 1.0 if w.ndim > 1 else 2.0
                new.append((rng.uniform(-1.5, 1.5, size=w.shape) * scale).astype(np.float32))
            layer.set_weights(new)


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


def check(case: Case, io_type: str | None = None, workdir: str | os.PathLike | None = None) -> Outcome:
    """Freeze, save/load, emulate, compare with Keras at batch sizes 1 and 32, and with
    ``io_type`` also export and C-simulate; never raises for what the model does."""
    out = Outcome(case.seed, "ok", csim=io_type, layers=case.layers)
    try:
        _check(case, io_type, workdir, out)
    except Exception as err:  # noqa: BLE001 - the fuzzer reports every failure as data
        from .errors import EdgebnnError

        if isinstance(err, EdgebnnError):
            out.status, out.message = "refused", str(err)
        else:
            tb = traceback.extract_tb(err.__traceback__)[-1]
            out.status = "crash"
            out.message = f"{type(err).__name__}: {err} ({os.path.basename(tb.filename)}:{tb.lineno})"
    return out


def _check(case: Case, io_type, workdir, out: Outcome) -> None:
    from .emulate import emulate
    from .freeze import freeze, keras_logits
    from .graph import Graph
    from .verify import verify

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(case.model, strip_softmax=case.strip_softmax)
    keras_model = keras_logits(case.model) if graph.meta.get("stripped_softmax") else case.model
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = pathlib.Path(tmp) / "graph.npz"
        graph.save(path)
        graph = Graph.load(path)
        emu = emulate(graph, case.x)
        for batch in (1, 32):
            ker = keras_model.predict(case.x, batch_size=batch, verbose=0)
            if not np.array_equal(np.asarray(ker, dtype=np.float64).reshape(emu.shape), emu):
                report = verify(case.model, graph, case.x, keras_output=ker)
                first = report.first_mismatches[0] if report.first_mismatches else None
                text = f"Keras (batch {batch}) vs emulator: {report.keras_vs_emulator} samples differ"
                if first:
                    text += f"; first at node {first.layer!r} (from {first.source}), sample {first.sample}"
                if _explained(first, report.caveats):
                    out.status, out.message = "warned", f"{text}; recorded: {report.caveats[0]['kind']}"
                else:
                    out.status, out.message = "mismatch", text
                    return
        if io_type is None:
            return
        from .backends.hls4ml import export

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            project = export(graph, pathlib.Path(tmp) / "prj", io_type=io_type)
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

    def counts(self, csim: bool | None = None) -> dict[str, int]:
        chosen = [o for o in self.outcomes if csim is None or (o.csim is not None) == csim]
        return {s: sum(o.status == s for o in chosen) for s in STATUSES}

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("mismatch", "crash")]

    def line(self) -> str:
        c = self.counts()
        n_csim = sum(o.csim is not None for o in self.outcomes)
        cs = self.counts(csim=True)
        return (
            f"fuzz: {len(self.outcomes)} models (seed {self.seed}): {c['ok']} ok, {c['refused']} refused, "
            f"{c['warned']} warned, {c['mismatch']} mismatches, {c['crash']} crashes; "
            f"C-simulated {n_csim}: {cs['ok']} ok, {cs['mismatch']} mismatches, {cs['crash']} crashes"
        )


def run(
    models: int,
    csim: int = 0,
    seed: int = 0,
    save_dir: str | os.PathLike | None = None,
    progress: Callable[[Outcome], None] | None = None,
) -> Summary:
    """Check ``models`` random models with seeds ``seed, seed + 1, ...``; the first ``csim``
    that freeze accepts are also C-simulated, alternating io_parallel and io_stream. Failing
    models are saved under ``save_dir`` (see :func:`save_failure`)."""
    import keras

    outcomes = []
    io_types = ("io_parallel", "io_stream")
    simulated = 0
    with xla_allowed():
        for s in range(seed, seed + models):
            keras.backend.clear_session()
            try:
                case = random_model(s)
            except Exception as err:  # noqa: BLE001 - reproduced by its seed alone
                outcomes.append(Outcome(s, "crash", f"generator: {type(err).__name__}: {err}"))
                if progress:
                    progress(outcomes[-1])
                continue
            io_type = io_types[simulated % 2] if simulated < csim else None
            outcome = check(case, io_type)
            if io_type is not None and outcome.status in ("ok", "warned", "mismatch", "crash"):
                simulated += 1
            if outcome.status == "refused" and io_type is not None and "export" not in outcome.message:
                outcome.csim = None
            outcomes.append(outcome)
            if save_dir is not None and outcome.status in ("mismatch", "crash"):
                save_failure(case, outcome, save_dir)
            if progress:
                progress(outcome)
    return Summary(seed, outcomes)


def save_failure(case: Case, outcome: Outcome, save_dir) -> pathlib.Path:
    """``save_dir/seed-N/``: ``model.keras``, ``inputs.npz`` and ``outcome.json``; replay it with
    ``python bench/fuzz.py --replay save_dir/seed-N``."""
    folder = pathlib.Path(save_dir) / f"seed-{case.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    case.model.save(folder / "model.keras")
    np.savez(folder / "inputs.npz", x=case.x)
    info = dataclasses.asdict(outcome) | {"jit": case.jit, "strip_softmax": case.strip_softmax}
    (folder / "outcome.json").write_text(json.dumps(info, indent=2) + "\n")
    return folder


def load_failure(folder) -> Case:
    """The case saved by :func:`save_failure` (loaded with Keras ``safe_mode``)."""
    from .layers import load_model

    folder = pathlib.Path(folder)
    info = json.loads((folder / "outcome.json").read_text())
    model = load_model(folder / "model.keras")
    model.compile(jit_compile=info["jit"])
    with np.load(folder / "inputs.npz", allow_pickle=False) as data:
        x = data["x"]
    return Case(info["seed"], model, x, info["layers"], info["jit"], info.get("strip_softmax", False))
