"""Speed and memory of the emulator next to the arithmetic it cannot beat.

Three hand-built graphs (no Keras): a 4-bit MLP 784-256-256-10 (4-bit inputs, weights and
activations, 15 thresholds per channel), a binary MLP 784-512-512-512-10 (a sign on the input,
then +-1 weights and activations) and a binary CNN on 32x32x3 (an 8-bit input convolution, then
binary convolutions, max pools and a binary dense head). Printed, from interleaved repetitions
(min and median):

- each MLP's emulator throughput as a ratio to a plain float64 GEMM and a float32 GEMM of the
  same layer shapes (the layer inputs given as floats already; ratio > 1: the emulator is faster);
- each binary MLP layer's dense node (its ``execute`` on the codes the emulator passes it) as a
  ratio to a bit-packed XNOR-popcount reference on inputs and weights packed beforehand (the
  NumPy limit: XOR, ``bitwise_count`` and a small-integer add per 64-bit word, nothing else);
- the peak memory (tracemalloc: what the call allocates) of the binary CNN at several batch sizes.

BLAS runs on one thread unless OPENBLAS_NUM_THREADS says otherwise (the popcount reference and
the emulator's own passes are single-threaded, so one thread compares like with like).

With ``--keras`` it measures what a user calls instead: ``edgebnn.emulate(freeze(model), x)`` on
two Keras models 784-1024-1024-10 (a 4-bit one: quantized_bits(4, 0) kernels with float biases,
quantized_relu(4, 0), an unsigned 4-bit input quantizer on float inputs; a binary one: ste_sign
kernels and activations, BatchNormalization after each layer, a quantized_bits(2, 1) input), the
float heads rounded by ``output_quantizer``, on 10,000 float samples, against float64 GEMMs of
the same layer shapes, interleaved (input quantization, thresholds, chunks and the head included).

Usage: python bench/emulator_bench.py [--batch 2000] [--reps 7] [--cnn-batches 100,500,2000]
[--keras [--keras-batch 10000]] (with PYTHONPATH pointing at another checkout it measures that
one's emulator).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from edgebnn.emulate import emulate
from edgebnn.fixed import FixedType
from edgebnn.graph import (
    REGISTRY,
    Graph,
    conv2d_node,
    dense_node,
    flatten_node,
    input_node,
    maxpool2d_node,
    threshold_node,
)

BINARY = FixedType(2, 2)


def _thresholds(rng, node, k):
    """``k`` ascending thresholds per channel spread over the middle of the accumulator's bounds."""
    lo, hi = node.type.codes(node.lo), node.type.codes(node.hi)
    mid, span = (lo + hi) // 2, np.maximum((hi - lo) // 8, k)
    t = mid[:, None] + (np.linspace(-1, 1, k)[None] * span[:, None]).astype(np.int64) + rng.integers(-2, 3, (len(lo), k))
    return np.sort(np.clip(t, lo[:, None], hi[:, None]), axis=1)


def mlp4(rng) -> Graph:
    """4-bit MLP 784-256-256-10: ufixed<4,0> inputs, fixed<4,1> weights, 4-bit unsigned activations."""
    wt, at = FixedType.from_string("fixed<4,1>"), FixedType.from_string("ufixed<4,4>")
    nodes = [input_node("x", (784,), FixedType.from_string("ufixed<4,0,RND_CONV,SAT>"))]
    for i, width in enumerate((256, 256)):
        d = dense_node(f"d{i}", nodes[-1], rng.integers(-8, 8, (nodes[-1].shape[0], width)), wt)
        nodes += [d, threshold_node(f"q{i}", d, _thresholds(rng, d, 15), [list(range(16))] * width, at)]
    nodes.append(dense_node("out", nodes[-1], rng.integers(-8, 8, (256, 10)), wt))
    return Graph("mlp4", nodes)


def binary_mlp(rng) -> Graph:
    """Binary MLP 784-512-512-512-10: a sign of the input, then +-1 weights and sign activations."""
    inp = input_node("x", (784,), FixedType.from_string("ufixed<8,0,RND_CONV,SAT>"))
    nodes = [inp, threshold_node("s", inp, np.full((784, 1), 128), [[-1, 1]] * 784, BINARY)]
    for i, width in enumerate((512, 512, 512)):
        d = dense_node(f"d{i}", nodes[-1], rng.choice([-1, 1], (nodes[-1].shape[0], width)), BINARY)
        nodes += [d, threshold_node(f"s{i}", d, rng.integers(-8, 9, (width, 1)), [[-1, 1]] * width, BINARY)]
    nodes.append(dense_node("out", nodes[-1], rng.choice([-1, 1], (512, 10)), BINARY))
    return Graph("binary_mlp", nodes)


