"""Quantization-aware training that survives interruptions, reproducible from a seed.

One ``fit`` call per epoch over a permutation drawn from ``numpy.random.default_rng([seed, epoch])``:
the data order of an epoch does not depend on how many epochs ran before in this process, so a run
resumed from its checkpoint ends with exactly the weights of an uninterrupted run. A checkpoint
(``checkpoint_dir``) holds ``last.keras`` (model and optimizer state), ``best.keras`` (with a
validation set) and ``state.json``: the completed epoch, the history so far, the best epoch and
the states of every ``keras.random.SeedGenerator`` of the model (Dropout, stochastic-rounding
quantizers), which a ``.keras`` file does not keep.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import pathlib
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import ops

from ..errors import EdgebnnError
from ..run.config import MONITORS, SCHEDULES, check_train

STATE_VERSION = 1


class TrainError(EdgebnnError):
    """A checkpoint that cannot be resumed, or training arguments that do not go together."""


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training. ``epoch`` is the last completed epoch (0: none), ``checkpoint_dir``
    the folder whose checkpoint of that epoch is intact (None without checkpoints)."""

    def __init__(self, epoch: int, epochs: int, checkpoint_dir: str | None):
        self.epoch = epoch
        self.epochs = epochs
        self.checkpoint_dir = checkpoint_dir
        kept = f"; the checkpoint in {checkpoint_dir!r} is kept" if checkpoint_dir and epoch else ""
        super().__init__(f"training interrupted after epoch {epoch} of {epochs}{kept}")


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns. ``model``: the trained model (the best epoch's weights with
    ``restore_best`` and a validation set, else the last epoch's); ``history``: the curves in
    the shape of a run folder's history.json; ``best_epoch`` (1-based, None without a validation
    set); ``stopped_early``; ``epochs_run``: epochs completed in total (resumed ones included)."""

    model: Any
    history: dict[str, Any]
    best_epoch: int | None
    stopped_early: bool
    epochs_run: int


class _Progress:
    """The log line of an epoch (loss, accuracy, validation accuracy): every epoch at ``--verbose``
    (:data:`edgebnn.progress.VERBOSE`), else the first, the last and every ``epochs // 10``-th."""

    def __init__(self, epochs: int, log: Callable[[str], None]):
        self.epochs = epochs
        self.log = log

    def __call__(self, epoch: int, logs: dict) -> None:  # epoch: 0-based
        from .. import progress

        every = 1 if progress.level() >= progress.VERBOSE else max(1, self.epochs // 10)
        if (epoch + 1) % every == 0 or epoch == 0 or epoch + 1 == self.epochs:
            val = ""
            if "val_accuracy" in logs:
                val = f"  validation accuracy {100 * logs['val_accuracy']:.1f}%"
            self.log(
                f"  epoch {epoch + 1:>3}/{self.epochs}  loss {logs.get('loss', float('nan')):.4f}  "
                f"train accuracy {100 * logs.get('accuracy', float('nan')):.1f}%{val}"
            )


def seed_everything(seed: int) -> None:
    """Same seed, same run: seeds Python, NumPy and the backend, and asks TensorFlow for
    deterministic kernels. Call it before building the model (initializers draw from it)."""
    keras.utils.set_random_seed(seed)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()


# ---------------------------------------------------------------------- learning rates
@keras.saving.register_keras_serializable(package="edgebnn")
class EpochSchedule(keras.optimizers.schedules.LearningRateSchedule):
    r"""The learning rate of epoch :math:`e` (0-based, ``e = floor(step / steps_per_epoch)``).

    Warmup (:math:`e < W`): :math:`r (e + 1) / W`. After it, with :math:`t = e - W` and
    :math:`T = \mathrm{epochs} - W`: ``exponential`` :math:`r\, d^{(step - W s) / s}` (per step,
    as ``ExponentialDecay``), ``cosine`` :math:`r (1 + \cos(\pi t / T)) / 2` (0 after the last
    epoch), ``step`` :math:`r f^{\lfloor t / k \rfloor}`, ``constant`` :math:`r`.
    """

    def __init__(
        self,
        learning_rate: float,
        steps_per_epoch: int,
        epochs: int,
        kind: str = "exponential",
        decay: float = 1.0,
        step_epochs: int = 10,
        step_factor: float = 0.5,
        warmup_epochs: int = 0,
    ):
        self.learning_rate = float(learning_rate)
        self.steps_per_epoch = int(steps_per_epoch)
        self.epochs = int(epochs)
        self.kind = kind
        self.decay = float(decay)
        self.step_epochs = int(step_epochs)
        self.step_factor = float(step_factor)
        self.warmup_epochs = int(warmup_epochs)

    def __call__(self, step):
        r = ops.convert_to_tensor(self.learning_rate, "float32")
        s = ops.cast(self.steps_per_epoch, "float32")
        w = float(self.warmup_epochs)
        step = ops.cast(step, "float32")
        epoch = ops.floor(step / s)
        t = ops.maximum(epoch - w, 0.0)
        if self.kind == "exponential":
            after = r * ops.power(ops.cast(self.decay, "float32"), ops.maximum(step - w * s, 0.0) / s)
        elif self.kind == "cosine":
            span = float(max(1, self.epochs - self.warmup_epochs))
            after = r * 0.5 * (1.0 + ops.cos(math.pi * ops.minimum(t, span) / span))
        elif self.kind == "step":
            after = r * ops.power(ops.cast(self.step_factor, "float32"), ops.floor(t / float(self.step_epochs)))
        else:
            after = r * ops.ones_like(step)
        if not self.warmup_epochs:
            return after
        return ops.where(epoch < w, r * (epoch + 1.0) / w, after)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "steps_per_epoch": self.steps_per_epoch,
            "epochs": self.epochs,
            "kind": self.kind,
            "decay": self.decay,
            "step_epochs": self.step_epochs,
            "step_factor": self.step_factor,
            "warmup_epochs": self.warmup_epochs,
        }


