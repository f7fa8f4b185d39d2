"""Quantization-aware training with progress, reproducible from a seed."""

from __future__ import annotations

from collections.abc import Callable

import keras
import numpy as np


class _Progress(keras.callbacks.Callback):
    def __init__(self, epochs: int, log: Callable[[str], None]):
        super().__init__()
        self.epochs = epochs
        self.log = log

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        every = max(1, self.epochs // 10)
        if (epoch + 1) % every == 0 or epoch == 0 or epoch + 1 == self.epochs:
            self.log(
                f"  epoch {epoch + 1:>3}/{self.epochs}  loss {logs.get('loss', float('nan')):.4f}  "
                f"train accuracy {100 * logs.get('accuracy', float('nan')):.1f}%"
            )


def seed_everything(seed: int) -> None:
    """Same seed, same run: seeds Python, NumPy and the backend, and asks TensorFlow for
    deterministic kernels. Call it before building the model (initializers draw from it)."""
    keras.utils.set_random_seed(seed)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()


def train(
    model,
    x,
    y,
    epochs=50,
    batch_size=64,
    optimizer="adam",
    learning_rate=0.01,
    learning_rate_decay=1.0,
    seed=0,
    log: Callable[[str], None] = print,
    bop_gamma=1e-4,
    bop_threshold=1e-8,
):
    """Compile and fit ``model`` on integer labels ``y`` with logits outputs.

    ``learning_rate_decay`` multiplies the learning rate once per epoch (exponential decay).
    ``optimizer="bop"`` trains binary kernels with :class:`edgebnn.optimizers.Bop`
    (``bop_gamma``, ``bop_threshold``) and every other variable with Adam at ``learning_rate``.
    """
    from .config import OPTIMIZERS, ConfigError, check_train

    check_train(
        {
            "epochs": epochs,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "learning_rate_decay": learning_rate_decay,
            "bop_gamma": bop_gamma,
            "bop_threshold": bop_threshold,
            "seed": seed,
        },
        where="train()",
    )
    if optimizer not in OPTIMIZERS:
        raise ConfigError(f"train(): optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    seed_everything(seed)
    steps = int(np.ceil(len(x) / batch_size))
    lr = keras.optimizers.schedules.ExponentialDecay(learning_rate, steps, learning_rate_decay)
    if optimizer == "bop":
        from .optimizers import bop_optimizer

        opt = bop_optimizer(keras.optimizers.Adam(learning_rate=lr), threshold=bop_threshold, gamma=bop_gamma)
    else:
        opt = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD, "rmsprop": keras.optimizers.RMSprop}[optimizer](
            learning_rate=lr
        )
    model.compile(
        optimizer=opt,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model.fit(x, y, epochs=epochs, batch_size=batch_size, verbose=0, shuffle=True, callbacks=[_Progress(epochs, log)])
