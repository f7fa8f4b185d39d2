"""Calibration: fixed-point types for a model's float layers, chosen from data.

A float ``Dense``, ``Conv1D`` or ``Conv2D`` (a full-precision stem, a float head; or an edgebnn
layer of those kinds without a ``kernel_quantizer``) has no exact fixed-point form. Given data,
:func:`calibrate` makes the model's *twin*: the same layers and weights, each float layer
replaced by its edgebnn counterpart with ``quantized_bits`` quantizers on its kernel, its bias
and, where it reads a real-valued tensor, its input. Per layer it chooses the smallest width
(2 to 16 bits; the integer bits from the range of each tensor, measured on the data) that keeps
the twin's accuracy drop within a bound (default 0.5 points); without labels the float model's
own predictions are the labels. The twin is what the graph computes bit for bit; the spec that
builds it is recorded in ``graph.meta["calibration"]``, so that :func:`twin` rebuilds it from
the user's model (what :func:`edgebnn.verify` compares with).

A real-valued tensor that the graph needs on a grid (Bi-Real Net's residual stream: a
BatchNormalization's outputs that a merge reads, a float tensor read by two layers; freeze
refuses it with :class:`~edgebnn.freeze.items.OffGrid`) is calibrated the same way: the twin
quantizes it with a ``QuantActivation`` of ``quantized_bits`` right after the layer producing it
(named ``<layer>_calibrated``), its width chosen with the others (``tensors`` of the calibration).
"""

from __future__ import annotations

import dataclasses
import math

import keras
import numpy as np

from ..fixed import FixedType, propose_input_type
from ..training import quantizers as q
from ..training.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense
from .chain import inbound, model_jit
from .items import FreezeError

MAX_BITS = 16
MIN_BITS = 2

# Keras's float layers and the edgebnn layer computing the same with quantizers
_COUNTERPART = {keras.layers.Dense: QuantDense, keras.layers.Conv1D: QuantConv1D, keras.layers.Conv2D: QuantConv2D}
# layers through which a tensor on a grid stays on it (views, the maximum, inference no-ops)
_GRID_KEEPING = (
    keras.layers.Flatten,
    keras.layers.Reshape,
    keras.layers.Dropout,
    keras.layers.MaxPooling1D,
    keras.layers.MaxPooling2D,
    keras.layers.GlobalMaxPooling1D,
    keras.layers.GlobalMaxPooling2D,
    keras.layers.ZeroPadding1D,
    keras.layers.ZeroPadding2D,
)


def float_layers(model) -> list:
    """The model's layers with float weights that calibration gives quantizers: a Keras
    ``Dense``/``Conv1D``/``Conv2D``, or an edgebnn ``QuantDense``/``QuantConv1D``/``QuantConv2D``
    without a ``kernel_quantizer``."""
    quant = (QuantDense, QuantConv1D, QuantConv2D)
    return [l for l in model.layers if type(l) in _COUNTERPART or (type(l) in quant and l.kernel_quantizer is None)]


def _reads_grid(layer) -> bool:
    """The layer's input is on a fixed-point grid without a quantizer of its own: the model's
    input (``input_type`` sets its grid) or a ``QuantActivation``'s output, through views and
    maxima only."""
    if getattr(layer, "input_quantizer", None) is not None:
        return True
    prev = inbound(layer)
    while len(prev) == 1 and isinstance(prev[0], _GRID_KEEPING):
        prev = inbound(prev[0])
    if not prev:  # a Sequential model's first layer
        return True
    return len(prev) == 1 and isinstance(prev[0], (keras.layers.InputLayer, QuantActivation))


def _integer(values) -> int:
    """The fewest integer bits with ``2**integer > max |v|`` (0 for no or only zero values)."""
    v = np.asarray(values, dtype=np.float64)
    top = float(np.max(np.abs(v))) if v.size else 0.0
    return math.frexp(top)[1] if top > 0 else 0


def quantizer_for(values, bits: int) -> str:
    """``quantized_bits`` of ``bits`` bits whose range holds ``values`` (unsigned when none is
    negative)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size and float(v.min()) < 0:
        return f"quantized_bits({bits}, {_integer(v)})"
    return f"quantized_bits({bits}, {_integer(v)}, keep_negative=False)"


def _type_of(quantizer) -> FixedType | None:
    """The fixed-point type a quantizer's codes lie on (its base grid when scaled), if any."""
    try:
        form = q.get(quantizer).hardware()
    except Exception:  # noqa: BLE001 - a tensor-dependent or gridless form: no one type
        return None
    t = getattr(form, "type", None)
    return t if isinstance(t, FixedType) else getattr(getattr(form, "base", None), "type", None)


