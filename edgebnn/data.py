"""Data sets that ship with a package or are made locally; nothing downloads at run time."""

from __future__ import annotations

import math

import numpy as np

from .errors import EdgebnnError

DATASETS = ("digits",)


class DataError(EdgebnnError):
    """A data set or split that cannot be made."""


def load_dataset(dataset: str, test_fraction: float = 0.2, seed: int = 0, shape=None):
    """``(x_train, y_train, x_test, y_test)`` as float32 features and int labels.

    ``digits``: scikit-learn's embedded 8x8 digits (1,797 samples), pixels 0..16 scaled by 1/16
    to [0, 1] (exact in float32), stratified split with ``seed``. ``shape``: each sample's shape
    (default the flat 64 features; ``[8, 8, 1]`` an image, ``[8, 8]`` its rows as a sequence).
    """
    if dataset not in DATASETS:
        raise DataError(f"unknown dataset {dataset!r}; available: {', '.join(DATASETS)}")
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float)) or not 0 < test_fraction < 1:
        raise DataError(f"test_fraction must be a fraction between 0 and 1 (exclusive), got {test_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise DataError(f"the data seed must be an integer from 0 to {2**32 - 1}, got {seed!r}")
    dims_ok = isinstance(shape, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape)
    if shape is not None and not (dims_ok and shape):
        raise DataError(f"shape must be a list of positive integers such as [8, 8, 1], got {shape!r}")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    n, classes = len(y), len(np.unique(y))
    n_test = math.ceil(test_fraction * n)  # as scikit-learn rounds the test share
    if min(n_test, n - n_test) < classes:
        lo, hi = math.ceil(1e4 * classes / n) / 1e4, math.floor(1e4 * (n - classes) / n) / 1e4
        raise DataError(
            f"test_fraction {test_fraction} splits the {n} {dataset} samples into {n - n_test} for "
            f"training and {n_test} for testing; a stratified split needs at least {classes} (one per "
            f"class) on each side, so use a fraction from {lo:.4f} to {hi:.4f}"
        )
    if shape is not None:
        if math.prod(shape) != x.shape[1]:
            raise DataError(
                f"shape {list(shape)} holds {math.prod(shape)} values, but each {dataset} sample has {x.shape[1]}; "
                f"give a shape whose product is {x.shape[1]} (e.g. [8, 8, 1] for images, [8, 8] for rows as sequences)"
            )
        x = x.reshape(n, *shape)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    return x_tr, y_tr, x_te, y_te