def learning_rate_schedule(
    learning_rate: float,
    steps_per_epoch: int,
    epochs: int,
    lr_schedule: str = "exponential",
    learning_rate_decay: float = 1.0,
    lr_step_epochs: int = 10,
    lr_step_factor: float = 0.5,
    warmup_epochs: int = 0,
):
    """The schedule :func:`train` gives the optimizer (a function of the optimizer's step)."""
    if lr_schedule == "exponential" and not warmup_epochs:  # exactly the schedule of earlier versions
        return keras.optimizers.schedules.ExponentialDecay(learning_rate, steps_per_epoch, learning_rate_decay)
    return EpochSchedule(
        learning_rate, steps_per_epoch, epochs, lr_schedule, learning_rate_decay, lr_step_epochs, lr_step_factor, warmup_epochs
    )


# ---------------------------------------------------------------------- checks
def _check_arguments(args: dict[str, Any]) -> None:
    from ..run.config import OPTIMIZERS, ConfigError, check_train

    check_train(args, where="train()")
    if args["optimizer"] not in OPTIMIZERS:
        raise ConfigError(f"train(): optimizer must be one of {', '.join(OPTIMIZERS)}, got {args['optimizer']!r}")
    if args["lr_schedule"] not in SCHEDULES:
        raise ConfigError(f"train(): lr_schedule must be one of {', '.join(SCHEDULES)}, got {args['lr_schedule']!r}")
    step = args["lr_step_epochs"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ConfigError(f"train(): lr_step_epochs must be an integer >= 1, got {step!r}")
    factor = args["lr_step_factor"]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise ConfigError(f"train(): lr_step_factor must be a factor in (0, 1], got {factor!r}")
    warm = args["warmup_epochs"]
    if isinstance(warm, bool) or not isinstance(warm, int) or warm < 0:
        raise ConfigError(f"train(): warmup_epochs must be an integer >= 0, got {warm!r}")
    if args["distribute"] not in (None, "mirrored", "multi_worker"):
        raise ConfigError(f"train(): distribute must be null, mirrored or multi_worker, got {args['distribute']!r}")
    if not isinstance(args["restore_best"], bool):
        raise ConfigError(f"train(): restore_best must be true or false, got {args['restore_best']!r}")


def _early_stopping(value, validation) -> dict[str, Any] | None:
    from ..run.config import ConfigError

    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"train(): early_stopping must be null or a mapping of monitor, patience and min_delta, got {value!r}")
    unknown = set(value) - {"monitor", "patience", "min_delta"}
    if unknown:
        raise ConfigError(
            f"train(): early_stopping has unknown key {sorted(unknown)[0]!r}; known keys: monitor, patience, min_delta"
        )
    out = {"monitor": "val_accuracy", "patience": 10, "min_delta": 0.0, **value}
    if out["monitor"] not in MONITORS:
        raise ConfigError(f"train(): early_stopping.monitor must be val_accuracy or val_loss, got {out['monitor']!r}")
    p = out["patience"]
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ConfigError(f"train(): early_stopping.patience must be an integer >= 1, got {p!r}")
    d = out["min_delta"]
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not (math.isfinite(d) and d >= 0):
        raise ConfigError(f"train(): early_stopping.min_delta must be a finite number >= 0, got {d!r}")
    if validation is None:
        raise ConfigError(
            "train(): early_stopping needs a validation set; set data.validation_fraction above 0 or drop train.early_stopping"
        )
    out["min_delta"] = float(d)
    return out


