"""Every quantizer form of the catalogue in every weighted layer kind: one small model each,
frozen and compared with Keras bit for bit (batch sizes 1 and 32, edge inputs, adversarial
BatchNormalization with ties and zero or negative gamma).

    python bench/forms_matrix.py [--weights] [--activations]

Weight forms (tests/freeze/test_forms_catalogue.py's WEIGHTS) go in as the kernel quantizer of
QuantDense, QuantConv1D, QuantConv2D, QuantDepthwiseConv2D (multiplier 2) and as the depthwise
or pointwise quantizer of QuantSeparableConv2D; activation forms (its ACTIVATIONS) after each
kind as a QuantActivation and as the next layer's input_quantizer. Prints one line per model
that is not ``ok`` and a count per outcome; exits 1 on a mismatch or a crash. A form that does
not fit a layer's kernel (partial channels beyond it) is ``n/a``: the layer says so when built.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "freeze")]

IN_Q = "quantized_bits(4, 1)"


def kinds(q, iq=IN_Q):
    """(name, input shape, layer) of each weighted layer kind with the form ``q``."""
    from edgebnn.layers import QuantConv1D, QuantConv2D, QuantDense, QuantDepthwiseConv2D, QuantSeparableConv2D

    return [
        ("dense", (6,), lambda: QuantDense(5, input_quantizer=iq, kernel_quantizer=q)),
        ("conv1d", (7, 3), lambda: QuantConv1D(4, 3, padding="same", input_quantizer=iq, kernel_quantizer=q)),
        ("conv2d", (5, 5, 3), lambda: QuantConv2D(4, 3, input_quantizer=iq, kernel_quantizer=q)),
        ("depthwise", (5, 5, 3), lambda: QuantDepthwiseConv2D(3, depth_multiplier=2, input_quantizer=iq, depthwise_quantizer=q)),
        (
            "separable/dw",
            (5, 5, 3),
            lambda: QuantSeparableConv2D(4, 3, input_quantizer=iq, depthwise_quantizer=q, pointwise_quantizer="ste_sign"),
        ),
        (
            "separable/pw",
            (5, 5, 3),
            lambda: QuantSeparableConv2D(
                4, 3, depth_multiplier=2, input_quantizer=iq, depthwise_quantizer="ste_sign", pointwise_quantizer=q
            ),
        ),
    ]


def check(shape, layers, seed) -> str:
    import keras
    import numpy as np
    from bn import adversarial_on_inputs
    from graphs import edge_inputs

    from edgebnn.emulate import emulate
    from edgebnn.errors import EdgebnnError
    from edgebnn.freeze import freeze

    keras.backend.clear_session()
    try:
        model = keras.Sequential([keras.Input(shape), *(make() for make in layers)])
    except ValueError as err:
        return "n/a: " + str(err).splitlines()[0]
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if layer.weights and not isinstance(layer, keras.layers.BatchNormalization):
            layer.set_weights([rng.normal(size=w.shape).astype(np.float32) for w in layer.get_weights()])
    x0 = (rng.integers(-14, 14, (128, *shape)) / 4 + rng.choice([0, 0.125], (128, *shape))).astype(np.float32)
    adversarial_on_inputs(model, x0, seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = freeze(model)
        x = edge_inputs(graph, n=300).astype(np.float32)
        emu = emulate(graph, x)
        for batch in (1, 32):
            want = model.predict(x, verbose=0, batch_size=batch)
            bad = np.any((emu.reshape(want.shape) != want).reshape(len(x), -1), axis=1)
            if bad.any():
                return f"mismatch: batch {batch}, {int(bad.sum())} of {len(x)} samples"
    except EdgebnnError as err:
        return "refused: " + str(err)
    except Exception as err:  # noqa: BLE001 - reported per model
        return f"crash: {type(err).__name__}: {str(err).splitlines()[0]}"
    return "ok"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", action="store_true", help="only the weight forms")
    p.add_argument("--activations", action="store_true", help="only the activation forms")
    args = p.parse_args(argv)
    import keras
    from test_forms_catalogue import ACTIVATIONS, WEIGHTS

    from edgebnn.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense

    both = not (args.weights or args.activations)
    counts = collections.Counter()

    def report(what, kind, result):
        counts[result.split(":")[0]] += 1
        if result != "ok":
            print(f"{what:58} {kind:13} {result[:300]}", flush=True)

    if args.weights or both:
        for form in WEIGHTS:
            for kind, shape, make in kinds(form):
                tail = [keras.layers.BatchNormalization, lambda: QuantActivation("ste_sign")]
                report(form, kind, check(shape, [make, *tail], 1))
    if args.activations or both:
        for form in ACTIVATIONS:
            for kind, shape, make in kinds("ste_sign"):
                after = [make, keras.layers.BatchNormalization]
                report(form, kind + " act", check(shape, [*after, lambda f=form: QuantActivation(f)], 2))
                nxt = {
                    "dense": lambda f=form: QuantDense(3, input_quantizer=f, kernel_quantizer="ste_sign"),
                    "conv1d": lambda f=form: QuantConv1D(2, 2, input_quantizer=f, kernel_quantizer="ste_sign"),
                }.get(kind, lambda f=form: QuantConv2D(2, 2, input_quantizer=f, kernel_quantizer="ste_sign"))
                out = lambda: QuantActivation("quantized_bits(8, 4)")
                report(form, kind + " input", check(shape, [*after, nxt, out], 2))
    print("forms matrix: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 1 if counts["mismatch"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
