"""Side-by-side speed of the pipeline, from interleaved repetitions (min and median):

1. one QAT training epoch of a binary 784-1024-1024-10 MLP (8-bit inputs, BatchNormalizations)
   over one epoch of the same model of plain Keras layers, on an MNIST-sized epoch (60,000
   samples of batch 128 by default: 469 steps, so ``fit()``'s fixed cost does not dominate);
2. emulator throughput over hls4ml C-simulation ``predict`` of the digits BNN on the same inputs
   (BLAS pinned to one thread for both, so neither borrows the other's core);
3. ``edgebnn run examples/digits_bnn.yaml`` end to end, seconds per stage (``summary.json``).

    python bench/pipeline_bench.py
    python bench/pipeline_bench.py --samples 20000 --repeats 3 --skip run
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
Q8 = "quantized_bits(8, 0, keep_negative=False)"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def stats(times) -> str:
    return f"min {min(times):.3f} s, median {statistics.median(times):.3f} s"


def ratio(a, b) -> str:
    return f"{min(a) / min(b):.2f}x (min), {statistics.median(a) / statistics.median(b):.2f}x (median)"


def mlps():
    """(QAT model, the same of plain Keras layers): 784-1024-1024-10, binary weights and
    activations, 8-bit inputs, BatchNormalizations."""
    import keras

    from edgebnn.constraints import WeightClip
    from edgebnn.layers import QuantDense

    qat, plain = [keras.Input((784,))], [keras.Input((784,))]
    for i, units in enumerate((1024, 1024, 10)):
        qat += [
            QuantDense(
                units,
                input_quantizer=Q8 if i == 0 else "ste_sign",
                kernel_quantizer="ste_sign",
                kernel_constraint=WeightClip(1.0),
                use_bias=False,
            ),
            keras.layers.BatchNormalization(),
        ]
        plain += [keras.layers.Dense(units, use_bias=False), keras.layers.BatchNormalization()]
    return keras.Sequential(qat), keras.Sequential(plain)


def qat_vs_plain(samples: int, batch: int, repeats: int) -> None:
    import keras

    rng = np.random.default_rng(0)
    x = (rng.integers(0, 256, (samples, 784)) / 256).astype(np.float32)  # on the 8-bit input grid
    y = rng.integers(0, 10, samples)
    models = mlps()
    for model in models:
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
        model.fit(x[: batch * 4], y[: batch * 4], epochs=1, batch_size=batch, verbose=0)  # build and trace
    times = ([], [])
    for _ in range(repeats):  # interleaved
        for model, t in zip(models, times, strict=True):
            t.append(timed(lambda m=model: m.fit(x, y, epochs=1, batch_size=batch, verbose=0)))
    steps = -(-samples // batch)
    print(f"1. one epoch of 784-1024-1024-10, {samples} samples, batch {batch} ({steps} steps), {repeats} interleaved rounds")
    print(f"   QAT   {stats(times[0])}")
    print(f"   plain {stats(times[1])}")
    print(f"   QAT / plain: {ratio(times[0], times[1])}  (target <= 1.2x)")


def emulator_vs_csim(repeats: int) -> None:
    import warnings

    import edgebnn
    from edgebnn.config import build_model, load_config
    from edgebnn.data import load_dataset

    config = load_config(ROOT / "examples" / "digits_bnn.yaml")
    x_tr, _, x_te, _ = load_dataset(**config["data"])
    model = build_model(config, x_tr.shape[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = edgebnn.freeze(model)
    x = np.concatenate([x_te] * 10).astype(np.float64)  # 3,600 samples
    with tempfile.TemporaryDirectory() as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            project = edgebnn.export(graph, pathlib.Path(tmp) / "prj", board="pynq-z2")
        project.compile()
        if not np.array_equal(project.predict(x, processes=1), edgebnn.emulate(graph, x)):
            raise SystemExit("C-simulation and emulator disagree")
        t_csim, t_emu = [], []
        for _ in range(repeats):  # interleaved
            t_csim.append(timed(lambda: project.predict(x, processes=1)))
            t_emu.append(timed(lambda: edgebnn.emulate(graph, x)))
    n = len(x)
    print(f"2. digits BNN, {n} samples, {repeats} interleaved rounds, one process each")
    print(f"   emulator {stats(t_emu)} ({n / min(t_emu):,.0f} samples/s)")
    print(f"   C-sim    {stats(t_csim)} ({n / min(t_csim):,.0f} samples/s)")
    print(f"   emulator / C-simulation throughput: {ratio(t_csim, t_emu)}  (target >= 100x)")


def run_stages() -> None:
    from edgebnn.pipeline import run

    with tempfile.TemporaryDirectory() as tmp:
        summary = run(ROOT / "examples" / "digits_bnn.yaml", pathlib.Path(tmp) / "run", log=lambda line: None)
    stages = summary["stage_seconds"]
    total = sum(stages.values())
    print("3. edgebnn run examples/digits_bnn.yaml, seconds per stage")
    for name, seconds in stages.items():
        print(f"   {name:<9} {seconds:>7.2f} s  {100 * seconds / total:>5.1f}%")
    print(f"   total     {total:>7.2f} s ({summary['samples']} samples verified, {json.dumps(summary['mismatches'])})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=60000, help="training samples per epoch (default 60000)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=["qat", "csim", "run"], help="parts to leave out")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if "qat" not in args.skip:
        qat_vs_plain(args.samples, args.batch, args.repeats)
    if "csim" not in args.skip:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            emulator_vs_csim(max(args.repeats, 5))
    if "run" not in args.skip:
        run_stages()
    return 0


if __name__ == "__main__":
    sys.exit(main())
