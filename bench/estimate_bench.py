"""Estimation and fit time against model size: ``estimate()`` (one reuse factor) and ``fit()``
(the search for the smallest reuse factor that fits) on ``--board``, under the Latency and the
Resource strategy, for hand-built graphs (no Keras, no freeze) of about ``--sizes`` weights,
with interleaved repetitions (every case and function once per round; min and median of each).

Graph families (``--families``):

* ``binary_mlp``: 784 -> h -> h -> 10, +-1 weights, sign thresholds (an XNOR net);
* ``int4_mlp``: the same shape, 4-bit weights (a third of them zero, so some products are free,
  some shift-adds, some multipliers) and ternary thresholds (2 per channel);
* ``binary_cnn``: 16x16x3 -> conv3x3 F -> sign -> maxpool -> conv3x3 F -> sign -> maxpool ->
  flatten -> dense 10.

``reference`` is the straightforward search fit replaces: every candidate reuse factor in
ascending order, each estimated by a fresh ``estimate()`` call, until one fits; the ratio
``reference / fit`` is taken per round (interleaved pairs) and printed as its min and median.

    python bench/estimate_bench.py [--repeats 5] [--sizes 10000,100000,1000000,4000000]
        [--families binary_mlp,int4_mlp,binary_cnn] [--board pynq-z2] [--no-reference]

The times are only as good as the machine is idle; the ratios are the fairer measure.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from edgebnn.backends.hls4ml.cost import WEIGHTED_OPS
from edgebnn.backends.hls4ml.cost.blocks import _matrix_shape, valid_reuse_factors
from edgebnn.boards import load_board
from edgebnn.estimate import estimate, fit
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, conv2d_node, dense_node, flatten_node, input_node, maxpool2d_node, threshold_node

BINARY = FixedType(2, 2)  # codes -1, +1
INT4 = FixedType(4, 2)


def _activation(name, src, rng, k):
    """A threshold node on ``src``: ``k`` = 1 a sign, 2 a ternary output, thresholds random in
    each channel's reachable range."""
    lo, hi = src.type.codes(src.lo), src.type.codes(src.hi)
    c = src.shape[-1]
    t = np.sort(rng.integers(lo[:, None], hi[:, None] + 1, size=(c, k)), axis=1)
    levels = np.tile([-1, 1], (c, 1)) if k == 1 else np.tile([-1, 0, 1], (c, 1))
    return threshold_node(name, src, t, levels, BINARY)


def mlp(h: int, weights: str, seed=0) -> Graph:
    rng = np.random.default_rng(seed)
    nodes = [input_node("input", (784,), FixedType.from_string("ufixed<8,0,RND_CONV,SAT>"))]
    for i, n_out in enumerate((h, h, 10)):
        shape = (nodes[-1].shape[-1], n_out)
        if weights == "binary":
            d = dense_node(f"dense{i}", nodes[-1], rng.choice(np.array([-1, 1]), size=shape), BINARY)
        else:
            w = rng.integers(INT4.min_code, INT4.max_code + 1, size=shape)
            w[rng.random(shape) < 1 / 3] = 0
            d = dense_node(f"dense{i}", nodes[-1], w, INT4)
        nodes.append(d)
        if i < 2:
            nodes.append(_activation(f"act{i}", d, rng, 1 if weights == "binary" else 2))
    return Graph(f"{weights}_mlp", nodes)


def cnn(f: int, seed=0) -> Graph:
    rng = np.random.default_rng(seed)
    nodes = [input_node("input", (16, 16, 3), FixedType.from_string("ufixed<8,0,RND_CONV,SAT>"))]
    for i in range(2):
        w = rng.choice(np.array([-1, 1]), size=(3, 3, nodes[-1].shape[-1], f))
        conv = conv2d_node(f"conv{i}", nodes[-1], w, BINARY, padding=((1, 1), (1, 1)))
        nodes += [conv, _activation(f"sign{i}", conv, rng, 1)]
        nodes.append(maxpool2d_node(f"pool{i}", nodes[-1]))
    nodes.append(flatten_node("flat", nodes[-1]))
    nodes.append(dense_node("dense", nodes[-1], rng.choice(np.array([-1, 1]), size=(nodes[-1].shape[-1], 10)), BINARY))
    return Graph("binary_cnn", nodes)