def binary_cnn(rng) -> Graph:
    """Binary CNN on 32x32x3: conv 3x3x32 on the 8-bit input, sign, binary conv 3x3x32, max pool,
    sign, binary conv 3x3x64, max pool, sign, flatten, binary dense 10 ('same' zero padding)."""
    same = ((1, 1), (1, 1))
    inp = input_node("x", (32, 32, 3), FixedType.from_string("ufixed<8,0,RND_CONV,SAT>"))
    c0 = conv2d_node("c0", inp, rng.integers(-8, 8, (3, 3, 3, 32)), FixedType(4, 4), padding=same)
    s0 = threshold_node("s0", c0, rng.integers(-64, 64, (32, 1)), [[-1, 1]] * 32, BINARY)
    c1 = conv2d_node("c1", s0, rng.choice([-1, 1], (3, 3, 32, 32)), BINARY, padding=same)
    p1 = maxpool2d_node("p1", c1)
    s1 = threshold_node("s1", p1, rng.integers(-8, 9, (32, 1)), [[-1, 1]] * 32, BINARY)
    c2 = conv2d_node("c2", s1, rng.choice([-1, 1], (3, 3, 32, 64)), BINARY, padding=same)
    p2 = maxpool2d_node("p2", c2)
    s2 = threshold_node("s2", p2, rng.integers(-8, 9, (64, 1)), [[-1, 1]] * 64, BINARY)
    f = flatten_node("f", s2)
    out = dense_node("out", f, rng.choice([-1, 1], (f.shape[0], 10)), BINARY)
    return Graph("binary_cnn", [inp, c0, s0, c1, p1, s1, c2, p2, s2, f, out])