# ---------------------------------------------------------------------- model state
def _seed_generators(model) -> dict[str, Any]:
    """Every SeedGenerator of the model by a name stable across processes: the layer's
    (Dropout, noise layers) and its quantizers' (stochastic rounding), which Keras does not save."""
    found: dict[str, Any] = {}
    seen: set[int] = set()

    def add(key, generator):
        if generator is not None and id(generator) not in seen:
            seen.add(id(generator))
            found[key] = generator

    for i, layer in enumerate(model._flatten_layers(include_self=False)):
        for j, generator in enumerate(getattr(layer, "_seed_generators", []) or []):
            add(f"{i}:{type(layer).__name__}/seed_generator/{j}", generator)
        for attr, value in sorted(vars(layer).items()):
            values = value if isinstance(value, (list, tuple)) else [value]
            for k, v in enumerate(values):
                generator = getattr(v, "_seed_generator", None)
                if isinstance(generator, keras.random.SeedGenerator):
                    add(f"{i}:{type(layer).__name__}/{attr}/{k}", generator)
                inner = getattr(v, "quantizer", None)  # a quantizer wrapping another
                if isinstance(getattr(inner, "_seed_generator", None), keras.random.SeedGenerator):
                    add(f"{i}:{type(layer).__name__}/{attr}/{k}/quantizer", inner._seed_generator)
    return found


def _rng_state(model) -> dict[str, list[int]]:
    generators = _seed_generators(model).items()
    return {k: [int(v) for v in np.asarray(keras.ops.convert_to_numpy(g.state.value)).ravel()] for k, g in generators}


def _set_rng_state(model, state: dict[str, list[int]], where: str) -> None:
    generators = _seed_generators(model)
    if set(generators) != set(state):
        raise TrainError(f"{where}: the checkpoint's random generators do not match this model's; train again without resume")
    for key, generator in generators.items():
        generator.state.assign(np.asarray(state[key], dtype=keras.backend.standardize_dtype(generator.state.dtype)))


def _strip_names(value):
    if isinstance(value, dict):
        return {k: _strip_names(v) for k, v in value.items() if k not in ("name", "inbound_nodes", "build_config")}
    if isinstance(value, (list, tuple)):
        return [_strip_names(v) for v in value]
    return value