def _input_type(layer, spec: dict, data_type: FixedType) -> FixedType:
    """The type of the layer's input in the twin: its own input quantizer's, a preceding
    QuantActivation's, or the data's (the model's input)."""
    if "input_quantizer" in spec:
        return _type_of(spec["input_quantizer"])
    if getattr(layer, "input_quantizer", None) is not None:
        return _type_of(layer.input_quantizer) or data_type
    prev = inbound(layer)
    while len(prev) == 1 and isinstance(prev[0], _GRID_KEEPING):
        prev = inbound(prev[0])
    if len(prev) == 1 and isinstance(prev[0], QuantActivation):
        return _type_of(prev[0].quantizer) or data_type
    return data_type


def _spec(layer, bits: dict, input_values, data_type: FixedType) -> dict:
    """The quantizers of one calibrated layer at the widths ``bits`` ({"kernel": b, "input": b}):
    the kernel's and the input's ranges from their values; the bias on the grid of the
    products (input step times kernel step), so that it does not make the accumulator finer."""
    kernel = keras.ops.convert_to_numpy(layer.kernel)
    spec = {"kernel_quantizer": quantizer_for(kernel, bits["kernel"])}
    if input_values is not None:
        spec["input_quantizer"] = quantizer_for(input_values, bits["input"])
    if layer.use_bias:
        bias = keras.ops.convert_to_numpy(layer.bias)
        step = _input_type(layer, spec, data_type).lsb_exp + _type_of(spec["kernel_quantizer"]).lsb_exp
        integer = max(_integer(bias), step + 1)
        spec["bias_quantizer"] = f"quantized_bits({integer + 1 - step}, {integer})"
    return spec


def _float32_exact(layer, spec: dict, data_type: FixedType) -> bool:
    """Every accumulator value of the calibrated layer is an integer number of its steps below
    2**24, so that Keras's float32 sums are exact in any order."""
    t_in = _input_type(layer, spec, data_type)
    t_k = _type_of(spec["kernel_quantizer"])
    kernel = keras.ops.convert_to_numpy(layer.kernel).astype(np.float64)
    codes = np.abs(np.asarray(t_k.codes(t_k.quantize(kernel)), dtype=np.float64)).reshape(-1, kernel.shape[-1])
    top = codes.sum(axis=0) * max(abs(t_in.min_code), abs(t_in.max_code))
    if "bias_quantizer" in spec:
        t_b = _type_of(spec["bias_quantizer"])
        top = top + float(max(-t_b.min_code, t_b.max_code))
    return float(top.max()) < 2.0**24


def twin(model, layers: dict, tensors: dict | None = None):
    """``model`` with each layer named in ``layers`` ({name: {argument: quantizer string}})
    replaced by its edgebnn counterpart with those quantizers, and the outputs of each layer
    named in ``tensors`` ({name: quantizer string}) quantized by a ``QuantActivation`` named
    ``<name>_calibrated``, every weight copied: a Keras model compiled as ``model`` (XLA or not)."""
    tensors = tensors or {}

    def clone(layer):
        config = layer.get_config()
        if layer.name not in layers:
            return layer.__class__.from_config(config)
        cls = _COUNTERPART.get(type(layer), type(layer))
        return cls.from_config({**config, **layers[layer.name]})

    def call(layer, *args, **kwargs):
        out = layer(*args, **kwargs)
        if layer.name in tensors:
            out = QuantActivation(tensors[layer.name], name=calibrated_name(layer.name))(out)
        return out

    copy = keras.models.clone_model(model, clone_function=clone, call_function=call if tensors else None)
    for layer in model.layers:
        if layer.weights:
            copy.get_layer(layer.name).set_weights(layer.get_weights())
    copy.compile(jit_compile=model_jit(model))
    return copy


def calibrated_name(layer_name: str) -> str:
    """The name of the twin's ``QuantActivation`` quantizing the outputs of ``layer_name``."""
    return f"{layer_name}_calibrated"


