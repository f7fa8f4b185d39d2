"""Bop against Adam + WeightClip on the digits BNN (64-128-128-10), over a few seeds.

    python examples/bop_vs_adam.py [--seeds 0 1 2 3 4] [--epochs 60]

Both runs use the same model (examples/digits_bnn.yaml) and the same training loop
(``edgebnn.train.train``); only the optimizer of the binary kernels differs (the settings of
examples/digits_bnn_bop.yaml). Prints test accuracy per seed and the mean.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def digits_accuracy(config_path, seed, epochs=None, log=lambda s: None):
    """Test accuracy (percent) of the configuration's model trained with ``seed``."""
    from edgebnn.config import build_model, load_config
    from edgebnn.data import load_dataset
    from edgebnn.train import seed_everything, train

    config = load_config(config_path)
    config["train"]["seed"] = seed
    if epochs is not None:
        config["train"]["epochs"] = epochs
    x_tr, y_tr, x_te, y_te = load_dataset(**config["data"])
    seed_everything(seed)
    model = build_model(config, x_tr.shape[1:])
    train(model, x_tr, y_tr, log=log, **config["train"])
    return 100.0 * float(np.mean(np.argmax(model.predict(x_te, verbose=0), axis=-1) == y_te))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epochs", type=int, default=None, help="override the configurations' epochs")
    args = parser.parse_args(argv)
    runs = {"adam+weight_clip": os.path.join(HERE, "digits_bnn.yaml"), "bop": os.path.join(HERE, "digits_bnn_bop.yaml")}
    results = {name: [] for name in runs}
    print(f"{'seed':>4}  {'adam+weight_clip':>16}  {'bop':>6}  {'bop - adam':>10}")
    for seed in args.seeds:
        start = time.time()
        for name, path in runs.items():
            results[name].append(digits_accuracy(path, seed, args.epochs))
        a, b = results["adam+weight_clip"][-1], results["bop"][-1]
        print(f"{seed:>4}  {a:>15.2f}%  {b:>5.2f}%  {b - a:>+9.2f}   ({time.time() - start:.0f} s)", flush=True)
    a, b = np.mean(results["adam+weight_clip"]), np.mean(results["bop"])
    print(f"mean  {a:>15.2f}%  {b:>5.2f}%  {b - a:>+9.2f}")


if __name__ == "__main__":
    main()
