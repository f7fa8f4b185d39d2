"""Freeze a trained Keras model into a deployment graph of integers and fixed-point types.

The model is read as a chain of steps:

* the first layer's ``input_quantizer`` fixes the input's fixed-point type;
* a ``QuantDense`` becomes an exact dense node (integer kernel codes, accumulator type from
  interval analysis), a ``QuantConv2D`` an exact conv2d node (explicit padding amounts with
  TensorFlow's "same" split, ``pad_values`` as a code of the quantized input's type, strides);
* a ``Flatten`` of an (H, W, C) tensor becomes a flatten node. Between an accumulator and its
  quantizer it is moved after the quantizer (a reshape commutes with elementwise ops), so the
  thresholds stay per channel instead of per flattened feature;
* a ``MaxPooling2D`` (channels_last, "valid" padding; "same" is refused) becomes a maxpool2d
  node. On a quantized tensor (after a requantization) or directly on an accumulator it is
  exact as it stands. Between an accumulator and its quantizer (conv -> BN -> MaxPool ->
  quantizer, larq's usual order) it is moved after the quantizer, which is exact only when
  the requantization commutes with the maximum: freeze enumerates every accumulator value
  per channel, evaluates in Keras the float ops *before* the pool, and requires the
  quantized output (the derived threshold levels) to be non-decreasing in the order of
  those pre-pool values. With nothing but a float bias before the pool that is exactly
  "levels non-decreasing per channel" (a negative BatchNormalization gamma after the pool
  is refused); with the BatchNormalization before the pool and a non-decreasing quantizer
  after it, any gamma sign passes (max commutes with the quantizer alone). A cast
  requantization must not wrap. Otherwise a FreezeError names the pooling layer and
  suggests pooling after the activation;
* the float operations after an accumulator (a float bias, ``BatchNormalization``, an
  elementwise activation) together with the quantizer that ends them (a ``QuantActivation``
  or the next layer's ``input_quantizer``) become one threshold node.

Thresholds are not derived by algebra: freeze runs the model's *own* inference arithmetic
(the same Keras ops through ``predict``) on every integer value the accumulator can take, per
channel, and records where the quantized output changes. Ties, float32 rounding, negative or
zero gamma therefore come out exactly as Keras computes them.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable

import keras
import numpy as np
from keras import ops

from . import quantizers as qz
from .errors import EdgebnnError
from .graph import (
    Graph,
    Node,
    _on_grid,
    cast_node,
    conv2d_node,
    dense_node,
    flatten_node,
    input_node,
    maxpool2d_node,
    threshold_node,
)
from .layers import QuantActivation, QuantConv2D, QuantDense, _conv_input, _same_padding

# accumulator values enumerated per threshold node (channels x values); above this a search
# per level would be needed, which freeze does not do yet
MAX_ENUMERATION = 1 << 24


class FreezeError(EdgebnnError):
    """The model cannot be frozen into an exact deployment graph."""


@dataclasses.dataclass
class _FloatOp:
    """An elementwise float operation between an accumulator and its quantizer."""

    label: str
    fn: Callable  # keras tensor -> keras tensor, exactly as the layer computes it at inference
    relu: bool = False  # exactly max(x, 0): a cast node can do it in hardware
    # the name of a parameter-free elementwise activation whose float32 result TensorFlow may
    # compute differently at different tensor positions (see _LAYOUT_STABLE), else None
    layout_sensitive: str | None = None
    bias: bool = False  # a float bias added to the accumulator


@dataclasses.dataclass
class Step:
    """One node of the graph and how Keras computes the same values."""

    name: str
    kind: str  # "input" | "dense" | "conv2d" | "maxpool2d" | "flatten" | "requant"
    layer: keras.layers.Layer
    quantizer: qz.Quantizer | None = None
    float_ops: list[_FloatOp] = dataclasses.field(default_factory=list)
    sources: list[str] = dataclasses.field(default_factory=list)
    # a maxpool2d moved after a requantization: that step and how many of its float ops ran
    # before the pool in Keras (freeze checks that the move is exact)
    moved_from: Step | None = None
    ops_before: int = 0

    def keras_eval(self, x):
        """This step's output in Keras (eager, inference mode) given the previous output."""
        if self.kind == "input":
            return self.quantizer(x, training=False)
        if self.kind == "dense":
            return _add_quantized_bias(self.layer, ops.matmul(x, self.layer.quantized_kernel()))
        if self.kind == "conv2d":
            layer = self.layer
            x, padding, strides = _conv_input(layer, x)  # the layer's own padding of its quantized input
            x = ops.conv(x, layer.quantized_kernel(), strides=strides, padding=padding,
                         dilation_rate=layer.dilation_rate, data_format=layer.data_format)
            return _add_quantized_bias(layer, x)
        if self.kind == "flatten":
            return ops.reshape(x, (ops.shape(x)[0], -1))
        if self.kind == "maxpool2d":
            return ops.max_pool(x, pool_size=tuple(self.layer.pool_size), strides=tuple(self.layer.strides),
                                padding="valid", data_format="channels_last")
        for op in self.float_ops:
            x = op.fn(x)
        return self.quantizer(x, training=False)


