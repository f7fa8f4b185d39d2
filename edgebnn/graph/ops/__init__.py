"""The ops of the deployment graph, one module each, and the table every consumer dispatches on.

Each module ``graph/ops/<op>.py`` holds the op's ``SPEC`` (an :class:`OpSpec`: its name, number
of inputs, the params and attrs it needs, as data), ``validate``, ``execute`` (the exact NumPy
kernel on integer codes) and the builder ``<op>_node``. :data:`REGISTRY` maps each op name to its
spec, in the order of :data:`OPS`; adding an op means adding its module and one line below.

Every node also carries the bounds ``params['lo']`` / ``params['hi']`` (:data:`BOUNDS`), which
the graph checks for every op, so no spec lists them.
"""

from __future__ import annotations

from ..node import GraphError
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
from ._spec import BOUNDS, OpSpec  # noqa: F401 - the package exports them

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
