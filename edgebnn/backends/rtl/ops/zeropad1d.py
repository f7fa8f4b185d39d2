"""``zeropad1d``: the pad2d of one row."""

from __future__ import annotations

from .pad2d import FOLDED, check, unit  # noqa: F401