def _add_quantized_bias(layer, x):
    """The accumulator includes a quantized bias (a float one is folded into the requant)."""
    if layer.use_bias and layer.bias_quantizer is not None:
        x = ops.add(x, layer.quantized_bias())
    return x


# ------------------------------------------------------------------------------ walking


def _layer_chain(model) -> list:
    if not isinstance(model, keras.Model):
        raise FreezeError(f"freeze needs a Keras model (keras.Sequential or keras.Model), got {type(model).__name__}; "
                          "load a saved one with keras.saving.load_model(path, safe_mode=True)")
    layers = [l for l in model.layers if not isinstance(l, keras.layers.InputLayer)]
    if not isinstance(model, keras.Sequential):
        prev = None
        for layer in layers:
            inbound = layer._inbound_nodes
            ok = len(inbound) == 1 and len(inbound[0].parent_nodes) <= 1
            if ok and prev is not None:
                parents = inbound[0].parent_nodes
                ok = bool(parents) and parents[0].operation is prev
            if not ok:
                raise FreezeError(
                    f"layer {layer.name!r} ({type(layer).__name__}) is not part of a simple chain; "
                    "freeze supports sequential models for now"
                )
            prev = layer
    return layers


def _trailing_softmax(layers) -> int | None:
    """Index of the model's last layer (Dropout skipped) when it applies softmax, else None."""
    for i in range(len(layers) - 1, -1, -1):
        layer = layers[i]
        if isinstance(layer, keras.layers.Dropout):
            continue
        if isinstance(layer, keras.layers.Softmax):
            return i
        fn = getattr(layer, "activation", None)
        if isinstance(layer, (keras.layers.Activation, QuantDense)) and _is_softmax(fn):
            return i
        return None
    return None


def _is_softmax(fn) -> bool:
    return fn is not None and getattr(fn, "__name__", "") == "softmax"


