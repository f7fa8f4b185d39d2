"""``summary(model)``: parameters per bit width, memory and multiply-accumulates per precision.

Bit widths come from the quantizers' ``hardware()``: binary = 1, ternary = 2, fixed = its width;
a weight without a quantizer (float kernels, biases, BatchNorm parameters and statistics)
counts 32 bits. A layer's input precision is its ``input_quantizer``'s; without one, in a
``Sequential`` model, the precision carried from a preceding ``QuantActivation`` through
shape-only layers (Flatten, Reshape, Dropout, max pooling); otherwise float (32 bits).

A MAC is counted per (input bits, weight bits) pair. As in larq, a MAC is *binarized* when both
operands have 1 bit and *ternarized* when the wider operand has 2 bits; the ratios are taken
over all MACs. A separable convolution's pointwise step reads the depthwise accumulator, which
is not quantized, so its MACs count as 32-bit inputs.
"""

from __future__ import annotations

import dataclasses
import math

import keras

from . import forms
from .training.layers import QuantActivation
from .training.marks import quantizer_of

FLOAT_BITS = 32
_KIND_BITS = {"binary": 1, "unipolar": 1, "ternary": 2}
_SHAPE_ONLY = (
    keras.layers.Flatten,
    keras.layers.Reshape,
    keras.layers.Dropout,
    keras.layers.MaxPooling1D,
    keras.layers.MaxPooling2D,
    keras.layers.GlobalMaxPooling1D,
    keras.layers.GlobalMaxPooling2D,
    keras.layers.Permute,
)


def quantizer_bits(quantizer) -> int:
    """Bits per value of a quantizer's outputs: binary and unipolar 1, ternary 2, fixed its
    width, powers of two a sign and an exponent code, scaled values those of their base grid
    (the scale is not counted). A quantizer that declares no grid counts its ``precision``
    attribute when it has one (larq's ``NoOp(precision)``), else 32 bits."""
    if quantizer is None:
        return FLOAT_BITS
    try:
        return _hardware_bits(quantizer.hardware())
    except NotImplementedError:
        return int(getattr(quantizer, "precision", None) or FLOAT_BITS)


def _hardware_bits(hw) -> int:
    if isinstance(hw, forms.Scaled):
        return _hardware_bits(hw.base)
    if hw.kind in _KIND_BITS:
        return _KIND_BITS[hw.kind]
    if isinstance(hw, forms.Po2):
        lo, hi = hw.exponents
        return max(1, math.ceil(math.log2(hi - lo + 1))) + (1 if hw.type.signed else 0)
    if isinstance(hw, forms.Partial):
        return max(FLOAT_BITS if part is None else _hardware_bits(part) for part in (hw.chosen, hw.rest))
    if hw.type is None:
        return FLOAT_BITS
    return hw.type.width


@dataclasses.dataclass(frozen=True)
class LayerSummary:
    name: str
    class_name: str
    input_bits: int | None  # None: float input
    output_shape: tuple
    params: dict  # bits -> count
    trainable_params: int
    macs: dict  # (input bits, weight bits) -> count

    @property
    def param_count(self) -> int:
        return sum(self.params.values())

    @property
    def memory_bits(self) -> int:
        return sum(bits * n for bits, n in self.params.items())

    @property
    def memory_bytes(self) -> float:
        return self.memory_bits / 8

    @property
    def mac_count(self) -> int:
        return sum(self.macs.values())

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "class_name": self.class_name,
            "input_bits": self.input_bits,
            "output_shape": list(self.output_shape),
            "params": {str(b): n for b, n in sorted(self.params.items())},
            "trainable_params": self.trainable_params,
            "memory_bytes": self.memory_bytes,
            "macs": {f"{a}x{w}": n for (a, w), n in sorted(self.macs.items())},
        }


