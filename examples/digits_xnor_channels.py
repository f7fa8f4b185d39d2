"""XNOR-Net binarization of chosen input channels: a digits CNN whose middle convolution
binarizes some of its input channels (one scale per channel), the rest 4-bit.

    python examples/digits_xnor_channels.py [--epochs 40] [--seed 0] [--filters 16 32] [--out FOLDER]

Four versions of the same CNN (8x8 digits -> conv 16 -> pool -> conv 32 -> pool -> dense 10)
differ only in the middle convolution's kernel quantizer:

- ``binary``:  ``ste_sign`` on every weight;
- ``4-bit``:   ``quantized_bits(4, 0)`` on every weight;
- ``chosen``:  every second input channel XNOR-binarized, each slice ``W[:, :, i, :]`` as
  ``sign(W_i) * E_i`` with ``E_i = 2**round(log2(mean|W_i|))`` (held constant in the backward
  pass, identity straight-through gradient), and the other channels ``quantized_bits(4, 0)``:
  ``partial(xnor_sign(axis=2, clip_value=None, po2=True), [0, 2, ..., 14], axis=2, other=quantized_bits(4, 0))``;
- ``chosen mean|W|``: the same with ``E_i = mean|W_i|`` itself, a float32 (``po2=False``), the
  operation as XNOR-Net's authors wrote it.

Each is trained on scikit-learn's embedded digits with the same seed. The two chosen-channel
versions are then frozen and exported as hls4ml projects in io_parallel and io_stream,
C-simulated, and verified on the test set: Keras = emulator = C-simulation, sample by sample, bit
for bit. Power-of-two scales are shifts: freeze moves them into the kernel's integer codes (one
exact sum of narrow codes). Float32 scales are exact fixed-point constants too, of up to 24
significant bits: the layer sums exactly in float64 and rounds once to float32
(``edgebnn.layers.sums_exactly``), and freeze deploys that exact sum with wide kernel codes (about
30 bits) and replays the rounding in the next thresholds; the wider multipliers and accumulator
are what the LUT column shows. The projects are written into ``--out`` / version / io type (a
temporary folder, removed at the end, when not given). Prints test accuracy and the estimated
LUTs of each version on a PYNQ-Z2, then the verification of each exported version and io type.
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time
import warnings

import numpy as np

FILTERS = (16, 32)  # of the first and the middle convolution


def xnor_chosen(filters=FILTERS, po2: bool = True) -> str:
    """The middle kernel's quantizer: every second input channel XNOR-binarized (power-of-two
    scales, or ``mean|W_i|`` itself), the rest 4-bit."""
    chosen = list(range(0, filters[0], 2))
    return f"partial(xnor_sign(axis=2, clip_value=None, po2={po2}), {chosen}, axis=2, other=quantized_bits(4, 0))"


# the versions exported and C-simulated
EXPORTED = ("chosen", "chosen mean|W|")


def middle_quantizers(filters=FILTERS) -> dict:
    return {
        "binary": "ste_sign",
        "4-bit": "quantized_bits(4, 0)",
        "chosen": xnor_chosen(filters),
        "chosen mean|W|": xnor_chosen(filters, po2=False),
    }


def build(middle_quantizer: str, filters=FILTERS):
    """The digits CNN with ``middle_quantizer`` on the middle convolution's kernel."""
    import keras

    from edgebnn.constraints import WeightClip
    from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense

    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            QuantConv2D(
                filters[0],
                3,
                padding="same",
                input_quantizer="quantized_bits(5, 0, keep_negative=False)",  # the pixels k/16, exactly
                kernel_quantizer="ste_sign",
                kernel_constraint=WeightClip(),
                use_bias=False,
            ),
            keras.layers.BatchNormalization(momentum=0.9),
            keras.layers.MaxPooling2D(2),
            QuantConv2D(
                filters[1],
                3,
                padding="same",
                input_quantizer="ste_sign",
                kernel_quantizer=middle_quantizer,
                kernel_constraint=WeightClip(),
                use_bias=False,
            ),
            keras.layers.BatchNormalization(momentum=0.9),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            QuantDense(
                10, input_quantizer="ste_sign", kernel_quantizer="ste_sign", kernel_constraint=WeightClip(), use_bias=False
            ),
            keras.layers.BatchNormalization(momentum=0.9),
            QuantActivation("quantized_bits(6, 3)"),
        ],
        name="digits_cnn",
    )


