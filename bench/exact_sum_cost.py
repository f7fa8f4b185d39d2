"""What the exact sum of float32-scaled kernels costs (``edgebnn.layers.sums_exactly``): the
digits CNN of ``examples/digits_xnor_channels.py`` with XNOR ``mean|W|`` scales on chosen input
channels of its middle convolution, one training epoch and one prediction of the whole set, with
the exact sum (float64, rounded once) and without it (the plain float32 product).

    python bench/exact_sum_cost.py [--repeats 3]

Prints the best time of ``--repeats`` for each, interleaved so that both see the same load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    import digits_xnor_channels as example
    import keras
    import numpy as np

    from edgebnn import layers

    x_tr, y_tr, x_te, _ = example.digits(0)
    x_all = np.concatenate([x_tr, x_te])
    exact = layers.sums_exactly
    times: dict[str, dict[str, list]] = {"exact": {"epoch": [], "predict": []}, "float32": {"epoch": [], "predict": []}}
    for _ in range(args.repeats):
        for mode in times:
            layers.sums_exactly = exact if mode == "exact" else (lambda layer: False)
            keras.utils.set_random_seed(0)
            model = example.build(example.xnor_chosen(po2=False))
            model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            model.fit(x_tr[:64], y_tr[:64], epochs=1, batch_size=64, verbose=0)  # traced outside the timing
            model.predict(x_all[:64], verbose=0)
            t = time.perf_counter()
            model.fit(x_tr, y_tr, epochs=1, batch_size=64, verbose=0)
            times[mode]["epoch"].append(time.perf_counter() - t)
            t = time.perf_counter()
            model.predict(x_all, batch_size=256, verbose=0)
            times[mode]["predict"].append(time.perf_counter() - t)
    layers.sums_exactly = exact
    for what in ("epoch", "predict"):
        a, b = min(times["exact"][what]), min(times["float32"][what])
        n = len(x_tr) if what == "epoch" else len(x_all)
        print(f"{what:<8} ({n} samples): exact sum {a:.3f} s, float32 product {b:.3f} s, ratio {a / b:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
