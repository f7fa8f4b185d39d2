"""What every hls4ml cost function returns: one :class:`LayerEstimate` row per node.

The row type lives here, below the estimator (``edgebnn.estimate``, which reads the cost table
and re-exports it), so the cost modules never import the estimator back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from edgebnn.boards import RESOURCES


@dataclasses.dataclass(frozen=True)
class LayerEstimate:
    """One node's resources (``lut`` ... ``uram``), ``latency`` in cycles and ``ii``."""

    name: str
    op: str
    lut: int
    ff: int
    dsp: int
    bram18: int
    uram: int
    latency: int
    ii: int
    detail: dict = dataclasses.field(default_factory=dict)

    def resources(self) -> dict[str, int]:
        """LUT, FF, DSP, BRAM18 and URAM by the board's resource names."""
        return {key: getattr(self, key) for key in RESOURCES}

    def to_dict(self) -> dict[str, Any]:
        """The row as plain JSON types."""
        return {
            "name": self.name,
            "op": self.op,
            **self.resources(),
            "latency": self.latency,
            "ii": self.ii,
            "detail": _jsonable(self.detail),
        }


def _jsonable(value):
    """``value`` with NumPy scalars, tuples and mappings made plain JSON types."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value
