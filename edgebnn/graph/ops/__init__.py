"""The ops of the deployment graph, one module each, and the table every consumer dispatches on.

Each module ``graph/ops/<op>.py`` holds the op's ``SPEC`` (an :class:`OpSpec`: its name, number
of inputs, the params and attrs it needs, as data), ``validate``, ``execute`` (the exact NumPy
kernel on integer codes) and the builder ``<op>_node``. :data:`REGISTRY` maps each op name to its
spec, in the order of :data:`OPS`; adding an op means adding its module and one line below.

Every node also carries the bounds ``params['lo']`` / ``params['hi']`` (:data:`BOUNDS`), which
the graph checks for every op, so no spec lists them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..node import GraphError

if TYPE_CHECKING:
    import numpy as np

    from ..node import Node, Nodes

BOUNDS = {
    "lo": "per-channel lower bounds of the output values (interval analysis over the integer weights)",
    "hi": "per-channel upper bounds of the output values",
}


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """What the graph knows of one op.

    ``params`` / ``attrs`` map each required key (besides :data:`BOUNDS`) to its one-line
    meaning; ``optional_params`` / ``optional_attrs`` the keys a node may carry. The graph checks
    the input count and the required keys before it calls ``validate(node, inputs, where)``,
    which raises :class:`GraphError` (messages start with ``where``) for anything else wrong.
    ``execute(node, inputs, codes)`` returns the node's output codes (batch first) from its
    source nodes ``inputs`` and their code arrays ``codes``, in the order of ``node.inputs``
    (``variadic`` ops take ``n_inputs`` or more).
    ``describe(node)``, when given, is the extra text of :meth:`Graph.summary` (a leading space).
    ``rebuild(node, inputs, nodes)`` is the node as the op's builder ``<op>_node`` makes it from
    the node's weights, attrs and inputs (``nodes`` looks up any earlier node by name): the
    bounds it derives are the ones a loaded graph's stored bounds must equal.
    """

    op: str
    n_inputs: int  # how many inputs; with ``variadic`` the fewest it takes
    validate: Callable[[Node, list[Node], str], None]
    execute: Callable[[Node, list[Node], list[np.ndarray]], np.ndarray]
    params: Mapping[str, str] = dataclasses.field(default_factory=dict)
    attrs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    optional_params: Mapping[str, str] = dataclasses.field(default_factory=dict)
    optional_attrs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    describe: Callable[[Node], str] | None = None
    rebuild: Callable[[Node, list[Node], Nodes], Node] | None = None
    variadic: bool = False  # takes ``n_inputs`` or more inputs (a merge)


# the op modules import OpSpec from here, so they come after it
from . import (
    add,
    affine,
    avgpool1d,
    avgpool2d,
    cast,
    concatenate,
    conv1d,
    conv2d,
    dense,
    depthwise_conv2d,
    flatten,
    maxpool1d,
    maxpool2d,
    pad2d,
    reshape,
    sumpool1d,
    sumpool2d,
    threshold,
    zeropad1d,
)
from . import input as input_op

_MODULES = (
    input_op,
    dense,
    conv2d,
    maxpool2d,
    avgpool2d,
    flatten,
    threshold,
    cast,
    depthwise_conv2d,
    affine,
    conv1d,
    maxpool1d,
    avgpool1d,
    zeropad1d,
    add,
    concatenate,
    sumpool2d,
    reshape,
    pad2d,
    sumpool1d,
)
REGISTRY: dict[str, OpSpec] = {m.SPEC.op: m.SPEC for m in _MODULES}
OPS = tuple(REGISTRY)


def spec(op: str, where: str) -> OpSpec:
    """The spec of ``op``; a :class:`GraphError` starting with ``where`` for an op this edgebnn does not know."""
    try:
        return REGISTRY[op]
    except KeyError:
        raise GraphError(f"{where}: unknown op; this edgebnn knows {', '.join(OPS)}") from None