def _fingerprint(model, args: dict[str, Any], x, y, validation) -> str:
    """A hash of what makes a checkpoint resumable: the layers' configurations (without their
    names, which Keras numbers per process), the variables' shapes, the training arguments and
    the data."""
    h = hashlib.sha256()
    layers = [[type(layer).__name__, _strip_names(layer.get_config())] for layer in model._flatten_layers(include_self=False)]
    shapes = [list(v.shape) for v in model.variables]
    h.update(json.dumps({"layers": layers, "shapes": shapes, "args": args}, sort_keys=True, default=repr).encode())
    for a in (x, y) + (tuple(validation) if validation is not None else ()):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _copy_state(source, target, where: str) -> None:
    """Assign every model and optimizer variable of ``source`` (a loaded checkpoint) to ``target``,
    in order (names differ between processes; order and shapes do not)."""
    pairs = [(source.variables, target.variables), (source.optimizer.variables, target.optimizer.variables)]
    for src, dst in pairs:
        if len(src) != len(dst) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(src, dst)):
            raise TrainError(f"{where}: the checkpoint's variables do not match this model's; train it again without --resume")
    for src, dst in pairs:
        for a, b in zip(src, dst):
            b.assign(keras.ops.convert_to_numpy(a.value))


# ---------------------------------------------------------------------- checkpoints
def _write_atomic(path: pathlib.Path, write: Callable[[pathlib.Path], None]) -> None:
    tmp = path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _write_checkpoint(folder: pathlib.Path, model, state: dict[str, Any], best: bool) -> None:
    from ..outputs import _signals_held

    folder.mkdir(parents=True, exist_ok=True)
    with _signals_held():  # Ctrl-C between the files would pair a model with another epoch's state
        _write_atomic(folder / "last.keras", lambda p: model.save(p))
        if best:
            _write_atomic(folder / "best.keras", lambda p: model.save(p))
        text = json.dumps(state, indent=1) + "\n"
        _write_atomic(folder / "state.json", lambda p: p.write_text(text, encoding="utf-8"))


def _read_state(folder: pathlib.Path) -> dict[str, Any]:
    path = folder / "state.json"
    if not path.is_file():
        raise TrainError(f"no checkpoint to resume from in {str(folder)!r} (state.json is missing); train without resume")
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise TrainError(f"{str(path)!r} is not a readable checkpoint state ({err}); train again without resume") from None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION or not isinstance(state.get("epoch"), int):
        raise TrainError(f"{str(path)!r} is not a checkpoint state of this edgebnn version; train again without resume")
    return state


def _load_checkpoint_model(path: pathlib.Path):
    if not path.is_file():
        raise TrainError(f"checkpoint {str(path)!r} is missing; train again without resume")
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except Exception as err:  # noqa: BLE001 - any failure to read the file is a damaged checkpoint
        raise TrainError(f"checkpoint {str(path)!r} does not load ({type(err).__name__}); train again without resume") from None


# ---------------------------------------------------------------------- training
def _optimizer(optimizer: str, lr, bop_gamma: float, bop_threshold: float):
    if optimizer == "bop":
        from .optimizers import bop_optimizer

        return bop_optimizer(keras.optimizers.Adam(learning_rate=lr), threshold=bop_threshold, gamma=bop_gamma)
    return {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD, "rmsprop": keras.optimizers.RMSprop}[optimizer](
        learning_rate=lr
    )


