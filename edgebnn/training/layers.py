"""Keras 3 layers whose inputs and weights pass through edgebnn quantizers.

Each layer subclasses the Keras layer of the same name and changes only ``call``: the input
passes ``input_quantizer``, each weight passes its quantizer (``kernel_quantizer``,
``depthwise_quantizer``, ``pointwise_quantizer``, ``bias_quantizer``), then the Keras
arithmetic runs unchanged. A quantizer left at None means that tensor stays float.

The layers keep the user's quantizers exactly as given (no silent substitution) and serialize
every argument, so a saved ``.keras`` model loads back after ``import edgebnn`` alone.

Scaled quantizers (``hardware()`` a ``scaled`` form: XNOR, magnitude-aware sign, DoReFa,
QKeras ``alpha``) are applied in an exact order: the layer multiplies and sums the unscaled
values (integer codes on a grid, :meth:`~edgebnn.quantizers.Quantizer.split`) and applies the
scale once after, per output channel (:meth:`~_Quantized.rescale`), before the bias and the
activation. That is the same forward in real arithmetic with the same gradients, and a result
Keras computes independently of the summation order, which freeze replays exactly. A ``QuantSeparableConv2D`` applies a
depthwise scale of one value after its pointwise sum too (it commutes with that sum); one per
depthwise channel multiplies the depthwise result before the pointwise sum (a depthwise kernel's
axis 2 is an output axis too: its output ``c * M + m`` takes the scale of channel ``c``). A
kernel scale along an axis the sum runs over (an XNOR scale per input channel, a partial kernel
with a scaled part), or a tensor-dependent input scale, keeps the plain product
``q_in(x) @ q_k(W)``; freeze deploys such a kernel when its scales are powers of two.

``pad_values`` (convolutions, as in larq): with ``padding="same"`` the quantized input is
padded with this constant and a "valid" convolution follows. A binary network pads with
``1.0`` or ``-1.0`` so that the padded border stays on the binary grid; ``0.0`` (the default)
is ordinary zero padding. Only ``channels_last`` is supported.
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from .. import forms
from . import quantizers as q
from .marks import quantizer_of, role_of  # noqa: F401 - also edgebnn.layers' names, as before


def _quantizer_arg(value):
    return q.get(value)


def _constraint_args(kwargs: dict) -> dict:
    """``kwargs`` with larq's constraint names (``kernel_constraint="weight_clip"`` or
    ``"weight_clip(0.5)"``, any ``*_constraint``) made edgebnn's WeightClip; Keras's own names
    pass through to Keras."""
    from . import constraints

    return {
        key: constraints.get(value)
        if key.endswith("_constraint") and isinstance(value, str) and value.strip().startswith("weight_clip")
        else value
        for key, value in kwargs.items()
    }


def _tag(variable, quantizer, role="kernel") -> None:
    """Remember on a weight which quantizer reads it and whether it is a kernel (dense, conv,
    depthwise or pointwise) or a bias: ``optimizers.is_binary_kernel`` and ``summary`` look it
    up there, so no variable-name convention is needed."""
    variable._edgebnn_quantizer = quantizer
    variable._edgebnn_role = role


def _apply(quantizer, x, training=None):
    # training reaches the quantizer so stochastic rounding of weights happens in training only
    return x if quantizer is None else quantizer(x, training=training)


def _quantize_input(layer, inputs, training):
    if layer.input_quantizer is None:
        return inputs
    return layer.input_quantizer(inputs, training=training)


def _scaled_form(quantizer):
    """The quantizer's ``scaled`` form, else None."""
    if quantizer is None:
        return None
    try:
        hw = quantizer.hardware()
    except (q.NoHardwareForm, ValueError):
        return None
    return hw if isinstance(hw, forms.Scaled) else None


def _splits_kernel(quantizer, ndim: int, depthwise: bool = False) -> bool:
    """The kernel quantizer scales per tensor or per output channel (the kernel's last axis, or
    a depthwise kernel's channel axis 2: its output ``c * M + m`` is channel ``c``), so its scale
    can be applied after the sum."""
    hw = _scaled_form(quantizer)
    return hw is not None and (hw.axis is None or hw.axis % ndim == ndim - 1 or (depthwise and hw.axis % ndim == 2))


def _po2_scales(quantizer) -> bool:
    """Every scale the quantizer (or a part of a partial one) gives is a power of two, or it has none."""
    if isinstance(quantizer, q.PartialQuantizer):
        return _po2_scales(quantizer.quantizer) and _po2_scales(quantizer.other)
    hw = _scaled_form(quantizer)
    if hw is None:
        return True
    if isinstance(quantizer, q.XnorSign):
        return quantizer.po2
    alpha = getattr(quantizer, "alpha", None)
    if isinstance(alpha, str) or hw.scale is None:
        return alpha == "auto_po2"
    s = np.atleast_1d(np.asarray(hw.scale, dtype=np.float64))
    return bool(np.all(s > 0) and np.all(np.frexp(s)[0] == 0.5))


def sums_exactly(layer) -> bool:
    """A kernel of the layer keeps the plain product ``q_in(x) @ q_k(W)`` with scales that need
    not be powers of two (an XNOR scale per input channel, a partial kernel with a scaled part):
    at inference the layer then multiplies and sums in float64 and rounds the sum once to
    float32. The products of two float32 values are exact in float64 and so is their sum while
    it spans fewer than 53 bits (freeze checks that bound), so the output is the exact sum
    rounded once, whatever the order of the additions; freeze deploys that sum exactly and
    folds the rounding into the next quantizer's thresholds. In training the plain float32
    product (same forward up to that rounding, same gradient)."""
    for weight, which in layer._tagged_kernels:
        quantizer = getattr(layer, which)
        ndim = len(getattr(layer, weight).shape)
        if not _splits_kernel(quantizer, ndim, which == "depthwise_quantizer") and not _po2_scales(quantizer):
            return True
    return False


def _summed(layer, training, product, x):
    """``product(x)``; at inference, for a layer that :func:`sums_exactly`, on ``x`` in float64
    (``product`` casts its kernels to ``x``'s dtype), rounded once to ``x``'s float type."""
    if training or not sums_exactly(layer):
        return product(x)
    out = product(ops.cast(x, "float64"))
    if isinstance(out, tuple):
        return (ops.cast(out[0], x.dtype), *out[1:])
    return ops.cast(out, x.dtype)


def splits_input(layer) -> bool:
    """The input quantizer has one constant scale (per tensor, not from the tensor's values) and
    the layer pads with zeros, so the codes can be summed and the scale applied after."""
    hw = _scaled_form(layer.input_quantizer)
    if hw is None or hw.axis is not None or hw.scale is None or isinstance(hw.scale, tuple):
        return False
    return getattr(layer, "pad_values", 0.0) == 0.0 or getattr(layer, "padding", "valid") != "same"


