"""The lattice of a node's reachable output codes: per channel, every value the node can produce
is ``base + k * step`` for an integer ``k`` (``step`` 0: the channel is a constant ``base``).

It follows from the structure of the codes, not from data. A sum of ``n`` terms of +-1 is
congruent to ``n`` modulo 2, so a dense or convolution over binary inputs with odd weights
reaches every other integer only. In general a weighted sum ``sum_j w_j x_j + b`` whose input
``x_j`` lies on ``a_j + d_j Z`` lies on ``sum_j w_j a_j + b + gcd_j(|w_j| d_j) Z``: a common factor
of the weight codes, the input grid's structure (a threshold's levels, e.g. -1 and +1) and the
bias offset all show. The lattice of an op's output from its input's:

- input, cast (and any op not listed): every code (step 1);
- threshold: its levels per channel (step the gcd of their differences);
- dense, conv2d: the weighted sum above, on the accumulator's codes (products and bias scaled
  onto its grid); a padded convolution's windows also read the pad code;
- pad2d: its input's, with the pad code too (the padded positions hold it);
- maxpool2d: its input's (a maximum is one of its inputs);
- avgpool2d: the window sums of its input's, on its finer grid;
- flatten: its input's, per flat feature.

``freeze`` enumerates only these values to place thresholds (``freeze/passes/thresholds.py``)
and records the lattice on the threshold node. Nothing here imports TensorFlow or hls4ml.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .node import Node
from .ops import REGISTRY


def lattice(node: Node, source: Callable[[str], Node]) -> tuple[np.ndarray, np.ndarray]:
    """(base, step) int64 arrays, one entry per channel (the last axis) of ``node``, with
    ``0 <= base < step`` where ``step > 0``; ``source(name)`` returns the node of that name.
    Each op's rule is its spec's ``lattice`` (``graph/ops/<op>.py``); an op without one
    reaches every code."""
    rule = REGISTRY[node.op].lattice
    if rule is None:
        channels = int(node.shape[-1])
        return np.zeros(channels, dtype=np.int64), np.ones(channels, dtype=np.int64)
    return rule(node, source, lambda n: lattice(n, source))


def on_lattice(lo: np.ndarray, hi: np.ndarray, base: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per channel, the first and last lattice codes within [lo, hi] (codes); a constant channel's
    base for both."""
    s = np.where(step > 0, step, 1)
    first = np.where(step > 0, lo + np.mod(base - lo, s), base)
    last = np.where(step > 0, hi - np.mod(hi - base, s), base)
    return first, last
