"""Data sets: scikit-learn's embedded digits or the user's own ``.npz`` and ``.csv`` files.

Nothing downloads at run time. Every data set comes back the same way (:func:`load_data`):
float32 features and int64 labels; a stratified test share of the samples (unless the file has
its own test set), then a stratified validation share of what is left for training (unless the
file has its own), both deterministic from ``seed``, so that asking for a validation set never
changes the test set. Features are ``raw * scale + offset``, computed in float64 and cast to
float32 once, so that values the arithmetic puts on a fixed-point grid land on it exactly (uint8
pixels times ``scale=1/256`` are exactly the codes of ``ufixed<8,0>``).

Files are untrusted: ``.npz`` archives are read with ``allow_pickle=False`` (an array of Python
objects is refused, never unpickled) and ``.csv`` files are parsed as numbers only.
"""

from __future__ import annotations

import csv
import dataclasses
import inspect
import math
import os
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..errors import EdgebnnError

DATASETS = ("digits", "npz", "csv")
EXTENSIONS = {"npz": ".npz", "csv": ".csv"}
NPZ_PAIRS = (("x_train", "y_train"), ("x_val", "y_val"), ("x_test", "y_test"))
MAX_LABEL = 2**31 - 1  # a class index; anything larger is not a label a model can have outputs for
CSV_HOW = "give comma-separated numbers, one sample per line"
_KINDS = {"U": "text", "S": "bytes", "O": "Python objects", "c": "complex numbers", "V": "records", "M": "dates"}
_CHUNK = 1 << 20  # values scaled at a time: a small float64 copy is faster than one of a whole data set


class DataError(EdgebnnError):
    """A data set or split that cannot be made."""