# layers whose outputs are some of their input's values, moved or picked: a DoReFa activation's values pass them
_VALUE_MOVERS = (
    keras.layers.Flatten,
    keras.layers.Reshape,
    keras.layers.MaxPooling1D,
    keras.layers.MaxPooling2D,
    keras.layers.Dropout,
)


def _dorefa_source(tensor):
    """The DoReFa quantizer (activations, k > 1) of the ``QuantActivation`` whose outputs the
    symbolic ``tensor`` holds (directly or through Flatten, Reshape, a max pool or Dropout), from
    its Keras history;
    None for any other tensor."""
    while True:
        history = getattr(tensor, "_keras_history", None)
        if history is None:
            return None
        layer = history.operation
        if isinstance(layer, QuantActivation):
            quantizer = layer.quantizer
            dorefa = isinstance(quantizer, q.DoReFa) and quantizer.mode == "activations" and quantizer.k_bit > 1
            return quantizer if dorefa else None
        if not isinstance(layer, _VALUE_MOVERS):
            return None
        tensor = layer._inbound_nodes[history.node_index].input_tensors[0]


def reads_codes(layer):
    """The DoReFa quantizer whose codes the layer sums at inference, or None. A layer without an
    input quantizer that reads the outputs of a DoReFa ``QuantActivation`` (k > 1; seen when the
    layer is called on that activation's symbolic output, as a model is built or loaded) gets
    values ``c / n`` rounded to float32, whose float32 sum would depend on the order of the
    additions. At inference it takes their codes back (``round(n v)``, exact: ``n v`` is within
    ``n * 2**-24`` of ``c``), sums the codes and divides the sum by ``n`` once in float64,
    rounded to float32: the result is the exact quotient rounded once, whatever the order of the
    additions. In training the plain float32 sum of the values (the same gradient).
    Not with ``pad_values`` other than 0 and "same" padding (the pads would not be codes)."""
    source = getattr(layer, "_dorefa_codes", None)
    if source is None or layer.input_quantizer is not None:
        return None
    if getattr(layer, "pad_values", 0.0) != 0.0 and getattr(layer, "padding", "valid") == "same":
        return None
    return source


def _split(quantizer, x, training, splits: bool):
    """(values, scale or None): the quantizer's unscaled values when it ``splits``, else q(x)."""
    if not splits:
        return _apply(quantizer, x, training), None
    return quantizer.split(x, training=training)


def _channel_scale(scale, repeat: int = 1, each: int = 1):
    """A kernel scale as a vector along the output channels: a depthwise kernel's outputs are
    input channel x multiplier, so a scale per multiplier is repeated ``repeat`` times (tiled)
    and one per input channel ``each`` times (each value in turn)."""
    if scale is None or len(ops.shape(scale)) == 0:
        return scale
    scale = ops.reshape(scale, (-1,))
    scale = ops.repeat(scale, each) if each > 1 else scale
    return ops.tile(scale, (repeat,)) if repeat > 1 else scale


def _one_value(scale) -> bool:
    """The scale is one value for the whole tensor."""
    return math.prod(tuple(getattr(scale, "shape", ()))) == 1  # kernel shapes are static


def add_bias(x, bias, training=None):
    """``x + bias`` (the bias broadcast on the last axis, channels_last) rounded once to ``x``'s
    float type in every way Keras runs the layer at inference, with the gradient of a plain add.

    XLA on the CPU fuses a matrix-vector product (``predict`` at batch size 1, a 1x1
    convolution on one pixel) with the add after it and starts the dot's accumulator at the
    bias, so each partial sum is rounded: the layer's output would depend on the batch size,
    and a float bias would no longer be added to the exact integer sum that freeze deploys. So
    at inference the value is the add done in float64 between two casts, which no fusion takes
    apart (float64 has more than twice float32's precision, so the float64 sum rounded to
    float32 is the float32 add bit for bit). The gradient still flows through the plain add
    (``plain - stop_gradient(plain)`` is exactly 0), whose reduction over the batch TensorFlow
    and XLA order as before. In training, whose forward is not deployed, the plain add alone
    (the detour would cost a training step up to a quarter more without XLA)."""
    plain = ops.add(x, bias)
    if training:
        return plain
    wide = ops.broadcast_to(ops.cast(bias, x.dtype), ops.shape(x))
    once = ops.cast(ops.add(ops.cast(x, "float64"), ops.cast(wide, "float64")), x.dtype)
    return ops.stop_gradient(once) + (plain - ops.stop_gradient(plain))


def _bias_and_activation(layer, x, training=None):
    if layer.use_bias:
        x = add_bias(x, layer.quantized_bias(training), training)
    if layer.activation is not None:
        x = layer.activation(x)
    return x


def _serialize_quantizers(layer, config, keys):
    for key in keys:
        config[key] = q.serialize(getattr(layer, key))
    return config


# ------------------------------------------------------------------------------- padding