def digits(seed: int = 0):
    """(x_train, y_train, x_test, y_test) of the digits as 8x8x1 images."""
    from edgebnn.data import load_dataset

    x_tr, y_tr, x_te, y_te = load_dataset("digits", test_fraction=0.2, seed=seed)
    return x_tr.reshape(-1, 8, 8, 1), y_tr, x_te.reshape(-1, 8, 8, 1), y_te


def trained(middle_quantizer: str, data, epochs: int, seed: int, filters=FILTERS):
    """The CNN with ``middle_quantizer`` trained on ``data`` (the same seed for every version)."""
    from edgebnn.train import seed_everything, train

    x_tr, y_tr, _, _ = data
    seed_everything(seed)
    model = build(middle_quantizer, filters)
    train(
        model,
        x_tr,
        y_tr,
        epochs=epochs,
        batch_size=64,
        learning_rate=0.01,
        learning_rate_decay=0.95,
        seed=seed,
        log=lambda s: None,
    )
    return model


def accuracy(model, x, y) -> float:
    return 100.0 * float(np.mean(np.argmax(model.predict(x, verbose=0), axis=-1) == y))


def verify_exports(model, x, folder: pathlib.Path, io_types=("io_parallel", "io_stream")) -> dict:
    """{io type: the verify report} of the frozen model exported into ``folder`` / io type and
    C-simulated on ``x``."""
    from edgebnn.backends.hls4ml import export
    from edgebnn.boards import load_board
    from edgebnn.freeze import freeze
    from edgebnn.verify import verify

    graph = freeze(model)
    board = load_board("pynq-z2")
    reports = {}
    for io_type in io_types:
        with warnings.catch_warnings():  # hls4ml's notes on its own defaults
            warnings.simplefilter("ignore")
            project = export(graph, folder / io_type, board=board, io_type=io_type)
        reports[io_type] = verify(model, graph, x, project=project)
    return reports


def freeze_middle(model):
    """The graph node of the middle convolution of ``model`` frozen (its integer kernel codes)."""
    from edgebnn.freeze import freeze

    return [n for n in freeze(model).nodes if n.op == "conv2d"][1]


def luts(model) -> int:
    """Estimated LUTs of the frozen model on a PYNQ-Z2 (Latency, reuse factor 1, io_parallel)."""
    from edgebnn.estimate import estimate
    from edgebnn.freeze import freeze

    return estimate(freeze(model), board="pynq-z2").totals["lut"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--filters", type=int, nargs=2, default=FILTERS, metavar=("FIRST", "MIDDLE"), help="filters of the two convolutions"
    )
    parser.add_argument("--out", type=pathlib.Path, default=None, help="folder for the two hls4ml projects (kept)")
    args = parser.parse_args(argv)
    data = digits(args.seed)
    _, _, x_te, y_te = data
    print(f"{'middle convolution':<22} {'test accuracy':>13} {'LUTs (est.)':>12}   ({args.epochs} epochs, seed {args.seed})")
    models = {}
    for name, quantizer in middle_quantizers(args.filters).items():
        start = time.time()
        models[name] = trained(quantizer, data, args.epochs, args.seed, args.filters)
        acc = accuracy(models[name], x_te, y_te)
        print(f"{name:<22} {acc:>12.2f}% {luts(models[name]):>12,}   ({time.time() - start:.0f} s)", flush=True)
    print(f"chosen = {xnor_chosen(args.filters)}")
    exact = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out if args.out is not None else pathlib.Path(tmp)
        for name in EXPORTED:
            for io_type, report in verify_exports(models[name], x_te, folder / name.replace(" mean|W|", "-mean")).items():
                print(f"{name:<15} {io_type:<12} {report.describe()}")
                exact = exact and (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0)
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
