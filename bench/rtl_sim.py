"""The RTL backend's simulation on a digits BNN graph: cycles per sample at several foldings, and
samples per second of the Verilator simulation on one core, each checked bit for bit against the
emulator on the 360 test samples of the digits data.

    taskset -c 1 python bench/rtl_sim.py GRAPH.npz [--folding full:1x1:8x16] [--repeat 5]
        [--out /tmp/rtl-sim] [--against DIR]

A folding is ``full`` (every MVAU fully parallel), or ``PExSIMD`` applied to every dense node (each
clipped to a divisor of its sizes). Prints per folding: cycles per sample and latency (measured
in the simulation), the build time, and the simulation's samples per CPU-second of this process
and per wall second (min and median of ``--repeat`` timed runs of the test set repeated to at
least 20,000 samples; a shared machine's load lowers the wall rate far more than the CPU rate).

``--against DIR``: DIR/<folding> is the same graph's RTL project at that folding exported and
compiled by another edgebnn (an earlier commit: ``git archive``, then its ``bench/rtl_sim.py
GRAPH --out DIR``). Its simulation library is loaded as it was built, checked to give this
build's outputs on every timed sample, and timed in turns with this build (run A, run B, run A,
...), so both see the same machine; the ratios of their rates are printed beside them.
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


def _rates(label: str, cpu: list[float], wall: list[float]) -> str:
    return (
        f"    {label:<8} samples per CPU-second {min(cpu):>9,.0f} (min) {statistics.median(cpu):>9,.0f} (median); "
        f"per wall second {min(wall):>9,.0f} (min) {statistics.median(wall):>9,.0f} (median)"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("graph")
    p.add_argument("--folding", default="full:8x16", help="foldings to measure, separated by ':' (default full:8x16)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default="/tmp/edgebnn-rtl-sim")
    p.add_argument("--against", help="a folder of the same graph's projects built by another edgebnn, one per folding")
    args = p.parse_args(argv)

    import numpy as np

    from edgebnn.backends import rtl
    from edgebnn.backends.rtl.project import LIBRARY, RTLProject
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
        runs = {"this": project}
        if args.against:
            old = RTLProject(os.path.join(args.against, spec))
            runs["against"] = old._load(old.path / LIBRARY)
            if old.folding != project.folding:
                raise SystemExit(f"{old.path} has the folding {old.folding}, not {project.folding}")
        expect = project.run_codes(codes)[0]
        cpu = {k: [] for k in runs}
        wall = {k: [] for k in runs}
        for _ in range(args.repeat):
            for name, sim in runs.items():
                t, c = time.perf_counter(), time.process_time()
                out = sim.run_codes(codes)[0]
                wall[name].append(len(big) / (time.perf_counter() - t))
                cpu[name].append(len(big) / max(time.process_time() - c, 1e-9))
                if not np.array_equal(out, expect):
                    raise SystemExit(f"{spec}: the {name} simulation's outputs differ from this build's")
        print(
            f"{spec:>6}: {mismatches} of {len(x)} test samples differ from the emulator; {cps:g} cycles per sample, "
            f"latency {latency} cycles; build {build:.0f} s; simulation of {len(big)} samples, {args.repeat} runs each:",
            flush=True,
        )
        for name in runs:
            print(_rates(name, cpu[name], wall[name]), flush=True)
        if args.against:
            ratio = lambda f, d: f(d["this"]) / f(d["against"])
            print(
                f"    this / against: CPU rate {ratio(min, cpu):.2f}x (min) {ratio(statistics.median, cpu):.2f}x (median); "
                f"outputs equal on all {args.repeat * len(big)} samples of each",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