# ------------------------------------------------------------------ references
def _pack(bits: np.ndarray) -> np.ndarray:
    """(rows, n) booleans as (words, rows) uint64."""
    rows, n = bits.shape
    words = -(-n // 64)
    packed = np.zeros((rows, words * 8), dtype=np.uint8)
    packed[:, : -(-n // 8)] = np.packbits(bits, axis=1)
    return np.ascontiguousarray(packed.view(np.uint64).T)


def popcount_reference(xb: np.ndarray, wb: np.ndarray, rows: int | None = None) -> np.ndarray:
    """Counts of differing signs of pre-packed inputs (words, M) and weights (words, F): per block
    of rows (32K words a block, the size measured best here), per word, XOR into a reused
    buffer, bitwise_count, add into uint16 counts."""
    words, m = xb.shape
    f = wb.shape[1]
    rows = rows or max(16, (1 << 15) // f)
    out = np.empty((m, f), dtype=np.uint16)
    tmp = np.empty((min(rows, m), f), dtype=np.uint64)
    cnt = np.empty(tmp.shape, dtype=np.uint8)
    for r in range(0, m, rows):
        n = min(rows, m - r)
        t, c, a = tmp[:n], cnt[:n], out[r : r + n]
        a[...] = 0
        for j in range(words):
            np.bitwise_xor(xb[j, r : r + n, None], wb[j], out=t)
            np.bitwise_count(t, out=c)
            np.add(a, c, out=a)
    return out


def gemm_chain(xs, ws):
    return [x @ w for x, w in zip(xs, ws)]


def interleaved(cases: dict, reps: int) -> dict:
    """{name: (min, median)} seconds, every case run once per repetition in turn."""
    times = {name: [] for name in cases}
    for fn in cases.values():
        fn()  # warm up
    for _ in range(reps):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def node_codes(graph: Graph, x: np.ndarray) -> dict:
    """Every node's codes as the emulator passes them on (their dtype included), node by node."""
    codes = {graph.input.name: REGISTRY["input"].execute(graph.input, [], [x])}
    for node in graph.compute_nodes():
        codes[node.name] = REGISTRY[node.op].execute(node, [graph[s] for s in node.inputs], [codes[s] for s in node.inputs])
    return codes


def _weighted_layers(graph: Graph):
    return [n for n in graph.compute_nodes() if n.op == "dense"]


def mlp_report(graph: Graph, x: np.ndarray, reps: int, popcount: bool) -> None:
    codes = node_codes(graph, x)
    layers = _weighted_layers(graph)
    xs64 = [codes[n.inputs[0]].astype(np.float64) for n in layers]
    ws64 = [n.params["weight"].astype(np.float64) for n in layers]
    xs32, ws32 = [a.astype(np.float32) for a in xs64], [a.astype(np.float32) for a in ws64]
    shapes = " ".join(f"{a.shape[0]}x{a.shape[1]}@{w.shape[1]}" for a, w in zip(xs64, ws64))
    cases = {
        "emulator": lambda: emulate(graph, x),
        "float64 GEMM": lambda: gemm_chain(xs64, ws64),
        "float32 GEMM": lambda: gemm_chain(xs32, ws32),
    }
    if popcount:
        packed = [(_pack(codes[n.inputs[0]] > 0), _pack(np.ascontiguousarray(n.params["weight"].T) > 0)) for n in layers]
        cases["popcount reference"] = lambda: [popcount_reference(xb, wb) for xb, wb in packed]
        for n in layers:
            src = graph[n.inputs[0]]
            cases[f"  {n.name} execute"] = lambda n=n, src=src: REGISTRY[n.op].execute(n, [src], [codes[src.name]])
        for n, (xb, wb) in zip(layers, packed):
            cases[f"  {n.name} popcount reference"] = lambda xb=xb, wb=wb: popcount_reference(xb, wb)
    t = interleaved(cases, reps)
    print(f"{graph.name}: batch {len(x)}, layers {shapes}")
    for name, (lo, med) in t.items():
        print(f"  {name:32s} min {lo * 1e3:9.2f} ms   median {med * 1e3:9.2f} ms")
    emu = t["emulator"]
    for ref in ("float64 GEMM", "float32 GEMM", "popcount reference"):
        if ref in t:
            print(f"  emulator vs {ref:20s} {t[ref][0] / emu[0]:.2f}x (min/min)   {t[ref][1] / emu[1]:.2f}x (median/median)")
    if popcount:
        for n in layers:
            e, r = t[f"  {n.name} execute"], t[f"  {n.name} popcount reference"]
            ratio = f"{r[0] / e[0]:.2f}x (min/min)   {r[1] / e[1]:.2f}x (median/median)"
            print(f"  layer {n.name:4s} execute vs popcount reference   {ratio}")


def keras_models(seed: int = 0) -> dict:
    """The two Keras models of ``--keras`` with trained-looking weights: {name: model}."""
    import keras

    from edgebnn.layers import QuantActivation, QuantDense

    rng = np.random.default_rng(seed)
    keras.utils.set_random_seed(seed)
    int4 = keras.Sequential(
        [keras.Input((784,))]
        + [
            layer
            for i, units in enumerate((1024, 1024, 10))
            for layer in (
                QuantDense(
                    units,
                    input_quantizer="quantized_bits(4, 0, keep_negative=False)" if i == 0 else None,
                    kernel_quantizer="quantized_bits(4, 0)",
                ),
                QuantActivation("quantized_relu(4, 0)") if units > 10 else None,
            )
            if layer is not None
        ]
    )
    binary = keras.Sequential(
        [keras.Input((784,))]
        + [
            layer
            for i, units in enumerate((1024, 1024, 10))
            for layer in (
                QuantDense(
                    units,
                    input_quantizer="quantized_bits(2, 1)" if i == 0 else "ste_sign",
                    kernel_quantizer="ste_sign",
                    use_bias=False,
                ),
                keras.layers.BatchNormalization(),
            )
        ]
    )
    for layer in int4.layers:
        if isinstance(layer, QuantDense):  # weights over the whole 4-bit range, not Glorot's few codes
            kernel, bias = layer.get_weights()
            layer.set_weights([rng.uniform(-1, 1, kernel.shape), rng.normal(0, 0.5, bias.shape)])
    for layer in binary.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            n = layer.gamma.shape[0]
            layer.set_weights([rng.uniform(0.5, 2, n), rng.normal(0, 1, n), rng.normal(0, 3, n), rng.uniform(5, 50, n)])
    return {"int4_mlp": int4, "binary_mlp": binary}


def keras_report(batch: int, reps: int) -> None:
    """``edgebnn.emulate(freeze(model), x)`` against float64 GEMMs of the model's layer shapes."""
    import edgebnn

    rng = np.random.default_rng(0)
    for name, model in keras_models().items():
        graph = edgebnn.freeze(model, output_quantizer="quantized_bits(18, 9)")
        x = rng.uniform(0, 1, (batch, 784)) if name == "int4_mlp" else rng.normal(0, 1, (batch, 784))
        layers = _weighted_layers(graph)
        xs = [rng.normal(size=(batch, n.params["weight"].shape[0])) for n in layers]
        ws = [n.params["weight"].astype(np.float64) for n in layers]
        cases = {
            "edgebnn.emulate": lambda g=graph, x=x: edgebnn.emulate(g, x),
            "float64 GEMM": lambda xs=xs, ws=ws: gemm_chain(xs, ws),
        }
        t = interleaved(cases, reps)
        shapes = " ".join(f"{batch}x{w.shape[0]}@{w.shape[1]}" for w in ws)
        print(f"{name} (Keras, frozen): batch {batch}, layers {shapes}")
        for case, (lo, med) in t.items():
            print(f"  {case:32s} min {lo * 1e3:9.2f} ms   median {med * 1e3:9.2f} ms")
        emu, ref = t["edgebnn.emulate"], t["float64 GEMM"]
        print(f"  emulate vs float64 GEMM            {ref[0] / emu[0]:.2f}x (min/min)   {ref[1] / emu[1]:.2f}x (median/median)")


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM, which starts afresh at exec; getrusage's
    ru_maxrss would carry the parent's peak at fork over into a child)."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_child(n: int) -> None:
    """In a fresh process: the binary CNN on ``n`` images; prints the process's peak RSS before and after (MB)."""
    rng = np.random.default_rng(1)
    graph = binary_cnn(rng)
    x = rng.uniform(0, 1, (n, *graph.input.shape))
    before = peak_rss_mb()
    emulate(graph, x)
    print(f"{before:.1f} {peak_rss_mb():.1f}")


def memory_report(graph: Graph, batches, rng) -> None:
    print(f"{graph.name}: peak memory of emulate() (tracemalloc, the input allocated beforehand; RSS of a fresh process)")
    for n in batches:
        x = rng.uniform(0, 1, (n, *graph.input.shape))
        tracemalloc.start()
        start = time.perf_counter()
        emulate(graph, x)
        took = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rate = f"{took:.2f} s, {n / took:.0f} images/s"
        child = subprocess.run([sys.executable, __file__, "--rss-child", str(n)], capture_output=True, text=True, check=True)
        before, after = (float(v) for v in child.stdout.split())
        print(
            f"  batch {n:6d}: peak {peak / 2**20:8.1f} MB   ({rate}; input {x.nbytes / 2**20:.1f} MB); "
            f"process peak RSS {after:.0f} MB ({before:.0f} MB with the input, before emulate)"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cnn-batches", default="100,500,2000")
    ap.add_argument("--only", choices=("mlp4", "binary", "cnn"), default=None)
    ap.add_argument("--keras", action="store_true", help="only the two frozen Keras models, through edgebnn.emulate")
    ap.add_argument("--keras-batch", type=int, default=10000)
    ap.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child is not None:
        rss_child(args.rss_child)
        return 0
    with contextlib.suppress(ImportError):  # BLAS on one thread even where the variables came too late
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, load average {os.getloadavg()}")
    if args.keras:
        keras_report(args.keras_batch, args.reps)
        print(f"load average at the end {os.getloadavg()}")
        return 0
    if args.only in (None, "mlp4"):
        g = mlp4(rng)
        mlp_report(g, rng.uniform(0, 1, (args.batch, 784)), args.reps, popcount=False)
    if args.only in (None, "binary"):
        g = binary_mlp(rng)
        mlp_report(g, rng.uniform(0, 1, (args.batch, 784)), args.reps, popcount=True)
    if args.only in (None, "cnn"):
        memory_report(binary_cnn(rng), [int(b) for b in args.cnn_batches.split(",")], rng)
    print(f"load average at the end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
