"""``add``: a join of its input streams (see ``_merge``)."""

from __future__ import annotations

from ._merge import FOLDED, MULTI_INPUT, check  # noqa: F401
from ._merge import merge_unit as unit  # noqa: F401
