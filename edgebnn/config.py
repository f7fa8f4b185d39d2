"""Run configuration files: read as plain YAML data, checked key by key.

A configuration describes one run: the data set, the model as a list of layers, training, the
board and the export options. Every key is checked against the schema below (its type, then
its range), so a typo stops the run with one line naming the key instead of being ignored.

Configs are data, never code: they are read with a ``yaml.SafeLoader`` that also refuses
duplicate keys, so a ``!!python/...`` tag is refused, not run.
"""

from __future__ import annotations

import copy
import inspect
import math
import os
import re
from typing import Any

import yaml

from .errors import EdgebnnError

SCHEMA: dict[str, Any] = {
    "name": str,
    "board": str,
    "data": {
        "dataset": str,
        "path": str,
        "test_path": str,
        "label_column": (int, str),
        "shape": list,
        "scale": float,
        "offset": float,
        "test_fraction": float,
        "validation_fraction": float,
        "seed": int,
    },
    "model": list,
    "freeze": {"input_type": str, "output_quantizer": str},  # the data's fixed-point type; a quantizer for a float head
    "train": {
        "epochs": int,
        "batch_size": int,
        "optimizer": str,
        "learning_rate": float,
        "learning_rate_decay": float,
        "bop_gamma": float,
        "bop_threshold": float,
        "seed": int,
        "lr_schedule": str,
        "lr_step_epochs": int,
        "lr_step_factor": float,
        "warmup_epochs": int,
        "early_stopping": dict,
        "restore_best": bool,
        "distribute": str,
    },
    "export": {
        "backend": str,
        "io_type": str,
        "strategy": str,
        "reuse_factor": (int, dict),  # one for the model, or layer name -> its own
        "clock_period_ns": float,
        "hls_tool": str,
        "part": str,
    },
}

DEFAULTS: dict[str, Any] = {
    "name": "model",
    "board": "pynq-z2",
    "data": {
        "dataset": "digits",  # digits (scikit-learn's embedded 8x8 digits), npz or csv (a file: path)
        "path": None,  # the .npz / .csv file, relative to the config file's folder
        "test_path": None,  # csv: a separate test file (else test_fraction splits path)
        "label_column": -1,  # csv: the label's column (an index, negative from the end, or a header name)
        "shape": None,  # each sample's shape (default: as stored; digits: the flat 64 pixels)
        "scale": 1.0,  # inputs become raw * scale + offset
        "offset": 0.0,
        "test_fraction": 0.2,  # the test share when the data have no test set
        "validation_fraction": 0.0,  # a stratified share of the training set held out for validation
        "seed": 0,
    },
    # input_type: the first layer's input_quantizer (or a leading QuantActivation) gives it;
    # output_quantizer: a quantizer string for the logits of a float head (freeze's output_quantizer=)
    "freeze": {"input_type": None, "output_quantizer": None},
    "train": {
        "epochs": 50,
        "batch_size": 64,
        "optimizer": "adam",
        "learning_rate": 0.01,
        "learning_rate_decay": 1.0,
        "bop_gamma": 1e-4,
        "bop_threshold": 1e-8,
        "seed": 0,
        "lr_schedule": "exponential",  # exponential (learning_rate_decay per epoch), cosine, step, constant
        "lr_step_epochs": 10,  # step: every this many epochs ...
        "lr_step_factor": 0.5,  # ... the rate is multiplied by this
        "warmup_epochs": 0,  # a linear warmup from learning_rate / warmup_epochs
        "early_stopping": None,  # {monitor: val_accuracy | val_loss, patience: 10, min_delta: 0}; needs validation
        "restore_best": True,  # with a validation set the best epoch's weights are the trained model
        "distribute": None,  # null, mirrored (several local GPUs) or multi_worker (hosts through TF_CONFIG)
    },
    "export": {
        "backend": "Vitis",
        "io_type": "io_parallel",
        "strategy": "Latency",
        "reuse_factor": 1,
        "clock_period_ns": None,
        "hls_tool": None,  # the tool of the backend (Vitis -> vitis_hls, Vivado -> vivado_hls)
        "part": None,  # the board's
    },
}

OPTIMIZERS = ("adam", "sgd", "rmsprop", "bop")
SCHEDULES = ("exponential", "cosine", "step", "constant")  # train.lr_schedule
MONITORS = {
    "val_accuracy": "max",
    "val_loss": "min",
}  # train.early_stopping.monitor: what improves


