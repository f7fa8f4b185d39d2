"""Straight-through-estimator quantizers for Keras 3.

Each quantizer is a small serializable object: called on a tensor it returns the quantized
tensor (forward exactly as the hardware computes it) with the gradient of its estimator, and
``hardware()`` names the grid its outputs lie on as a record of :mod:`edgebnn.forms`, which
freeze exports.

String aliases work wherever a quantizer is accepted: ``"ste_sign"``, ``"quantized_bits"``, or
QKeras-style calls such as ``"quantized_bits(8, 0, keep_negative=False)"``.

Families (each class documents its forward and gradient as math):

- larq: ``SteSign``, ``ApproxSign``, ``SwishSign``, ``MagnitudeAwareSign``, ``SteHeaviside``,
  ``SteTern``, ``DoReFa``, ``NoOp`` (larq's numbers, larq's aliases).
- QKeras: ``quantized_bits``, ``quantized_relu``, ``quantized_tanh``, ``binary``, ``ternary``,
  ``quantized_po2``, ``quantized_relu_po2`` (QKeras's numbers; also importable under their
  QKeras snake_case names).
- ``XnorSign`` (XNOR-Net) and ``PartialQuantizer`` (a quantizer on chosen channels only).

A quantizer whose form is ``scaled`` (XNOR, magnitude-aware sign, DoReFa with k > 1, QKeras
``alpha``) also splits its output: ``split(x)`` gives its unscaled values (integer codes on the
form's grid) and its scale, ``rescale(v, s)`` applies the scale as the quantizer does; the
edgebnn layers sum the codes and apply the scale once after (an order freeze replays exactly).

Two deliberate differences from larq/QKeras, both about exactness: the forward value is the
quantized value itself (QKeras computes ``x + stop_gradient(q - x)``, which float32 may round
off the grid), and stochastic rounding happens only when the caller passes ``training=True``
(never from a global learning phase), drawn from a ``keras.random.SeedGenerator`` the quantizer
owns.


The modules follow the families: ``larq``, ``qkeras``, ``xnor``, ``partial``, on ``base``
(:class:`Quantizer`, rounding, the estimators, names -> quantizers); this
package exports every name of each.
"""

# the names the module had from elsewhere (edgebnn.quantizers.INT2, .FixedType, ...) stay too
from ... import forms  # noqa: F401
from ...errors import EdgebnnError, did_you_mean  # noqa: F401
from ...fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType  # noqa: F401
from ...forms import INT2  # noqa: F401
from .base import (  # noqa: F401
    _ALIASES,
    _EPS,
    _FLOAT_BITS,
    _LN2,
    NoHardwareForm,
    Quantizer,
    _alpha_tensor,
    _alpha_value,
    _argument,
    _channel_scale,
    _check_alpha,
    _custom,
    _floor_half,
    _negative_subnormal,
    _odd,
    _overflow_codes,
    _parse_call,
    _po2,
    _qkeras_axes,
    _qkeras_scale,
    _reduce_axes,
    _register,
    _replica,
    _round_codes,
    _round_conv_sum,
    _round_conv_times,
    _same,
    _sign,
    _ste_identity,
    _ste_over,
    _Stochastic,
    _stochastic_codes,
    _tensor,
    _unknown_quantizer,
    _window,
    check,
    fixed_quantize,
    get,
    serialize,
)
from .larq import (  # noqa: F401
    ApproxSign,
    DoReFa,
    DoReFaQuantizer,
    MagnitudeAwareSign,
    NoOp,
    NoOpQuantizer,
    SteHeaviside,
    SteSign,
    SteTern,
    SwishSign,
    _clip_config,
)
from .partial import PartialQuantizer, shape_problem  # noqa: F401
from .qkeras import (  # noqa: F401
    Binary,
    BinaryTanh,
    QuantizedBits,
    QuantizedPo2,
    QuantizedRelu,
    QuantizedReluPo2,
    QuantizedSigmoid,
    QuantizedTanh,
    Ternary,
    _eagerly,
    _hard_sigmoid,
    _hard_sigmoid_window,
    _need_exponent_sign,
    _no_stochastic,
    _po2_exponents,
    _Po2Base,
    _relu_slope_grad,
    _round_or_draw,
    _rounded_curve,
    _scaled_hardware,
    binary,
    quantized_bits,
    quantized_po2,
    quantized_relu,
    quantized_relu_po2,
    quantized_tanh,
    ternary,
)
from .xnor import XnorSign  # noqa: F401
