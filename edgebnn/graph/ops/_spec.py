"""What the graph knows of an op (:class:`OpSpec`), and the bounds every node carries."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

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
    ``lattice(node, source, lattice_of)``, when given, is the (base, step) per channel of the
    node's reachable output codes (:mod:`edgebnn.graph.lattice`) from its inputs' (``source(name)``
    the node of that name, ``lattice_of(node)`` its lattice); without it, every code.
    ``windows(node, src)``, for an op computed over windows of its input (a convolution), is
    (the node as a 2-D convolution, its source as 2-D, its full ``(kh, kw, C, F)`` kernel): what
    the emulator's window kernel reads (:func:`edgebnn.emulate.sample_bytes` sizes it).
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
    lattice: Callable[[Node, Callable[[str], Node], Callable[[Node], tuple]], tuple] | None = None
    windows: Callable[[Node, Node], tuple[Node, Node, np.ndarray]] | None = None
