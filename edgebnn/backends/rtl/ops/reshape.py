"""``reshape``: as flatten (see there)."""

from __future__ import annotations

from .flatten import FOLDED, check, unit  # noqa: F401