@dataclasses.dataclass(frozen=True)
class ModelSummary:
    name: str
    layers: list

    def _sum(self, attr) -> dict:
        total: dict = {}
        for layer in self.layers:
            for key, n in getattr(layer, attr).items():
                total[key] = total.get(key, 0) + n
        return dict(sorted(total.items()))

    @property
    def params(self) -> dict:
        return self._sum("params")

    @property
    def macs(self) -> dict:
        return self._sum("macs")

    @property
    def param_count(self) -> int:
        return sum(layer.param_count for layer in self.layers)

    @property
    def trainable_params(self) -> int:
        return sum(layer.trainable_params for layer in self.layers)

    @property
    def memory_bytes(self) -> float:
        return sum(layer.memory_bytes for layer in self.layers)

    @property
    def float32_memory_bytes(self) -> float:
        return self.param_count * FLOAT_BITS / 8

    @property
    def mac_count(self) -> int:
        return sum(self.macs.values())

    def _mac_ratio(self, bits: int) -> float:
        total = self.mac_count
        return sum(n for pair, n in self.macs.items() if max(pair) == bits) / total if total else 0.0

    @property
    def binarized_mac_ratio(self) -> float:
        return self._mac_ratio(1)

    @property
    def ternarized_mac_ratio(self) -> float:
        return self._mac_ratio(2)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "layers": [layer.to_dict() for layer in self.layers],
            "params": {str(b): n for b, n in self.params.items()},
            "param_count": self.param_count,
            "trainable_params": self.trainable_params,
            "memory_bytes": self.memory_bytes,
            "float32_memory_bytes": self.float32_memory_bytes,
            "macs": {f"{a}x{w}": n for (a, w), n in self.macs.items()},
            "mac_count": self.mac_count,
            "binarized_mac_ratio": self.binarized_mac_ratio,
            "ternarized_mac_ratio": self.ternarized_mac_ratio,
        }

    def table(self) -> str:
        bit_cols, mac_cols = list(self.params), list(self.macs)
        header = [
            "Layer",
            "Input bits",
            "Output shape",
            *(f"{b}-bit params" for b in bit_cols),
            "Memory (B)",
            *(f"{a}x{w}-bit MACs" for a, w in mac_cols),
        ]

        def row(name, in_bits, shape, params, memory, macs):
            return [
                name,
                in_bits,
                shape,
                *(str(params.get(b, 0)) for b in bit_cols),
                _num(memory),
                *(str(macs.get(p, 0)) for p in mac_cols),
            ]

        rows = [
            row(
                l.name,
                "-" if l.input_bits is None else str(l.input_bits),
                str(tuple(-1 if d is None else d for d in l.output_shape)),
                l.params,
                l.memory_bytes,
                l.macs,
            )
            for l in self.layers
        ]
        rows.append(row("Total", "", "", self.params, self.memory_bytes, self.macs))
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

        def line(r):
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

        rule = "-" * len(line(header))
        out = [
            f"{self.name}   (MACs AxB: A-bit inputs times B-bit weights)",
            rule,
            line(header),
            rule,
            *map(line, rows[:-1]),
            rule,
            line(rows[-1]),
            rule,
        ]
        ratio = self.memory_bytes / self.float32_memory_bytes if self.param_count else 0.0
        folded = sum(l.param_count for l in self.layers if l.class_name == "BatchNormalization")
        out += [
            f"Total params: {self.param_count} ({self.trainable_params} trainable)",
            *(
                [f"  of which {folded} BatchNormalization (4 per channel), folded into integer thresholds by freeze"]
                if folded
                else []
            ),
            f"Memory: {_num(self.memory_bytes)} B (float32 equivalent {_num(self.float32_memory_bytes)} B, ratio {ratio:.4f})",
            f"MACs: {self.mac_count}",
            f"Binarized MAC ratio: {self.binarized_mac_ratio:.4f}",
            f"Ternarized MAC ratio: {self.ternarized_mac_ratio:.4f}",
        ]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}".rstrip("0")


def _output_shape(layer) -> tuple:
    try:
        return tuple(layer.output.shape)
    except (AttributeError, ValueError):
        raise ValueError(f"layer {layer.name!r} has no known output shape; build the model with keras.Input first") from None


def _weight_bits(layer, variable) -> int:
    return quantizer_bits(quantizer_of(variable))


def _macs(layer, input_bits: int, out_shape: tuple) -> dict:
    pixels = math.prod(d for d in out_shape[1:-1])  # 1 for a dense layer on (batch, features)
    pairs: dict = {}

    def add(variable, in_bits):
        key = (in_bits, _weight_bits(layer, variable))
        pairs[key] = pairs.get(key, 0) + math.prod(variable.shape) * pixels

    if isinstance(layer, keras.layers.SeparableConv2D | keras.layers.SeparableConv1D):
        add(layer.depthwise_kernel, input_bits)
        add(layer.pointwise_kernel, FLOAT_BITS)  # reads the unquantized depthwise result
    elif isinstance(
        layer,
        (
            keras.layers.Dense,
            keras.layers.Conv1D,
            keras.layers.Conv2D,
            keras.layers.Conv3D,
            keras.layers.DepthwiseConv2D,
            keras.layers.DepthwiseConv1D,
        ),
    ):
        add(layer.kernel, input_bits)
    return pairs


def summary(model) -> ModelSummary:
    """Per-layer and total parameter bits, memory and MACs of a built Keras model."""
    if not model.built:
        raise ValueError("the model is not built; give it a keras.Input or call it on data first")
    sequential = isinstance(model, keras.Sequential)
    carried = None  # input precision flowing along a Sequential model
    layers = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.InputLayer):
            continue
        in_q = getattr(layer, "input_quantizer", None)
        if in_q is not None:
            in_bits = quantizer_bits(in_q)
        else:
            in_bits = carried if sequential else None
        out_shape = _output_shape(layer)
        params: dict = {}
        for w in layer.weights:
            bits = _weight_bits(layer, w)
            params[bits] = params.get(bits, 0) + math.prod(w.shape)
        trainable = sum(math.prod(w.shape) for w in layer.trainable_weights)
        macs = _macs(layer, FLOAT_BITS if in_bits is None else in_bits, out_shape)
        layers.append(
            LayerSummary(layer.name, type(layer).__name__, in_bits, out_shape, dict(sorted(params.items())), trainable, macs)
        )
        if isinstance(layer, QuantActivation):
            carried = quantizer_bits(layer.quantizer)
        elif not isinstance(layer, _SHAPE_ONLY):
            carried = None
    return ModelSummary(model.name, layers)