def plan(model, strip_softmax: bool = False) -> list[Step]:
    """The steps of ``model`` in order; raises FreezeError for anything not exportable.

    With ``strip_softmax`` a softmax that ends the model (an ``Activation('softmax')``, a
    ``Softmax`` layer or a last ``QuantDense`` with ``activation='softmax'``) is left out: the
    steps compute the logits, whose argmax is the same.
    """
    steps: list[Step] = []
    pending: list[_FloatOp] = []  # float ops after the last accumulator
    pending_layers: list[str] = []
    deferred: list = []  # a Flatten / MaxPooling2D met among pending float ops: emitted after their quantizer
    started = False

    def requant(name, quantizer, layer, extra_sources):
        which = "quantizer" if isinstance(layer, QuantActivation) else "input_quantizer"
        _check_requantizer(quantizer, layer, which)
        flats = [d for d, _ in deferred if isinstance(d, keras.layers.Flatten)]
        if flats and quantizer.hardware().kind == "partial":
            raise FreezeError(
                f"{where(layer)}: its {which} {quantizer!r} treats the features of the flattened tensor differently, "
                f"but the real-valued outputs of {', '.join(pending_layers)} before {flats[0].name!r} (Flatten) can only "
                "be requantized per channel; quantize before the Flatten (e.g. a QuantActivation) or use one "
                "quantizer for all features"
            )
        req = Step(name, "requant", layer, quantizer, list(pending), pending_layers + extra_sources)
        steps.append(req)
        pending.clear()
        pending_layers.clear()
        for moved, n_before in deferred:
            if isinstance(moved, keras.layers.MaxPooling2D):
                steps.append(Step(moved.name, "maxpool2d", moved, sources=[moved.name], moved_from=req,
                                  ops_before=n_before))
            else:
                steps.append(Step(moved.name, "flatten", moved, sources=[moved.name]))
        deferred.clear()

    def where(layer):
        return f"layer {layer.name!r} ({type(layer).__name__})"

    layers = _layer_chain(model)
    strip = _trailing_softmax(layers) if strip_softmax else None
    for index, layer in enumerate(layers):
        if index == strip and not isinstance(layer, QuantDense):
            continue  # the trailing softmax: the graph computes the logits
        if isinstance(layer, (QuantDense, QuantConv2D)):
            if isinstance(layer, QuantConv2D):
                _check_conv2d(layer)
            if not started:
                if layer.input_quantizer is None:
                    raise FreezeError(
                        f"{where(layer)} is the first layer and needs a fixed-point input_quantizer "
                        "(e.g. quantized_bits(8, 0, keep_negative=False)) so inputs lie on a grid"
                    )
                kind = _hardware(layer.input_quantizer, layer, "input_quantizer").kind
                if kind != "fixed":
                    raise FreezeError(
                        f"{where(layer)} is the first layer, but its input_quantizer {layer.input_quantizer!r} "
                        f"gives {kind} values, not the plain ap_fixed conversion the hardware input makes; use "
                        "quantized_bits or quantized_relu there (e.g. quantized_bits(8, 0, keep_negative=False))"
                    )
                steps.append(Step("input", "input", layer, layer.input_quantizer, sources=[layer.name]))
                started = True
            elif layer.input_quantizer is not None:
                requant(f"{layer.name}_input", layer.input_quantizer, layer, [layer.name])
            elif pending:
                raise FreezeError(
                    f"{where(layer)} receives real-valued inputs from {', '.join(pending_layers)}; "
                    "give it an input_quantizer or insert a QuantActivation before it"
                )
            if layer.kernel_quantizer is None:
                raise FreezeError(
                    f"{where(layer)} has a float kernel; give it a kernel_quantizer such as 'ste_sign'"
                )
            kind = "conv2d" if isinstance(layer, QuantConv2D) else "dense"
            steps.append(Step(layer.name, kind, layer, sources=[layer.name]))
            if layer.use_bias and layer.bias_quantizer is None:  # a float bias: folded downstream
                pending.append(_FloatOp(f"{layer.name}.bias", lambda x, l=layer: ops.add(x, l.bias), bias=True))
                pending_layers.append(layer.name)
            if layer.activation is not None and layer.activation is not keras.activations.linear \
                    and index != strip:
                _check_elementwise_activation(layer, layer.activation)
                pending.append(_FloatOp(f"{layer.name}.activation", layer.activation,
                                        relu=layer.activation is keras.activations.relu,
                                        layout_sensitive=_layout_sensitive(layer.activation)))
                pending_layers.append(layer.name)
        elif not started:
            raise FreezeError(
                f"{where(layer)} comes before the first QuantDense or QuantConv2D; the model must start with one "
                "whose input_quantizer sets the input's fixed-point type"
            )
        elif isinstance(layer, keras.layers.BatchNormalization):
            if layer.axis not in (-1, len(layer.input.shape) - 1):
                raise FreezeError(f"{where(layer)} normalizes axis {layer.axis}; only the channel axis (-1) is supported")
            flats = [d for d, _ in deferred if isinstance(d, keras.layers.Flatten)]
            if flats:
                raise FreezeError(
                    f"{where(layer)} normalizes the flattened real-valued outputs of {', '.join(pending_layers)}; "
                    f"quantize before {flats[0].name!r} (Flatten) or normalize before it"
                )
            pending.append(_FloatOp(layer.name, lambda x, l=layer: l(x, training=False)))
            pending_layers.append(layer.name)
        elif isinstance(layer, QuantActivation):
            requant(layer.name, layer.quantizer, layer, [layer.name])
        elif isinstance(layer, keras.layers.Activation):
            if layer.activation is not keras.activations.linear:
                _check_elementwise_activation(layer, layer.activation)
                pending.append(_FloatOp(layer.name, lambda x, l=layer: l(x),
                                        relu=layer.activation is keras.activations.relu,
                                        layout_sensitive=_layout_sensitive(layer.activation)))
                pending_layers.append(layer.name)
        elif isinstance(layer, keras.layers.Dropout):
            continue  # identity at inference
        elif isinstance(layer, keras.layers.Flatten) and len(layer.input.shape) == 2:
            continue
        elif isinstance(layer, keras.layers.Flatten) and len(layer.input.shape) == 4:
            if getattr(layer, "data_format", "channels_last") != "channels_last":
                raise FreezeError(f"{where(layer)} flattens channels_first data; only channels_last is supported")
            if pending:
                deferred.append((layer, len(pending)))  # elementwise float ops and quantizer commute with the reshape
            else:
                steps.append(Step(layer.name, "flatten", layer, sources=[layer.name]))
        elif isinstance(layer, keras.layers.MaxPooling2D):
            _check_maxpool2d(layer)
            if pending:
                deferred.append((layer, len(pending)))  # moved after the quantizer; freeze checks it is exact
            else:  # on a quantized tensor or directly on an accumulator: exact as it is
                steps.append(Step(layer.name, "maxpool2d", layer, sources=[layer.name]))
        else:
            raise FreezeError(
                f"{where(layer)} cannot be frozen; supported layers are QuantDense, QuantConv2D, "
                "BatchNormalization, QuantActivation, elementwise Activation, MaxPooling2D, Flatten and Dropout"
            )
    if pending:
        raise FreezeError(
            f"the model ends with real-valued outputs of {', '.join(pending_layers)} that hardware cannot "
            "reproduce exactly; end it with a QuantActivation (e.g. quantized_bits(8, 3)) or a QuantDense"
        )
    if not started:
        raise FreezeError("the model has no QuantDense or QuantConv2D layer; nothing to freeze")
    return steps


