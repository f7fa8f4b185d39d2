"""One node of a deployment graph (:class:`Node`), access to a sequence of them (:class:`Nodes`) and
the error a malformed graph raises."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import EdgebnnError
from ..fixed import FixedType


class GraphError(EdgebnnError):
    """A deployment graph that is malformed or cannot be loaded."""


@dataclasses.dataclass
class Node:
    """One op producing one tensor of ``shape`` (no batch axis) as codes on ``type``.

    ``params`` holds the arrays (integer codes, and the bounds ``lo``/``hi``), ``attrs`` the
    JSON-able settings; which keys an op needs is declared in its ``SPEC`` (``graph/ops/``)."""

    name: str
    op: str
    inputs: list[str]
    shape: tuple[int, ...]
    type: FixedType
    params: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)
    source: str = ""  # the Keras layer(s) this node was frozen from

    @property
    def lo(self) -> np.ndarray:
        return self.params["lo"]

    @property
    def hi(self) -> np.ndarray:
        return self.params["hi"]

    def fixed_attr(self, key: str) -> FixedType | None:
        """``attrs[key]`` read as a :class:`FixedType` (None when absent)."""
        value = self.attrs.get(key)
        return None if value is None else FixedType.from_string(value)


class Nodes:
    """Access shared by node sequences in execution order (:class:`~edgebnn.graph.Graph`, a
    backend's chain): ``self.nodes``, a node by name, the first and the last."""

    nodes: list[Node]

    def __getitem__(self, name: str) -> Node:
        """The node called ``name`` (KeyError if none is)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def sources(self, node: Node) -> list[Node]:
        """The nodes ``node`` reads, in the order of its inputs."""
        return [self[name] for name in node.inputs]

    def readers(self, node: Node) -> list[Node]:
        """The nodes that read ``node``, in order."""
        return [n for n in self.nodes if node.name in n.inputs]

    @property
    def input(self) -> Node:
        """The input node (the first)."""
        return self.nodes[0]

    @property
    def output(self) -> Node:
        """The output node (the last; the graph checks that every other node is read)."""
        return self.nodes[-1]
