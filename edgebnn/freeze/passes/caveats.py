"""Caveats of a threshold step where Keras's own result is not one number: an activation that
TensorFlow computes differently at different tensor positions near a quantization step (the
``layout`` caveat), a transcendental activation that TensorFlow may fuse into the convolution or
matmul before it near a quantization step (``fused``), a float bias that XLA folds into the dot
product (``xla_bias``)."""

from __future__ import annotations

from .. import forms, replay
from ..items import Step


def run(step: Step, freezing) -> None:
    """Append the caveats of a requant step to ``freezing.caveats``."""
    if step.kind != "requant":
        return
    caveat = _layout(step, freezing) or _fused(step, freezing)
    if caveat:
        freezing.caveats.append(caveat)
    if freezing.jit:
        freezing.caveats.extend(_xla_bias(step, op) for op in step.float_ops if op.bias)


def _layout(step: Step, freezing) -> dict | None:
    """The thresholds follow the vectorized result (the accumulator values were evaluated in
    one large tensor); where a value's quantized output differs when evaluated alone, Keras
    itself is not deterministic across batch layouts."""
    node = freezing.nodes[-1]
    src = freezing.node(node.inputs[0])
    values, out_codes = freezing.replayed[step.name]
    for i, op in enumerate(step.float_ops):
        if op.layout_sensitive is None:
            continue
        flipped = replay.layout_flips(step, i, values, out_codes, forms.output_type(step.quantizer), freezing.jit,
                                      rank=len(src.shape))
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


def _fused(step: Step, freezing) -> dict | None:
    """TensorFlow's graph optimizer (grappler's remapper) runs a convolution or matmul, its bias
    and a following elu, tanh, sigmoid, gelu or swish as one fused kernel in ``model.predict``,
    whose float32 activation may differ by a few ulps from the same activation computed alone
    (as eager Keras and freeze's replay compute it). Where an accumulator value lies within
    those ulps of a quantization step, Keras's own output depends on how TensorFlow runs it."""
    node = freezing.nodes[-1]
    src = freezing.node(node.inputs[0])
    if src.op not in ("dense", "conv2d"):
        return None
    values, out_codes = freezing.replayed[step.name]
    for i, op in enumerate(step.float_ops):
        if not all(before.bias for before in step.float_ops[:i]):
            return None  # only what directly follows the accumulator (and its bias) is fused
        if op.fusable is None:
            continue
        near = replay.near_steps(step, i, values, out_codes, forms.output_type(step.quantizer), freezing.jit,
                                 rank=len(src.shape))
        if near:
            return {
                "node": step.name, "layer": op.label, "kind": "fused",
                "reason": (f"{op.fusable} in {op.label!r} may run fused into the {src.op} of {src.name!r} in "
                           f"model.predict (TensorFlow's graph optimizer), where its float32 results differ by a few "
                           f"ulps from the same activation alone, and {near} accumulator value(s) lie within those ulps "
                           "of a quantization step, so Keras's own output there depends on how TensorFlow runs the "
                           "model; the deployed model follows the activation computed alone (as eager Keras does). A "
                           "piecewise-linear activation (relu, relu6, leaky_relu, hard_sigmoid) avoids this"),
            }
    return None


def _xla_bias(step: Step, op) -> dict:
    layer = op.label.rsplit(".", 1)[0]
    return {
        "node": step.name, "layer": layer, "kind": "xla_bias",
        "reason": (f"layer {layer!r} adds a float bias under XLA (jit_compile=True), which folds the bias into the dot "
                   "product at some batch sizes (e.g. 1), so Keras's own outputs depend on the batch size; the "
                   "deployed model adds the bias to the exact sum, as Keras does without XLA. For a layout-independent "
                   "Keras model give the layer a bias_quantizer or compile it with jit_compile=False"),
    }
