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


def test_depthwise_accumulators_and_a_separable_intermediate_are_checked():
    from edgebnn.graph import conv2d_node, depthwise_conv2d_node

    wt = FixedType(4, 4, True, "RND_CONV", "SAT")
    for bits, want in ((8, []), (20, ["dw"])):
        x = input_node("input", (4, 4, 2), FixedType(bits, 0, False, "RND_CONV", "SAT"), "x")
        # 3x3 taps of weight 7 on inputs below 1: 63 * (2**bits - 1) lsb per output
        dw = depthwise_conv2d_node("dw", x, np.full((3, 3, 2, 2), 7), wt)
        pw = conv2d_node("pw", dw, np.ones((1, 1, 4, 1), dtype=np.int64), FixedType(2, 2, True, "RND_CONV", "SAT"))
        # the 1x1 sum of four inexact intermediates is inexact too; with 8-bit inputs both are exact
        assert inexact([x, dw, pw]) == (want + ["pw"] if want else [])
