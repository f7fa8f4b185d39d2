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


def test_a_sum_of_a_merge_is_exact_below_2_to_the_24_steps_of_its_grid():
    from edgebnn.graph import add_node, cast_node

    x = input_node("input", (4,), FixedType(24, 24, True, "RND_CONV", "SAT"), "x")
    fine = cast_node("fine", x, FixedType(6, -4, False, "RND", "SAT"), relu=True)  # steps of 2**-10, below 2**-4
    mid = cast_node("mid", x, FixedType(11, 11, True, "RND", "SAT"), relu=False)  # up to 2**10
    coarse = cast_node("coarse", x, FixedType(16, 16, True, "RND", "SAT"), relu=False)  # up to 2**15
    assert inexact([x, fine, mid, add_node("exact", [mid, fine])]) == []  # 2**10 / 2**-10: 2**20 steps
    assert inexact([x, fine, coarse, add_node("wide", [coarse, fine])]) == ["wide"]  # 2**25 steps