@dataclasses.dataclass(frozen=True, eq=False)
class Data:
    """A data set split for training: float32 features, int64 labels.

    ``x_val``/``y_val`` are None when there is no validation set. ``classes`` is the largest
    label over all splits plus one. ``source`` says in a few words what was loaded, for logs.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray | None
    y_val: np.ndarray | None
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int
    source: str


def load_data(
    dataset: str = "digits",
    path: str | os.PathLike | None = None,
    test_path: str | os.PathLike | None = None,
    label_column: int | str = -1,
    shape: Sequence[int] | None = None,
    scale: float = 1.0,
    offset: float = 0.0,
    test_fraction: float = 0.2,
    validation_fraction: float = 0.0,
    seed: int = 0,
) -> Data:
    """The data set, split into training, validation and test samples.

    Args:
        dataset: ``digits`` (scikit-learn's embedded 8x8 digits, 1,797 samples, pixels 0..16
            divided by 16, so in [0, 1]), ``npz`` or ``csv`` (the file at ``path``).
        path: the ``.npz`` or ``.csv`` file. An ``.npz`` holds ``x_train``, ``y_train`` and
            optionally ``x_test``, ``y_test`` and ``x_val``, ``y_val``; features as vectors
            (N, F) or images (N, H, W) or (N, H, W, C). A ``.csv`` holds one sample per row,
            numbers only, with an optional header row (detected when the first row is not
            numeric).
        test_path: ``csv`` only: a separate test file with the same columns.
        label_column: ``csv`` only: the label's column, an index (negative counts from the end)
            or a header name.
        shape: each sample's shape (e.g. ``[28, 28, 1]``); its product must be the sample size.
        scale, offset: features are ``raw * scale + offset``.
        test_fraction: the stratified test share, when the file has no test set.
        validation_fraction: the stratified share of the training part held out for
            validation (0: none), when the file has no validation set.
        seed: the splits' random state.
    """
    _check_arguments(dataset, path, test_path, label_column, shape, scale, offset, test_fraction, validation_fraction, seed)
    if dataset == "digits":
        name, splits = "digits", _read_digits()
        origins = {k: _Origin("", f"x_{k}", f"y_{k}", "sample", 0) for k in splits}
    elif dataset == "npz":
        name, splits = _display(path), _read_npz(path)
        origins = {k: _Origin(f"{name}: ", f"x_{k}", f"y_{k}", "sample", 0) for k in splits}
    else:
        name, splits, origins = _read_csv_files(path, test_path, label_column)
    prefix = origins["train"].prefix
    splits = _checked(splits, origins)
    if shape is not None:
        splits = {k: (_reshape(x, shape, dataset, prefix), y) for k, (x, y) in splits.items()}

    what = f"{name} " if dataset == "digits" else ""
    x_tr, y_tr = splits["train"]
    if "test" in splits:
        x_te, y_te = splits["test"]
    else:
        keep, held = _split(y_tr, test_fraction, seed, prefix, f"{len(y_tr)} {what}samples", "test_fraction", "testing")
        (x_tr, y_tr), (x_te, y_te) = (x_tr[keep], y_tr[keep]), (x_tr[held], y_tr[held])
    x_val = y_val = None
    if "val" in splits:
        if validation_fraction:
            raise DataError(
                f"{prefix}the file holds a validation set (x_val, y_val), so validation_fraction must be 0, "
                f"got {validation_fraction}; set it to 0 or remove x_val and y_val from the file"
            )
        x_val, y_val = splits["val"]
    elif validation_fraction:
        keep, held = _split(
            y_tr, validation_fraction, seed, prefix, f"{len(y_tr)} {what}training samples", "validation_fraction", "validation"
        )
        (x_tr, y_tr), (x_val, y_val) = (x_tr[keep], y_tr[keep]), (x_tr[held], y_tr[held])

    x_tr, x_te = _scaled(x_tr, scale, offset, prefix, "training"), _scaled(x_te, scale, offset, prefix, "test")
    x_val = None if x_val is None else _scaled(x_val, scale, offset, prefix, "validation")
    labels = [y for y in (y_tr, y_val, y_te) if y is not None]
    classes = int(max(int(y.max()) for y in labels)) + 1
    counts = f"{len(y_tr)} training, " + ("" if y_val is None else f"{len(y_val)} validation, ") + f"{len(y_te)} test samples"
    source = f"{os.path.basename(name) if dataset == 'npz' else name}: {counts}, each {tuple(int(d) for d in x_tr.shape[1:])}"
    return Data(x_tr, y_tr, x_val, y_val, x_te, y_te, classes, source)


def load_dataset(
    dataset: str = "digits",
    test_fraction: float = 0.2,
    seed: int = 0,
    shape: Sequence[int] | None = None,
    path: str | os.PathLike | None = None,
    test_path: str | os.PathLike | None = None,
    label_column: int | str = -1,
    scale: float = 1.0,
    offset: float = 0.0,
    validation_fraction: float = 0.0,
):
    """``(x_train, y_train, x_test, y_test)`` of :func:`load_data` (any key of a config's
    ``data`` section); with a validation share, ``x_train`` is what is left for training."""
    data = load_data(
        dataset,
        path=path,
        test_path=test_path,
        label_column=label_column,
        shape=shape,
        scale=scale,
        offset=offset,
        test_fraction=test_fraction,
        validation_fraction=validation_fraction,
        seed=seed,
    )
    return data.x_train, data.y_train, data.x_test, data.y_test


# ------------------------------------------------------------------------------ checks
def check_labels(y, classes: int, where: str) -> None:
    """Refuse labels that are not class indices 0..classes-1 of a model with ``classes``
    outputs, in one line naming ``where``, a bad label value and how many labels are bad."""
    y = np.asarray(y).ravel()
    if y.dtype.kind not in "biuf":
        kind = _kind_name(y.dtype)
        raise DataError(f"{where}: labels have dtype {y.dtype} ({kind}); labels must be integers 0 to {classes - 1}")
    values = y.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~((values == np.floor(values)) & (values >= 0) & (values < classes))
    if not bad.any():
        return
    wrong = values[bad]
    whole = np.isfinite(wrong) & (wrong == np.floor(wrong))
    if np.all(whole & (wrong >= classes)):
        example = float(wrong.max())
        fix = f"give the model {_number(example + 1)} outputs or fix the labels"
    else:
        example = float(wrong[~(whole & (wrong >= classes))][0])
        fix = "labels must be whole numbers 0, 1, 2, ... (class indices)"
    same = int(np.sum(wrong == example)) if math.isfinite(example) else int(np.sum(np.isnan(wrong)))
    raise DataError(
        f"{where}: {int(bad.sum())} of {y.size} labels are not classes of a model with {classes} outputs "
        f"(integers 0 to {classes - 1}), e.g. {_number(example)} ({_count(same, 'label')}); {fix}"
    )


def check_on_grid(x, input_type: str, *, scale: float = 1.0, offset: float = 0.0) -> None:
    """Refuse data (an array or a sequence of arrays) whose values are not all on the grid and in
    the range of the fixed-point type ``input_type`` (hls4ml's spelling, e.g. ``ufixed<8,0>``).

    The message says how many values are off, gives one, and proposes a ``data.scale`` /
    ``data.offset`` (absolute values, given the ``scale`` and ``offset`` the data were made with)
    or an input type that holds the data as they are.
    """
    from ..fixed import FixedType, propose_input_type

    try:
        t = FixedType.from_string(input_type)
    except ValueError as err:
        raise DataError(f"input type {input_type!r}: {err}") from None
    arrays = [x] if isinstance(x, np.ndarray) else [a for a in x if a is not None]
    v = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays]) if arrays else np.zeros(0)
    if t.contains(v):
        return
    ok = _on_grid_mask(v, t)
    off = v[~ok]
    example = float(off[0])
    grid = f"multiples of {_number(t.lsb)} from {_number(t.min)} to {_number(t.max)}"
    head = f"{off.size} of {v.size} input values are not on the grid of {t} ({grid}), e.g. {_number(example)}"
    if not np.all(np.isfinite(v)):
        raise DataError(f"{head}; the data hold NaN or infinity, which no fixed-point type holds: remove those samples")
    proposals = []
    found = _propose_scaling(v, t)
    if found is not None:
        s, o = found
        new_offset = offset * s + o
        move = f"set data.scale to {_number(scale * s)}"
        if new_offset != offset:
            move += f" and data.offset to {_number(new_offset)}"
        proposals.append(f"{move} to put them on it")
    proposed = propose_input_type(v)
    if proposed.contains(v):
        proposals.append(f"give an input type that holds them as they are, e.g. {str(proposed)!r}")
    if proposals:
        raise DataError(f"{head}; {', or '.join(proposals)}")
    raise DataError(
        f"{head}; no fixed-point type of at most 16 bits holds them exactly: round the data onto a grid first "
        "(e.g. to integers, then scale them by a power of two with data.scale)"
    )


def _on_grid_mask(v: np.ndarray, t) -> np.ndarray:
    """Per value, what ``FixedType.contains`` says of the whole array."""
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.ldexp(v, t.fractional)
        return (
            np.isfinite(v)
            & (scaled == np.floor(scaled))
            & (np.ldexp(scaled, t.lsb_exp) == v)
            & (scaled >= float(t.min_code))
            & (scaled < float(t.max_code + 1))
        )


def _propose_scaling(v: np.ndarray, t):
    """``(s, o)`` with ``s`` a power of two such that ``v * s + o`` lies on ``t`` (the largest such
    ``s``, so the most of the type's range is used, no offset when one is not needed), or None."""
    from ..fixed import _grid_exp

    lo, hi = float(v.min()), float(v.max())
    k_min = t.lsb_exp - _grid_exp(v)  # coarser scales leave the data off the type's grid
    span, room = hi - lo, t.max - t.min
    k_max = k_min if span == 0 else math.floor(math.log2(room / span)) + 1
    for k in range(k_max, max(k_min, k_max - 64) - 1, -1):
        s = math.ldexp(1.0, k)
        if span * s > room:
            continue
        for o in (0.0, t.min - lo * s):
            if t.contains(v * s + o):
                return s, o
    return None


def check_arguments(**data) -> None:
    """:func:`load_data`'s arguments checked without reading any file (the files exist and have
    the right extension): the command line refuses them before TensorFlow starts."""
    defaults = {k: p.default for k, p in inspect.signature(load_data).parameters.items()}
    _check_arguments(**{**defaults, **data})


def _check_arguments(dataset, path, test_path, label_column, shape, scale, offset, test_fraction, validation_fraction, seed):
    if dataset not in DATASETS:
        raise DataError(f"unknown dataset {dataset!r}; available: {', '.join(DATASETS)}")
    if not _is_number(test_fraction) or not 0 < test_fraction < 1:
        raise DataError(f"test_fraction must be a fraction between 0 and 1 (exclusive), got {test_fraction!r}")
    if not _is_number(validation_fraction) or not 0 <= validation_fraction < 1:
        raise DataError(
            f"validation_fraction must be a fraction from 0 (no validation set) up to but excluding 1, "
            f"got {validation_fraction!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise DataError(f"the data seed must be an integer from 0 to {2**32 - 1}, got {seed!r}")
    dims_ok = isinstance(shape, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape)
    if shape is not None and not (dims_ok and shape):
        raise DataError(f"shape must be a list of positive integers such as [8, 8, 1], got {shape!r}")
    if not _is_number(scale) or not math.isfinite(scale) or scale == 0:
        raise DataError(f"scale must be a finite non-zero number (inputs are raw * scale + offset), got {scale!r}")
    if not _is_number(offset) or not math.isfinite(offset):
        raise DataError(f"offset must be a finite number (inputs are raw * scale + offset), got {offset!r}")
    if isinstance(label_column, bool) or not isinstance(label_column, (int, np.integer, str)):
        raise DataError(
            f"label_column must be a column index (negative counts from the end) or a header name, got {label_column!r}"
        )
    if dataset == "digits":
        if path is not None or test_path is not None:
            raise DataError("data.path and data.test_path name files, but dataset is 'digits'; set dataset to npz or csv")
        return
    if path is None:
        raise DataError(f"dataset {dataset!r} reads a file: give its path (data.path)")
    if test_path is not None and dataset != "csv":
        raise DataError(
            f"{_display(test_path)}: test_path is for csv files; an .npz file holds its test set as x_test and y_test"
        )
    for p in (path, test_path):
        if p is None:
            continue
        if not isinstance(p, (str, os.PathLike)):
            raise DataError(f"data.path must be a file path, got {p!r}")
        ext = os.path.splitext(os.fspath(p))[1]
        if ext.lower() != EXTENSIONS[dataset]:
            other = [k for k, e in EXTENSIONS.items() if e == ext.lower()]
            fix = f"set dataset to {other[0]}" if other else f"give a {EXTENSIONS[dataset]} file"
            found = f"its extension is {ext!r}" if ext else "it has no extension"
            raise DataError(f"{_display(p)}: dataset {dataset!r} reads {EXTENSIONS[dataset]} files, but {found}; {fix}")
        if not os.path.exists(p):
            raise DataError(
                f"{_display(p)}: no such file; check data.path (a relative path is read from the config file's folder)"
            )
        if os.path.isdir(p):
            raise DataError(f"{_display(p)}: is a folder, not a file; give the {EXTENSIONS[dataset]} file itself")


class _Origin(NamedTuple):
    """Where a split's arrays come from, for messages: ``prefix`` the file, ``x``/``y`` the
    arrays' names, a sample's name (``row``) and the index of the first sample (``base``)."""

    prefix: str
    x: str
    y: str
    row: str
    base: int


def _checked(splits: dict, origins: dict) -> dict:
    """Every split as (numeric features of one sample shape, int64 labels), or one DataError."""
    out = {}
    for key, (x, y) in splits.items():
        origin = origins[key]
        prefix, xn, yn = origin.prefix, origin.x, origin.y
        x, y = _features(x, origin), _labels(y, origin)
        if len(x) != len(y):
            raise DataError(f"{prefix}{xn} has {len(x)} samples but {yn} has {len(y)} labels; give one label per sample")
        if key != "train" and x.shape[1:] != out["train"][0].shape[1:]:
            raise DataError(
                f"{prefix}{xn} samples have shape {x.shape[1:]} but x_train samples have shape {out['train'][0].shape[1:]}; "
                "every split needs samples of the same shape"
            )
        out[key] = (x, y)
    return out


def _features(x: np.ndarray, origin: _Origin) -> np.ndarray:
    prefix, name = origin.prefix, origin.x
    if x.dtype.kind not in "biuf":
        kind = _kind_name(x.dtype)
        raise DataError(f"{prefix}{name} has dtype {x.dtype} ({kind}); features must be numbers (integers or floats)")
    if x.ndim < 2:
        raise DataError(
            f"{prefix}{name} has shape {x.shape}; give one sample per row: (N, features) vectors or (N, H, W[, C]) images "
            f"(e.g. shape ({x.shape[0] if x.ndim else 'N'}, 1) for one feature)"
        )
    if not len(x):
        raise DataError(f"{prefix}{name} holds no samples")
    if x.dtype.kind == "f":
        finite = np.isfinite(x).reshape(len(x), -1).all(axis=1)
        if not finite.all():
            first, bad = int(np.argmin(finite)) + origin.base, int((~finite).sum())
            raise DataError(
                f"{prefix}{name} has NaN or infinite values in {_count(bad, 'sample')} (the first is {origin.row} {first}); "
                "remove or fill them"
            )
    return x


def _labels(y: np.ndarray, origin: _Origin) -> np.ndarray:
    prefix, name = origin.prefix, origin.y
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise DataError(
            f"{prefix}{name} has shape {y.shape}; give one integer label per sample, shape (N,) "
            "(for one-hot labels, store their argmax)"
        )
    if y.dtype.kind not in "biuf":
        raise DataError(f"{prefix}{name} has dtype {y.dtype} ({_kind_name(y.dtype)}); labels must be integers 0, 1, 2, ...")
    if y.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(y) & (y == np.floor(y))
        if not whole.all():
            example, bad = float(y[~whole][0]), int((~whole).sum())
            which = "1 label that is not a whole number" if bad == 1 else f"{bad} labels that are not whole numbers"
            raise DataError(f"{prefix}{name} holds {which}, e.g. {_number(example)}; labels must be class indices 0, 1, 2, ...")
    if y.size and y.dtype.kind != "b":
        if y.min() < 0:
            negative = y[y < 0]
            raise DataError(
                f"{prefix}{name} holds {_count(negative.size, 'negative label')}, e.g. {_number(negative[0])}; "
                "labels must be class indices 0, 1, 2, ..."
            )
        if y.max() > MAX_LABEL:
            big = _number(y.max())
            raise DataError(f"{prefix}{name} holds the label {big}, too large for a class index; labels are 0, 1, 2, ...")
    return y.astype(np.int64)


def _reshape(x: np.ndarray, shape, dataset: str, prefix: str) -> np.ndarray:
    size, want = math.prod(x.shape[1:]), math.prod(shape)
    if want != size:
        if dataset == "digits":
            raise DataError(
                f"shape {list(shape)} holds {want} values, but each {dataset} sample has {size}; "
                f"give a shape whose product is {size} (e.g. [8, 8, 1] for images, [8, 8] for rows as sequences)"
            )
        raise DataError(
            f"{prefix}shape {list(shape)} holds {want} values, but each sample has {size} (shape {list(x.shape[1:])}); "
            f"give a shape whose product is {size}"
        )
    return x.reshape(len(x), *shape)


def _split(y: np.ndarray, fraction: float, seed: int, prefix: str, samples: str, key: str, side: str):
    """Indices ``(keep, held)`` of a stratified split holding out ``fraction`` of ``y``, or a
    DataError saying which fractions work."""
    from sklearn.model_selection import train_test_split

    n = len(y)
    values, counts = np.unique(y, return_counts=True)
    classes = len(values)
    if counts.min() < 2:
        label = int(values[np.argmin(counts)])
        own = "a validation set (x_val, y_val in an .npz)" if side == "validation" else "a separate test set"
        raise DataError(
            f"{prefix}class {label} has only 1 sample among the {samples}, and a stratified split needs at least 2 of each "
            f"class; add samples of class {label}, remove it, or give {own}"
        )
    n_held = math.ceil(fraction * n)  # as scikit-learn rounds the held-out share
    if min(n_held, n - n_held) < classes:
        lo, hi = math.ceil(1e4 * classes / n) / 1e4, math.floor(1e4 * (n - classes) / n) / 1e4
        works = f"so use a fraction from {lo:.4f} to {hi:.4f}" if lo <= hi else f"which {n} samples cannot give; add samples"
        raise DataError(
            f"{prefix}{key} {fraction} splits the {samples} into {n - n_held} for training and {n_held} for {side}; "
            f"a stratified split needs at least {classes} (one per class) on each side, {works}"
        )
    keep, held = train_test_split(np.arange(n), test_size=fraction, stratify=y, random_state=seed)
    return keep, held


def _scaled(x: np.ndarray, scale: float, offset: float, prefix: str, split: str) -> np.ndarray:
    """float32 ``x * scale + offset``, computed in float64 (exact where the math is, one
    rounding at the cast); as cast when the scaling is the identity (so -0.0 stays -0.0)."""
    identity = scale == 1 and offset == 0
    out = np.empty(x.shape, dtype=np.float32)
    rows = max(1, _CHUNK // max(1, math.prod(x.shape[1:])))
    with np.errstate(over="ignore"):
        for i in range(0, len(x), rows):
            part = x[i : i + rows]
            out[i : i + rows] = part if identity else part.astype(np.float64) * float(scale) + float(offset)
    finite = np.isfinite(out)
    if not finite.all():
        example = _number(x.reshape(-1)[np.argmin(finite.reshape(-1))])
        if identity:
            raise DataError(
                f"{prefix}{int((~finite).sum())} {split} values are beyond float32's range (e.g. {example}); "
                "scale them down with data.scale"
            )
        raise DataError(
            f"{prefix}scale {_number(scale)} and offset {_number(offset)} take {int((~finite).sum())} {split} values beyond "
            f"float32's range (e.g. the raw value {example}); use a smaller scale"
        )
    return out


# ------------------------------------------------------------------------------ readers
def _read_digits() -> dict:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return {"train": (digits.data / 16.0, digits.target)}  # 0..16 / 16: exact


def _read_npz(path) -> dict:
    name = _display(path)
    how = "save the arrays with numpy.savez(path, x_train=..., y_train=...)"
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as err:
        raise DataError(f"{name}: cannot be read ({err.strerror or err}); check its permissions") from None
    if magic[:1] == b"\x80":
        raise DataError(f"{name}: is a pickle, not an .npz archive; edgebnn does not load pickles (they can run code), so {how}")
    if magic != b"PK\x03\x04":
        kind = "a single .npy array" if magic == b"\x93NUM" else "not a zip archive"
        raise DataError(f"{name}: is not an .npz archive ({kind}); {how}")
    try:
        archive = np.load(path, allow_pickle=False)
    except Exception as err:  # noqa: BLE001 - any failure to open an untrusted archive is the file's fault
        raise DataError(f"{name}: is not a readable .npz archive ({_reason(err)}); {how}") from None
    with archive:
        found = list(archive.files)
        missing = [k for k in NPZ_PAIRS[0] if k not in found]
        if missing:
            listed = ", ".join(found) if found else "none"
            raise DataError(f"{name}: has no {' or '.join(missing)} (its keys: {listed}); {how}")
        splits = {}
        for (xk, yk), split in zip(NPZ_PAIRS, ("train", "val", "test"), strict=True):
            if (xk in found) != (yk in found):
                have, lack = (xk, yk) if xk in found else (yk, xk)
                raise DataError(f"{name}: has {have} but no {lack}; give both or neither")
            if xk in found:
                splits[split] = (_npz_array(archive, xk, name), _npz_array(archive, yk, name))
    return splits


def _npz_array(archive, key: str, name: str) -> np.ndarray:
    try:
        return archive[key]
    except ValueError as err:
        if "allow_pickle" in str(err):
            raise DataError(
                f"{name}: array {key} holds Python objects (dtype object), which edgebnn does not load (unpickling "
                "can run code); store numbers"
            ) from None
        raise DataError(f"{name}: array {key} cannot be read ({_reason(err)}); write the file again") from None
    except Exception as err:  # noqa: BLE001 - a damaged member of an untrusted archive is the file's fault
        raise DataError(f"{name}: array {key} cannot be read ({_reason(err)}); write the file again") from None


def _read_csv_files(path, test_path, label_column) -> tuple[str, dict, dict]:
    header, values = _read_csv(path)
    label = _label_index(label_column, header, values.shape[1], path)
    splits = {"train": _csv_split(values, label)}
    origins = {"train": _csv_origin(path)}
    name = os.path.basename(os.fspath(path))
    if test_path is not None:
        test_header, test_values = _read_csv(test_path)
        if test_values.shape[1] != values.shape[1]:
            raise DataError(
                f"{_display(test_path)}: has {test_values.shape[1]} columns but {_display(path)} has {values.shape[1]}; "
                "the test file needs the same columns"
            )
        if header is not None and test_header is not None and test_header != header:
            diff = next(i for i, (a, b) in enumerate(zip(header, test_header, strict=True)) if a != b)
            raise DataError(
                f"{_display(test_path)}: column {diff} is {test_header[diff]!r} but in {_display(path)} it is "
                f"{header[diff]!r}; the test file needs the same columns"
            )
        splits["test"] = _csv_split(test_values, label)  # the same columns, so the same index
        origins["test"] = _csv_origin(test_path)
        name = f"{name} + {os.path.basename(os.fspath(test_path))}"
    return name, splits, origins


def _csv_origin(path) -> _Origin:
    return _Origin(f"{_display(path)}: ", "the feature data", "the label column", "data row", 1)


def _csv_split(values: np.ndarray, label: int):
    return np.delete(values, label, axis=1), values[:, label]


def _label_index(label_column, header, columns: int, path) -> int:
    name = _display(path)
    if isinstance(label_column, str):
        if header is None:
            raise DataError(
                f"{name}: label_column {label_column!r} names a header column, but the file has no header "
                "(its first row is numeric); give the label's column index"
            )
        if header.count(label_column) != 1:
            said = "names 2 or more columns" if label_column in header else "is not in the header"
            raise DataError(f"{name}: label_column {label_column!r} {said}; the header is {_names(header)}")
        index, columns = header.index(label_column), len(header)
    else:
        if not -columns <= label_column < columns:
            raise DataError(
                f"{name}: label_column {label_column} is out of range for rows of {columns} columns; "
                f"give an index from {-columns} to {columns - 1}"
            )
        index = int(label_column) % columns
    if columns < 2:
        raise DataError(f"{name}: rows have only the label column; give at least one feature column besides it")
    return index


def _read_csv(path) -> tuple[list[str] | None, np.ndarray]:
    """(header or None, the values as float64 rows): numpy's fast reader, and the csv module to
    say which line is wrong when it fails."""
    name = _display(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, skipinitialspace=True)
            first = next((row for row in reader if row), None)
            skip = reader.line_num
    except UnicodeDecodeError:
        raise DataError(f"{name}: is not a UTF-8 text file; {CSV_HOW}") from None
    except csv.Error as err:
        raise DataError(f"{name}: is not a readable csv file ({err}); {CSV_HOW}") from None
    except OSError as err:
        raise DataError(f"{name}: cannot be read ({err.strerror or err}); check its permissions") from None
    if first is None:
        raise DataError(f"{name}: is empty; {CSV_HOW}")
    header = None if all(_is_numeric(c) for c in first) else [c.strip() for c in first]
    values = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "input contained no data": said below
            values = np.loadtxt(
                path, delimiter=",", comments=None, skiprows=skip if header else 0, encoding="utf-8-sig", ndmin=2, dtype=float
            )
    except (ValueError, UnicodeDecodeError):
        pass  # read again below, to name the line at fault
    if values is None or (values.size and values.shape[1] != len(first)):
        values = _read_csv_rows(path, header is not None)
    if not values.size:
        raise DataError(f"{name}: holds only a header and no samples; give one sample per line after it")
    return header, values


def _read_csv_rows(path, has_header: bool) -> np.ndarray:
    name = _display(path)
    rows, width, width_line = [], None, 0
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, skipinitialspace=True)
            for row in reader:
                if not row:
                    continue
                if width is None:
                    width, width_line = len(row), reader.line_num
                    if has_header:
                        continue
                if len(row) != width:
                    raise DataError(
                        f"{name}: line {reader.line_num} has {len(row)} values but line {width_line} has {width}; "
                        "every row needs the same columns"
                    )
                try:
                    rows.append([float(c) for c in row])
                except ValueError:
                    col = next(i for i, c in enumerate(row) if not _is_numeric(c))
                    cell = "an empty value" if not row[col].strip() else repr(row[col])
                    raise DataError(
                        f"{name}: line {reader.line_num}, column {col + 1}: {cell} is not a number; "
                        "features and labels must be numeric"
                    ) from None
    except csv.Error as err:
        raise DataError(f"{name}: is not a readable csv file ({err}); {CSV_HOW}") from None
    return np.array(rows, dtype=np.float64).reshape(len(rows), width or 0)


# ------------------------------------------------------------------------------ small helpers
def _is_number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))


def _is_numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _display(path) -> str:
    return os.fspath(path)


def _number(v) -> str:
    """A number as a short literal: ``10`` for 10.0, ``0.00390625``, ``nan``."""
    v = float(v)
    return str(int(v)) if math.isfinite(v) and v == int(v) and abs(v) < 2**53 else repr(v)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _names(items: list[str]) -> str:
    shown = ", ".join(repr(s) for s in items[:8])
    return f"{shown}, ... ({len(items)} columns)" if len(items) > 8 else shown


def _kind_name(dtype: np.dtype) -> str:
    return _KINDS.get(dtype.kind, dtype.kind)


def _reason(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
