"""Caveats of a threshold step where Keras's own result is not one number: an activation that
TensorFlow computes differently at different tensor positions near a quantization step (the
``layout`` caveat), a transcendental activation that TensorFlow may fuse into the convolution or
matmul before it near a quantization step (``fused``), one that ``model.predict``'s compiled graph
computes otherwise than eager ``model(x)`` (``eager``), a scale after integer codes that XLA may
combine with the dot product or the float ops after it (``xla_scale``), a BatchNormalization that
XLA computes as a fused multiply-add (``xla_fma``), and one that TensorFlow computes fused or
rounded by the element's position in the tensor without XLA (``layout`` too). A float bias of
edgebnn's layers has none: they add it to the exact sum in every path
(:func:`edgebnn.training.layers.add_bias`)."""

from __future__ import annotations

import keras

from .. import forms, replay
from ..items import Step

# the nodes whose accumulator TensorFlow may fuse with the activation after it
WEIGHTED = ("dense", "conv2d", "depthwise_conv2d", "conv1d")


def run(step: Step, freezing) -> None:
    """Append the caveats of a requant step to ``freezing.caveats``; of an affine step (a model
    ending with real-valued outputs) the XLA one of a scale, which moves those outputs by an ulp."""
    if step.kind not in ("requant", "affine"):
        return
    if step.kind == "requant":  # the ones that replay the step's thresholds
        normalization = _xla_fma(step, freezing) if freezing.jit else _batch(step, freezing)
        found = [_layout(step, freezing) or _fused(step, freezing), _eager(step, freezing), normalization]
        freezing.caveats.extend(c for c in found if c)
    if freezing.jit:
        freezing.caveats.extend(_xla_scale(step, op) for op in step.float_ops if op.scale)


def _layout_sensitive(i, op, src) -> bool:
    """The float op is an activation whose float32 results TensorFlow computes otherwise by path."""
    return op.layout_sensitive is not None


def _layout(step: Step, freezing) -> dict | None:
    """The thresholds follow the vectorized result (the accumulator values were evaluated in
    one large tensor); where a value's quantized output differs when evaluated alone, Keras
    itself is not deterministic across batch layouts."""
    return _first(
        step,
        freezing,
        "layout",
        _layout_sensitive,
        replay.layout_flips,
        lambda op, n, src: (
            f"{op.layout_sensitive} in {op.label!r} gives float32 results in TensorFlow that depend on the "
            f"element's position in the tensor, and {n} accumulator value(s) of {src.name!r} lie within "
            "those few ulps of a quantization step, so Keras's own output there depends on the batch layout "
            "(e.g. batch size 1 vs 32); the deployed model follows the vectorized result. A layout-stable "
            "activation (relu, tanh, hard_sigmoid, softsign) avoids this"
        ),
    )


def _eager(step: Step, freezing) -> dict | None:
    """An activation that TensorFlow computes one way in ``model.predict``'s compiled graph
    (rewritten or fused there: oneDNN's fused mish gives -0.0 where eager mish gives a tiny
    negative value) and another in eager ``model(x)``; where that moves an accumulator value's
    quantized output, Keras's two paths differ (fuzz seed 36003)."""
    return _first(
        step,
        freezing,
        "eager",
        _layout_sensitive,
        replay.eager_flips,
        lambda op, n, src: (
            f"{op.layout_sensitive} in {op.label!r} gives other float32 results in model.predict (TensorFlow's "
            f"compiled graph, which may rewrite or fuse it) than in eager model(x), and {n} accumulator value(s) of "
            f"{src.name!r} get different quantized outputs the two ways, so Keras's own output depends on the path; "
            "the deployed model follows model.predict, which verify compares against. A piecewise-linear activation "
            "(relu, relu6, leaky_relu, hard_sigmoid) avoids this"
        ),
    )


def _fused(step: Step, freezing) -> dict | None:
    """TensorFlow's graph optimizer (grappler's remapper) runs a convolution or matmul, its bias
    and a following elu, tanh, sigmoid, gelu or swish as one fused kernel in ``model.predict``,
    whose float32 activation may differ by a few ulps from the same activation computed alone
    (as eager Keras and freeze's replay compute it). Where an accumulator value lies within
    those ulps of a quantization step, Keras's own output depends on how TensorFlow runs it."""

    def fused(i, op, src):  # only what directly follows the accumulator (and its bias) is fused
        return op.fusable is not None and src.op in WEIGHTED and all(o.bias for o in step.float_ops[:i])

    return _first(
        step,
        freezing,
        "fused",
        fused,
        replay.near_steps,
        lambda op, n, src: (
            f"{op.fusable} in {op.label!r} may run fused into the {src.op} of {src.name!r} in model.predict "
            f"(TensorFlow's graph optimizer), where its float32 results differ by a few ulps from the same activation "
            f"alone, and {n} accumulator value(s) lie within those ulps of a quantization step, so Keras's own output "
            "there depends on how TensorFlow runs the model; the deployed model follows the activation computed alone "
            "(as eager Keras does). A piecewise-linear activation (relu, relu6, leaky_relu, hard_sigmoid) avoids this"
        ),
    )


