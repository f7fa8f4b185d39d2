"""Hardware forms: the grid a quantizer's outputs lie on, one small frozen record per form.

A quantizer's ``hardware()`` returns one of these records; freeze, summary and the optimizers
read them. Each record has a class-level ``kind`` (its name as a string: ``"binary"``,
``"unipolar"``, ``"ternary"``, ``"fixed"``, ``"grid"``, ``"po2"``, ``"scaled"``, ``"partial"``)
and a ``type``: the :class:`~edgebnn.fixed.FixedType` that holds every value of the form, or
None when no single fixed-point grid does (a :class:`Partial` with a float or scaled part).

This module imports only :mod:`edgebnn.fixed`, so the graph side may read forms without Keras.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from .fixed import FixedType

INT2 = FixedType(2, 2, True, "RND_CONV", "SAT")  # holds -1, 0, +1
UINT1 = FixedType(1, 1, False, "RND_CONV", "SAT")  # holds 0, 1


@dataclasses.dataclass(frozen=True)
class Binary:
    """Values -1 and +1; ``type`` is ``int<2>``."""

    kind: ClassVar[str] = "binary"

    @property
    def type(self) -> FixedType:
        return INT2


@dataclasses.dataclass(frozen=True)
class Unipolar:
    """Values 0 and 1; ``type`` is ``uint<1>``."""

    kind: ClassVar[str] = "unipolar"

    @property
    def type(self) -> FixedType:
        return UINT1


@dataclasses.dataclass(frozen=True)
class Ternary:
    """Values -1, 0 and +1; ``type`` is ``int<2>``."""

    kind: ClassVar[str] = "ternary"

    @property
    def type(self) -> FixedType:
        return INT2


@dataclasses.dataclass(frozen=True)
class Fixed:
    """The quantizer *is* the conversion to ``type``: ``q(x) == type.quantize(x)`` for every x
    (its rounding and overflow modes included), so hardware may cast to it."""

    kind: ClassVar[str] = "fixed"
    type: FixedType


@dataclasses.dataclass(frozen=True)
class Grid:
    """Values on the grid of ``type``, but ``q`` is not a plain conversion (e.g. tanh, a sigmoid
    or a negative slope before the rounding): export it through thresholds derived from the
    quantizer itself, never as a cast."""

    kind: ClassVar[str] = "grid"
    type: FixedType


@dataclasses.dataclass(frozen=True)
class Po2:
    """Values ``±2**e`` (``+2**e`` only when ``type`` is unsigned) for integers ``e`` in
    ``exponents = (e_min, e_max)``; zero is not among them. ``type`` holds them all exactly."""

    kind: ClassVar[str] = "po2"
    type: FixedType
    exponents: tuple[int, int]

    def __post_init__(self):
        object.__setattr__(self, "exponents", tuple(int(e) for e in self.exponents))


@dataclasses.dataclass(frozen=True)
class Scaled:
    """Values ``scale * v`` with ``v`` of the form ``base`` (a record: :class:`Binary`,
    :class:`Unipolar`, :class:`Ternary`, :class:`Fixed` when the unscaled values are the
    conversion of x to its type, or :class:`Grid` for integer codes of another rounding).

    ``scale`` is a float (per tensor), a tuple of floats (one per channel of ``axis``), or None
    when it depends on the tensor quantized: call the quantizer's ``hardware(x)`` or
    ``scale(x)``. A scale that is not a power of two (e.g. DoReFa's ``1/(2**k - 1)``) is exact
    only as a real number: Keras' float32 outputs are those products rounded. ``type`` is
    ``base.type``, the grid of the unscaled values."""

    kind: ClassVar[str] = "scaled"
    base: Form
    scale: float | tuple[float, ...] | None = None
    axis: int | None = None

    def __post_init__(self):
        if isinstance(self.scale, list):
            object.__setattr__(self, "scale", tuple(self.scale))

    @property
    def type(self) -> FixedType | None:
        return self.base.type


# the forms whose values all lie on the grid of their ``type`` (no scale, no float part)
_ON_GRID = (Binary, Unipolar, Ternary, Fixed, Grid, Po2)


@dataclasses.dataclass(frozen=True)
class Partial:
    """The channels ``channels`` of ``axis`` have the form ``chosen``, the other channels the
    form ``rest`` (None when they stay float). ``type`` holds the values of both when both lie
    on fixed grids, else None; ``parts`` is ``(chosen, rest)``."""

    kind: ClassVar[str] = "partial"
    chosen: Form
    rest: Form | None
    channels: tuple[int, ...]
    axis: int

    def __post_init__(self):
        object.__setattr__(self, "channels", tuple(int(c) for c in self.channels))

    @property
    def parts(self) -> tuple:
        return self.chosen, self.rest

    @property
    def type(self) -> FixedType | None:
        a, b = self.chosen, self.rest
        if not isinstance(a, _ON_GRID) or not isinstance(b, _ON_GRID):
            return None
        lsb = min(a.type.lsb_exp, b.type.lsb_exp)
        lo = min(a.type.min_code << (a.type.lsb_exp - lsb), b.type.min_code << (b.type.lsb_exp - lsb))
        hi = max(a.type.max_code << (a.type.lsb_exp - lsb), b.type.max_code << (b.type.lsb_exp - lsb))
        return FixedType.for_codes(lo, hi, lsb).replace(rounding="RND_CONV", overflow="SAT")


Form = Binary | Unipolar | Ternary | Fixed | Grid | Po2 | Scaled | Partial
FORMS = (Binary, Unipolar, Ternary, Fixed, Grid, Po2, Scaled, Partial)