class _ReplicatedLoop:
    """edgebnn's own training loop under a ``tf.distribute`` strategy (Keras 3's ``fit`` stops under
    a ``MultiWorkerMirroredStrategy`` of several workers, tensorflow/tensorflow#72388).

    Each step takes the global batch the single-device loop would take (the epoch's permutation,
    ``batch_size`` samples) and splits it over the replicas in order; each replica's loss is its
    samples' summed cross-entropy over the global batch size (plus its share of the model's
    regularization losses), so the all-reduced gradient sum is the global batch's mean gradient.
    Batch normalization computes the global batch's statistics (``synchronized``) and the
    optimizer (Adam, SGD, RMSprop, Bop) applies the same all-reduced gradients on every replica:
    every replica holds the same weights, flips and generator states after every step.
    """

    def __init__(self, model, strategy, batch_size: int):
        import tensorflow as tf

        self.model, self.strategy, self.batch_size = model, strategy, batch_size
        self.replicas = strategy.num_replicas_in_sync
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
        replicas = self.replicas

        def replica_step(xb, yb, size):
            with tf.GradientTape() as tape:
                logits = model(xb, training=True)
                per_sample = loss(yb, logits)
                regularization = tf.add_n(model.losses) if model.losses else tf.constant(0.0)
                objective = tf.reduce_sum(per_sample) / size + regularization / replicas
            variables = model.trainable_variables
            grads = tape.gradient(objective, variables)
            model.optimizer.apply_gradients(zip(grads, variables))
            hits = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), tf.cast(yb, tf.int32)), tf.float32)
            return tf.reduce_sum(per_sample), tf.reduce_sum(hits), regularization / replicas

        @tf.function(reduce_retracing=True)
        def step(xb, yb, size):
            outs = strategy.run(replica_step, args=(xb, yb, size))
            return [strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for v in outs]

        @tf.function(reduce_retracing=True)
        def predict(xb):
            return model(xb, training=False)

        self._step, self._predict, self._tf = step, predict, tf

    def _distributed(self, array, parts):
        """``array`` split over the replicas: replica i gets the rows ``parts[i]``."""
        return self.strategy.experimental_distribute_values_from_function(
            lambda ctx: self._tf.constant(array[parts[ctx.replica_id_in_sync_group]])
        )

    def epoch(self, x, y, order, callbacks) -> dict[str, float]:
        total_loss = total_hits = total_regularization = 0.0
        steps = 0
        for batch, start in enumerate(range(0, len(order), self.batch_size)):
            callbacks.on_train_batch_begin(batch)
            chosen = order[start : start + self.batch_size]
            parts = np.array_split(np.arange(len(chosen)), self.replicas)
            xb, yb = x[chosen], y[chosen]
            try:
                loss, hits, regularization = self._step(
                    self._distributed(xb, parts), self._distributed(yb, parts), self._tf.constant(float(len(chosen)))
                )
            except (self._tf.errors.UnavailableError, self._tf.errors.DeadlineExceededError) as err:
                from .distribute import DistributeError

                raise DistributeError(
                    f"distribute: another task of the cluster stopped during training (TensorFlow: {type(err).__name__}); "
                    "this one stops too: start every host again, with `edgebnn train RUN --resume` to continue from "
                    "the chief's last checkpoint"
                ) from None
            total_loss, total_hits = total_loss + float(loss), total_hits + float(hits)
            total_regularization, steps = total_regularization + float(regularization), steps + 1
            callbacks.on_train_batch_end(batch)
        return {"loss": total_loss / len(order) + total_regularization / max(steps, 1), "accuracy": total_hits / len(order)}

    def evaluate(self, x, y) -> dict[str, float]:
        """val_loss and val_accuracy on this process alone (every replica holds the same weights)."""
        logits = np.concatenate([np.asarray(self._predict(x[i : i + 1024])) for i in range(0, len(x), 1024)])
        shifted = logits - logits.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        labels = np.asarray(y).astype(np.int64).ravel()
        regularization = float(sum(float(keras.ops.convert_to_numpy(v)) for v in self.model.losses))
        loss = float(-log_probs[np.arange(len(labels)), labels].mean()) + regularization
        return {"val_loss": loss, "val_accuracy": float((logits.argmax(axis=-1) == labels).mean())}


@contextlib.contextmanager
def _synchronized_batch_statistics(model) -> Any:
    """Batch normalization over the global batch (all replicas) while the loop trains; the model's
    own setting again afterwards (its saved configuration does not change)."""
    layers = [layer for layer in model._flatten_layers(include_self=False) if hasattr(layer, "synchronized")]
    before = [layer.synchronized for layer in layers]
    for layer in layers:
        layer.synchronized = True
    try:
        yield
    finally:
        for layer, value in zip(layers, before):
            layer.synchronized = value