def _check_conv2d(layer):
    where = f"layer {layer.name!r} ({type(layer).__name__})"
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where} uses data_format={layer.data_format!r}; only channels_last is supported")
    if tuple(layer.dilation_rate) != (1, 1):
        raise FreezeError(f"{where} has dilation_rate={tuple(layer.dilation_rate)}; only dilation 1 can be frozen")
    if getattr(layer, "groups", 1) != 1:
        raise FreezeError(f"{where} has groups={layer.groups}; only groups=1 can be frozen")
    if layer.padding not in ("valid", "same"):
        raise FreezeError(f"{where} has padding={layer.padding!r}; use 'valid' or 'same'")
    if len(layer.input.shape) != 4 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where} needs a fixed (H, W, C) input shape; give the model a fixed input shape")


def _check_maxpool2d(layer):
    where = f"layer {layer.name!r} ({type(layer).__name__})"
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where} uses data_format={layer.data_format!r}; only channels_last is supported")
    if layer.padding != "valid":
        raise FreezeError(f"{where} has padding={layer.padding!r}; only padding='valid' can be frozen")
    if len(layer.input.shape) != 4 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where} needs a fixed (H, W, C) input shape; give the model a fixed input shape")


def _hardware(quantizer, layer, which: str):
    """``quantizer.hardware()``, or a FreezeError naming the layer when it has no hardware form."""
    try:
        return quantizer.hardware()
    except (qz.NoHardwareForm, ValueError) as err:
        raise FreezeError(f"layer {layer.name!r} ({type(layer).__name__}): its {which} cannot be deployed: {err}") from None


def _check_requantizer(quantizer, layer, which: str) -> None:
    """Refuse, naming the layer, an activation quantizer whose outputs are not on one fixed grid
    or depend on the statistics of the batch (hardware sees one sample at a time)."""
    where = f"layer {layer.name!r} ({type(layer).__name__})"
    if isinstance(quantizer, qz.SteTern) and quantizer.ternary_weight_networks:
        raise FreezeError(
            f"{where}: its {which} {quantizer!r} takes its threshold from the statistics of each batch, which "
            "hardware computing one sample at a time cannot reproduce; use ste_tern with a fixed threshold_value "
            "for activations (ternary_weight_networks is meant for weights)"
        )
    hw = _hardware(quantizer, layer, which)
    if hw.kind == "partial" and (hw.parts[1] is None or hw.type is None):
        raise FreezeError(
            f"{where}: its {which} {quantizer!r} leaves the channels outside {list(hw.channels)} real-valued (or "
            "off a fixed grid), which hardware cannot reproduce exactly; give it other= a fixed-point quantizer such "
            "as quantized_bits(8, 3)"
        )
    if hw.type is None:
        raise FreezeError(
            f"{where}: its {which} {quantizer!r} outputs {hw.kind} values that no single fixed-point grid holds "
            "exactly, so freeze cannot derive exact thresholds for it; use a fixed-point, binary or ternary "
            "activation quantizer (e.g. quantized_bits, quantized_relu, ste_sign, ste_tern)"
        )


# elementwise activations whose float32 results TensorFlow computes identically at every tensor
# position (checked against one-element tensors); any other may differ by a few ulps between the
# vectorized body and the scalar tail of a tensor, so Keras's own output can depend on the layout
_LAYOUT_STABLE = {"linear", "relu", "relu6", "tanh", "softsign", "hard_sigmoid", "hard_silu", "hard_swish",
                  "leaky_relu", "sign"}


def _layout_sensitive(fn) -> str | None:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return None if name in _LAYOUT_STABLE else name


def _check_elementwise_activation(layer, fn):
    name = getattr(fn, "__name__", str(fn))
    if name in ("softmax", "log_softmax"):
        raise FreezeError(
            f"layer {layer.name!r} ({type(layer).__name__}) applies {name}, which is not elementwise and not "
            "exact in hardware; remove it and train with from_logits=True (argmax is unchanged)"
        )


# ------------------------------------------------------------------------------ freezing


