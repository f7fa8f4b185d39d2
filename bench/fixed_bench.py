"""Speed of ``FixedType.quantize`` next to ``numpy.round`` on the same 10**7 float64 values.

Prints, for every rounding x overflow mode of ``fixed<8,3>`` (values ~ N(0, 2), so about 5% of
them overflow and the overflow mode has work to do), the ratio of the best time of
``quantize`` to the best time of ``np.round``, both measured side by side in this run.
Target: <= 5x for every mode. Usage: python bench/fixed_bench.py [n_values] [repeats]
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np


def _load_fixed():
    # edgebnn/fixed.py needs only NumPy; loading the file itself keeps TensorFlow (imported by
    # the package for its Keras layers) and its thread pools out of the measurement
    path = Path(__file__).resolve().parents[1] / "edgebnn" / "fixed.py"
    spec = importlib.util.spec_from_file_location("edgebnn_fixed_bench", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _best(fn, x, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - start)
    return min(times)


def main(n: int = 10**7, repeat: int = 5) -> int:
    fixed = _load_fixed()
    x = np.random.default_rng(0).normal(0.0, 2.0, n)
    overflows = [(o, 0) for o in fixed.OVERFLOW_MODES] + [("WRAP", 2)]
    print(f"quantize {n:,} float64 values to fixed<8,3,...>: time / time of np.round (best of {repeat})")
    print(f"{'':12s}" + "".join(f"{o + (f',{b}' if b else ''):>11s}" for o, b in overflows))
    worst = 0.0
    for rounding in fixed.ROUNDING_MODES:
        row = []
        for overflow, bits in overflows:
            t = fixed.FixedType(8, 3, True, rounding, overflow, bits)
            t.quantize(x[:1000])  # warm up
            ref = q = float("inf")
            for _ in range(2):  # interleaved, so both see the same machine state
                ref = min(ref, _best(np.round, x, repeat))
                q = min(q, _best(t.quantize, x, repeat))
            row.append(q / ref)
        worst = max(worst, *row)
        print(f"{rounding:12s}" + "".join(f"{r:10.2f}x" for r in row))
    ref = _best(np.round, x, repeat)
    print(f"np.round itself: {ref * 1e3:.1f} ms for {n:,} values")
    t = fixed.FixedType(8, 3, True, "RND_CONV", "SAT")
    print(
        f"codes() of {t}: {_best(t.codes, x, repeat) / ref:.2f}x; "
        f"quantize of in-range data (no overflow work): "
        f"{_best(t.quantize, np.clip(x, -3.9, 3.9), repeat) / ref:.2f}x"
    )
    print(f"worst quantize ratio: {worst:.2f}x (target <= 5x): {'OK' if worst <= 5 else 'TOO SLOW'}")
    return 0 if worst <= 5 else 1


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
