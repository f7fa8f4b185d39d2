"""Compile once: how long ``HLSProject.compile()`` takes cold, from the project folder's own
library and from the shared cache (``EDGEBNN_CSIM_CACHE``), and the C-simulation throughput of
``predict`` in one process and split across the cores, measured in one run with interleaved
repetitions (min and median of each).

The model is a hand-built BNN (no Keras, no training): binary weights, sign activations,
8-bit unsigned input, layers ``--sizes`` (default 64-128-128-10), io_parallel, pynq-z2.

    python bench/csim_cache_bench.py [--repeats 3] [--samples 4000] [--only compile|predict] [--one-core]

The cold compile is also measured with the weights' unit as it was before it read the weight
headers as plain tables (every header included, one ap_fixed constructor call per weight for g++
to compile), interleaved; ``--one-core`` pins the process and g++ to one core.

The numbers are only as good as the machine is idle: the parallel split cannot gain on cores
that other work holds (``--only predict`` compiles once, or takes the library from the
``EDGEBNN_CSIM_CACHE`` you set, and measures ``predict`` alone).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import tempfile
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from edgebnn.backends import hls4ml as hls
from edgebnn.backends.hls4ml import csim_cache
from edgebnn.backends.hls4ml import project as project_module
from edgebnn.emulate import emulate
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, dense_node, input_node, threshold_node

BINARY = FixedType(2, 2)
PYNQ = {"name": "pynq-z2", "part": "xc7z020clg400-1", "clock_period_ns": 10}


def bnn(sizes, seed=0) -> Graph:
    """Input -> [dense(+-1 weights) -> sign] * n -> dense."""
    rng = np.random.default_rng(seed)
    nodes = [input_node("input", (sizes[0],), FixedType.from_string("ufixed<8,0,RND_CONV,SAT>"))]
    for i, n_out in enumerate(sizes[1:]):
        d = dense_node(f"dense{i}", nodes[-1], rng.choice(np.array([-1, 1]), size=(nodes[-1].shape[-1], n_out)), BINARY)
        nodes.append(d)
        if i < len(sizes) - 2:
            levels = np.tile([-1, 1], (n_out, 1))
            nodes.append(threshold_node(f"sign{i}", d, np.zeros((n_out, 1), dtype=np.int64), levels, BINARY))
    return Graph("bench_bnn", nodes)


def export(graph, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hls.HLSExportWarning)
        return hls.export(graph, path, board=PYNQ)


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def line(name, times):
    return f"  {name:<37} min {min(times):8.3f} s   median {statistics.median(times):8.3f} s   ({len(times)} runs)"


def weights_included(project) -> None:
    """The weights' unit as it was before the tables: every weight header included."""
    firmware = pathlib.Path(project.path, "firmware")
    lines = ['#include "defines.h"'] + [f'#include "{header}"' for header in csim_cache.weight_headers(firmware)]
    (firmware / "myproject_weights.cpp").write_text("\n".join(lines) + "\n")


def compile_times(graph, tmp, repeats):
    """Prints cold, same-folder and shared compile times; returns the last compiled project."""
    cold, before, local, shared = [], [], [], []
    x_check = np.random.default_rng(2).uniform(-0.2, 1.2, size=(200, graph.nodes[0].shape[-1]))
    for rep in range(repeats):
        os.environ[csim_cache.CACHE_ENV] = os.path.join(tmp, f"old{rep}")
        old = export(graph, os.path.join(tmp, f"o{rep}"))
        weights_included(old)
        before.append(timed(old.compile)[0])
        os.environ[csim_cache.CACHE_ENV] = os.path.join(tmp, f"cache{rep}")  # empty: the first compile is cold
        first = export(graph, os.path.join(tmp, f"a{rep}"))
        cold.append(timed(first.compile)[0])
        assert np.array_equal(first.predict(x_check), old.predict(x_check))
        local.append(timed(first.compile)[0])
        twin = export(graph, os.path.join(tmp, f"b{rep}"))  # identical project, another folder
        shared.append(timed(twin.compile)[0])
    print("compile()")
    print(line("cold (g++)", cold))
    print(line("cold, weight headers included", before))
    print(f"  included / tables: {min(before) / min(cold):.2f}x (min over min), outputs identical")
    print(line("again, same folder (its library)", local))
    print(line("identical project elsewhere (shared)", shared))
    ratios = f"{min(cold) / min(local):.0f}x (same folder), {min(cold) / min(shared):.0f}x (shared)"
    print(f"  cold / cached: {ratios}, min over min")
    return twin


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--samples", type=int, default=4000)
    ap.add_argument("--sizes", default="64,128,128,10")
    ap.add_argument("--only", choices=["compile", "predict"])
    ap.add_argument("--one-core", action="store_true", help="pin this process and g++ to one core")
    args = ap.parse_args()
    if args.one_core:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    sizes = [int(s) for s in args.sizes.split(",")]
    graph = bnn(sizes)
    cores = project_module._usable_cores()
    print(f"model: BNN {'-'.join(map(str, sizes))}, io_parallel; g++ flags {csim_cache.CSIM_CFLAGS!r}; {cores} usable cores")

    with tempfile.TemporaryDirectory() as tmp:
        if args.only == "predict":
            os.environ.setdefault(csim_cache.CACHE_ENV, os.path.join(tmp, "cache"))  # a cache of your own: no build
            twin = export(graph, os.path.join(tmp, "b")).compile()
        else:
            twin = compile_times(graph, tmp, args.repeats)
        if args.only == "compile":
            return
        x = np.random.default_rng(1).uniform(-0.2, 1.2, size=(args.samples, sizes[0]))
        want = emulate(graph, x)
        serial, parallel, default = [], [], []
        for _ in range(args.repeats):
            t, y1 = timed(lambda: twin.predict(x, processes=1))
            serial.append(t)
            t, yn = timed(lambda: twin.predict(x, processes=cores))
            parallel.append(t)
            t, yd = timed(lambda: twin.predict(x))
            default.append(t)
            assert np.array_equal(y1, want) and np.array_equal(yn, y1) and np.array_equal(yd, y1)
        print(f"predict() on {args.samples} samples (all three bit-identical to the emulator)")
        print(line("one process (processes=1)", serial))
        print(line(f"split (processes={cores})", parallel))
        print(line("default (processes=None)", default))
        rate = args.samples / min(serial), args.samples / min(parallel)
        print(f"  throughput: {rate[0]:.0f} vs {rate[1]:.0f} samples/s, {min(serial) / min(parallel):.2f}x (min over min)")


if __name__ == "__main__":
    main()
