"""Small deployment graphs built by hand (no Keras), for tests of everything downstream."""

import numpy as np

from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, dense_node, input_node, threshold_node

BINARY = FixedType(2, 2)  # codes -1, +1


def binary_mlp(sizes=(16, 12, 8, 4), seed=0, input_type="ufixed<8,0,RND_CONV,SAT>", out_levels=None):
    """Input -> [dense(binary weights) -> sign threshold] * n -> dense, random thresholds.

    With ``out_levels`` (a FixedType string) the last dense gets a multi-level threshold.
    """
    rng = np.random.default_rng(seed)
    nodes = [input_node("input", (sizes[0],), FixedType.from_string(input_type))]
    for i, n_out in enumerate(sizes[1:]):
        src = nodes[-1]
        w = rng.choice(np.array([-1, 1]), size=(src.shape[-1], n_out))
        d = dense_node(f"dense{i}", src, w, BINARY)
        nodes.append(d)
        last = i == len(sizes) - 2
        if last and out_levels is None:
            break
        lo = d.type.codes(d.lo)
        hi = d.type.codes(d.hi)
        if not last:
            t = rng.integers(lo, hi + 1)[:, None]
            sign = rng.choice(np.array([-1, 1]), size=n_out)
            levels = np.stack([-sign, sign], axis=1)
            nodes.append(threshold_node(f"sign{i}", d, t, levels, BINARY))
        else:
            ot = FixedType.from_string(out_levels)
            k = 5
            t = np.sort(rng.integers(lo[:, None], hi[:, None] + 1, size=(n_out, k)), axis=1)
            levels = np.sort(rng.integers(ot.min_code, ot.max_code + 1, size=(n_out, k + 1)), axis=1)
            nodes.append(threshold_node(f"levels{i}", d, t, levels, ot))
    return Graph("binary_mlp", nodes)