@dataclasses.dataclass
class Calibration:
    """What :func:`calibrate` chose: per layer its quantizers and widths, per calibrated tensor
    its quantizer, and the accuracies."""

    layers: dict  # name -> {argument: quantizer string}
    # name -> {"kernel": bits, "input": bits (where it has an input quantizer)}; a calibrated
    # tensor's layer -> {"output": bits}
    bits: dict
    accuracy_float: float
    accuracy_twin: float
    labelled: bool  # accuracies against labels; else against the float model's predictions
    tensors: dict = dataclasses.field(default_factory=dict)  # layer name -> quantizer string of its outputs

    def lines(self) -> list[str]:
        """One line per calibrated layer or tensor, saying what was chosen."""
        out = []
        for name, spec in self.layers.items():
            what = ", ".join(f"{argument.removesuffix('_quantizer')} {q}" for argument, q in spec.items())
            out.append(f"calibrated layer {name!r}: {what}")
        for name, quantizer in self.tensors.items():
            out.append(f"calibrated the outputs of {name!r}: {quantizer} (QuantActivation {calibrated_name(name)!r})")
        return out

    def to_meta(self) -> dict:
        return {
            "layers": self.layers,
            "tensors": self.tensors,
            "bits": self.bits,
            "accuracy_float": self.accuracy_float,
            "accuracy_twin": self.accuracy_twin,
            "labelled": self.labelled,
        }


def _split_data(data):
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return np.asarray(data[0], dtype=np.float32), np.asarray(data[1]).reshape(-1)
    return np.asarray(data, dtype=np.float32), None


def _accuracy(outputs, labels) -> float:
    out = np.asarray(outputs)
    return float(np.mean(np.argmax(out.reshape(len(out), -1), axis=-1) == labels)) * 100.0


class _Specs:
    """The quantizers of the model's float layers, and of the outputs of the layers named in
    ``tensors``, at given widths, their ranges measured on the inputs ``x`` once."""

    def __init__(self, model, x, input_type: FixedType | None = None, tensors=()):
        self.layers = float_layers(model)
        self.inputs = {}
        for layer in self.layers:
            if not _reads_grid(layer):
                self.inputs[layer.name] = keras.Model(model.inputs, layer.input).predict(x, verbose=0)
        self.outputs = {name: keras.Model(model.inputs, model.get_layer(name).output).predict(x, verbose=0) for name in tensors}
        self.data_type = input_type or propose_input_type(x)

    def widths(self, bits: int) -> dict:
        """Every tensor of every layer at ``bits``: {name: {"kernel": b[, "input": b][, "output": b]}}."""
        out = {l.name: {"kernel": bits, **({"input": bits} if l.name in self.inputs else {})} for l in self.layers}
        for name in self.outputs:
            out[name] = {**out.get(name, {}), "output": bits}
        return out

    def __call__(self, bits: dict) -> dict:
        return {l.name: _spec(l, bits[l.name], self.inputs.get(l.name), self.data_type) for l in self.layers}

    def tensors(self, bits: dict) -> dict:
        """The quantizers of the calibrated tensors: {layer name: quantizer string}."""
        return {name: quantizer_for(values, bits[name]["output"]) for name, values in self.outputs.items()}

    def inexact(self, bits: dict) -> list[str]:
        specs = self(bits)
        return [l.name for l in self.layers if not _float32_exact(l, specs[l.name], self.data_type)]


def specs_at(model, x, bits: dict) -> dict:
    """The twin's quantizers ({name: {argument: quantizer string}}) for the widths ``bits``
    ({name: {"kernel": b, "input": b}}) of the model's float layers, their ranges measured on
    the inputs ``x``."""
    return _Specs(model, np.asarray(x, dtype=np.float32))(bits)


def _exact_widths(specs: _Specs, bits: dict, name: str, drop, max_drop: float) -> dict:
    """For a layer whose chosen kernel and input widths make sums beyond float32's exact
    integers: of the widest exact pairs (for each kernel width, the widest input width), the
    one that loses least, if that keeps the bound."""
    best = None
    for k in range(MAX_BITS, MIN_BITS - 1, -1):
        pair = {**bits[name], "kernel": k}
        while pair.get("input", MIN_BITS) > MIN_BITS and specs.inexact({**bits, name: pair}):
            pair["input"] -= 1
        if specs.inexact({**bits, name: pair}):
            continue
        lost = drop({**bits, name: pair})
        if best is None or lost < best[0]:
            best = (lost, pair)
    if best is None or best[0] > max_drop:
        raise FreezeError(
            f"calibrated layer {name!r} needs {bits[name]} bits to keep the accuracy within {max_drop} points, and "
            "its sums then exceed float32's exact integers, which Keras cannot compute exactly (no narrower widths "
            "keep the bound); allow a larger drop (max_accuracy_drop=...) or give the layer quantizers and train again"
        )
    return best[1]


