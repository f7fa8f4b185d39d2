"""Data sets that ship with a package or are made locally; nothing downloads at run time."""

from __future__ import annotations

import numpy as np

DATASETS = ("digits",)


def load_dataset(dataset: str, test_fraction: float = 0.2, seed: int = 0):
    """``(x_train, y_train, x_test, y_test)`` as float32 features and int labels.

    ``digits``: scikit-learn's embedded 8x8 digits (1,797 samples), pixels 0..16 scaled by 1/16
    to [0, 1] (exact in float32), stratified split with ``seed``.
    """
    if dataset != "digits":
        raise ValueError(f"unknown dataset {dataset!r}; available: {', '.join(DATASETS)}")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    return x_tr, y_tr, x_te, y_te