def freeze(model, name: str | None = None, progress: Callable[[str], None] | None = None,
           strip_softmax: bool = False) -> Graph:
    """Freeze ``model`` (Keras 3, edgebnn layers) into a :class:`~edgebnn.graph.Graph`.

    ``strip_softmax=True`` drops a softmax that ends the model (hardware cannot compute it
    exactly; argmax is unchanged): the graph computes the logits, ``graph.meta
    ["stripped_softmax"]`` records ``{"n": classes}`` (the estimator can add hls4ml's softmax
    cost from it) and a :class:`FreezeWarning` says so. Without it such a model is refused.
    """
    layers = _layer_chain(model)
    stripped = _trailing_softmax(layers) if strip_softmax else None
    steps = plan(model, strip_softmax=strip_softmax)
    nodes: list[Node] = []
    input_shape = tuple(int(d) for d in model.inputs[0].shape[1:]) if model.inputs else None
    jit = _model_jit(model)
    caveats: list[dict] = []  # where Keras's own result depends on the batch layout
    for step in steps:
        if progress:
            progress(f"freezing {step.name}")
        if step.kind == "input":
            nodes.append(input_node("input", input_shape, step.quantizer.hardware().type, ",".join(step.sources)))
        elif step.kind == "dense":
            nodes.append(_dense(step, nodes[-1]))
        elif step.kind == "conv2d":
            nodes.append(_conv2d(step, nodes[-1]))
        elif step.kind == "flatten":
            nodes.append(flatten_node(step.name, nodes[-1], ",".join(step.sources)))
        elif step.kind == "maxpool2d":
            if step.moved_from is not None:
                req_node = next(n for n in nodes if n.name == step.moved_from.name)
                _check_pool_move(step, req_node, next(n for n in nodes if n.name == req_node.inputs[0]), jit)
            layer = step.layer
            nodes.append(maxpool2d_node(step.name, nodes[-1], tuple(layer.pool_size), tuple(layer.strides),
                                        ",".join(step.sources)))
        elif _is_cast(step):
            relu = any(op.relu for op in step.float_ops)
            nodes.append(cast_node(step.name, nodes[-1], step.quantizer.hardware().type, relu, ",".join(step.sources)))
        else:
            nodes.append(_requant(step, nodes[-1], jit, caveats))
            if jit:
                caveats += [_xla_bias_caveat(step, op) for op in step.float_ops if op.bias]
    inexact = [n.name for n in nodes if n.op in ("dense", "conv2d") and not _float32_exact(n, nodes)]
    meta = {"keras_model": model.name, "input_dtype": "float32", "keras_float32_exact": not inexact,
            "keras_caveats": caveats}
    for caveat in caveats:
        warnings.warn(f"node {caveat['node']!r}: {caveat['reason']}", FreezeWarning, stacklevel=2)
    if inexact:
        warnings.warn(
            f"the accumulators of {', '.join(inexact)} need more than 24 significant bits, so Keras's float32 "
            "arithmetic cannot compute them exactly: Keras may differ from the deployed model, while the emulator "
            "and the C-simulation still agree bit for bit; use narrower inputs or weights for a bit-exact Keras model",
            FreezeWarning, stacklevel=2,
        )
    if stripped is not None:
        layer = layers[stripped]
        meta["stripped_softmax"] = {"n": int(nodes[-1].shape[-1]), "layer": layer.name}
        warnings.warn(
            f"the softmax of layer {layer.name!r} is not part of the graph: it computes the logits (argmax is "
            "unchanged); apply softmax in software if probabilities are needed",
            FreezeWarning, stacklevel=2,
        )
    return Graph(name or model.name, nodes, meta)


def keras_logits(model):
    """``model`` without the softmax that ends it: what a graph frozen with ``strip_softmax=True``
    computes, as a Keras model sharing ``model``'s layers and compiled the same way (XLA or not).
    A model that does not end with a softmax is returned as it is."""
    layers = _layer_chain(model)
    i = _trailing_softmax(layers)
    if i is None:
        return model
    layer = layers[i]
    out = _WithoutActivation(layer)(layer.input) if isinstance(layer, QuantDense) else layer.input
    logits = keras.Model(model.inputs, out, name=f"{model.name}_logits")
    logits.compile(jit_compile=_model_jit(model))
    return logits


class _WithoutActivation(keras.layers.Layer):
    """Calls a layer with its activation left out (read when the call is traced)."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.inner = layer

    def call(self, x):
        activation = self.inner.activation
        self.inner.activation = keras.activations.linear
        try:
            return self.inner(x, training=False)
        finally:
            self.inner.activation = activation


class FreezeWarning(UserWarning):
    """The frozen graph is exact but not what Keras computes: float32 cannot hold its accumulators
    exactly, Keras's own result depends on the batch layout (``graph.meta["keras_caveats"]``), or
    the model's trailing softmax was stripped (``strip_softmax=True``)."""


def _xla_bias_caveat(step: Step, op: _FloatOp) -> dict:
    layer = op.label.rsplit(".", 1)[0]
    return {
        "node": step.name, "layer": layer, "kind": "xla_bias",
        "reason": (f"layer {layer!r} adds a float bias under XLA (jit_compile=True), which folds the bias into the dot "
                   "product at some batch sizes (e.g. 1), so Keras's own outputs depend on the batch size; the "
                   "deployed model adds the bias to the exact sum, as Keras does without XLA. For a layout-independent "
                   "Keras model give the layer a bias_quantizer or compile it with jit_compile=False"),
    }


