"""The RTL backend's simulation on a digits BNN graph: cycles per sample at several foldings, and
samples per second of the Verilator simulation on one core, each checked bit for bit against the
emulator on the 360 test samples of the digits data.

    python bench/rtl_sim.py GRAPH.npz [--folding full:1x1:8x16] [--repeat 3] [--out /tmp/rtl-sim]

A folding is ``full`` (every MVAU fully parallel), or ``PExSIMD`` applied to every dense node (each
clipped to a divisor of its sizes). Prints per folding: cycles per sample and latency (measured
in the simulation), the build time, and the simulation's samples/s (min and median of
``--repeat`` timed runs of the test set repeated to at least 20,000 samples).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def folding_for(graph, spec: str) -> dict:
    from edgebnn.backends.rtl import folding
    from edgebnn.backends.rtl.ops import LOWERINGS

    out = {}
    for node in graph.nodes:
        module = LOWERINGS[node.op]
        if not module.FOLDED:
            continue
        outputs, inputs = module.fold_sizes(node, graph.sources(node))
        if spec == "full":
            out[node.name] = (outputs, inputs)
            continue
        pe, simd = (int(v) for v in spec.split("x"))
        out[node.name] = (
            max(d for d in folding.divisors(outputs) if d <= pe),
            max(d for d in folding.divisors(inputs) if d <= simd),
        )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("graph")
    p.add_argument("--folding", default="full:8x16", help="foldings to measure, separated by ':' (default full:8x16)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="/tmp/edgebnn-rtl-sim")
    args = p.parse_args(argv)

    import numpy as np

    from edgebnn.backends import rtl
    from edgebnn.data import load_data
    from edgebnn.emulate import emulate
    from edgebnn.graph import Graph

    graph = Graph.load(args.graph)
    x = load_data("digits").x_test.reshape(-1, *graph.input.shape)
    want = emulate(graph, x)
    reps = max(1, -(-20000 // len(x)))
    big = np.concatenate([x] * reps)
    for spec in args.folding.split(":"):
        t0 = time.perf_counter()
        project = rtl.export(graph, os.path.join(args.out, spec), folding=folding_for(graph, spec), force=True).compile()
        build = time.perf_counter() - t0
        got = project.predict(x)
        mismatches = int((got != want).reshape(len(x), -1).any(axis=1).sum())
        cps, latency = project.cycles_per_sample, project.latency_cycles
        codes = project._codes(big)
        rates = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            project.run_codes(codes)
            rates.append(len(big) / (time.perf_counter() - t))
        print(
            f"{spec:>6}: {mismatches} of {len(x)} test samples differ from the emulator; {cps:g} cycles per sample, "
            f"latency {latency} cycles; build {build:.0f} s; simulation {min(rates):,.0f} (min) {statistics.median(rates):,.0f} "
            f"(median) samples/s over {len(big)} samples",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
