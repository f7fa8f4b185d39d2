"""Freeze time against model size: binary MLPs with 8-bit inputs (``QuantDense -> BatchNormalization``
blocks, larq's float head rounded by an ``output_quantizer``) up to ~4M weights, and, on a model
both can freeze, enumeration against bisection of the thresholds. Interleaved repetitions; prints
min and median per size and the ratio.

    python bench/freeze_bench.py                 # sizes up to 784-1536-1536-10 (3.6M weights)
    python bench/freeze_bench.py --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

Q8 = "quantized_bits(8, 0, keep_negative=False)"
SIZES = ((64, 256, 256, 10), (784, 256, 256, 10), (784, 1024, 1024, 10), (784, 1536, 1536, 10))


def bnn(widths, seed=0):
    """A binary MLP of ``widths`` with random weights and trained-looking BatchNormalizations."""
    import keras

    from edgebnn.layers import QuantDense

    layers = [keras.Input((widths[0],))]
    for i, units in enumerate(widths[1:]):
        layers += [
            QuantDense(units, input_quantizer=Q8 if i == 0 else "ste_sign", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
        ]
    model = keras.Sequential(layers)
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.gamma.shape
            layer.set_weights([rng.uniform(0.5, 2, c), rng.normal(size=c) * 3, rng.normal(size=c) * 20, rng.uniform(50, 800, c)])
        else:
            layer.kernel.assign(rng.normal(size=layer.kernel.shape).astype("float32"))
    return model


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import edgebnn
    from edgebnn.freeze.passes import thresholds

    def freeze(model, bisect=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if bisect:
                with thresholds.bisecting():
                    return edgebnn.freeze(model, output_quantizer="quantized_bits(16, 7)")
            return edgebnn.freeze(model, output_quantizer="quantized_bits(16, 7)")

    models = {widths: bnn(widths) for widths in SIZES}
    small = models[SIZES[0]]
    freeze(small)  # warm up TensorFlow
    times: dict = {w: [] for w in SIZES}
    versus = {"enumerated": [], "bisected": []}
    for _ in range(args.repeats):  # interleaved: every size once per round
        for widths, model in models.items():
            times[widths].append(timed(lambda m=model: freeze(m)))
        versus["enumerated"].append(timed(lambda: freeze(small)))
        versus["bisected"].append(timed(lambda: freeze(small, bisect=True)))
    print(f"{'model':<22} {'weights':>10} {'min s':>8} {'median s':>9} {'ns/weight':>10}")
    for widths, t in times.items():
        weights = sum(a * b for a, b in zip(widths[:-1], widths[1:], strict=True))
        name, per = "-".join(map(str, widths)), 1e9 * min(t) / weights
        print(f"{name:<22} {weights:>10,} {min(t):>8.2f} {statistics.median(t):>9.2f} {per:>10.0f}")
    e, b = versus["enumerated"], versus["bisected"]
    print(
        f"\n{'-'.join(map(str, SIZES[0]))}: enumeration {min(e):.2f} / {statistics.median(e):.2f} s, bisection "
        f"{min(b):.2f} / {statistics.median(b):.2f} s (min / median), enumeration / bisection {min(e) / min(b):.2f}x "
        f"(min), {statistics.median(e) / statistics.median(b):.2f}x (median)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