def _is_cast(step: Step) -> bool:
    """A requantization that is exactly a fixed-point conversion of (relu of) the accumulator."""
    return step.quantizer.hardware().kind == "fixed" and all(op.relu for op in step.float_ops)


def _float32_exact(node: Node, nodes: list[Node]) -> bool:
    """Every partial sum of the dense (or conv2d: per window) node's products is an integer
    multiple of its grid below 2**24 in magnitude, so float32 accumulates it without rounding,
    in any order. A conv2d window may hold the padding value."""
    src = next(n for n in nodes if n.name == node.inputs[0])
    x_max = np.maximum(np.abs(src.lo), np.abs(src.hi))
    weight = node.params["weight"]
    if node.op == "conv2d":
        kh, kw, c, f = weight.shape
        if any(a for pair in node.attrs["padding"] for a in pair):
            x_max = np.maximum(x_max, abs(float(src.type.from_codes(node.attrs["pad_code"]))))
        x_max = np.tile(np.broadcast_to(x_max, (c,)), kh * kw)
        weight = weight.reshape(kh * kw * c, f)
    x_max = np.broadcast_to(x_max, (weight.shape[0],)) if x_max.size == 1 else x_max
    w = node.fixed_attr("weight_type").from_codes(np.abs(weight))
    bound = float((x_max @ w).max(initial=0.0))
    if "bias" in node.params:
        bound += float(np.abs(node.fixed_attr("bias_type").from_codes(node.params["bias"])).max(initial=0.0))
    return math.ldexp(bound, -node.type.lsb_exp) < 2.0**24


def _model_jit(model) -> bool:
    try:
        return bool(model.jit_compile)
    except Exception:  # noqa: BLE001 - an uncompiled model resolves "auto" lazily
        return False


def _dense(step: Step, src: Node) -> Node:
    layer = step.layer
    w_type, w_codes = _on_declared_grid(layer, "kernel_quantizer", layer.quantized_kernel())
    bias = bias_type = None
    if layer.use_bias and layer.bias_quantizer is not None:
        bias_type, bias = _on_declared_grid(layer, "bias_quantizer", layer.quantized_bias())
    return dense_node(step.name, src, w_codes, w_type, bias, bias_type, source=",".join(step.sources))


def _conv2d(step: Step, src: Node) -> Node:
    layer = step.layer
    where = f"layer {layer.name!r} ({type(layer).__name__})"
    w_type, w_codes = _on_declared_grid(layer, "kernel_quantizer", layer.quantized_kernel())
    bias = bias_type = None
    if layer.use_bias and layer.bias_quantizer is not None:
        bias_type, bias = _on_declared_grid(layer, "bias_quantizer", layer.quantized_bias())
    kh, kw = layer.kernel_size
    sh, sw = layer.strides
    padding = ((0, 0), (0, 0))
    if layer.padding == "same":
        padding = (_same_padding(src.shape[0], kh, sh, 1), _same_padding(src.shape[1], kw, sw, 1))
    pad_code = 0
    if any(a for pair in padding for a in pair):
        pad = float(layer.pad_values)
        if not src.type.contains(np.array([pad])):
            raise FreezeError(
                f"{where} pads with pad_values={pad}, which is not on the grid of its quantized input "
                f"{src.type}; pad with a value the input quantizer can produce (e.g. 1.0 or -1.0 after a sign)"
            )
        pad_code = int(src.type.codes(np.array([pad]))[0])
    return conv2d_node(step.name, src, w_codes, w_type, (sh, sw), padding, pad_code, bias, bias_type,
                       source=",".join(step.sources))


def _on_declared_grid(layer, which: str, tensor):
    """(type, integer codes) of a quantized weight tensor, checked against the quantizer's grid."""
    hw = _hardware(getattr(layer, which), layer, which)
    values = np.asarray(ops.convert_to_numpy(tensor), dtype=np.float64)
    if hw.kind not in ("binary", "fixed") or hw.type is None or not hw.type.contains(values):
        raise FreezeError(
            f"layer {layer.name!r} ({type(layer).__name__}): its {which} {getattr(layer, which)!r} does not put the "
            f"weights on one fixed-point grid; freeze supports binary and fixed-point weight quantizers for now"
        )
    return hw.type, hw.type.codes(values)


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
        for op in self._step.float_ops[start:stop]:
            x = op.fn(x)
        return self._step.quantizer(x, training=False) if self._quantize else x


