"""Run configuration files: read with ``yaml.safe_load``, checked key by key.

A configuration describes one run: the data set, the model as a list of layers, training, the
board and the export options. Every key is checked against the schema below, so a typo stops
the run with one line naming the key instead of being ignored.
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any

import yaml

from .errors import EdgebnnError

SCHEMA: dict[str, Any] = {
    "name": str,
    "board": str,
    "data": {"dataset": str, "test_fraction": float, "seed": int},
    "model": list,
    "train": {
        "epochs": int,
        "batch_size": int,
        "optimizer": str,
        "learning_rate": float,
        "learning_rate_decay": float,
        "bop_gamma": float,
        "bop_threshold": float,
        "seed": int,
    },
    "export": {
        "backend": str,
        "io_type": str,
        "strategy": str,
        "reuse_factor": int,
        "clock_period_ns": float,
    },
}

DEFAULTS: dict[str, Any] = {
    "name": "model",
    "board": "pynq-z2",
    "data": {"dataset": "digits", "test_fraction": 0.2, "seed": 0},
    "train": {
        "epochs": 50,
        "batch_size": 64,
        "optimizer": "adam",
        "learning_rate": 0.01,
        "learning_rate_decay": 1.0,
        "bop_gamma": 1e-4,
        "bop_threshold": 1e-8,
        "seed": 0,
    },
    "export": {
        "backend": "Vitis",
        "io_type": "io_parallel",
        "strategy": "Latency",
        "reuse_factor": 1,
        "clock_period_ns": None,
    },
}

OPTIMIZERS = ("adam", "sgd", "rmsprop", "bop")  # bop: Bop on binary kernels, Adam on the rest


class ConfigError(EdgebnnError):
    """A configuration file that cannot be used; the message names the file and key."""


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
    except OSError as err:
        raise ConfigError(f"cannot read config {path!r}: {err.strerror}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}:{line} is not valid YAML; fix the syntax there") from None
    return check_config(raw, path)


def check_config(raw: Any, where: str = "config") -> dict[str, Any]:
    """Merge ``raw`` over the defaults after checking every key and type."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: the top level must be a mapping of keys such as 'model' and 'train'")
    _check(raw, SCHEMA, where, "")
    if "model" not in raw:
        raise ConfigError(f"{where}: missing key 'model' (a list of layers)")
    config = copy.deepcopy(DEFAULTS)
    for key, value in raw.items():
        if isinstance(value, dict):
            config[key].update(value)
        else:
            config[key] = value
    for i, spec in enumerate(config["model"]):
        _check_layer(spec, f"{where}: model[{i}]")
    if config["train"]["optimizer"] not in OPTIMIZERS:
        raise ConfigError(f"{where}: train.optimizer must be one of {', '.join(OPTIMIZERS)}")
    return config


def _check(raw: dict, schema: dict, where: str, prefix: str) -> None:
    for key, value in raw.items():
        name = f"{prefix}{key}"
        if key not in schema:
            known = ", ".join(schema)
            raise ConfigError(f"{where}: unknown key {name!r}; known keys here: {known}")
        expected = schema[key]
        if isinstance(expected, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: key {name!r} must be a mapping")
            _check(value, expected, where, name + ".")
        elif value is None and name == "export.clock_period_ns":
            continue
        elif not _is_type(value, expected):
            raise ConfigError(
                f"{where}: key {name!r} must be {_TYPE_NAMES[expected]}, got {type(value).__name__} {value!r}"
            )


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", list: "a list", bool: "true or false"}


def _is_type(value, expected) -> bool:
    if isinstance(value, bool):
        return expected is bool
    if expected is float:
        return isinstance(value, (int, float))
    return isinstance(value, expected)


# -------------------------------------------------------------------------------- layers
_LAYER_BASE_KWARGS = {"name", "dtype", "trainable"}


def _layer_classes() -> dict[str, type]:
    import keras

    from .layers import QuantActivation, QuantDense

    return {
        "QuantDense": QuantDense,
        "QuantActivation": QuantActivation,
        "BatchNormalization": keras.layers.BatchNormalization,
        "Activation": keras.layers.Activation,
        "Dropout": keras.layers.Dropout,
    }


_KERAS_DENSE_KWARGS = {
    "activation", "use_bias", "kernel_initializer", "bias_initializer", "kernel_regularizer",
    "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint",
}


def _check_layer(spec, where: str) -> None:
    if not (isinstance(spec, dict) and len(spec) == 1):
        raise ConfigError(f"{where} must be one mapping like {{QuantDense: {{units: 128}}}}")
    (cls_name, kwargs), = spec.items()
    classes = _layer_classes()
    if cls_name not in classes:
        raise ConfigError(f"{where}: unknown layer {cls_name!r}; available: {', '.join(classes)}")
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{where}.{cls_name} must map argument names to values")
    allowed = set(_LAYER_BASE_KWARGS)
    for klass in classes[cls_name].__mro__:
        if "__init__" in vars(klass):
            allowed |= {p for p in inspect.signature(klass.__init__).parameters if p not in ("self", "kwargs")}
    if cls_name == "QuantDense":
        allowed |= _KERAS_DENSE_KWARGS
    for key in kwargs:
        if key not in allowed:
            raise ConfigError(f"{where}.{cls_name}: unknown key {key!r}; known keys: {', '.join(sorted(allowed))}")


def build_model(config: dict[str, Any], input_shape):
    """The Keras model the configuration describes."""
    import keras

    from . import constraints

    classes = _layer_classes()
    layers = [keras.Input(shape=tuple(input_shape), dtype="float32")]
    for i, spec in enumerate(config["model"]):
        (cls_name, kwargs), = spec.items()
        kwargs = dict(kwargs or {})
        for key in ("input_quantizer", "kernel_quantizer", "quantizer"):
            if key in kwargs:
                kwargs[key] = _quantizer(kwargs[key], f"model[{i}].{cls_name}.{key}")
        if isinstance(kwargs.get("kernel_constraint"), str):
            try:
                kwargs["kernel_constraint"] = constraints.get(kwargs["kernel_constraint"])
            except ValueError as err:
                raise ConfigError(f"model[{i}].{cls_name}.kernel_constraint: {err}") from None
        try:
            layers.append(classes[cls_name](**kwargs))
        except (TypeError, ValueError) as err:
            raise ConfigError(f"model[{i}].{cls_name}: {err}") from None
    return keras.Sequential(layers, name=config["name"])


def _quantizer(value, where):
    from . import quantizers

    try:
        return quantizers.get(value)
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None
