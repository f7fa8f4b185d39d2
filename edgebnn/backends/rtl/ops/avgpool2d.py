"""``avgpool2d``: the window generator feeding a per-channel reduction of each window."""

from __future__ import annotations

from ._pooling import FOLDED, check  # noqa: F401
from ._pooling import pool_unit as unit  # noqa: F401