def _check_pool_move(pool: Step, req: Node, acc: Node, jit: bool) -> None:
    """Refuse moving ``pool`` after the requantization ``req`` of ``acc`` unless it is exact.

    Keras computes ``h(max_i f(x_i))`` with ``f`` the float ops before the pool and ``h`` the
    rest and the quantizer; the graph computes ``max_i g(x_i)`` with ``g = h(f)`` (the node
    ``req``). Both agree for every window exactly when ``g`` is non-decreasing in the order of
    ``f``'s values, which is checked on every accumulator value of every channel.
    """
    step = pool.moved_from
    where = f"layer {pool.name!r} ({type(pool.layer).__name__})"
    advice = (f"so the maximum cannot move after the quantizer exactly; pool after the activation "
              f"(put {pool.name!r} after {step.name!r}) or directly on the accumulator before the normalization")
    if req.op == "cast":  # float ops are relus (non-decreasing): the conversion must be non-decreasing
        t = req.type
        lo, hi = acc.lo, acc.hi
        if req.attrs["relu"]:
            lo, hi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
        wraps = not (t.contains(_on_grid(lo, t)) and t.contains(_on_grid(hi, t)))
        if wraps and t.overflow not in ("SAT", "SAT_SYM"):
            raise FreezeError(f"{where} sits before the quantizer of {step.name!r}, whose conversion onto {t} "
                              f"overflows with {t.overflow} and is not monotone, {advice}")
        return
    lo, hi = acc.type.codes(acc.lo), acc.type.codes(acc.hi)
    span = int((hi - lo).max()) + 1
    codes = np.minimum(lo[None, :] + np.arange(span)[:, None], hi[None, :])
    values = acc.type.from_codes(codes).astype(np.float32)
    shaped = values.reshape((span, 1, 1, values.shape[1]))
    inp = keras.Input(shape=shaped.shape[1:], dtype="float32")
    replay = keras.Model(inp, _Replay(step, stop=pool.ops_before, quantize=False)(inp))
    replay.jit_compile = jit
    before = np.asarray(replay.predict(shaped, batch_size=min(span, 4096), verbose=0),
                        dtype=np.float64).reshape(values.shape)
    t, lv = req.params["thresholds"], req.params["levels"]
    bad = []
    for c in range(codes.shape[1]):
        g = lv[c, (codes[:, c, None] >= t[c][None, :]).sum(axis=1)]
        order = np.argsort(before[:, c], kind="stable")
        if np.any(np.diff(g[order]) < 0):
            bad.append(c)
    if bad:
        ops_before = ", ".join(op.label for op in step.float_ops[: pool.ops_before])
        raise FreezeError(
            f"{where} sits between {ops_before} and the quantizer of {step.name!r}, whose requantization "
            f"decreases in channel(s) {bad[:8]} (e.g. a negative BatchNormalization gamma after the pool), {advice}"
        )


def _requant(step: Step, src: Node, jit: bool, caveats: list | None = None) -> Node:
    """Thresholds per channel (the last axis); the float ops run on values of the source's rank."""
    hw = step.quantizer.hardware()
    lo = src.type.codes(src.lo)
    hi = src.type.codes(src.hi)
    span = int((hi - lo).max()) + 1
    channels = lo.shape[0]
    if span * channels > MAX_ENUMERATION or int(np.abs(np.concatenate([lo, hi])).max()) >= 1 << 24:
        raise FreezeError(
            f"step {step.name!r}: the accumulator of {src.name!r} ({src.type}) spans {span} values per channel, "
            f"too many to derive thresholds by enumeration; use narrower inputs or weights before this quantizer"
        )
    codes = np.minimum(lo[None, :] + np.arange(span)[:, None], hi[None, :])
    values = src.type.from_codes(codes).astype(np.float32)  # exact: |codes| < 2**24
    out = _evaluate(step, values, jit, rank=len(src.shape))
    if not hw.type.contains(out):
        raise FreezeError(
            f"{step.name!r} ({', '.join(step.sources)}): quantizer {step.quantizer!r} produced values off its "
            f"declared grid {hw.type}, which thresholds cannot reproduce; use a quantizer whose outputs lie on one "
            "fixed-point grid (scaled forms such as alpha='auto' or DoReFa k-bit activations are not deployable yet)"
        )
    out_codes = hw.type.codes(out)
    if caveats is not None:
        caveat = _layout_caveat(step, src, values, out_codes, hw, jit, rank=len(src.shape))
        if caveat:
            caveats.append(caveat)
    changes = np.diff(out_codes, axis=0) != 0  # (span-1, C): the level changes entering row r+1
    k = max(int(changes.sum(axis=0).max()), 1)
    thresholds = np.empty((channels, k), dtype=np.int64)
    levels = np.empty((channels, k + 1), dtype=np.int64)
    for c in range(channels):
        rows = np.nonzero(changes[:, c])[0] + 1
        t = codes[rows, c]
        lv = np.concatenate([[out_codes[0, c]], out_codes[rows, c]])
        if len(t) == 0:  # constant output: one threshold that changes nothing
            t = np.array([lo[c]])
            lv = np.array([lv[0], lv[0]])
        pad = k - len(t)
        thresholds[c] = np.concatenate([t, np.repeat(t[-1], pad)])
        levels[c] = np.concatenate([lv, np.repeat(lv[-1], pad)])
    return threshold_node(step.name, src, thresholds, levels, hw.type, source=",".join(step.sources))