class ConfigError(EdgebnnError):
    """A configuration file that cannot be used; the message names the file and key."""


class _DuplicateKey(yaml.constructor.ConstructorError):
    pass


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (plain data only: no Python tags) that refuses a key given twice in
    one mapping, where PyYAML silently keeps the last one."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise _DuplicateKey(
                            f"key {key!r} first given on line {seen[key].start_mark.line + 1}",
                            seen[key].start_mark,
                            f"key {key!r} is given twice",
                            key_node.start_mark,
                        )
                except TypeError:  # an unhashable key; the base class reports it
                    continue
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_config(path: str | os.PathLike, base_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """The configuration in ``path``, checked and merged over the defaults; relative data paths
    are made absolute against ``base_dir`` (default: the config file's folder)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"config {path!r} is not a UTF-8 text file (byte {err.start} cannot be decoded); "
            "pass a YAML file such as examples/digits_bnn.yaml"
        ) from None
    except OSError as err:
        hint = "pass a YAML file, not a folder" if os.path.isdir(path) else "check the path"
        raise ConfigError(f"cannot read config {path!r}: {err.strerror or err}; {hint}") from None
    try:
        raw = yaml.load(text, Loader=StrictLoader)  # StrictLoader is a SafeLoader: plain data only
    except yaml.YAMLError as err:
        raise ConfigError(_yaml_message(path, text, err)) from None
    config = check_config(raw, path)
    base = os.path.abspath(os.fspath(base_dir) if base_dir is not None else os.path.dirname(os.path.abspath(path)))
    for key in ("path", "test_path"):
        value = config["data"][key]
        if value is not None and not os.path.isabs(os.path.expanduser(value)):
            config["data"][key] = os.path.join(base, value)
    return config


def _yaml_message(path: str, text: str, err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    if mark is not None:
        where = f"{path}: line {mark.line + 1}"
    elif getattr(err, "position", None) is not None:  # a ReaderError: a character YAML forbids
        where = f"{path}: line {text.count(chr(10), 0, err.position) + 1}"
    else:
        where = path
    problem = str(getattr(err, "problem", "") or "")
    if isinstance(err, _DuplicateKey):
        first = err.context_mark.line + 1
        return f"{where}: {problem} (first on line {first}); keep one of them"
    tag = re.search(r"for the tag '([^']*)'", problem)
    if isinstance(err, yaml.constructor.ConstructorError) and tag:
        name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        if name.startswith("!!python/"):
            return f"{where}: refused Python tag {name}; configs are plain data and cannot run code, so write the value itself"
        return f"{where}: unknown YAML tag {name}; configs hold plain values, lists and mappings only"
    if isinstance(err, yaml.reader.ReaderError):
        code = err.character if isinstance(err.character, int) else ord(err.character)
        return f"{where}: character #x{code:04x} is not allowed in YAML; is this a text file?"
    return f"{where}: not valid YAML ({problem or 'syntax error'}); fix the syntax there"


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
    _check_values(config, where)
    for i, spec in enumerate(config["model"]):
        _check_layer(spec, f"{where}: model[{i}]")
    check_export(config["export"], where, layer_names(config["model"]))
    return config


# ---------------------------------------------------------------------- value ranges
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}", re.ASCII)
SEED_MAX = 2**32 - 1  # NumPy's seeds


def _positive(v) -> bool:
    return math.isfinite(v) and v > 0


# key -> (test, what a good value is); checked after the types, on the merged config
RANGES: dict[str, tuple[Any, str]] = {
    "data.test_fraction": (lambda v: 0 < v < 1, "a fraction between 0 and 1 (exclusive)"),
    "data.seed": (lambda v: 0 <= v <= SEED_MAX, f"an integer from 0 to {SEED_MAX}"),
    "train.epochs": (lambda v: v >= 1, "at least 1"),
    "train.batch_size": (lambda v: v >= 1, "at least 1"),
    "train.learning_rate": (_positive, "a positive finite number"),
    "train.learning_rate_decay": (lambda v: 0 < v <= 1, "a factor in (0, 1] (1 keeps the rate constant)"),
    "train.bop_gamma": (lambda v: 0 < v <= 1, "a rate in (0, 1]"),
    "train.bop_threshold": (lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0"),
    "train.seed": (lambda v: 0 <= v <= SEED_MAX, f"an integer from 0 to {SEED_MAX}"),
    "train.lr_step_epochs": (lambda v: v >= 1, "an integer >= 1"),
    "train.lr_step_factor": (lambda v: 0 < v <= 1, "a factor in (0, 1]"),
    "train.warmup_epochs": (lambda v: v >= 0, "an integer >= 0"),
    "data.validation_fraction": (lambda v: 0 <= v < 1, "a fraction from 0 (no validation set) up to but excluding 1"),
    "data.scale": (lambda v: math.isfinite(v) and v != 0, "a finite non-zero number"),
    "data.offset": (lambda v: math.isfinite(v), "a finite number"),
    "export.reuse_factor": (
        lambda v: all(_is_type(r, int) and r >= 1 for r in (v.values() if isinstance(v, dict) else [v])),
        "an integer >= 1, or a mapping of layer names to integers >= 1",
    ),
    "export.clock_period_ns": (lambda v: v is None or _positive(v), "a positive number of ns (or null: the board's)"),
}


def _check_values(config: dict[str, Any], where: str) -> None:
    name = config["name"]
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(
            f"{where}: key 'name' must be an identifier of at most 64 ASCII letters, digits and underscores "
            f"(not starting with a digit), since it names files and the HLS project; got {name!r}"
        )
    from .data import DATASETS

    if config["data"]["dataset"] not in DATASETS:
        raise ConfigError(
            f"{where}: key 'data.dataset' is {config['data']['dataset']!r}; available data sets: {', '.join(DATASETS)}"
        )
    data, train = config["data"], config["train"]
    if data["dataset"] == "digits" and (data["path"] is not None or data["test_path"] is not None):
        raise ConfigError(f"{where}: key 'data.path' is for dataset npz or csv; the embedded digits need no file (remove it)")
    if data["dataset"] in ("npz", "csv") and data["path"] is None:
        raise ConfigError(f"{where}: key 'data.path' is missing; dataset {data['dataset']} reads a file: give its path")
    if data["test_path"] is not None and data["dataset"] != "csv":
        raise ConfigError(f"{where}: key 'data.test_path' is for csv files; an .npz file holds its test set as x_test, y_test")
    if train["lr_schedule"] not in SCHEDULES:
        raise ConfigError(f"{where}: key 'train.lr_schedule' is {train['lr_schedule']!r}; use one of {', '.join(SCHEDULES)}")
    if train["distribute"] not in (None, "mirrored", "multi_worker"):
        raise ConfigError(f"{where}: key 'train.distribute' is {train['distribute']!r}; use null, mirrored or multi_worker")
    stop = train["early_stopping"]
    if stop is not None:
        known = {"monitor": str, "patience": int, "min_delta": float}
        for key, value in stop.items():
            if key not in known:
                raise ConfigError(f"{where}: unknown key 'train.early_stopping.{key}'; known keys here: {', '.join(known)}")
            if not _is_type(value, known[key]):
                raise ConfigError(f"{where}: key 'train.early_stopping.{key}' must be {_TYPE_NAMES[known[key]]}, got {value!r}")
        if stop.get("monitor", "val_accuracy") not in MONITORS:
            raise ConfigError(
                f"{where}: key 'train.early_stopping.monitor' is {stop['monitor']!r}; use one of {', '.join(MONITORS)}"
            )
        if stop.get("patience", 10) < 1 or stop.get("min_delta", 0) < 0:
            raise ConfigError(f"{where}: key 'train.early_stopping' needs patience >= 1 and min_delta >= 0, got {stop!r}")
        if data["validation_fraction"] == 0 and data["dataset"] != "npz":
            raise ConfigError(
                f"{where}: key 'train.early_stopping' watches a validation set; set data.validation_fraction (e.g. 0.1)"
            )
    if config["freeze"]["output_quantizer"] is not None:
        _quantizer(config["freeze"]["output_quantizer"], f"{where}: key 'freeze.output_quantizer'")
    if config["train"]["optimizer"] not in OPTIMIZERS:
        raise ConfigError(
            f"{where}: key 'train.optimizer' must be one of {', '.join(OPTIMIZERS)}, got {config['train']['optimizer']!r}"
        )
    for dotted, (ok, good) in RANGES.items():
        section, key = dotted.split(".")
        value = config[section][key]
        if not ok(value):
            raise ConfigError(f"{where}: key {dotted!r} must be {good}, got {value!r}")
    if config["freeze"]["input_type"] is not None:
        from .fixed import FixedType

        try:
            FixedType.from_string(config["freeze"]["input_type"])
        except ValueError as err:
            raise ConfigError(f"{where}: key 'freeze.input_type': {err}") from None


def check_train(values: dict[str, Any], where: str = "train") -> None:
    """Refuse training arguments out of range (the ``train.*`` rows of :data:`RANGES`)."""
    for dotted, (ok, good) in RANGES.items():
        section, key = dotted.split(".")
        if section == "train" and key in values:
            value = values[key]
            if not _is_type(value, SCHEMA["train"][key]) or not ok(value):
                raise ConfigError(f"{where}: {key} must be {good}, got {value!r}")


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
        elif value is None and name in _NULLABLE:
            continue
        elif not _is_type(value, expected):
            raise ConfigError(f"{where}: key {name!r} must be {_TYPE_NAMES[expected]}, got {type(value).__name__} {value!r}")


# keys whose null means "the default of the target" (the board's clock, the backend's HLS tool)
_NULLABLE = {
    "export.clock_period_ns",
    "export.hls_tool",
    "export.part",
    "freeze.input_type",
    "freeze.output_quantizer",
    "data.shape",
    "data.path",
    "data.test_path",
    "train.early_stopping",
    "train.distribute",
}

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    list: "a list",
    bool: "true or false",
    (int, dict): "an integer or a mapping of layer names to integers",
    (int, str): "a column index or a header name",
    dict: "a mapping",
}


def _is_type(value, expected) -> bool:
    if isinstance(expected, tuple):
        return any(_is_type(value, e) for e in expected)
    if isinstance(value, bool):
        return expected is bool
    if expected is float:
        return isinstance(value, (int, float))
    return isinstance(value, expected)


# -------------------------------------------------------------------------------- layers
_LAYER_BASE_KWARGS = {"name", "dtype", "trainable"}


def _layer_classes() -> dict[str, type]:
    import keras

    from . import layers as q

    return {
        "QuantDense": q.QuantDense,
        "QuantConv2D": q.QuantConv2D,
        "QuantConv1D": q.QuantConv1D,
        "QuantDepthwiseConv2D": q.QuantDepthwiseConv2D,
        "QuantSeparableConv2D": q.QuantSeparableConv2D,
        "QuantActivation": q.QuantActivation,
        "QDense": q.QDense,  # QKeras's names: activation= may be a quantizer, QKeras's defaults
        "QConv2D": q.QConv2D,
        "QDenseBatchnorm": q.QDenseBatchnorm,  # a BatchNorm folded into the kernel before it is quantized
        "QConv2DBatchnorm": q.QConv2DBatchnorm,
        "QActivation": q.QActivation,
        "QBatchNormalization": q.QBatchNormalization,  # gamma, beta, mean, variance quantized (QKeras's po2 defaults)
        **{
            name: getattr(keras.layers, name)
            for name in (
                "BatchNormalization",
                "Activation",
                "Dropout",
                "Flatten",
                "Reshape",
                "MaxPooling2D",
                "AveragePooling2D",
                "GlobalMaxPooling2D",
                "GlobalAveragePooling2D",
                "MaxPooling1D",
                "AveragePooling1D",
                "GlobalMaxPooling1D",
                "GlobalAveragePooling1D",
                "ZeroPadding2D",
                "ZeroPadding1D",
            )
        },
    }


# a block whose output is its input plus its layers' output (a Bi-Real-style shortcut):
# ``- Residual: [ {QuantConv2D: {...}}, {BatchNormalization: {}}, {QuantActivation: {...}} ]``
RESIDUAL = "Residual"


_KERAS_DENSE_KWARGS = {
    "activation",
    "use_bias",
    "kernel_initializer",
    "bias_initializer",
    "kernel_regularizer",
    "bias_regularizer",
    "activity_regularizer",
    "kernel_constraint",
    "bias_constraint",
}


def _check_layer(spec, where: str) -> None:
    if not (isinstance(spec, dict) and len(spec) == 1):
        raise ConfigError(f"{where} must be one mapping like {{QuantDense: {{units: 128}}}}")
    ((cls_name, kwargs),) = spec.items()
    classes = _layer_classes()
    if cls_name == RESIDUAL:
        if not (isinstance(kwargs, list) and kwargs):
            raise ConfigError(f"{where}.{RESIDUAL} must be a list of layers, whose output is added to the block's input")
        for j, inner in enumerate(kwargs):
            if isinstance(inner, dict) and RESIDUAL in inner:
                raise ConfigError(f"{where}.{RESIDUAL}[{j}]: a Residual block cannot hold another; list its layers")
            _check_layer(inner, f"{where}.{RESIDUAL}[{j}]")
        return
    if cls_name not in classes:
        raise ConfigError(f"{where}: unknown layer {cls_name!r}; available: {', '.join([*classes, RESIDUAL])}")
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{where}.{cls_name} must map argument names to values")
    allowed = set(_LAYER_BASE_KWARGS)
    for klass in classes[cls_name].__mro__:
        if "__init__" in vars(klass):
            allowed |= {p for p in inspect.signature(klass.__init__).parameters if p not in ("self", "kwargs")}
    if cls_name in WEIGHTED_LAYERS:
        allowed |= _KERAS_DENSE_KWARGS
    allowed |= set(getattr(classes[cls_name], "BATCHNORM_KEYS", ()))
    for key in kwargs:
        if key not in allowed:
            raise ConfigError(f"{where}.{cls_name}: unknown key {key!r}; known keys: {', '.join(sorted(allowed))}")


# the layers with a weight matrix, whose reuse factor the export section may set by name
WEIGHTED_LAYERS = (
    "QuantDense",
    "QDense",
    "QuantConv2D",
    "QConv2D",
    "QDenseBatchnorm",
    "QConv2DBatchnorm",
    "QuantConv1D",
    "QuantDepthwiseConv2D",
    "QuantSeparableConv2D",
)


def _snake(cls_name: str) -> str:
    """Keras's default layer name of a class (``QuantConv2D`` -> ``quant_conv2d``)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", cls_name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _flat(model: list, prefix: str = "") -> list[tuple[str, str, dict]]:
    """(path, class name, kwargs) of every layer of a configuration's model list in order, a
    Residual block's layers at ``"i.j"``."""
    out = []
    for i, spec in enumerate(model):
        ((cls_name, kwargs),) = spec.items()
        if cls_name == RESIDUAL:
            out += _flat(kwargs, f"{prefix}{i}.")
        else:
            out.append((f"{prefix}{i}", cls_name, kwargs or {}))
    return out


def layer_names(model: list) -> dict[int | str, str]:
    """The name of each weighted layer of a configuration's model list, by its index (``"i.j"``
    inside a Residual block): its ``name``, else Keras's default for its class in a fresh
    session (``quant_dense``, ``quant_dense_1``, ...), which :func:`build_model` gives it."""
    flat = _flat(model)
    given = {kwargs.get("name") for _, _, kwargs in flat}
    names, counts = {}, {}
    for path, cls_name, kwargs in flat:
        if cls_name not in WEIGHTED_LAYERS:
            continue
        name = kwargs.get("name")
        base = _snake(cls_name)
        while name is None or (name in given and name != kwargs.get("name")):
            n = counts[base] = counts.get(base, -1) + 1
            name = base if n == 0 else f"{base}_{n}"
        names[int(path) if path.isdigit() else path] = name
    return names


def build_model(config: dict[str, Any], input_shape):
    """The Keras model the configuration describes (each weighted layer named as
    :func:`layer_names` says, whatever Keras built before in this process): a Sequential model,
    or a functional one when it holds Residual blocks."""
    import keras

    names = layer_names(config["model"])
    if not any(RESIDUAL in spec for spec in config["model"]):
        layers = [keras.Input(shape=tuple(input_shape), dtype="float32")]
        layers += [_layer(cls_name, kwargs, path, names) for path, cls_name, kwargs in _flat(config["model"])]
        return keras.Sequential(layers, name=config["name"])
    inputs = keras.Input(shape=tuple(input_shape), dtype="float32")
    h = inputs
    for i, spec in enumerate(config["model"]):
        ((cls_name, kwargs),) = spec.items()
        if cls_name != RESIDUAL:
            h = _layer(cls_name, kwargs or {}, str(i), names)(h)
            continue
        block = h
        for path, inner, inner_kwargs in _flat(kwargs, f"{i}."):
            block = _layer(inner, inner_kwargs, path, names)(block)
        try:
            h = keras.layers.Add()([h, block])
        except ValueError:
            raise ConfigError(
                f"model[{i}].{RESIDUAL}: its layers turn a tensor of shape {tuple(h.shape[1:])} into "
                f"{tuple(block.shape[1:])}, which cannot be added to it; keep the shape (e.g. padding='same', stride 1)"
            ) from None
    return keras.Model(inputs, h, name=config["name"])


def _layer(cls_name: str, kwargs: dict, path: str, names: dict):
    """The Keras layer of one layer spec at ``path`` (quantizers and constraints from their strings)."""
    from . import constraints

    where = f"model[{path.replace('.', f'].{RESIDUAL}[')}].{cls_name}"
    kwargs = dict(kwargs)
    key = int(path) if path.isdigit() else path
    if key in names:
        kwargs["name"] = names[key]
    for q in ("input_quantizer", "kernel_quantizer", "depthwise_quantizer", "pointwise_quantizer", "bias_quantizer", "quantizer"):
        if q in kwargs:
            kwargs[q] = _quantizer(kwargs[q], f"{where}.{q}")
    for c in ("kernel_constraint", "depthwise_constraint", "pointwise_constraint"):
        if isinstance(kwargs.get(c), str):
            try:
                kwargs[c] = constraints.get(kwargs[c])
            except ValueError as err:
                raise ConfigError(f"{where}.{c}: {err}") from None
    for k in ("kernel_size", "pool_size", "strides", "target_shape", "padding", "dilation_rate"):
        if isinstance(kwargs.get(k), list):
            kwargs[k] = tuple(tuple(v) if isinstance(v, list) else v for v in kwargs[k])
    try:
        return _layer_classes()[cls_name](**kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from None


def _quantizer(value, where):
    from . import quantizers

    try:
        return quantizers.get(value)
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None


def check_export(export: dict[str, Any], where: str = "config", layers: dict[int, str] | None = None) -> None:
    """Refuse export options the target (:class:`edgebnn.backends.target.Target`) does not
    accept, when the configuration is loaded (before any training), and spell the accepted ones
    as export and estimate do (letter case is free in a config). A per-layer ``reuse_factor``
    must name weighted layers of the model (``layers``, see :func:`layer_names`). Imports no hls4ml."""
    from .backends.target import BACKENDS, IO_TYPES, STRATEGIES, Target, TargetError, choice, hls_tool_family

    for key, choices in (("backend", BACKENDS), ("io_type", IO_TYPES), ("strategy", STRATEGIES)):
        if key in export:
            try:
                export[key] = choice(key, export[key], choices)
            except TargetError:
                raise ConfigError(f"{where}: key 'export.{key}' is {export[key]!r}; use one of {', '.join(choices)}") from None
    if export.get("hls_tool") is not None:
        try:
            export["hls_tool"] = hls_tool_family(export["hls_tool"])
        except TargetError:
            raise ConfigError(
                f"{where}: key 'export.hls_tool' is {export['hls_tool']!r}; use vitis_hls (Vitis HLS "
                "2020.2 and later) or vivado_hls (Vivado HLS up to 2020.1), or null for the backend's"
            ) from None
    rf = export.get("reuse_factor")
    if isinstance(rf, dict) and layers is not None:
        unknown = [name for name in rf if name not in layers.values()]
        if unknown:
            known = ", ".join(layers.values()) or "none"
            raise ConfigError(
                f"{where}: key 'export.reuse_factor' names {', '.join(map(repr, unknown))}, which is not a "
                f"weighted layer of the model; its weighted layers are {known} (give a layer a name: to choose it)"
            )
    try:
        Target(**export)
    except TargetError as err:
        raise ConfigError(f"{where}: export: {err}") from None


def target_of(config: dict[str, Any], board):
    """The :class:`~edgebnn.backends.target.Target` a loaded configuration builds for ``board``."""
    from .backends.target import Target

    return Target(board=board, **config["export"])


# ---------------------------------------------------------------------------- edgebnn init
_STARTER_MODEL = """\
model:                    # the layers in order; Residual: [...] adds a block's output to its input
  - QuantDense:
      units: 128
      input_quantizer: quantized_bits(8, 0, keep_negative=False)   # the data's grid (digits / 16)
      kernel_quantizer: ste_sign        # binary weights; 'quantized_bits(4, 0, alpha=1)' for 4-bit ones
      kernel_constraint: weight_clip(1.0)
      use_bias: false
  - BatchNormalization: {momentum: 0.9}  # folded with the next sign into integer thresholds
  - QuantDense:
      units: 10
      input_quantizer: ste_sign
      kernel_quantizer: ste_sign
      kernel_constraint: weight_clip(1.0)
      use_bias: false
  - BatchNormalization: {momentum: 0.9}
  - QuantActivation:
      quantizer: quantized_bits(5, 3)    # 5-bit logits at the output
"""

_SECTION_NOTES = {
    "data": "the data set: the embedded digits, or your own .npz / .csv file",
    "freeze": "what freeze needs beyond the model",
    "train": "quantization-aware training (a checkpoint every epoch; `edgebnn train RUN --resume`)",
    "export": "the hls4ml project (`edgebnn boards` lists the boards)",
}


def _examples_dir():
    import pathlib

    return pathlib.Path(__file__).resolve().parent.parent / "examples"


def starter_config(example: str | None = None) -> str:
    """The text of a commented starter configuration for ``edgebnn init``: every section and key
    with its default (from :data:`DEFAULTS`) and a small binarized MLP on the digits, or the
    configuration of ``example`` (a file name in examples/ or examples/zoo/, with or without
    ``.yaml``, in a source checkout) followed by every key it leaves at its default, commented."""

    if example is not None:
        folder = _examples_dir()
        name = example if example.endswith(".yaml") else example + ".yaml"
        candidates = [folder / name, folder / "zoo" / name]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            names = sorted(p.stem for p in [*folder.glob("*.yaml"), *folder.glob("zoo/*.yaml")]) if folder.is_dir() else []
            known = ", ".join(names) if names else "none here (the examples come with a source checkout of edgebnn)"
            raise ConfigError(f"--example {example!r} is not an example configuration; the examples are: {known}")
        text = found.read_text(encoding="utf-8")
        given = yaml.safe_load(text) or {}
        lines = [f"# edgebnn run configuration, from examples/{found.relative_to(folder)}", text.rstrip(), ""]
        lines.append("# the keys this example leaves at their defaults (uncomment to change one):")
        for section, defaults in DEFAULTS.items():
            if isinstance(defaults, dict):
                rest = {k: v for k, v in defaults.items() if k not in (given.get(section) or {})}
                if rest:
                    lines.append(f"# {section}:")
                    lines += [f"#   {k}: {_yaml_scalar(v)}" for k, v in rest.items()]
        return "\n".join(lines) + "\n"
    lines = [
        "# edgebnn run configuration: edit it, then `edgebnn run THIS_FILE -o runs/NAME`",
        "# (every key is optional but model; the values shown are the defaults)",
        f"name: {DEFAULTS['name']}      # names the files and the HLS project",
        f"board: {DEFAULTS['board']}    # a board name (`edgebnn boards`) or the path of a board .yaml",
        "",
    ]
    comments = _default_comments()
    for section, defaults in DEFAULTS.items():
        if not isinstance(defaults, dict):
            continue
        lines.append(f"{section}:                # {_SECTION_NOTES[section]}")
        for key, value in defaults.items():
            note = comments.get((section, key))
            lines.append(f"  {key}: {_yaml_scalar(value)}" + (f"   # {note}" if note else ""))
        lines.append("")
        if section == "data":
            lines.append(_STARTER_MODEL)
    return "\n".join(lines)


def _yaml_scalar(value) -> str:
    """``value`` as YAML reads it back (PyYAML reads ``1e-08`` as a string, ``1.0e-08`` as a number)."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def _default_comments() -> dict[tuple[str, str], str]:
    """The comment beside each default in this module's source (the one place they are documented)."""
    import inspect as _inspect

    source = _inspect.getsource(_inspect.getmodule(starter_config))
    block = source[source.index("DEFAULTS: dict[str, Any] = {") : source.index("\nOPTIMIZERS")]
    out, section = {}, None
    for line in block.splitlines():
        m = re.match(r'\s{4}"(\w+)": \{', line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r'\s{8}"(\w+)": .*#\s*(.+)$', line)
        if m and section:
            out[(section, m.group(1))] = m.group(2).strip()
    return out