def calibrate(model, data, max_drop: float = 0.5, input_type: FixedType | None = None, tensors=()) -> Calibration | None:
    """Quantizers for ``model``'s float layers (:func:`float_layers`) from ``data`` (inputs, or
    ``(inputs, labels)``): from 16 bits everywhere, each tensor in turn (a layer's kernel, then
    its input) takes the fewest bits (binary search down to 2, the others at their choice so far)
    whose twin stays within ``max_drop`` points of the float model's accuracy. The choice must
    leave each layer's sums within float32's exact integers (Keras then computes them exactly).
    ``input_type`` is the model input's type when given to freeze (else the data's). ``tensors``
    names layers whose real-valued outputs get a quantizer too (their width searched the same
    way). None when the model has no float layer and no such tensor."""
    found = float_layers(model)
    if not found and not tensors:
        return None
    x, y = _split_data(data)
    if not len(x):
        raise FreezeError("calibration needs data: give freeze data with at least one sample (data=x_train)")
    float_out = model.predict(x, verbose=0)
    labelled = y is not None
    labels = y if labelled else np.argmax(np.asarray(float_out).reshape(len(x), -1), axis=-1)
    acc_float = _accuracy(float_out, labels)
    specs = _Specs(model, x, input_type, tensors)

    trying = twin(model, specs(specs.widths(MAX_BITS)), specs.tensors(specs.widths(MAX_BITS)))

    def drop(bits) -> float:
        # one twin whose quantizers are set per trial, called eagerly: no model to clone and no
        # function to trace again (a trial is about accuracy; the chosen twin is built afresh)
        for name, spec in specs(bits).items():
            layer = trying.get_layer(name)
            for argument, quantizer in spec.items():
                setattr(layer, argument, q.get(quantizer))
        for name, quantizer in specs.tensors(bits).items():
            trying.get_layer(calibrated_name(name)).quantizer = q.get(quantizer)
        out = [keras.ops.convert_to_numpy(trying(x[i : i + 256], training=False)) for i in range(0, len(x), 256)]
        return acc_float - _accuracy(np.concatenate(out), labels)

    bits = specs.widths(MAX_BITS)
    lost = drop(bits)
    if lost > max_drop:
        names = [l.name for l in found] + [f"the outputs of {name!r}" for name in tensors]
        raise FreezeError(
            f"calibration of {', '.join(repr(n) if n in bits and 'kernel' in bits[n] else n for n in names)} at "
            f"{MAX_BITS} bits loses {lost:.2f} accuracy points on the data, more than the bound {max_drop}; allow more "
            "(max_accuracy_drop=...) or give those layers quantizers and train again"
        )
    for name in list(bits):
        for tensor in bits[name]:
            lo, hi = MIN_BITS, bits[name][tensor]  # hi keeps the bound
            while lo < hi:
                mid = (lo + hi) // 2
                trial = {**bits, name: {**bits[name], tensor: mid}}
                if drop(trial) <= max_drop:
                    hi = mid
                else:
                    lo = mid + 1
            bits[name] = {**bits[name], tensor: hi}
    for name in specs.inexact(bits):
        bits[name] = _exact_widths(specs, bits, name, drop, max_drop)
    # the search lowered one tensor at a time: lower each by one more bit while the bound holds,
    # until none can be (accuracy is not monotone in every width at once)
    lowered = True
    while lowered:
        lowered = False
        for name, widths in bits.items():
            for tensor, b in widths.items():
                fewer = {**bits, name: {**widths, tensor: b - 1}}
                if b > MIN_BITS and drop(fewer) <= max_drop:
                    bits, lowered = fewer, True
                    break
    chosen = twin(model, specs(bits), specs.tensors(bits))
    accuracy = _accuracy(chosen.predict(x, verbose=0), labels)
    return Calibration(specs(bits), bits, acc_float, accuracy, labelled, specs.tensors(bits))