def _first(step: Step, freezing, kind: str, applies, count, reason) -> dict | None:
    """The caveat ``kind`` of the first float op ``i`` of ``step`` that ``applies(i, op, src)``
    and for which ``count(step, i, *replay arguments)`` accumulator values are affected."""
    src, replayed = _replayed(step, freezing)
    for i, op in enumerate(step.float_ops):
        if applies(i, op, src):
            n = count(step, i, *replayed)
            if n:
                return {"node": step.name, "layer": op.label, "kind": kind, "reason": reason(op, n, src)}
    return None


def _replayed(step: Step, freezing):
    """The accumulator node of the step's threshold and the replay arguments of its thresholds:
    (values, output codes, output type, jit, rank)."""
    src = freezing.node(freezing.node(step.name).inputs[0])
    values, out_codes = freezing.replayed[step.name]
    return src, (values, out_codes, forms.output_type(step.quantizer), freezing.jit, len(src.shape))


def _normalization(i, op, src) -> bool:
    """The float op is a BatchNormalization itself (not a part of a layer named after it)."""
    return isinstance(op.layer, keras.layers.BatchNormalization) and op.label == op.layer.name


def _xla_fma(step: Step, freezing) -> dict | None:
    """Under XLA a BatchNormalization's product and offset become one fused multiply-add, while
    eager ``model(x)`` rounds the product and then sums (and inside the model XLA may fuse it
    where a replay of the normalization alone does not): where that moves a value across a
    quantization step, Keras's two paths give different outputs. The thresholds follow the
    model under XLA (``model.predict``), which ``verify`` compares against."""
    return _first(
        step,
        freezing,
        "xla_fma",
        _normalization,
        replay.xla_flips,
        lambda op, n, src: (
            f"layer {op.label!r} (BatchNormalization) under XLA (jit_compile=True) computes x * inv + (beta - mean * "
            f"inv) as one fused multiply-add, eager Keras (model(x)) as a rounded product and sum, and {n} accumulator "
            f"value(s) of {src.name!r} get different quantized outputs the two ways, so Keras's own output depends on "
            "the path; the deployed model follows model.predict under XLA, which verify compares against, and eager "
            "model(x) differs there. Compile with jit_compile=False for a model Keras computes one way"
        ),
    )


def _batch(step: Step, freezing) -> dict | None:
    """Without XLA, TensorFlow's CPU kernel computes a BatchNormalization as a fused multiply-add
    in the vectorized body of a tensor and as a rounded product and sum in its last partial
    vector, so where an accumulator value on the mean gives different quantized outputs the two
    ways, Keras's own output depends on the batch size (fuzz seed 40145)."""
    return _first(
        step,
        freezing,
        "layout",
        _normalization,
        replay.batch_flips,
        lambda op, n, src: (
            f"layer {op.label!r} (BatchNormalization) computes x * inv + (beta - mean * inv) in TensorFlow as one "
            f"fused multiply-add or as a rounded product and sum depending on the element's position in the batch's "
            f"tensor, and {n} accumulator value(s) of {src.name!r} (on the moving mean) get different quantized outputs "
            "the two ways, so Keras's own output there depends on the batch size (e.g. 1 vs 32); the deployed model "
            "follows the vectorized result. A moving mean that no accumulator value equals avoids this"
        ),
    )


def _xla_scale(step: Step, op) -> dict:
    return {
        "node": step.name,
        "layer": op.layer.name,
        "kind": "xla_scale",
        "reason": (
            f"{op.scale} under XLA (jit_compile=True), which may combine that product with the dot product or the "
            "float operations after it at some batch sizes (e.g. 1), so Keras's own outputs depend on the batch size; "
            "the deployed model applies the scale to the exact sum, as Keras does without XLA. For a layout-independent "
            "Keras model use power-of-two scales or compile it with jit_compile=False"
        ),
    }
