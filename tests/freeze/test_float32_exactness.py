"""passes.float32_exactness: which accumulators float32 computes exactly."""

import numpy as np

from edgebnn.fixed import FixedType
from edgebnn.freeze.passes.float32_exactness import inexact
from edgebnn.graph import dense_node, input_node


def _nodes(n_in, in_bits):
    x = input_node("input", (n_in,), FixedType(in_bits, 0, False, "RND_CONV", "SAT"), "x")
    w = np.ones((n_in, 2), dtype=np.int64)
    return [x, dense_node("d", x, w, FixedType(2, 2, True, "RND_CONV", "SAT"), None, None, source="d")]


def test_wide_accumulators_are_inexact_narrow_ones_exact():
    assert inexact(_nodes(16, 8)) == []
    assert inexact(_nodes(512, 20)) == ["d"]  # 512 * (2**20 - 1) lsb > 2**24