FAMILIES = {
    "binary_mlp": (lambda h: 784 * h + h * h + 10 * h, lambda h: mlp(h, "binary")),
    "int4_mlp": (lambda h: 784 * h + h * h + 10 * h, lambda h: mlp(h, "int4")),
    "binary_cnn": (lambda f: 27 * f + 9 * f * f + 160 * f, cnn),
}


def sized(family: str, target: int) -> Graph:
    """The family's graph whose weight count is nearest ``target`` (its width by bisection)."""
    count, build = FAMILIES[family]
    lo, hi = 1, 1
    while count(hi) < target:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if count(mid) < target else (lo, mid)
    width = min((max(lo - 1, 1), lo), key=lambda w: abs(count(w) - target))
    return build(width)


def weights(graph: Graph) -> int:
    return sum(int(np.asarray(n.params["weight"]).size) for n in graph.nodes if "weight" in n.params)


def reference_fit(graph: Graph, board, strategy: str):
    """The straightforward search: each candidate in ascending order, a fresh estimate() each."""
    dense = [n for n in graph.compute_nodes() if n.op in WEIGHTED_OPS]
    valid = [set(valid_reuse_factors(*_matrix_shape(n))) for n in dense]
    if strategy == "Resource" and valid:
        valid = [set.intersection(*valid) | {1}]
    for rf in sorted(set().union(*valid)) or [1]:
        if estimate(graph, board, strategy=strategy, reuse_factor=rf).fits:
            return rf
    return None


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sizes", default="10000,100000,1000000,4000000")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--board", default="pynq-z2", help="the board (default pynq-z2: nothing here fits it)")
    ap.add_argument("--no-reference", action="store_true", help="skip the straightforward search (slow at 4M)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    board = load_board(args.board)
    graphs = {(fam, s): sized(fam, s) for fam in args.families.split(",") for s in sizes}
    funcs = {
        "estimate": lambda g: estimate(g, board).fits,
        "fit Latency": lambda g: fit(g, board).reuse_factor,
        "fit Resource": lambda g: fit(g, board, strategy="Resource").reuse_factor,
    }
    if not args.no_reference:
        funcs["reference Latency"] = lambda g: reference_fit(g, board, "Latency")
        funcs["reference Resource"] = lambda g: reference_fit(g, board, "Resource")
    times = {(key, name): [] for key in graphs for name in funcs}
    answers = {}
    for _ in range(args.repeats):  # interleaved: every case and function once per round
        for key, g in graphs.items():
            for name, fn in funcs.items():
                t, out = timed(lambda fn=fn, g=g: fn(g))
                times[key, name].append(t)
                answers[key, name] = out
    print(f"board {board.name}, {args.repeats} interleaved rounds; time min / median; per weight: median / weights")
    print(f"{'family':<11} {'weights':>9}  {'function':<19} {'min':>9} {'median':>9} {'ns/weight':>9}  answer")
    for (fam, size), g in graphs.items():
        n = weights(g)
        for name in funcs:
            ts = times[(fam, size), name]
            med = statistics.median(ts)
            answer = answers[(fam, size), name]
            print(f"{fam:<11} {n:>9,}  {name:<19} {min(ts):>8.4f}s {med:>8.4f}s {1e9 * med / n:>9.1f}  {answer}")
        if not args.no_reference:
            for strategy in ("Latency", "Resource"):
                ref, new = ((fam, size), f"reference {strategy}"), ((fam, size), f"fit {strategy}")
                assert answers[ref] == answers[new], "fit and the straightforward search disagree"
                ratios = [r / f for r, f in zip(times[ref], times[new])]
                med = statistics.median(ratios)
                print(f"{'':<11} {'':>9}  reference / fit {strategy}: min {min(ratios):.1f}x, median {med:.1f}x")


if __name__ == "__main__":
    main()