def _improved(value: float, best: float | None, mode: str, min_delta: float) -> bool:
    if best is None:
        return True
    return value - min_delta > best if mode == "max" else value + min_delta < best


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
    *,
    validation=None,
    checkpoint_dir=None,
    resume: bool = False,
    lr_schedule: str = "exponential",
    lr_step_epochs: int = 10,
    lr_step_factor: float = 0.5,
    warmup_epochs: int = 0,
    early_stopping: dict | None = None,
    restore_best: bool = True,
    distribute: str | None = None,
    worker_timeout: float = 600.0,
    progress: Callable[[int, int, dict], None] | None = None,
    callbacks: list | None = None,
) -> TrainResult:
    """Compile and fit ``model`` on integer labels ``y`` with logits outputs; see the module doc.

    ``optimizer="bop"`` trains binary kernels with :class:`edgebnn.optimizers.Bop` (``bop_gamma``,
    ``bop_threshold``) and every other variable with Adam at the scheduled learning rate
    (:class:`EpochSchedule`; ``exponential`` multiplies it by ``learning_rate_decay`` per epoch).
    ``validation=(x_val, y_val)`` adds ``val_loss`` and ``val_accuracy`` per epoch, the best epoch
    (by ``early_stopping["monitor"]``, else val_accuracy) and, with ``restore_best``, returns its
    weights. ``early_stopping={"monitor", "patience", "min_delta"}`` stops after ``patience``
    epochs without an improvement of more than ``min_delta``.

    ``checkpoint_dir`` receives a checkpoint after every epoch; ``resume=True`` continues from it
    (refused when it was made by another model, data or arguments). Ctrl-C raises
    :class:`TrainingInterrupted` with the last completed epoch; its checkpoint stays intact.

    ``distribute`` (``"mirrored"``, ``"multi_worker"``; see :mod:`edgebnn.distribute`): ``model``
    must then be a function returning the model, which train calls under the strategy's scope
    (or a model built under :func:`edgebnn.distribute.scope`). Only the chief writes checkpoints;
    a multi_worker task waits at most ``worker_timeout`` seconds for the others to start.
    ``progress(epoch, epochs, logs)`` is called after every epoch (1-based epoch); ``callbacks`` are
    Keras callbacks given to every epoch's ``fit``.
    """
    args = {
        "epochs": epochs,
        "batch_size": batch_size,
        "optimizer": optimizer,
        "learning_rate": learning_rate,
        "learning_rate_decay": learning_rate_decay,
        "bop_gamma": bop_gamma,
        "bop_threshold": bop_threshold,
        "seed": seed,
        "lr_schedule": lr_schedule,
        "lr_step_epochs": lr_step_epochs,
        "lr_step_factor": lr_step_factor,
        "warmup_epochs": warmup_epochs,
        "restore_best": restore_best,
        "distribute": distribute,
    }
    stopping = _checked(args, worker_timeout, early_stopping, validation, resume, checkpoint_dir)
    folder = None if checkpoint_dir is None else pathlib.Path(checkpoint_dir)
    saved = _read_state(folder) if resume else None  # before any work: no checkpoint, no training
    from . import distribute as dist

    strategy = dist.strategy(distribute, worker_timeout) if distribute else None
    chief = dist.is_chief() if distribute else True
    seed_everything(seed)
    x, y, validation = _arrays(x, y, validation)
    steps = int(np.ceil(len(x) / batch_size))
    lr = learning_rate_schedule(
        learning_rate, steps, epochs, lr_schedule, learning_rate_decay, lr_step_epochs, lr_step_factor, warmup_epochs
    )
    model = _compiled(model, strategy, distribute, lambda: _optimizer(optimizer, lr, bop_gamma, bop_threshold))
    monitor = (stopping or {}).get("monitor", "val_accuracy")
    run = _Run(epochs, _fingerprint(model, args, x, y, validation), monitor, validation is not None)
    if saved is not None:
        run.resume_from(folder, saved, model, keep_best=restore_best)
    own_folder = folder if folder is None or chief else _worker_folder()
    loop = hooks = None
    if strategy is not None:  # edgebnn's loop: Keras's fit is not used under a strategy (see _ReplicatedLoop)
        loop = _ReplicatedLoop(model, strategy, batch_size)
        hooks = keras.callbacks.CallbackList(list(callbacks or []), model=model, add_history=False, add_progbar=False)
        hooks.on_train_begin()
    report = _Progress(epochs, log)
    try:
        for epoch in range(run.done, epochs):
            if run.stopped:
                break
            rate = float(keras.ops.convert_to_numpy(lr(epoch * steps)))
            order = np.random.default_rng([seed, epoch]).permutation(len(x))
            if loop is not None:
                logs = _replicated_epoch(model, loop, hooks, epoch, x, y, order, validation)
            else:
                logs = _fitted_epoch(model, epoch, x, y, order, batch_size, validation, callbacks)
            new_best = run.record(epoch, logs, rate, model, stopping, keep_best=restore_best)
            if own_folder is not None:
                _write_checkpoint(own_folder, model, run.state(model, epoch + 1), new_best)
            run.done = epoch + 1  # its checkpoint is complete
            report(epoch, logs)
            if progress is not None:
                progress(epoch + 1, epochs, logs)
    except KeyboardInterrupt as exc:
        if isinstance(exc, TrainingInterrupted):
            raise
        raise TrainingInterrupted(run.done, epochs, None if folder is None else os.fspath(folder)) from None
    finally:
        if own_folder is not folder:
            import shutil

            shutil.rmtree(own_folder, ignore_errors=True)
    return run.result(model, log, keep_best=restore_best)


