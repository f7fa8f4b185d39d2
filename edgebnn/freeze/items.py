"""The records freeze passes between its stages, and its error and warning classes.

A Keras layer enters as a :class:`Layer`; its lowering handler (``freeze/lower``) turns it
into raw items: :class:`Quantize` (a quantizer: a weighted layer's ``input_quantizer``, a
``QuantActivation``), :class:`Step` (an accumulator, a reshape, a pool, a merge), :class:`FloatOp`
(an elementwise float operation); in a branching model also the markers :class:`Read` and
:class:`Wrote` where the stream's order is not the data flow. The passes (``freeze/passes``)
fold and move these until only steps remain: one :class:`Step` per node of the graph, each
knowing the steps it reads (``Step.inputs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..errors import EdgebnnError, brief

# accumulator values enumerated per threshold node (channels x values); above this a search
# per level would be needed, which freeze does not do yet
MAX_ENUMERATION = 1 << 24


class NotLowered(Exception):
    """A handler's signal that it does not lower ``layer`` after all (the lowering pass then
    refuses the layer as one no handler lowers)."""

    def __init__(self, layer):
        super().__init__(layer)
        self.layer = layer


class FreezeError(EdgebnnError):
    """The model cannot be frozen into an exact deployment graph; long lists of numbers in the
    message (a layer's chosen channels, its scales) are shortened (:func:`edgebnn.errors.brief`)."""

    def __init__(self, message: str):
        super().__init__(brief(message))


class OffGrid(FreezeError):
    """A real-valued tensor where the graph needs one on a grid (several layers or a merge read
    it): ``layer`` is the layer whose outputs it is, which calibration (``freeze(data=)``) can
    quantize."""

    def __init__(self, message: str, layer):
        super().__init__(message)
        self.layer = layer


class FreezeWarning(UserWarning):
    """The frozen graph is exact but not what Keras computes: float32 cannot hold its accumulators
    exactly, Keras's own result depends on the batch layout (``graph.meta["keras_caveats"]``), or
    the model's trailing softmax was stripped (``strip_softmax=True``)."""


def where(layer) -> str:
    """How an error names a layer: ``layer 'name' (Class)``."""
    return f"layer {layer.name!r} ({type(layer).__name__})"


@dataclasses.dataclass
class Layer:
    """One Keras layer of the chain, before lowering. ``logits``: lower it without its
    activation (the trailing softmax of a ``QuantDense`` that ``strip_softmax`` drops)."""

    layer: Any
    logits: bool = False
    # in a branching model: the layers it reads (InputLayer included) and the layers reading it;
    # None in a chain, where the stream's order is the data flow
    inputs: list | None = None
    readers: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class FloatOp:
    """An elementwise float operation between an accumulator and its quantizer."""

    label: str
    fn: Callable  # keras tensor -> keras tensor, exactly as the layer computes it at inference
    relu: bool = False  # exactly max(x, 0): a cast node can do it in hardware
    # the name of a parameter-free elementwise activation whose float32 result TensorFlow may
    # compute differently at different tensor positions (see lower.activation), else None
    layout_sensitive: str | None = None
    # the name of a transcendental activation TensorFlow's graph optimizer may fuse into the
    # convolution or matmul before it (a different kernel, a few ulps apart), else None
    fusable: str | None = None
    bias: bool = False  # a float bias added to the accumulator
    layer: Any = None  # the Keras layer it comes from
    per_channel: bool = False  # its parameters follow the channel axis (it does not commute with a Flatten)
    scale: str | None = None  # a scale applied after integer codes: how a refusal names it (layer and scale)
    # its float32 result is non-decreasing or non-increasing in its input, rounding included (a
    # bias, a scale, a BatchNormalization, a piecewise-linear activation): thresholds may then be
    # found by bisection (passes/thresholds) instead of enumeration
    monotone: bool = True


@dataclasses.dataclass
class Quantize:
    """A quantizer that ends the float ops before it: ``which`` is the attribute of ``layer``
    holding it ("input_quantizer" of a weighted layer, None when it has none; "quantizer" of a
    ``QuantActivation``); ``name`` is the step it becomes."""

    layer: Any
    quantizer: Any
    which: str
    name: str


@dataclasses.dataclass
class Step:
    """One node of the graph and how Keras computes the same values."""

    name: str
    # "input" | "dense" | "conv2d" | "maxpool2d" | "avgpool2d" | "sumpool2d" | "pad2d" | "flatten" | "reshape"
    # | "requant" (thresholds) | "cast" | "affine" (float ops that end the model) | "add" | "concatenate"
    # | the kinds of the other layer families (their handlers' KIND)
    kind: str
    layer: Any
    quantizer: Any = None
    float_ops: list[FloatOp] = dataclasses.field(default_factory=list)
    sources: list[str] = dataclasses.field(default_factory=list)
    # a maxpool2d moved after a requantization: that step and how many of its float ops ran
    # before the pool in Keras (freeze checks that the move is exact)
    moved_from: Step | None = None
    ops_before: int = 0
    # the names of the steps whose outputs it reads (passes/wire): the step before it in a chain,
    # each merged step for a merge, none for the input
    inputs: list[str] = dataclasses.field(default_factory=list)
    # the Keras models that replay it (freeze/replay.py), built once per shape and part
    replays: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)


@dataclasses.dataclass
class Planning:
    """What the plan passes share: the options and what they record for ``freeze``."""

    strip_softmax: bool = False
    input_type: Any = None  # the FixedType freeze was given for the input (the first layer reads floats)
    stripped: Any = None  # the layer whose trailing softmax was left out
    # step name -> the steps it reads where that is not the step before it (passes/branches)
    reads: dict[str, list[str]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Freezing:
    """What the node passes share while steps become nodes."""

    model: Any
    jit: bool  # the model runs under XLA: replay Keras the same way
    input_shape: tuple | None
    nodes: list = dataclasses.field(default_factory=list)
    caveats: list[dict] = dataclasses.field(default_factory=list)  # where Keras's own result depends on the layout
    # requant step name -> (accumulator values, Keras's quantized output codes) its thresholds came from
    replayed: dict[str, tuple] = dataclasses.field(default_factory=dict)
    # the accumulator nodes Keras sums in float64 (``layers.sums_exactly``: exact below 2**53),
    # the layer's last one rounded once to float32 (thresholds replay that rounding)
    float64_sums: set[str] = dataclasses.field(default_factory=set)

    def node(self, name: str):
        """The node called ``name`` built so far."""
        return next(n for n in self.nodes if n.name == name)

    def sources(self, step: Step) -> list:
        """The nodes ``step`` reads."""
        return [self.node(name) for name in step.inputs]

    def source(self, step: Step):
        """The one node a single-input ``step`` reads."""
        return self.node(step.inputs[0])


@dataclasses.dataclass
class Read:
    """In a branching model, where a layer starts that does not read (only) the layer before it
    in the stream: the layers whose outputs it reads. Lowering yields it before the layer's
    items; passes/branches consumes it."""

    layer: Any
    inputs: list


@dataclasses.dataclass
class Wrote:
    """In a branching model, where a layer's items end: the layers reading its output. Lowering
    yields it after the layer's items; passes/branches consumes it."""

    layer: Any
    readers: list