def _same_padding(size, kernel, stride, dilation):
    """TensorFlow's (and Keras') split of "same" padding: the odd pixel goes after."""
    extent = (kernel - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def _check_conv_args(layer):
    name = type(layer).__name__
    if layer.data_format != "channels_last":
        raise ValueError(
            f"{name} supports data_format='channels_last' only (got {layer.data_format!r}); transpose the input to channels_last"
        )
    if layer.padding == "causal" and layer.pad_values != 0.0:
        raise ValueError(f"{name}: padding='causal' pads with zeros; pad_values={layer.pad_values} needs padding='same'")


def _pad_input(layer, x, explicit: bool = False):
    """``(x, padding)`` for the convolution: with non-zero ``pad_values`` and "same" padding (or
    ``explicit``), ``x`` padded explicitly and "valid"; otherwise unchanged (Keras pads with
    zeros itself)."""
    padding = layer.padding
    if padding == "causal":  # Conv1D: zeros on the left, as keras.layers.Conv1D does
        left = layer.dilation_rate[0] * (layer.kernel_size[0] - 1)
        return ops.pad(x, ((0, 0), (left, 0), (0, 0))), "valid"
    if padding != "same" or (layer.pad_values == 0.0 and not explicit):
        return x, padding
    widths = [(0, 0)]
    for axis, (k, s, d) in enumerate(zip(layer.kernel_size, layer.strides, layer.dilation_rate), start=1):
        size = x.shape[axis]
        if size is None and s != 1:
            raise ValueError(
                f"layer {layer.name!r} ({type(layer).__name__}): pad_values with strides={layer.strides} needs a "
                "known spatial input size; give the model a fixed input shape"
            )
        widths.append(_same_padding(size or 1, k, s, d))
    widths.append((0, 0))
    return ops.pad(x, widths, constant_values=layer.pad_values), "valid"


def _single_window_axes(layer, x) -> list[int]:
    """Spatial axes (1-based) on which the convolution has one output but a stride above 1."""
    axes = []
    for axis, (k, s, d) in enumerate(zip(layer.kernel_size, layer.strides, layer.dilation_rate), start=1):
        size = x.shape[axis]
        if s == 1 or size is None:
            continue
        if layer.padding == "same":
            out = -(-size // s)
        else:  # valid or causal (causal keeps the length of "same")
            out = -(-size // s) if layer.padding == "causal" else (size - (k - 1) * d - 1) // s + 1
        if out == 1:
            axes.append(axis)
    return axes


def _conv_input(layer, x):
    """``(x, padding, strides)`` for the convolution of the quantized input ``x``: padded as
    :func:`_pad_input` does, and on every spatial axis with a single output window the input
    cut to that window with stride 1, which is the same convolution. TensorFlow's oneDNN CPU
    convolution (2.21) gets such an axis with a stride above 1 wrong for batches of more than
    one sample; the cut keeps Keras's outputs those of the model."""
    axes = _single_window_axes(layer, x) if layer.data_format == "channels_last" else []
    x, padding = _pad_input(layer, x, explicit=bool(axes))
    strides = list(layer.strides)
    for axis in axes:
        extent = (layer.kernel_size[axis - 1] - 1) * layer.dilation_rate[axis - 1] + 1
        x = ops.take(x, list(range(extent)), axis=axis)
        strides[axis - 1] = 1
    return x, padding, tuple(strides)


def _depthwise(x, kernel, options: dict):
    """Keras's depthwise convolution of ``x`` with ``kernel`` (kh, kw, C, M) in ``x``'s float type.
    TensorFlow's float64 depthwise convolution takes equal strides only; with others (a layer that
    :func:`sums_exactly`) the same sums come from the convolution with the full kernel, zero off
    each channel's block (its output ``c * M + m`` reads channel ``c`` only), exact in float64 too."""
    kernel = ops.cast(kernel, x.dtype)
    strides = options["strides"]
    if x.dtype != "float64" or not isinstance(strides, tuple | list) or strides[0] == strides[1]:
        return ops.depthwise_conv(x, kernel, **options)
    kh, kw, c, m = kernel.shape
    eye = ops.reshape(ops.eye(c, dtype=x.dtype), (1, 1, c, c, 1))
    full = ops.reshape(ops.expand_dims(kernel, 3) * eye, (kh, kw, c, c * m))
    dilation = options.get("dilation_rate", 1)
    dilation = tuple(dilation) if isinstance(dilation, tuple | list) else (dilation, dilation)
    if max(dilation) == 1:
        return ops.conv(x, full, **options)
    # TensorFlow's convolution takes strides or dilation, not both: as Keras's depthwise
    # convolution does, pad as the strided one would, convolve at stride 1 and subsample
    if options["padding"] == "same":
        widths = [_same_padding(x.shape[a], k, s, d) for a, k, s, d in zip((1, 2), (kh, kw), strides, dilation)]
        x = ops.pad(x, [(0, 0), *widths, (0, 0)])
    out = ops.conv(x, full, strides=1, padding="valid", dilation_rate=dilation, data_format=options.get("data_format"))
    return out[:, :: strides[0], :: strides[1], :]


def _static_shape(layer, inputs, out):
    """``out`` with the static shape the layer gives ``inputs`` where the convolution lost it:
    Keras's depthwise and separable convolutions with both strides and dilation run at stride 1
    after a "same" padding of dynamic size and subsample, so in a traced graph (``predict``) the
    spatial sizes become unknown and a next layer that pads with ``pad_values`` at a stride
    could not compute its padding. The reshape keeps every value."""
    if None in tuple(out.shape[1:]) and None not in tuple(inputs.shape[1:]):
        out = ops.reshape(out, (-1, *layer.compute_output_shape(tuple(inputs.shape))[1:]))
    return out


# ---------------------------------------------------------------------------- shared part


class _Quantized:
    """What every quantized layer shares: its quantizer arguments, the quantized bias, and the
    serialization of both (and of ``pad_values`` where the layer has it)."""

    _quantizer_keys: tuple[str, ...] = ()
    # (weight attribute, quantizer attribute) of each kernel, tagged when the layer is built
    _tagged_kernels: tuple[tuple[str, str], ...] = ()

    def _set_quantizers(self, pad_values=None, **quantizers):
        for key in self._quantizer_keys:
            setattr(self, key, _quantizer_arg(quantizers[key]))
        if pad_values is not None:
            self.pad_values = float(pad_values)
            _check_conv_args(self)

    def build(self, input_shape):
        super().build(input_shape)
        for weight, quantizer in self._tagged_kernels:
            quant = getattr(self, quantizer)
            problem = q.shape_problem(quant, tuple(getattr(self, weight).shape))
            if problem:
                raise ValueError(f"layer {self.name!r} ({type(self).__name__}): its {quantizer} {quant!r} {problem}")
            _tag(getattr(self, weight), getattr(self, quantizer))
        if self.use_bias:
            _tag(self.bias, self.bias_quantizer, "bias")

    def quantized_bias(self, training=None):
        return None if self.bias is None else _apply(self.bias_quantizer, self.bias, training)

    def __call__(self, *args, **kwargs):
        if args and self.input_quantizer is None and getattr(args[0], "_keras_history", None) is not None:
            self._dorefa_codes = _dorefa_source(args[0])  # symbolic: the model's graph says what feeds the layer
        return super().__call__(*args, **kwargs)

    def _input(self, inputs, training):
        """(quantized input or its unscaled codes, the input scale or None)."""
        source = None if training else reads_codes(self)
        if source is not None:
            return source.split(inputs, training=False)
        return _split(self.input_quantizer, inputs, training, splits_input(self))

    def _input_scaler(self):
        """The quantizer whose scale the layer applies after the sum."""
        return self.input_quantizer if self.input_quantizer is not None else reads_codes(self)

    def _weight(self, which: str, latent: bool = False):
        """The latent kernel variable that the quantizer attribute ``which`` reads (a layer with a
        folded BatchNorm: the kernel it quantizes, unless ``latent``)."""
        return getattr(self, next(w for w, q in self._tagged_kernels if q == which))

    def quantized_weight(self, which: str, training=None):
        """The kernel that the quantizer attribute ``which`` reads, quantized (scale inside)."""
        return _apply(getattr(self, which), self._weight(which), training)

    def split_weight(self, which: str, training=None):
        """(values the layer multiplies, scale or None) of the kernel that the quantizer attribute
        ``which`` reads: its unscaled values and the quantizer's scale (as it broadcasts on them)
        when the scale is per tensor or per output channel, else the quantized kernel and None."""
        quantizer, weight = getattr(self, which), self._weight(which)
        splits = _splits_kernel(quantizer, len(weight.shape), depthwise=which == "depthwise_quantizer")
        return _split(quantizer, weight, training, splits)

    def _channels(self, which: str, scale):
        """A kernel's scale as a vector along the layer's output channels (a depthwise kernel's
        output channel ``c * M + m`` takes the scale of its multiplier ``m``, or of its channel
        ``c`` for a scale along the kernel's axis 2, which keeps the kernel's dimensions)."""
        if which != "depthwise_quantizer" or _one_value(scale):
            return _channel_scale(scale)
        shape = tuple(self._weight(which).shape)
        if _scaled_form(getattr(self, which)).axis % len(shape) == 2:  # one per channel c
            return _channel_scale(scale, each=int(shape[3]))
        return _channel_scale(scale, repeat=int(shape[2]))

    def _rescaled(self, x, s_in, kernel_scales):
        """``x`` times the scales that the layer applies after its sum: each kernel scale of
        ``kernel_scales`` (pairs of quantizer attribute and scale, in order) per output channel,
        then the input scale ``s_in`` (None when absent), each the way its quantizer does."""
        for which, s in kernel_scales:
            if s is not None:
                x = getattr(self, which).rescale(x, self._channels(which, s))
        if s_in is not None and self.input_quantizer is None:  # a DoReFa activation's codes (``reads_codes``)
            # S / n in float64 rounded to float32 is the real quotient rounded once (S < 2**24 and n odd:
            # never within float64's error of a float32 tie); float32's own division may go by 1/n
            x = ops.cast(ops.divide(ops.cast(x, "float64"), ops.cast(s_in, "float64")), x.dtype)
        elif s_in is not None:
            x = self.input_quantizer.rescale(x, s_in)
        return x

    def _after_sum(self):
        """The quantizer attributes whose kernel scales the layer applies after its sum."""
        return tuple(q for _, q in self._tagged_kernels)

    def output_scales(self):
        """(input scale or None, ((quantizer attribute, kernel scale), ...)): the scales applied
        after the sum at inference, the kernel scales in the order :meth:`rescale` applies them
        (only kernels with a scale there; an input quantizer without one, or one that keeps the
        plain product, gives None)."""
        s_in = None
        if splits_input(self):
            s_in = self.input_quantizer.split(ops.zeros((1,)))[1]  # a constant: it does not depend on x
        elif reads_codes(self) is not None:
            s_in = reads_codes(self).split(ops.zeros((1,)))[1]
        scales = ((which, self.split_weight(which)[1]) for which in self._after_sum())
        return s_in, tuple((which, s) for which, s in scales if s is not None)

    def rescale(self, x):
        """The accumulator ``x`` times the layer's scales, exactly as ``call`` applies them."""
        return self._rescaled(x, *self.output_scales())

    def get_config(self):
        config = _serialize_quantizers(self, super().get_config(), self._quantizer_keys)
        if hasattr(self, "pad_values"):
            config["pad_values"] = self.pad_values
        return config


# --------------------------------------------------------------------------------- dense


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantDense(_Quantized, keras.layers.Dense):
    """``Dense`` on quantized inputs and weights: ``y = q_in(x) @ q_k(W) + q_b(b)``.

    A float bias (``bias_quantizer=None``) is allowed where a quantizer follows (freeze folds
    it into thresholds).
    """

    _quantizer_keys = ("input_quantizer", "kernel_quantizer", "bias_quantizer")

    def __init__(self, units, input_quantizer=None, kernel_quantizer=None, use_bias=True, bias_quantizer=None, **kwargs):
        super().__init__(units, use_bias=use_bias, **_constraint_args(kwargs))
        self._set_quantizers(input_quantizer=input_quantizer, kernel_quantizer=kernel_quantizer, bias_quantizer=bias_quantizer)

    _tagged_kernels = (("_kernel", "kernel_quantizer"),)

    def quantized_kernel(self, training=None):
        return self.quantized_weight("kernel_quantizer", training)

    def split_kernel(self, training=None):
        """(kernel values the layer multiplies, scale per output channel or None)."""
        v, s = self.split_weight("kernel_quantizer", training)
        return v, self._channels("kernel_quantizer", s)

    def call(self, inputs, training=None):
        return _bias_and_activation(self, self._accumulate(inputs, training), training)

    def _accumulate(self, inputs, training):
        """The product of the quantized input and kernel, scales applied (before the bias)."""
        x, s_in = self._input(inputs, training)
        kernel, s_k = self.split_weight("kernel_quantizer", training)
        product = _summed(self, training, lambda v: ops.matmul(v, ops.cast(kernel, v.dtype)), x)
        return self._rescaled(product, s_in, (("kernel_quantizer", s_k),))

    def _latent_product(self, x):
        """The quantized input times the latent (float) kernel: what a folded BatchNorm sees."""
        return ops.matmul(x, self._kernel)


# ------------------------------------------------------------------------- convolutions


class _QuantConv(_Quantized):
    """Shared ``call`` of the quantized convolutions: ``conv(pad(q_in(x)), q(W)) + q_b(b)``, the
    convolution itself (its kernels and Keras op) in each layer's ``_convolve``."""

    def call(self, inputs, training=None):
        return _bias_and_activation(self, self._accumulate(inputs, training), training)

    def _accumulate(self, inputs, training):
        """The convolution of the quantized input with the quantized kernel, scales applied."""
        x, s_in = self._input(inputs, training)
        x, padding, strides = _conv_input(self, x)
        x, scales = _summed(self, training, lambda v: self._convolve_split(v, strides, padding, training), x)
        return _static_shape(self, inputs, self._rescaled(x, s_in, scales))

    def _latent_product(self, x):
        """The quantized input convolved with the latent (float) kernel: what a folded BatchNorm sees."""
        x, padding, strides = _conv_input(self, x)
        return self._convolve_with(x, self._weight(self._tagged_kernels[0][1], latent=True), strides, padding)

    def _convolve_split(self, x, strides, padding, training):
        """(the convolution with the kernel's unscaled values, its kernel scales after the sum)."""
        which = self._tagged_kernels[0][1]
        kernel, s = self.split_weight(which, training)
        return self._convolve_with(x, kernel, strides, padding), ((which, s),)

    def split_kernel(self, training=None):
        """(kernel values the layer convolves with, scale per output channel or None)."""
        which = self._tagged_kernels[0][1]
        v, s = self.split_weight(which, training)
        return v, self._channels(which, s)

    def _convolve(self, x, strides, padding, training):
        """The convolution with the quantized kernel (scale inside the product)."""
        return self._convolve_with(x, self.quantized_kernel(training), strides, padding)

    def _options(self, strides, padding) -> dict:
        return {"strides": strides, "padding": padding, "dilation_rate": self.dilation_rate, "data_format": self.data_format}


class _QuantFilters(_QuantConv):
    """QuantConv1D/2D: one kernel of ``filters`` filters, quantized by ``kernel_quantizer``."""

    _quantizer_keys = ("input_quantizer", "kernel_quantizer", "bias_quantizer")

    _tagged_kernels = (("_kernel", "kernel_quantizer"),)

    def __init__(
        self, filters, kernel_size, input_quantizer=None, kernel_quantizer=None, bias_quantizer=None, pad_values=0.0, **kwargs
    ):
        super().__init__(filters, kernel_size, **_constraint_args(kwargs))
        self._set_quantizers(
            pad_values, input_quantizer=input_quantizer, kernel_quantizer=kernel_quantizer, bias_quantizer=bias_quantizer
        )

    def quantized_kernel(self, training=None):
        return self.quantized_weight("kernel_quantizer", training)

    def _convolve_with(self, x, kernel, strides, padding):
        return ops.conv(x, ops.cast(kernel, x.dtype), **self._options(strides, padding))


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantConv1D(_QuantFilters, keras.layers.Conv1D):
    """``Conv1D`` on quantized inputs and weights, with larq's ``pad_values``."""


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantConv2D(_QuantFilters, keras.layers.Conv2D):
    """``Conv2D`` on quantized inputs and weights, with larq's ``pad_values``."""


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantDepthwiseConv2D(_QuantConv, keras.layers.DepthwiseConv2D):
    """``DepthwiseConv2D`` on quantized inputs and weights:
    ``depthwise_conv(pad(q_in(x)), q_d(W)) + q_b(b)``, with larq's ``pad_values``."""

    _quantizer_keys = ("input_quantizer", "depthwise_quantizer", "bias_quantizer")

    def __init__(
        self, kernel_size, input_quantizer=None, depthwise_quantizer=None, bias_quantizer=None, pad_values=0.0, **kwargs
    ):
        super().__init__(kernel_size, **_constraint_args(kwargs))
        self._set_quantizers(
            pad_values, input_quantizer=input_quantizer, depthwise_quantizer=depthwise_quantizer, bias_quantizer=bias_quantizer
        )

    _tagged_kernels = (("kernel", "depthwise_quantizer"),)

    def quantized_kernel(self, training=None):
        """The quantized depthwise kernel (Keras names this weight ``kernel``)."""
        return self.quantized_weight("depthwise_quantizer", training)

    def _convolve_with(self, x, kernel, strides, padding):
        return _depthwise(x, kernel, self._options(strides, padding))


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantSeparableConv2D(_QuantConv, keras.layers.SeparableConv2D):
    """``SeparableConv2D`` on quantized inputs and weights:
    ``pointwise(depthwise(pad(q_in(x)), q_d(Wd)), q_p(Wp)) + q_b(b)``, with larq's
    ``pad_values``. The depthwise result is not quantized before the pointwise step."""

    _quantizer_keys = ("input_quantizer", "depthwise_quantizer", "pointwise_quantizer", "bias_quantizer")

    def __init__(
        self,
        filters,
        kernel_size,
        input_quantizer=None,
        depthwise_quantizer=None,
        pointwise_quantizer=None,
        bias_quantizer=None,
        pad_values=0.0,
        **kwargs,
    ):
        super().__init__(filters, kernel_size, **_constraint_args(kwargs))
        self._set_quantizers(
            pad_values,
            input_quantizer=input_quantizer,
            depthwise_quantizer=depthwise_quantizer,
            pointwise_quantizer=pointwise_quantizer,
            bias_quantizer=bias_quantizer,
        )

    _tagged_kernels = (("depthwise_kernel", "depthwise_quantizer"), ("pointwise_kernel", "pointwise_quantizer"))

    def quantized_depthwise_kernel(self, training=None):
        return self.quantized_weight("depthwise_quantizer", training)

    def quantized_pointwise_kernel(self, training=None):
        return self.quantized_weight("pointwise_quantizer", training)

    def _convolve(self, x, strides, padding, training):
        if x.dtype == "float64" and strides[0] != strides[1]:  # as _depthwise: one sum after the other, exact
            x = _depthwise(x, self.quantized_depthwise_kernel(training), self._options(strides, padding))
            pointwise = ops.cast(self.quantized_pointwise_kernel(training), x.dtype)
            return ops.conv(x, pointwise, strides=1, padding="valid", data_format=self.data_format)
        return ops.separable_conv(
            x,
            ops.cast(self.quantized_depthwise_kernel(training), x.dtype),
            ops.cast(self.quantized_pointwise_kernel(training), x.dtype),
            **self._options(strides, padding),
        )

    def _convolve_split(self, x, strides, padding, training):
        """With a scaled depthwise or pointwise kernel: the depthwise convolution on its unscaled
        values, the pointwise convolution on its unscaled values, and the scales after the sum
        (the pointwise one, then a depthwise scale of one value, which commutes with the
        pointwise sum); a depthwise scale per channel multiplies the depthwise result before the
        pointwise sum. Otherwise Keras's separable convolution."""
        dv, ds = self.split_weight("depthwise_quantizer", training)
        pv, ps = self.split_weight("pointwise_quantizer", training)
        if ds is None and ps is None:
            return self._convolve(x, strides, padding, training), ()
        x = _depthwise(x, dv, self._options(strides, padding))
        if ds is not None and not _one_value(ds):  # in the sum's type (float64 when the layer sums exactly)
            x = self.depthwise_quantizer.rescale(x, ops.cast(self._channels("depthwise_quantizer", ds), x.dtype))
        x = ops.conv(x, ops.cast(pv, x.dtype), strides=1, padding="valid", data_format=self.data_format)
        return x, (("pointwise_quantizer", ps), ("depthwise_quantizer", ds if ds is not None and _one_value(ds) else None))

    def _after_sum(self):
        ds = self.split_weight("depthwise_quantizer")[1]
        return ("pointwise_quantizer", "depthwise_quantizer") if ds is not None and _one_value(ds) else ("pointwise_quantizer",)


# --------------------------------------------------------------------------- activation


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantActivation(keras.layers.Layer):
    """Applies a quantizer as a layer, e.g. ``QuantActivation("ste_sign")``."""

    _config_key = "quantizer"  # the argument its config holds the quantizer in

    def __init__(self, quantizer, **kwargs):
        super().__init__(**kwargs)
        self.quantizer = _quantizer_arg(quantizer)
        if self.quantizer is None:
            raise ValueError("QuantActivation needs a quantizer, e.g. QuantActivation('ste_sign')")

    def call(self, inputs, training=None):
        return self.quantizer(inputs, training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config[self._config_key] = q.serialize(self.quantizer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config[cls._config_key] = q.get(config[cls._config_key])
        return cls(**config)


# ------------------------------------------------------------------------------ QKeras's names


def _quantizer_activation(activation):
    """(Keras activation or None, quantizer or None) of a QKeras-style ``activation=``: a
    quantizer (its string, e.g. ``"quantized_relu(4)"``, or object) is applied after the bias as
    QKeras does; anything else is a Keras activation (a name Keras knows stays Keras's: no
    quantizer alias is one)."""
    if isinstance(activation, q.Quantizer):
        return None, activation
    if isinstance(activation, str):
        try:
            keras.activations.get(activation)
            return activation, None
        except ValueError:
            pass
    if isinstance(activation, str | dict):
        try:
            return None, q.get(activation)
        except ValueError:
            return activation, None  # Keras names what neither knows
    return activation, None


def _qkeras_range(quantizer) -> tuple[float, int]:
    """(m, bits) of a weight quantizer as QKeras sizes its clip and initializer: ``m`` the larger
    of 1 and its largest value, ``bits`` its bit width (1 for two levels, 2 for three)."""
    quantizer = q.get(quantizer)
    hw = quantizer.hardware()
    top = float(hw.type.max) if isinstance(hw, forms.Fixed) else 1.0
    bits = getattr(quantizer, "bits", None) or (2 if isinstance(hw, forms.Ternary) else 1)
    return max(1.0, top), int(bits)


@keras.saving.register_keras_serializable(package="edgebnn")
class QKerasInitializer(keras.initializers.Initializer):
    """QKeras's ``QInitializer``: a variance-scaling initializer (``he_normal``, ``glorot_uniform``,
    ``lecun_uniform``, ...) whose draws are too narrow for a coarse weight quantizer (their
    standard deviation below the quantizer's resolution ``m * 2**-bits``) is drawn again with its
    scale multiplied by ``sum(q(w)**2) / sum(q(w) * w)`` (by ``m / rms(w)`` when every draw
    quantizes to 0), at least 1; the draws are clipped to ``[-m, m]``. So a ternary or binary
    kernel does not start all zero (every output constant), as plain ``he_normal`` makes a
    ternary kernel of a wide layer."""

    def __init__(self, initializer, quantizer):
        self.initializer = keras.initializers.get(initializer)
        self.quantizer = q.get(quantizer)

    def __call__(self, shape, dtype=None):
        m, bits = _qkeras_range(self.quantizer)
        init = self.initializer
        w = init(shape, dtype=dtype)
        x = keras.ops.convert_to_numpy(w).astype(np.float64)
        if m * 2.0**-bits > float(np.std(x)):
            codes = keras.ops.convert_to_numpy(self.quantizer(w, training=False)).astype(np.float64)
            if not np.any(codes):
                factor = m / float(np.sqrt(np.mean(x * x)))
            else:
                factor = float(np.sum(codes * codes) / np.sum(codes * x))
            init = keras.initializers.VarianceScaling(
                scale=init.scale * max(factor, 1.0), mode=init.mode, distribution=init.distribution, seed=init.seed
            )
            w = init(shape, dtype=dtype)
        return keras.ops.clip(w, -m, m)

    def get_config(self):
        return {"initializer": keras.initializers.serialize(self.initializer), "quantizer": q.serialize(self.quantizer)}


def _qkeras_defaults(kwargs: dict, quantizers: dict) -> dict:
    """QKeras's defaults for a weighted layer: ``he_normal`` kernels, a kernel quantizer's
    variance-scaling initializer rescaled for coarse quantizers (:class:`QKerasInitializer`, as
    QKeras's ``QInitializer``), and a weight given a quantizer but no constraint clipped to
    ``[-m, m]``, ``m`` the larger of 1 and the quantizer's largest value (QKeras's ``Clip``; here
    edgebnn's ``WeightClip``)."""
    from .constraints import WeightClip

    kwargs.setdefault("kernel_initializer", "he_normal")
    kernel_q = quantizers.get("kernel")
    init = kwargs["kernel_initializer"]
    if kernel_q is not None and not isinstance(init, QKerasInitializer | dict):
        init = keras.initializers.get(init)
        if isinstance(init, keras.initializers.VarianceScaling) and not isinstance(getattr(q.get(kernel_q), "alpha", None), str):
            kwargs["kernel_initializer"] = QKerasInitializer(init, kernel_q)
    for weight, quantizer in quantizers.items():
        key = f"{weight}_constraint"
        if quantizer is not None and kwargs.get(key) is None:
            kwargs[key] = WeightClip(_qkeras_range(quantizer)[0])
    return kwargs


class _QKerasActivation:
    """A QKeras-style layer whose ``activation=`` may be a quantizer (``activation_quantizer``,
    applied after the bias; freeze folds it like a ``QuantActivation`` after the layer)."""

    def _set_activation_quantizer(self, quantizer):
        self.activation_quantizer = quantizer

    def call(self, inputs, training=None):
        y = super().call(inputs, training=training)
        if self.activation_quantizer is not None:
            y = self.activation_quantizer(y, training=training)
        return y

    def get_config(self):
        config = super().get_config()
        if self.activation_quantizer is not None:
            config["activation"] = q.serialize(self.activation_quantizer)
        return config


@keras.saving.register_keras_serializable(package="edgebnn")
class QDense(_QKerasActivation, QuantDense):
    """QKeras's ``QDense`` as QKeras users write it: ``kernel_quantizer``, ``bias_quantizer``,
    ``activation=`` a Keras activation or a quantizer (``"quantized_relu(4)"``), QKeras's
    defaults (:func:`_qkeras_defaults`). It has no input quantizer, as in QKeras: quantize the
    input with a ``QActivation`` before it (or ``freeze(input_type=...)``)."""

    def __init__(self, units, activation=None, kernel_quantizer=None, bias_quantizer=None, **kwargs):
        activation, quantizer = _quantizer_activation(activation)
        kwargs = _qkeras_defaults(kwargs, {"kernel": kernel_quantizer, "bias": bias_quantizer})
        super().__init__(units, kernel_quantizer=kernel_quantizer, bias_quantizer=bias_quantizer, activation=activation, **kwargs)
        self._set_activation_quantizer(quantizer)


@keras.saving.register_keras_serializable(package="edgebnn")
class QConv2D(_QKerasActivation, QuantConv2D):
    """QKeras's ``QConv2D`` as QKeras users write it (see :class:`QDense`)."""

    def __init__(self, filters, kernel_size, activation=None, kernel_quantizer=None, bias_quantizer=None, **kwargs):
        activation, quantizer = _quantizer_activation(activation)
        kwargs = _qkeras_defaults(kwargs, {"kernel": kernel_quantizer, "bias": bias_quantizer})
        quantizers = {"kernel_quantizer": kernel_quantizer, "bias_quantizer": bias_quantizer}
        super().__init__(filters, kernel_size, activation=activation, **quantizers, **kwargs)
        self._set_activation_quantizer(quantizer)


class _FoldedBatchnorm:
    """QKeras's ``QDenseBatchnorm`` / ``QConv2DBatchnorm``: a BatchNormalization folded into the
    layer's kernel and bias before they are quantized, so the hardware holds only the quantized
    folded weights (QKeras's ``folding_mode`` "ema_stats_folding", the default, or
    "batch_stats_folding"; ``ema_freeze_delay`` training steps after which the statistics stop
    moving). With ``inv = gamma / sqrt(moving_variance + epsilon)``, at inference

    .. math::
        y = q_k(\\mathrm{inv} \\cdot W) \\cdot x + q_b(\\mathrm{inv} \\cdot (b - \\mathrm{moving\\_mean}) + \beta)

    (``b`` = 0 without ``use_bias``), then the activation. In training, as QKeras: the batch's
    mean and variance of ``x W + b`` (latent kernel) update the moving statistics; "ema" folds the
    kernel with the moving statistics and corrects the product by
    ``sqrt(moving_variance + eps) / sqrt(variance + eps)`` and the bias with the batch's, until the
    freeze; "batch" folds both with the batch's. freeze reads the folded quantized kernel and the
    folded bias (:meth:`folded_bias`), so the layer deploys as a plain quantized layer."""

    synchronized = False  # the batch's statistics over all replicas (set by edgebnn.train's replicated loop)

    # the folded BatchNorm's keyword arguments (besides the layer's own)
    BATCHNORM_KEYS = (
        "momentum",
        "epsilon",
        "center",
        "scale",
        "ema_freeze_delay",
        "folding_mode",
        "gamma_initializer",
        "beta_initializer",
        "moving_mean_initializer",
        "moving_variance_initializer",
    )

    def _init_batchnorm(self, use_bias, momentum, epsilon, center, scale, ema_freeze_delay, folding_mode, initializers):
        if folding_mode not in ("ema_stats_folding", "batch_stats_folding"):
            raise ValueError(
                f"{type(self).__name__}: folding_mode must be 'ema_stats_folding' or 'batch_stats_folding', got {folding_mode!r}"
            )
        self.latent_use_bias = bool(use_bias)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.ema_freeze_delay = None if ema_freeze_delay is None else int(ema_freeze_delay)
        self.folding_mode = folding_mode
        self.bn_initializers = {k: keras.initializers.get(v) for k, v in initializers.items()}
        self._fold = None  # (inv, folded bias) of the batch while a training call runs

    def build(self, input_shape):
        super().build(input_shape)
        c = int(self.bias.shape[0])
        init = self.bn_initializers
        self.gamma = self.add_weight(shape=(c,), name="gamma", initializer=init["gamma"]) if self.scale else None
        self.beta = self.add_weight(shape=(c,), name="beta", initializer=init["beta"]) if self.center else None
        self.moving_mean = self.add_weight(shape=(c,), name="moving_mean", initializer=init["moving_mean"], trainable=False)
        self.moving_variance = self.add_weight(
            shape=(c,), name="moving_variance", initializer=init["moving_variance"], trainable=False
        )
        self.iteration = self.add_weight(shape=(), name="iteration", initializer="zeros", dtype="int64", trainable=False)
        if not self.latent_use_bias:
            self.bias.trainable = False  # b = 0, as QKeras folds without a bias

    def _inv(self, variance):
        inv = ops.rsqrt(variance + self.epsilon)
        return inv if self.gamma is None else inv * self.gamma

    def _shifted(self, inv, mean):
        b = inv * (self.bias - mean)
        return b if self.beta is None else b + self.beta

    def folded_bias(self):
        """The float bias the layer adds at inference (before ``bias_quantizer``)."""
        if self._fold is not None:
            return self._fold[1]
        return self._shifted(self._inv(self.moving_variance), self.moving_mean)

    def quantized_bias(self, training=None):
        return _apply(self.bias_quantizer, self.folded_bias(), training)

    def _weight(self, which: str, latent: bool = False):
        kernel = super()._weight(which)
        if latent:
            return kernel
        inv = self._fold[0] if self._fold is not None else self._inv(self.moving_variance)
        return kernel * inv  # the output channel is the kernel's last axis

    def call(self, inputs, training=None):
        if not training:
            return self._finish(_bias_and_activation(self, self._accumulate(inputs, training), training), training)
        x = _apply(self.input_quantizer, inputs, training)
        raw = self._latent_product(x) + self.bias
        axes = list(range(len(raw.shape) - 1))
        mean, variance = ops.moments(raw, axes=axes, synchronized=self.synchronized)
        moving = self.ema_freeze_delay is None or self.ema_freeze_delay < 0
        bn_training = ops.convert_to_tensor(True) if moving else ops.less_equal(self.iteration, self.ema_freeze_delay)
        m = self.momentum
        self.moving_mean.assign(ops.where(bn_training, self.moving_mean * m + mean * (1.0 - m), self.moving_mean))
        self.moving_variance.assign(ops.where(bn_training, self.moving_variance * m + variance * (1.0 - m), self.moving_variance))
        self.iteration.assign_add(ops.convert_to_tensor(1, dtype="int64"))
        if self.folding_mode == "batch_stats_folding":
            use_mean = ops.where(bn_training, mean, self.moving_mean)
            use_var = ops.where(bn_training, variance, self.moving_variance)
            inv = self._inv(use_var)
            self._fold = (inv, self._shifted(inv, use_mean))
            correction = None
        else:
            mv_inv = self._inv(self.moving_variance)
            bias = ops.where(bn_training, self._shifted(self._inv(variance), mean), self._shifted(mv_inv, self.moving_mean))
            self._fold = (mv_inv, bias)
            correction = ops.where(
                bn_training, ops.sqrt(self.moving_variance + self.epsilon) * ops.rsqrt(variance + self.epsilon), 1.0
            )
        try:
            y = self._accumulate(inputs, training)
            if correction is not None:
                y = y * correction
            y = add_bias(y, self.quantized_bias(training), training)
        finally:
            self._fold = None
        if self.activation is not None:
            y = self.activation(y)
        return self._finish(y, training)

    # every variable (kernel, bias, the BatchNorm's four, the step count), as a plain Keras layer
    # saves its own (Keras's Dense and Conv save their kernel and bias only)
    def save_own_variables(self, store):
        keras.layers.Layer.save_own_variables(self, store)

    def load_own_variables(self, store):
        keras.layers.Layer.load_own_variables(self, store)

    def _finish(self, y, training):
        quantizer = getattr(self, "activation_quantizer", None)
        return y if quantizer is None else quantizer(y, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(
            use_bias=self.latent_use_bias,
            momentum=self.momentum,
            epsilon=self.epsilon,
            center=self.center,
            scale=self.scale,
            ema_freeze_delay=self.ema_freeze_delay,
            folding_mode=self.folding_mode,
            **{f"{k}_initializer": keras.initializers.serialize(v) for k, v in self.bn_initializers.items()},
        )
        return config


_BN_DEFAULTS = {"gamma": "ones", "beta": "zeros", "moving_mean": "zeros", "moving_variance": "ones"}


def _batchnorm_args(kwargs) -> tuple[dict, dict]:
    """(the folded BatchNorm's arguments, the rest) of a fused layer's keyword arguments."""
    bn = {k: kwargs.pop(k) for k in ("momentum", "epsilon", "center", "scale", "ema_freeze_delay", "folding_mode") if k in kwargs}
    bn.setdefault("momentum", 0.99)
    bn.setdefault("epsilon", 1e-3)
    bn.setdefault("center", True)
    bn.setdefault("scale", True)
    bn.setdefault("ema_freeze_delay", None)
    bn.setdefault("folding_mode", "ema_stats_folding")
    bn["initializers"] = {k: kwargs.pop(f"{k}_initializer", v) for k, v in _BN_DEFAULTS.items()}
    for k in ("axis", "renorm", "virtual_batch_size", "adjustment", "fused"):
        value = kwargs.pop(k, None)
        if value not in (None, False, -1, [-1]):
            raise ValueError(f"the folded BatchNorm takes {k}={value!r} only as QKeras's default (axis=-1, no renorm)")
    return bn, kwargs


@keras.saving.register_keras_serializable(package="edgebnn")
class QDenseBatchnorm(_FoldedBatchnorm, QDense):
    """QKeras's ``QDenseBatchnorm``: a :class:`QDense` with a BatchNormalization folded into its
    kernel and bias before they are quantized (see :class:`_FoldedBatchnorm`)."""

    def __init__(self, units, activation=None, kernel_quantizer=None, bias_quantizer=None, use_bias=True, **kwargs):
        bn, kwargs = _batchnorm_args(kwargs)
        super().__init__(units, activation=activation, kernel_quantizer=kernel_quantizer, bias_quantizer=bias_quantizer, **kwargs)
        self._init_batchnorm(use_bias, **bn)


@keras.saving.register_keras_serializable(package="edgebnn")
class QConv2DBatchnorm(_FoldedBatchnorm, QConv2D):
    """QKeras's ``QConv2DBatchnorm``: a :class:`QConv2D` with a BatchNormalization folded into its
    kernel and bias before they are quantized (see :class:`_FoldedBatchnorm`)."""

    def __init__(
        self, filters, kernel_size, activation=None, kernel_quantizer=None, bias_quantizer=None, use_bias=True, **kwargs
    ):
        bn, kwargs = _batchnorm_args(kwargs)
        quantizers = {"kernel_quantizer": kernel_quantizer, "bias_quantizer": bias_quantizer}
        super().__init__(filters, kernel_size, activation=activation, **quantizers, **kwargs)
        self._init_batchnorm(use_bias, **bn)


@keras.saving.register_keras_serializable(package="edgebnn")
class QActivation(QuantActivation):
    """QKeras's ``QActivation(activation=...)``: a quantizer (``"quantized_relu(4)"``,
    ``"binary_tanh"``, ...) as a layer; the same as :class:`QuantActivation`."""

    def __init__(self, activation=None, **kwargs):
        quantizer = kwargs.pop("quantizer", None)
        super().__init__(activation if activation is not None else quantizer, **kwargs)

    _config_key = "activation"


@keras.saving.register_keras_serializable(package="edgebnn")
class QBatchNormalization(keras.layers.BatchNormalization):
    """QKeras's ``QBatchNormalization``: a BatchNormalization whose gamma, beta, mean and
    variance pass through quantizers, with QKeras's defaults (``gamma_quantizer=
    "quantized_relu_po2(6, 2048)"``, ``beta_quantizer="quantized_po2(5)"``, ``mean_quantizer=
    "quantized_po2(5)"``, ``variance_quantizer="quantized_relu_po2(6,
    quadratic_approximation=True)"``; None leaves one as it is). As QKeras computes it: in
    training the batch's mean and variance are quantized for the output and the moving
    statistics follow the unquantized ones; at inference the quantized moving statistics are
    used, ``(x - q(mean)) / sqrt(q(var) + epsilon) * q(gamma) + q(beta)`` (Keras's
    ``batch_normalization``). Freeze folds it like a BatchNormalization, from its own inference
    arithmetic. (QKeras also clips gamma and beta to their quantizers' ranges while training;
    that is not reproduced: the trained values differ, not the frozen model's arithmetic.)"""

    QUANTIZED = ("gamma", "beta", "mean", "variance")

    def __init__(
        self,
        axis=-1,
        momentum=0.99,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_quantizer="quantized_po2(5)",
        gamma_quantizer="quantized_relu_po2(6, 2048)",
        mean_quantizer="quantized_po2(5)",
        variance_quantizer="quantized_relu_po2(6, quadratic_approximation=True)",
        **kwargs,
    ):
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale, **kwargs)
        if self.renorm:
            raise ValueError("QBatchNormalization does not support renorm (nor does QKeras's)")
        given = dict(gamma=gamma_quantizer, beta=beta_quantizer, mean=mean_quantizer, variance=variance_quantizer)
        for which, quantizer in given.items():
            setattr(self, f"{which}_quantizer", _quantizer_arg(quantizer))

    def _q(self, which: str, value, training=None):
        quantizer = getattr(self, f"{which}_quantizer")
        return value if quantizer is None or value is None else quantizer(value, training=training)

    def inference_parameters(self):
        """(gamma, beta, mean, variance) as inference uses them (quantized; None for an absent
        gamma or beta), float32 tensors."""
        gamma = ops.cast(self.gamma, "float32") if self.scale else None
        beta = ops.cast(self.beta, "float32") if self.center else None
        mean, variance = ops.cast(self.moving_mean, "float32"), ops.cast(self.moving_variance, "float32")
        return (self._q("gamma", gamma), self._q("beta", beta), self._q("mean", mean), self._q("variance", variance))

    def call(self, inputs, training=None, mask=None):
        inputs = ops.cast(inputs, "float32")  # as BatchNormalization computes (float16 upcast too)
        if training and self.trainable:
            gamma = self._q("gamma", ops.cast(self.gamma, inputs.dtype) if self.scale else None, training)
            beta = self._q("beta", ops.cast(self.beta, inputs.dtype) if self.center else None, training)
            mean, variance = self._moments(inputs, mask)
            moving_mean = ops.cast(self.moving_mean, inputs.dtype)
            moving_variance = ops.cast(self.moving_variance, inputs.dtype)
            self.moving_mean.assign(moving_mean * self.momentum + mean * (1.0 - self.momentum))
            self.moving_variance.assign(moving_variance * self.momentum + variance * (1.0 - self.momentum))
            mean, variance = self._q("mean", mean, training), self._q("variance", variance, training)
        else:
            gamma, beta, mean, variance = self.inference_parameters()
        outputs = ops.batch_normalization(
            x=inputs, mean=mean, variance=variance, axis=self.axis, offset=beta, scale=gamma, epsilon=self.epsilon
        )
        return ops.cast(outputs, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        for which in self.QUANTIZED:
            config[f"{which}_quantizer"] = q.serialize(getattr(self, f"{which}_quantizer"))
        return config


# ------------------------------------------------------------------------------- loading
def load_model(path, compile: bool = True):
    """A saved ``.keras`` model with edgebnn's layers, loaded with Keras ``safe_mode`` (no code
    in the file runs). edgebnn's layers, quantizers, constraints and optimizers are registered
    with Keras first, so no ``custom_objects`` are needed whatever was imported before."""
    from . import constraints, optimizers  # noqa: F401 - they register themselves with Keras

    return keras.saving.load_model(path, compile=compile, safe_mode=True)