def _checked(args, worker_timeout, early_stopping, validation, resume, checkpoint_dir) -> dict[str, Any] | None:
    """Refuse arguments that do not go together before any work; the early-stopping settings
    completed with their defaults (recorded in ``args``, so a checkpoint knows them)."""
    _check_arguments(args)
    check_train({"worker_timeout": worker_timeout}, where="train()")  # not in args: it does not change the result
    stopping = _early_stopping(early_stopping, validation)
    args["early_stopping"] = stopping
    if resume and checkpoint_dir is None:
        raise TrainError("train(): resume needs the checkpoint_dir to resume from")
    return stopping


def _arrays(x, y, validation):
    """The training data and the validation pair as NumPy arrays."""
    if validation is not None:
        validation = (np.asarray(validation[0]), np.asarray(validation[1]))
    return np.asarray(x), np.asarray(y), validation


def _compiled(model, strategy, distribute, make_optimizer):
    """The model (built here when ``model`` is a function) compiled under the strategy's scope
    for integer labels and logits, with the optimizer ``make_optimizer()`` makes in that scope
    (a strategy's variables must be created under it), its variables built."""
    from . import distribute as dist

    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        if callable(model) and not isinstance(model, keras.Model):
            model = model()
        elif strategy is not None:
            dist.check_built_under(model, distribute)
        model.compile(
            optimizer=make_optimizer(),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        model.optimizer.build(model.trainable_variables)
    return model


def _worker_folder() -> pathlib.Path:
    """Where a worker other than the chief writes its checkpoints (removed after training)."""
    import tempfile

    return pathlib.Path(tempfile.mkdtemp(prefix="edgebnn-worker-checkpoints-"))


def _replicated_epoch(model, loop, hooks, epoch, x, y, order, validation) -> dict[str, float]:
    """One epoch of edgebnn's loop under a strategy, with the validation set's metrics."""
    with _synchronized_batch_statistics(model):
        hooks.on_epoch_begin(epoch)
        logs = loop.epoch(x, y, order, hooks)
    if validation is not None:
        logs.update(loop.evaluate(*validation))
    hooks.on_epoch_end(epoch, logs)
    return logs


def _fitted_epoch(model, epoch, x, y, order, batch_size, validation, callbacks) -> dict[str, float]:
    """One epoch of Keras's ``fit`` over the epoch's order, its last metrics."""
    fit = model.fit(
        x[order],
        y[order],
        batch_size=batch_size,
        epochs=epoch + 1,
        initial_epoch=epoch,
        shuffle=False,
        verbose=0,
        validation_data=validation,
        callbacks=list(callbacks or []),
    )
    return {k: float(v[-1]) for k, v in fit.history.items()}


class _Run:
    """What a training run keeps between epochs: the history, the best epoch and its weights,
    whether it stopped early, how many epochs are done; a checkpoint's state.json is this."""

    def __init__(self, epochs: int, fingerprint: str, monitor: str, validated: bool):
        self.epochs, self.fingerprint, self.monitor, self.validated = epochs, fingerprint, monitor, validated
        self.history: dict[str, list] = {"epoch": [], "loss": [], "accuracy": []}
        if validated:
            self.history.update({"val_loss": [], "val_accuracy": []})
        self.history["learning_rate"] = []
        self.best_epoch, self.best_value, self.best_weights, self.stopped, self.done = None, None, None, False, 0

    def resume_from(self, folder: pathlib.Path, state: dict[str, Any], model, keep_best: bool) -> None:
        """Continue from the checkpoint in ``folder`` (refused when another model, data or
        arguments made it): the model's weights, optimizer and random states, the history."""
        where = str(folder / "state.json")
        if state.get("fingerprint") != self.fingerprint:
            raise TrainError(
                f"{where}: the checkpoint was made by another model, data or training arguments; "
                "train again without resume (or resume with the configuration it was made from)"
            )
        _copy_state(_load_checkpoint_model(folder / "last.keras"), model, where)
        _set_rng_state(model, state["rng"], where)
        self.history = {k: list(v) for k, v in state["history"].items()}
        self.best_epoch, self.best_value = state["best_epoch"], state["best_value"]
        self.stopped, self.done = state["stopped_early"], state["epoch"]
        if self.best_epoch is not None and keep_best and self.validated:
            self.best_weights = _load_checkpoint_model(folder / "best.keras").get_weights()

    def record(self, epoch: int, logs: dict, rate: float, model, stopping, keep_best: bool) -> bool:
        """Add the epoch's metrics; track the best epoch and early stopping. True when this
        epoch is the new best."""
        self.history["epoch"].append(epoch + 1)
        for key in self.history:
            if key not in ("epoch", "learning_rate"):
                self.history[key].append(logs[key])
        self.history["learning_rate"].append(rate)
        new_best = False
        if self.validated:
            mode = MONITORS[self.monitor]
            if _improved(logs[self.monitor], self.best_value, mode, (stopping or {}).get("min_delta", 0.0)):
                self.best_epoch, self.best_value, new_best = epoch + 1, logs[self.monitor], True
                if keep_best:
                    self.best_weights = model.get_weights()
            if stopping is not None and epoch + 1 - self.best_epoch >= stopping["patience"] and epoch + 1 < self.epochs:
                self.stopped = True
        return new_best

    def state(self, model, epoch: int) -> dict[str, Any]:
        """The checkpoint's state.json after ``epoch`` (1-based)."""
        return {
            "version": STATE_VERSION,
            "epoch": epoch,
            "epochs": self.epochs,
            "fingerprint": self.fingerprint,
            "history": self.history,
            "best_epoch": self.best_epoch,
            "best_value": self.best_value,
            "monitor": self.monitor if self.validated else None,
            "stopped_early": self.stopped,
            "rng": _rng_state(model),
        }

    def result(self, model, log, keep_best: bool) -> TrainResult:
        """The model with the best epoch's weights (``keep_best`` and a validation set), the history."""
        if self.stopped:
            log(f"  stopped early after epoch {self.done}: no {self.monitor} improvement since epoch {self.best_epoch}")
        if self.best_weights is not None and keep_best and self.validated:
            model.set_weights(self.best_weights)
        out = dict(self.history)
        out["best_epoch"] = self.best_epoch
        out["stopped_early"] = self.stopped
        return TrainResult(model=model, history=out, best_epoch=self.best_epoch, stopped_early=self.stopped, epochs_run=self.done)
