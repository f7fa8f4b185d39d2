"""Freeze a trained Keras model into a deployment graph of integers and fixed-point types.

The model is read as a graph of layers in an order that keeps each chain of layers together
(``freeze/chain.py``); in a chain the stream of items is the data flow. Each layer family has a
lowering handler
(``freeze/lower/<family>.py``, table ``lower.HANDLERS``) turning it into raw items; small
passes (``freeze/passes/<rewrite>.py``, lists ``passes.PASSES`` and ``passes.NODE_PASSES``)
rewrite those into steps and the steps into nodes:

* the first layer's ``input_quantizer`` fixes the input's fixed-point type;
* a ``QuantDense`` becomes an exact dense node (integer kernel codes, accumulator type from
  interval analysis), a ``QuantConv2D`` an exact conv2d node (explicit padding amounts with
  TensorFlow's "same" split, ``pad_values`` as a code of the quantized input's type, strides);
* a ``QuantDepthwiseConv2D`` becomes an exact depthwise_conv2d node (weight codes (kh, kw, C, M),
  output channels in Keras's order ``c * M + m``; padding, ``pad_values``, strides and bias as
  for conv2d); a ``QuantSeparableConv2D`` a depthwise_conv2d node (``<layer>_depthwise``, no
  bias) and a 1x1 conv2d node reading its accumulator directly (the pointwise kernel, the
  bias). Keras computes the intermediate in float32; freeze checks it as any accumulator
  (``keras_float32_exact``, a FreezeWarning past 24 significant bits);
* a ``dilation_rate`` (``QuantConv2D`` and the depthwise layers; with strides where Keras allows
  them) becomes the dilated kernel, zero weights between the taps: the node holds what the
  hardware multiplies;
  TensorFlow's "same" split, strides); "same" padding with a non-zero ``pad_values`` is a pad2d
  node of that value (a code of the quantized input's type) before a conv2d node without
  padding, as the layer computes it (hls4ml's convolutions pad zeros only);
* a ``ZeroPadding2D`` becomes a pad2d node of the code 0; it must read a tensor on a grid (a
  quantized one or an accumulator), among float ops it is refused;
* a ``Reshape`` becomes a flatten node (to one axis) or a reshape node (two or three axes), a
  view of the channels-last row-major codes; among float ops it moves after the quantizer like
  a Flatten (refused before a per-channel op or quantizer when it mixes channels);
* the inference no-ops (``Dropout``, ``SpatialDropout1D/2D/3D``, ``GaussianNoise``,
  ``GaussianDropout``, ``AlphaDropout``, ``ActivityRegularization``, ``Identity``) are dropped;
* a ``Flatten`` of an (H, W, C) tensor becomes a flatten node. Between an accumulator and its
  quantizer it is moved after the quantizer (a reshape commutes with elementwise ops), so the
  thresholds stay per channel instead of per flattened feature;
* a ``MaxPooling2D`` (channels_last) becomes a maxpool2d node, after a pad2d node for "same"
  padding (the lowest code the tensor reaches, so each maximum is of real elements, as Keras's).
  On a quantized tensor (after a requantization) or directly on an accumulator it is exact as
  it stands. Between an accumulator and its quantizer (conv -> BN -> MaxPool ->
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
* an ``AveragePooling2D`` (channels_last, "valid" padding, a window of a power of two of values
  ``N = 2**k``) becomes an avgpool2d node: the mean of ``N`` values on one grid is their sum on
  a grid ``N`` times finer, exact, and Keras's float32 mean equals it while the window sums stay
  below 2**24 codes (``keras_float32_exact``). It must read a tensor on a grid: a quantized one
  or an accumulator before any float op; among float ops (conv -> BatchNormalization ->
  AveragePooling2D -> quantizer) it is refused, never moved;
* the 1-D layers on an (L, C) tensor follow the same rules: a ``QuantConv1D`` becomes an exact
  conv1d node ("valid", "same" with TensorFlow's split, "causal"; strides; ``pad_values`` as a
  code; a ``dilation_rate`` as a kernel with zero weights between the taps), a ``MaxPooling1D``
  a maxpool1d node (moved after a quantizer as MaxPooling2D, when exact), an
  ``AveragePooling1D`` an avgpool1d node (a power-of-two window, on a grid), a
  ``GlobalMaxPooling1D`` / ``GlobalAveragePooling1D`` the same pool over the whole length (a
  power of two for the average) followed by a flatten node unless ``keepdims``, and a
  ``ZeroPadding1D`` a zeropad1d node, which must read a quantized tensor or an accumulator
  (refused among float ops, as an average pool is); a ``Flatten`` of an (L, C) tensor a flatten
  node;
* a functional model may branch and merge: an ``Add`` of inputs of one shape becomes an add node
  (its type the narrowest on the finest input grid that holds the sum of the inputs' bounds;
  Keras's float32 sum equals it below 2**24 steps), a ``Concatenate`` along the channel axis a
  concatenate node (a type holding every input exactly). Every tensor read away from the stream
  (by a merge, or by several layers) must be on a grid: a quantizer's output, or an
  accumulator's, a merge's, a pool's or a flatten's before any float op (``passes/branches``
  refuses a real-valued one: quantize before the branch). A merge's output is an exact
  accumulator-like tensor that float ops and a quantizer may follow or that may end the model;
  each step records the steps it reads (``Step.inputs``, ``passes/wire``). Several inputs or
  outputs and a layer called more than once are refused;
* a scaled kernel (XNOR, magnitude-aware sign, QKeras alphas, DoReFa weights; per tensor or per
  output channel) is lowered as its integer codes: the layer sums the codes and applies the
  scale once after (an exact order). A power-of-two scale shifts the codes onto a finer type; any
  other scale, and the scale of a DoReFa or numeric-alpha ``input_quantizer``, becomes a float op
  after the accumulator (a quantized bias follows it), folded into the next thresholds. A
  DoReFa ``QuantActivation`` is deployed as its codes with its scale a float op for the next
  quantizer. A non-power-of-two scale that ends the model is refused (add a quantizer after it);
  AveragePooling2D -> quantizer) it is refused, never moved. A window of any other number of
  values ``N`` (3x3, 3x1, ...) becomes a sumpool2d node (the exact integer sum of the ``N``
  codes) and the division as a float op, folded with what follows into the next
  requantization's threshold node; its thresholds replay Keras's own pooling layer on windows
  holding each possible sum, which is Keras on every window with that sum (the float32 sum of
  on-grid values below 2**24 steps is exact in any order). Without a quantizer after it the
  model is refused (real-valued outputs); "same" padding stays refused;
* a ``GlobalMaxPooling2D`` / ``GlobalAveragePooling2D`` is the matching pool over the whole
  (H, W) window (maxpool2d; avgpool2d, or sumpool2d and its division), then with
  ``keepdims=False`` a flatten node of the one position (which keeps the channels);
* the float operations after an accumulator (a float bias, ``BatchNormalization``, an
  elementwise activation) together with the quantizer that ends them (a ``QuantActivation``
  or the next layer's ``input_quantizer``) become one threshold node (a cast node when the
  quantizer is a plain conversion after relus only);
* a float bias and ``BatchNormalization`` that end the model without a quantizer become an
  affine node ``y = a * x + b`` per channel when Keras's float32 outputs lie exactly on such a
  fixed-point form on every reachable accumulator value (``passes/affine.py``), else they are
  refused with the fix.

Thresholds are not derived by algebra: freeze runs the model's *own* inference arithmetic
(the same Keras ops through ``predict``, ``freeze/replay.py``) on every integer value the
accumulator can take, per channel, and records where the quantized output changes. Ties,
float32 rounding, negative or zero gamma therefore come out exactly as Keras computes them.
Only reachable values are enumerated (``edgebnn.graph.lattice``: e.g. a sum of n terms of +-1
is congruent to n modulo 2), so each threshold sits on a value that can occur and none is
spent on a level reachable only between them; the node records that lattice.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from keras import ops

from ..graph import Graph
from . import kinds
from .chain import branches, inbound, layer_chain, model_jit, trailing_softmax
from .items import MAX_ENUMERATION, FreezeError, FreezeWarning, Freezing, Layer, Planning, Step
from .logits import OUTPUT_QUANTIZER, keras_logits, keras_reference, with_output_quantizer
from .passes import NODE_PASSES, PASSES
from .passes.float32_exactness import inexact as _inexact
from .passes.float32_exactness import unreplayed_roundings

MERGES = ("add", "concatenate")  # the step kinds whose Keras evaluation reads a list of tensors

__all__ = [
    "MAX_ENUMERATION",
    "FreezeError",
    "FreezeWarning",
    "Step",
    "freeze",
    "keras_logits",
    "keras_reference",
    "plan",
    "trace",
    "with_output_quantizer",
]


def _output_quantizer(output_quantizer):
    """``output_quantizer`` as a quantizer; a bad one is a FreezeError."""
    from ..training import quantizers

    try:
        return quantizers.get(output_quantizer)
    except ValueError as err:
        raise FreezeError(f"output_quantizer: {err}") from None


def _input_type(input_type):
    """``input_type`` as a :class:`FixedType` (None stays None); a bad one is a FreezeError."""
    from ..fixed import FixedType

    if input_type is None or isinstance(input_type, FixedType):
        return input_type
    try:
        return FixedType.from_string(input_type)
    except ValueError as err:
        raise FreezeError(f"input_type: {err}") from None


def _plan(model, strip_softmax: bool, input_type=None) -> tuple[list[Step], Planning]:
    planning = Planning(strip_softmax=strip_softmax, input_type=_input_type(input_type))
    layers = layer_chain(model)
    if branches(model, layers):  # each layer knows what it reads and who reads it
        readers = {id(l): [r for r in layers if l in inbound(r)] for l in layers}
        items = (Layer(l, inputs=inbound(l), readers=readers[id(l)]) for l in layers)
    else:
        items = (Layer(layer) for layer in layers)
    for run in PASSES:
        items = run(items, planning)
    return list(items), planning


def plan(model, strip_softmax: bool = True, input_type=None) -> list[Step]:
    """The steps of ``model`` in order; raises FreezeError for anything not exportable.

    With ``strip_softmax`` a softmax that ends the model (an ``Activation('softmax')``, a
    ``Softmax`` layer or a last ``QuantDense`` with ``activation='softmax'``) is left out: the
    steps compute the logits, whose argmax is the same. ``input_type`` as for :func:`freeze`.
    """
    return _plan(model, strip_softmax, input_type)[0]


def freeze(
    model,
    name: str | None = None,
    progress: Callable[[str], None] | None = None,
    strip_softmax: bool = True,
    input_type=None,
    output_quantizer=None,
    data=None,
    max_accuracy_drop: float = 0.5,
) -> Graph:
    """Freeze ``model`` (Keras 3, edgebnn layers) into a :class:`~edgebnn.graph.Graph`.

    A softmax that ends the model is dropped (hardware cannot compute it exactly; argmax is
    unchanged): the graph computes the logits, ``graph.meta["stripped_softmax"]`` records
    ``{"n": classes}`` (the estimator can add hls4ml's softmax cost from it) and a
    :class:`FreezeWarning` says so; ``strip_softmax=False`` refuses such a model instead.

    ``input_type`` (a :class:`~edgebnn.fixed.FixedType` or its text, e.g. ``"ufixed<8,0>"``)
    is the fixed-point type of the data for a model whose first layer reads floats (no
    ``input_quantizer``, larq's usual stem): the hardware input has that type, and Keras computes
    the same as the deployed model on data on its grid (``graph.meta["input_type"]``; verify
    refuses other data; :func:`edgebnn.propose_input_type` finds the type of a data set).

    ``output_quantizer`` (a quantizer or its string, e.g. ``"quantized_bits(12, 3)"``) rounds the
    model's logits (the softmax stripped) onto a grid, for a model that ends with float outputs
    no exact fixed-point form reproduces (larq's usual ``QuantDense -> BatchNormalization``
    head): the graph computes ``with_output_quantizer(model, output_quantizer)``, a Keras model
    of the same layers plus that quantizer (``graph.meta["output_quantizer"]``), which
    :func:`edgebnn.verify` compares with. No training is needed; argmax changes only where two
    logits round to one value.

    ``data`` (inputs, or ``(inputs, labels)``, e.g. the training set) calibrates what the model
    leaves in float (``freeze/calibrate.py``): float ``Dense``/``Conv1D``/``Conv2D`` layers get
    ``quantized_bits`` kernel, bias and (where they read real values) input quantizers, each
    layer the fewest bits that keep the accuracy on ``data`` within ``max_accuracy_drop``
    points of the float model's (against its own predictions without labels); the input type
    comes from the data when the first layer reads floats, and the proposed ``output_quantizer``
    when the logits are real-valued. One :class:`FreezeWarning` line per choice says what was
    chosen; ``graph.meta["calibration"]`` records it, and the graph computes the model's twin
    with those quantizers bit for bit (what :func:`edgebnn.verify` compares with).
    """
    if data is not None:
        return _freeze_calibrated(model, data, max_accuracy_drop, name, progress, strip_softmax, input_type, output_quantizer)
    original = model
    if output_quantizer is not None:
        model = with_output_quantizer(model, _output_quantizer(output_quantizer)) if strip_softmax else model
        if not strip_softmax:
            raise FreezeError("output_quantizer rounds the logits, so it needs strip_softmax=True; drop one of them")
    steps, planning = _plan(model, strip_softmax, input_type)
    input_shape = tuple(int(d) for d in model.inputs[0].shape[1:]) if model.inputs else None
    freezing = Freezing(model, model_jit(model), input_shape)
    for step in steps:
        if progress:
            progress(f"freezing {step.name}")
        for run in NODE_PASSES:
            run(step, freezing)
    nodes, caveats = freezing.nodes, freezing.caveats
    for node in unreplayed_roundings(nodes, freezing.float64_sums):
        raise FreezeError(
            f"layer {node.source or node.name!r} sums weights whose float32 scales are not powers of two exactly, and Keras "
            "rounds that sum once to float32, which only thresholds reproduce; put a quantizer right after it (a "
            "QuantActivation, or the next layer's input_quantizer after a BatchNormalization) or use power-of-two "
            "scales (po2=True, alpha='auto_po2')"
        )
    inexact = _inexact(nodes, freezing.float64_sums)
    meta = {"keras_model": model.name, "input_dtype": "float32", "keras_float32_exact": not inexact, "keras_caveats": caveats}
    for caveat in caveats:
        warnings.warn(f"node {caveat['node']!r}: {caveat['reason']}", FreezeWarning, stacklevel=2)
    if inexact:
        warnings.warn(
            f"the accumulators of {', '.join(inexact)} need more than 24 significant bits, so Keras's float32 "
            "arithmetic cannot compute them exactly: Keras may differ from the deployed model, while the emulator "
            "and the C-simulation still agree bit for bit; use narrower inputs or weights for a bit-exact Keras model",
            FreezeWarning,
            stacklevel=2,
        )
    if planning.input_type is not None:
        meta["input_type"] = str(planning.input_type)
    if output_quantizer is not None:
        meta["output_quantizer"] = repr(model.get_layer(OUTPUT_QUANTIZER).quantizer)
        softmax = trailing_softmax(layer_chain(original))
        if softmax is not None:
            planning.stripped = layer_chain(original)[softmax]
    if planning.stripped is not None:
        layer = planning.stripped
        meta["stripped_softmax"] = {"n": int(nodes[-1].shape[-1]), "layer": layer.name}
        warnings.warn(
            f"the softmax of layer {layer.name!r} is not part of the graph: it computes the logits (argmax is "
            "unchanged); apply softmax in software if probabilities are needed",
            FreezeWarning,
            stacklevel=2,
        )
    return Graph(name or original.name, nodes, meta)


def off_grid_tensors(model, x, strip_softmax: bool = True, input_type=None) -> list[str]:
    """The layers whose real-valued outputs the graph needs on a grid (a merge or several layers
    read them, :class:`OffGrid`), found by planning the model with its float layers and those
    tensors quantized at the widest widths, one refusal at a time; calibration then chooses
    their widths. Any other refusal is left to freeze to say."""
    from ..fixed import propose_input_type
    from .calibrate import MAX_BITS, _Specs, twin
    from .items import OffGrid

    specs = _Specs(model, x)
    layers = specs(specs.widths(MAX_BITS))
    names = {layer.name for layer in model.layers}
    found: list[str] = []
    while True:
        probe = twin(model, layers, {name: f"quantized_bits({MAX_BITS}, {MAX_BITS // 2})" for name in found})
        refused = None
        for given in dict.fromkeys([input_type, input_type or propose_input_type(x)]):  # as given, else the data's
            try:
                _plan(probe, strip_softmax, given)
                return found
            except OffGrid as err:
                refused = err
                break
            except FreezeError:
                continue
        if refused is None:
            return found
        if refused.layer.name in found or refused.layer.name not in names:
            raise refused
        found.append(refused.layer.name)


def _freeze_calibrated(model, data, max_drop, name, progress, strip_softmax, input_type, output_quantizer) -> Graph:
    """:func:`freeze` with ``data``: the twin of the calibrated float layers, frozen with the
    input type and output quantizer that its refusals ask for, chosen from the data."""
    import re

    from ..fixed import propose_input_type
    from .calibrate import _split_data, calibrate, twin

    x, _ = _split_data(data)
    tensors = off_grid_tensors(model, x, strip_softmax, _input_type(input_type))
    calibration = calibrate(model, data, max_drop, _input_type(input_type), tensors)
    reference = model if calibration is None else twin(model, calibration.layers, calibration.tensors)
    lines = [] if calibration is None else calibration.lines()
    kwargs = {"input_type": input_type, "output_quantizer": output_quantizer}
    while True:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                graph = freeze(reference, name or model.name, progress, strip_softmax, **kwargs)
            break
        except FreezeError as err:
            text = " ".join(str(err).split())
            proposed = re.search(r"output_quantizer='([^']+)'", text)
            if "input_type" in text and kwargs["input_type"] is None and "output_quantizer" not in text:
                kwargs["input_type"] = propose_input_type(x)
                lines.append(f"calibrated the input type: {kwargs['input_type']} (the data's grid)")
            elif proposed and kwargs["output_quantizer"] is None:
                kwargs["output_quantizer"] = proposed.group(1)
                lines.append(f"calibrated the logits: output_quantizer {proposed.group(1)!r}")
            else:
                raise
    meta = graph.meta
    if calibration is not None:
        meta["calibration"] = calibration.to_meta()
        if kwargs["output_quantizer"] is not None and output_quantizer is None:
            final = keras_reference(model, meta)[0]
            labels = calibration_labels(model, data)
            meta["calibration"]["accuracy_twin"] = _accuracy_of(final, x, labels)
    for line in lines:
        warnings.warn(line, FreezeWarning, stacklevel=3)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return graph


def calibration_labels(model, data) -> np.ndarray:
    """The labels of ``data`` (inputs, or (inputs, labels)): its own, or the model's argmax."""
    from .calibrate import _split_data

    x, y = _split_data(data)
    if y is not None:
        return y
    out = np.asarray(model.predict(x, verbose=0))
    return np.argmax(out.reshape(len(x), -1), axis=-1)


def _accuracy_of(model, x, labels) -> float:
    from .calibrate import _accuracy

    return _accuracy(model.predict(x, verbose=0), labels)


def trace(model, x, strip_softmax: bool = True, input_type=None) -> dict[str, np.ndarray]:
    """Each step's output computed by Keras (eager, inference mode), by graph node name.

    Used to find the first layer where Keras and the emulator part ways. Each step reads the
    outputs of its inputs (``Step.inputs``), a merge all of them.
    """
    out = {}
    tensors = {}
    x = ops.convert_to_tensor(np.asarray(x, dtype=np.float32))
    for step in plan(model, strip_softmax=strip_softmax, input_type=input_type):
        xs = [tensors[name] for name in step.inputs] or [x]
        h = kinds.KINDS[step.kind].keras_eval(step, xs if step.kind in MERGES else xs[0])
        tensors[step.name] = h
        if kinds.KINDS[step.kind].traced:
            out[step.name] = np.asarray(ops.convert_to_numpy(h), dtype=np.float64)
    return out