def _evaluate(step: Step, values: np.ndarray, jit: bool, rank: int = 1, **replay) -> np.ndarray:
    """Run the step's float ops and quantizer (or the part ``replay`` selects, see
    :class:`_Replay`) through Keras ``predict``, as the model does.

    ``values`` is (n, channels); it is given the rank of the model's tensor there ((n, 1, 1, C)
    after a convolution) so the same kernels (e.g. TensorFlow's fused 4-D batch norm) run."""
    shaped = values.reshape((len(values),) + (1,) * (rank - 1) + values.shape[1:])
    inp = keras.Input(shape=shaped.shape[1:], dtype="float32")
    model = keras.Model(inp, _Replay(step, **replay)(inp))
    model.jit_compile = jit
    out = model.predict(shaped, batch_size=min(len(values), 4096), verbose=0)
    return np.asarray(out, dtype=np.float64).reshape(values.shape)


class _Apply(keras.layers.Layer):
    def __init__(self, op: _FloatOp, **kwargs):
        super().__init__(**kwargs)
        self._op = op

    def call(self, x):
        return self._op.fn(x)


# how far (in ulps) TensorFlow's scalar and vectorized float32 activations may differ; measured
# up to 16 (elu near zero) over sigmoid, swish, softplus, mish, gelu, elu, selu, log_sigmoid, celu
_LAYOUT_ULPS = 64


def _layout_caveat(step: Step, src: Node, values, out_codes, hw, jit: bool, rank: int) -> dict | None:
    """A caveat when Keras's quantized output of ``step`` depends on where a value sits in the
    tensor: TensorFlow computes some activations (sigmoid, swish, elu, ...) with a vectorized
    body and a scalar tail that differ by a few ulps. The thresholds follow the vectorized
    result (``values`` were evaluated in one large tensor). Every accumulator value whose
    quantized output changes when the activation moves by _LAYOUT_ULPS ulps is evaluated again
    alone in a one-element tensor (the scalar path); where its quantized output then differs,
    Keras itself is not deterministic across batch layouts."""
    for i, op in enumerate(step.float_ops):
        if op.layout_sensitive is None:
            continue
        vector = _evaluate(step, values, jit, rank, stop=i + 1, quantize=False).astype(np.float32)
        step_size = np.float32(_LAYOUT_ULPS) * np.abs(np.spacing(vector))
        risky = np.zeros(out_codes.shape, dtype=bool)
        for moved in (vector + step_size, vector - step_size):
            risky |= hw.type.codes(_evaluate(step, moved.astype(np.float32), jit, rank, start=i + 1)) != out_codes
        if not risky.any():
            continue
        rows, cols = np.nonzero(risky)
        before = _evaluate(step, values, jit, rank, stop=i, quantize=False).astype(np.float32)
        inp = keras.Input(shape=(1,), dtype="float32")
        alone = keras.Model(inp, _Apply(op)(inp))
        alone.jit_compile = jit
        scalar = np.asarray(alone.predict(before[rows, cols].reshape(-1, 1), batch_size=1, verbose=0),
                            dtype=np.float32).reshape(-1)
        differ = scalar != vector[rows, cols]
        if not differ.any():
            continue
        moved = vector.copy()
        moved[rows[differ], cols[differ]] = scalar[differ]
        flipped = int(np.sum(hw.type.codes(_evaluate(step, moved, jit, rank, start=i + 1)) != out_codes))
        if flipped:
            return {
                "node": step.name, "layer": op.label, "kind": "layout",
                "reason": (f"{op.layout_sensitive} in {op.label!r} gives float32 results in TensorFlow that depend on "
                           f"the element's position in the tensor, and {flipped} accumulator value(s) of {src.name!r} lie "
                           "within those few ulps of a quantization step, so Keras's own output there depends on the "
                           "batch layout (e.g. batch size 1 vs 32); the deployed model follows the vectorized result. A "
                           "layout-stable activation (relu, tanh, hard_sigmoid, softsign) avoids this"),
            }
    return None


# ------------------------------------------------------------------------------ tracing


def trace(model, x, strip_softmax: bool = False) -> dict[str, np.ndarray]:
    """Each step's output computed by Keras (eager, inference mode), by graph node name.

    Used to find the first layer where Keras and the emulator part ways.
    """
    out = {}
    h = ops.convert_to_tensor(np.asarray(x, dtype=np.float32))
    for step in plan(model, strip_softmax=strip_softmax):
        h = step.keras_eval(h)
        out[step.name] = np.asarray(ops.convert_to_numpy(h), dtype=np.float64)
    return out
