"""Hardware forms: each record's kind and type, Scaled and Partial types derived from their parts,
records frozen and hashable, the module light, and every quantizer alias answering with a record."""

import dataclasses
import subprocess
import sys
import typing

import numpy as np
import pytest

from edgebnn import forms
from edgebnn.fixed import FixedType

T41 = FixedType(4, 1, True, "RND_CONV", "SAT")  # fixed<4,1>: step 1/8, [-1, 0.875]
U33 = FixedType(3, 3, False, "RND_CONV", "SAT")


def test_kinds_are_the_class_level_names():
    assert tuple(f.kind for f in forms.FORMS) == ("binary", "unipolar", "ternary", "fixed", "grid", "po2", "scaled", "partial")
    for f in forms.FORMS:
        assert "kind" not in {field.name for field in dataclasses.fields(f)}, f  # not a constructor argument
    assert typing.get_args(forms.Form) == forms.FORMS


def test_grid_types():
    assert forms.Binary().type == FixedType(2, 2, True, "RND_CONV", "SAT") == forms.INT2
    assert forms.Unipolar().type == FixedType(1, 1, False, "RND_CONV", "SAT") == forms.UINT1
    assert forms.Ternary().type == forms.INT2
    assert forms.Fixed(T41).type == T41 and forms.Fixed(T41).kind == "fixed"
    assert forms.Grid(T41).type == T41 and forms.Grid(T41).kind == "grid"
    po2 = forms.Po2(T41, [-3, 0])
    assert (po2.kind, po2.type, po2.exponents) == ("po2", T41, (-3, 0))


def test_scaled_type_is_its_base_type():
    for base in (forms.Binary(), forms.Unipolar(), forms.Ternary(), forms.Fixed(T41), forms.Grid(U33)):
        hw = forms.Scaled(base, 0.5)
        assert (hw.kind, hw.type, hw.base.kind) == ("scaled", base.type, base.kind)
    hw = forms.Scaled(forms.Binary(), [1.0, 2.0], axis=-1)
    assert hw.scale == (1.0, 2.0) and hw.axis == -1
    assert forms.Scaled(forms.Binary()).scale is None  # depends on the tensor


def test_partial_type_is_the_union_or_none():
    hw = forms.Partial(forms.Ternary(), forms.Fixed(T41), [2, 0], 0)
    assert hw.kind == "partial" and hw.parts == (forms.Ternary(), forms.Fixed(T41)) and hw.channels == (2, 0)
    assert hw.type == FixedType(5, 2, True, "RND_CONV", "SAT")  # int<2> and fixed<4,1> on the 1/8 grid
    assert forms.Partial(forms.Unipolar(), forms.Grid(U33), (0,), -1).type == FixedType(3, 3, False, "RND_CONV", "SAT")
    assert forms.Partial(forms.Binary(), None, (0,), -1).type is None  # the rest stays float
    assert forms.Partial(forms.Scaled(forms.Binary(), 2.0), forms.Ternary(), (0,), -1).type is None
    assert forms.Partial(forms.Binary(), forms.Scaled(forms.Fixed(T41), 0.5), (0,), -1).type is None


def test_records_are_frozen_hashable_values():
    a = forms.Partial(forms.Scaled(forms.Fixed(T41), (1.0, 0.5), -1), forms.Po2(T41, (-3, 0)), (1,), -1)
    b = forms.Partial(forms.Scaled(forms.Fixed(T41), [1.0, 0.5], -1), forms.Po2(T41, [-3, 0]), [1], -1)
    assert a == b and hash(a) == hash(b) and len({a, b, forms.Binary(), forms.Binary()}) == 2
    assert forms.Binary() != forms.Ternary()  # same type, different values
    assert forms.Fixed(T41) != forms.Grid(T41)  # a cast is not a grid
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.axis = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        forms.Fixed(T41).type = U33


def test_forms_imports_no_tensorflow_or_keras():
    code = (
        "import sys, edgebnn.forms\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'hls4ml')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# the aliases whose constructors have required arguments, with the smallest ones that work (a new
# alias that needs arguments fails the sweep with a TypeError until it is listed here)
REQUIRED = {"noop": (1,), "partial": ("ste_sign", [0]), "partial_quantizer": ("ste_sign", [0])}


def test_every_quantizer_alias_has_a_form_or_none():
    from edgebnn import quantizers as qz

    x = np.float32([[0.5, -1.25, 2.0], [-0.75, 0.25, -3.0]])
    seen = set()
    for alias, cls in sorted(qz._ALIASES.items()):
        q = cls(*REQUIRED.get(alias, ()))
        try:
            hw = q.hardware()
        except qz.NoHardwareForm:
            assert isinstance(q, qz.NoOp), alias
            continue
        assert isinstance(hw, forms.FORMS), alias
        hash(hw)
        with_x = q.hardware(x)
        assert type(with_x) is type(hw) and with_x.type == hw.type, alias
        if isinstance(hw, forms.Scaled) and hw.scale is None:
            assert with_x.scale is not None, alias  # the tensor decides it
        if isinstance(hw, forms.Partial):
            assert isinstance(hw.chosen, forms.FORMS) and (hw.rest is None or isinstance(hw.rest, forms.FORMS))
        seen.add(hw.kind)
    assert seen == {"binary", "unipolar", "ternary", "fixed", "grid", "po2", "scaled", "partial"}
