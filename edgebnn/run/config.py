"""Run configuration files: read as plain YAML data, checked against one declared schema.

A configuration describes one run: the data set, the model as a list of layers, training, the
board and the export options. The schema is the pydantic models below, one per section: each
key's type, range, default and one-line description are declared once, on its ``Field``. A key
the schema does not know, a value of the wrong type or out of range stops the run with one line
naming the key's path, the value and what is accepted, instead of being ignored or failing later.
:func:`config_schema` gives the same schema as JSON Schema, for editors.

Configs are data, never code: they are read with a ``yaml.SafeLoader`` that also refuses
duplicate keys, so a ``!!python/...`` tag is refused, not run.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
import re
import types
import typing
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ..errors import EdgebnnError, did_you_mean
from ..training.data import DATASETS

OPTIMIZERS = ("adam", "sgd", "rmsprop", "bop")
SCHEDULES = ("exponential", "cosine", "step", "constant")  # train.lr_schedule
MONITORS = {
    "val_accuracy": "max",
    "val_loss": "min",
}  # train.early_stopping.monitor: what improves
DISTRIBUTIONS = ("mirrored", "multi_worker")  # train.distribute, besides null
SEED_MAX = 2**32 - 1  # NumPy's seeds
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"  # ASCII only: the name becomes file names and C++ identifiers


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


def load_config(path: str | os.PathLike, base_dir: str | os.PathLike | None = None, layers: bool = True) -> dict[str, Any]:
    """The configuration in ``path``, checked and merged over the defaults; relative data paths
    are made absolute against ``base_dir`` (default: the config file's folder). With ``layers``
    false the model's layers (their arguments and quantizer strings) are not checked, which needs
    Keras (and so TensorFlow): the command line checks the rest first, in a fraction of a second,
    and reads a run folder's checked configuration for estimate without them."""
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
    config = check_config(raw, path, layers=layers)
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


# ---------------------------------------------------------------------- the schema
@dataclasses.dataclass(frozen=True)
class _Accepts:
    """How a refusal words what a key accepts, where its type and constraints alone would say it
    badly: ``range`` for a value of the right type that the constraints refuse, ``kind`` for a
    value of another type (default: the type's name, such as "an integer")."""

    range: str | None = None
    kind: str | None = None


def _non_zero(value: float) -> float:
    if value == 0:
        raise ValueError("zero")
    return value


_Seed = Annotated[int, Field(ge=0, le=SEED_MAX), _Accepts(f"an integer from 0 to {SEED_MAX}")]
_AtLeast1 = Annotated[int, Field(ge=1)]
_Factor = Annotated[float, Field(gt=0, le=1)]


class _Section(BaseModel):
    # strict: a YAML string is not a number and a bool is not an integer (an int is still a float)
    model_config = ConfigDict(extra="forbid", strict=True)


class DataSection(_Section):
    """``data:`` the data set and how it is split."""

    dataset: Literal[DATASETS] = Field(
        "digits", description="digits (scikit-learn's embedded 8x8 digits), npz or csv (a file: path)"
    )
    path: str | None = Field(None, description="the .npz / .csv file, relative to the config file's folder")
    test_path: str | None = Field(None, description="csv: a separate test file (else test_fraction splits path)")
    label_column: Annotated[int | str, _Accepts(kind="a column index or a header name")] = Field(
        -1, description="csv: the label's column (an index, negative from the end, or a header name)"
    )
    shape: list | None = Field(None, description="each sample's shape (default: as stored; digits: the flat 64 pixels)")
    scale: Annotated[float, AfterValidator(_non_zero), _Accepts("a finite non-zero number")] = Field(
        1.0, allow_inf_nan=False, description="inputs become raw * scale + offset"
    )
    offset: Annotated[float, _Accepts("a finite number")] = Field(0.0, allow_inf_nan=False, description="added to raw * scale")
    test_fraction: Annotated[float, _Accepts("a fraction between 0 and 1 (exclusive)")] = Field(
        0.2, gt=0, lt=1, description="the test share when the data have no test set"
    )
    validation_fraction: Annotated[float, _Accepts("a fraction from 0 (no validation set) up to but excluding 1")] = Field(
        0.0, ge=0, lt=1, description="a stratified share of the training set held out for validation"
    )
    seed: _Seed = Field(0, description="the random state of the test and validation splits")


class FreezeSection(_Section):
    """``freeze:`` what freeze needs beyond the model."""

    input_type: str | None = Field(
        None,
        description="the data's fixed-point type, e.g. 'ufixed<5,1>' (null: the first layer's input_quantizer "
        "or a leading QuantActivation gives it)",
    )
    output_quantizer: str | None = Field(None, description="a quantizer string for the logits of a float head")


class EarlyStopping(_Section):
    """``train.early_stopping:`` stop when the validation set stops improving."""

    monitor: Literal[tuple(MONITORS)] = Field("val_accuracy", description="val_accuracy or val_loss: what must improve")
    patience: Annotated[int, _Accepts("an integer >= 1")] = Field(
        10, ge=1, description="epochs without an improvement before training stops"
    )
    min_delta: Annotated[float, _Accepts("a finite number >= 0")] = Field(
        0.0, ge=0, allow_inf_nan=False, description="the least change that counts as an improvement"
    )


class TrainSection(_Section):
    """``train:`` quantization-aware training."""

    epochs: Annotated[int, _Accepts("at least 1")] = Field(50, ge=1, description="passes over the training set")
    batch_size: Annotated[int, _Accepts("at least 1")] = Field(64, ge=1, description="samples per gradient step")
    optimizer: Literal[OPTIMIZERS] = Field(
        "adam", description="adam, sgd, rmsprop, or bop (Bop flips the binary kernels, Adam trains the rest)"
    )
    learning_rate: Annotated[float, _Accepts("a positive finite number")] = Field(
        0.01, gt=0, allow_inf_nan=False, description="the starting rate (reached at the end of any warmup)"
    )
    learning_rate_decay: Annotated[_Factor, _Accepts("a factor in (0, 1] (1 keeps the rate constant)")] = Field(
        1.0, description="exponential: the rate is multiplied by this every epoch"
    )
    bop_gamma: Annotated[_Factor, _Accepts("a rate in (0, 1]")] = Field(
        1e-4, description="bop: the adaptivity rate of its moving average of the gradients"
    )
    bop_threshold: Annotated[float, _Accepts("a finite number >= 0")] = Field(
        1e-8,
        ge=0,
        allow_inf_nan=False,
        description="bop: a binary weight flips when that average pushes against its sign by more than this",
    )
    seed: _Seed = Field(0, description="seeds Python, NumPy and Keras: the initial weights, the batches' order, dropout")
    lr_schedule: Literal[SCHEDULES] = Field(
        "exponential", description="exponential (learning_rate_decay per epoch), cosine, step, constant"
    )
    lr_step_epochs: Annotated[int, _Accepts("an integer >= 1")] = Field(10, ge=1, description="step: every this many epochs ...")
    lr_step_factor: Annotated[_Factor, _Accepts("a factor in (0, 1]")] = Field(
        0.5, description="... the rate is multiplied by this"
    )
    warmup_epochs: Annotated[int, _Accepts("an integer >= 0")] = Field(
        0, ge=0, description="a linear warmup from learning_rate / warmup_epochs"
    )
    early_stopping: EarlyStopping | None = Field(
        None, description="null, or a mapping of monitor, patience and min_delta: stop once the validation set stops improving"
    )
    restore_best: bool = Field(True, description="with a validation set the best epoch's weights are the trained model")
    distribute: Literal[DISTRIBUTIONS] | None = Field(
        None, description="null, mirrored (several local GPUs) or multi_worker (hosts through TF_CONFIG)"
    )
    worker_timeout: Annotated[float, _Accepts("a positive number of seconds")] = Field(
        600.0, gt=0, allow_inf_nan=False, description="multi_worker: seconds each host waits for the others to start"
    )


class ExportSection(_Section):
    """``export:`` the hardware project: an hls4ml project (backend Vitis or Vivado) or edgebnn's
    own Verilog design (backend ``rtl``). The choices of backend, io_type, strategy and hls_tool are
    the target's (:mod:`edgebnn.backends.target`), checked by :func:`check_export`, letter case free;
    ``folding`` is the rtl backend's, the others' the hls4ml projects'."""

    backend: str = Field(
        "Vitis",
        description="Vitis or Vivado (an hls4ml project), or rtl (edgebnn's Verilog: Verilator, Yosys, nextpnr)",
    )
    io_type: str = Field("io_parallel", description="io_parallel (whole arrays) or io_stream (FIFOs between layers)")
    strategy: str = Field("Latency", description="Latency (fully parallel) or Resource (each multiplier used reuse_factor times)")
    reuse_factor: Annotated[
        _AtLeast1 | dict[str, _AtLeast1],
        _Accepts(
            "an integer >= 1, or a mapping of layer names to integers >= 1",
            kind="an integer or a mapping of layer names to integers",
        ),
    ] = Field(1, description="multiplications per multiplier: one for the model, or {layer name: its own}")
    clock_period_ns: Annotated[float | None, _Accepts("a positive number of ns (or null: the board's)")] = Field(
        None, gt=0, allow_inf_nan=False, description="the clock the HLS tool aims at (null: the board's)"
    )
    hls_tool: str | None = Field(None, description="the tool of the backend (Vitis -> vitis_hls, Vivado -> vivado_hls)")
    part: str | None = Field(None, description="the FPGA part (null: the board's)")
    folding: Annotated[
        Literal["auto"] | dict[str, Annotated[list[_AtLeast1], Field(min_length=2, max_length=2)]],
        _Accepts(
            "auto, or a mapping of layer names to [PE, SIMD] (integers >= 1 dividing the layer's outputs and inputs)",
            kind="auto or a mapping of layer names to [PE, SIMD]",
        ),
    ] = Field(
        "auto",
        description="rtl backend: [PE, SIMD] per weighted layer (outputs, inputs per cycle), or auto: "
        "the fastest folding that fits the board",
    )


class RunConfig(_Section):
    """A whole configuration file: every key is optional but ``model``."""

    model_config = ConfigDict(title="edgebnn run configuration")

    name: Annotated[
        str,
        _Accepts(
            "an identifier of at most 64 ASCII letters, digits and underscores (not starting with a digit), "
            "since it names files and the HLS project"
        ),
    ] = Field("model", pattern=NAME_PATTERN, description="names the files and the HLS project")
    board: str = Field("pynq-z2", description="a board name (`edgebnn boards`) or the path of a board .yaml")
    data: DataSection = Field(
        default_factory=DataSection, description="the data set: the embedded digits, or your own .npz / .csv file"
    )
    model: list = Field(
        description="the layers in order, each {Class: {argument: value}}; Residual: [...] adds a block's output to its input"
    )
    freeze: FreezeSection = Field(default_factory=FreezeSection, description="what freeze needs beyond the model")
    train: TrainSection = Field(
        default_factory=TrainSection,
        description="quantization-aware training (a checkpoint every epoch; `edgebnn train RUN --resume`)",
    )
    export: ExportSection = Field(
        default_factory=ExportSection, description="the hls4ml project (`edgebnn boards` lists the boards)"
    )


def _sections() -> dict[str, type[BaseModel]]:
    """The sections of a configuration (a mapping each) by key, in the schema's order."""
    return {key: field.annotation for key, field in RunConfig.model_fields.items() if _model_of(field.annotation)}


def _defaults() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, field in RunConfig.model_fields.items():
        if not field.is_required():
            value = field.get_default(call_default_factory=True)
            out[key] = value.model_dump() if isinstance(value, BaseModel) else value
    return out


# every key but model at its default, derived from the schema (one place for each default)
DEFAULTS: dict[str, Any] = _defaults()


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a configuration file (for an editor's completion and checks): the same
    keys, types, ranges, defaults and descriptions :func:`load_config` enforces, except what
    needs the code (layer arguments, quantizer strings, the target's choices and limits)."""
    return RunConfig.model_json_schema()


def check_config(raw: Any, where: str = "config", layers: bool = True) -> dict[str, Any]:
    """``raw`` checked against the schema and merged over the defaults, as plain data (the model's
    layers too unless ``layers`` is false, see :func:`load_config`)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: the top level must be a mapping of keys such as 'model' and 'train'")
    try:
        config = RunConfig.model_validate(raw).model_dump()
    except ValidationError as err:
        raise ConfigError(f"{where}: {_refusal(err, raw)}") from None
    _check_combinations(config, where)
    for i, spec in enumerate(config["model"]):
        (_check_layer if layers else _check_shape)(spec, f"{where}: model[{i}]")
    check_export(config["export"], where, layer_names(config["model"]))
    return config


# ---------------------------------------------------------------------- refusals in one line
def _refusal(err: ValidationError, raw: dict) -> str:
    """The first of pydantic's errors as one sentence: the key's dotted path, the value given and
    what the key accepts."""
    errors = err.errors()
    first = errors[0]
    path, field, owner = _locate(first["loc"])
    if first["type"] in ("extra_forbidden", "invalid_key"):  # invalid_key: a key that is not a string
        key = first["loc"][len(path)] if first["type"] == "extra_forbidden" else first["input"]
        name = ".".join([*path, _show(key) if key is None else str(key)])
        known = list(owner.model_fields)
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown key {name!r}{hint}; known keys here: {', '.join(known)}"
    dotted = ".".join(path)
    if first["type"] == "missing":
        return f"missing key {dotted!r} ({field.description})"
    value = raw
    for key in path:
        value = value[key]
    here = [e for e in errors if _locate(e["loc"])[0] == path]
    if any(e["type"] == "literal_error" for e in here):
        return f"key {dotted!r} is {_show(value)}; use one of {', '.join(_choices(field.annotation))}"
    says = _accepts(field)
    # a union reports every member's error: a value of one member's type out of its range says more
    out_of_range = [e for e in here if not e["type"].endswith("_type")]
    if out_of_range:
        good = says.range or out_of_range[0]["msg"].replace("Input should be ", "")
        return f"key {dotted!r} must be {good}, got {_show(value)}"
    got = _show(value) if value is None else f"{type(value).__name__} {value!r}"
    return f"key {dotted!r} must be {says.kind or _kind(field.annotation)}, got {got}"


def _locate(loc: tuple) -> tuple[list[str], Any, type[BaseModel]]:
    """The schema keys an error location walks through (pydantic adds union members and mapping
    keys below a key), the last one's field, and the section holding it."""
    owner: type[BaseModel] = RunConfig
    path: list[str] = []
    field = None
    for part in loc:
        if not isinstance(part, str) or part not in owner.model_fields:
            break
        field = owner.model_fields[part]
        path.append(part)
        inner = _model_of(field.annotation)
        if inner is None:
            break
        owner = inner
    return path, field, owner


def _model_of(annotation) -> type[BaseModel] | None:
    """The section model of a key that holds one (or null)."""
    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _accepts(field) -> _Accepts:
    return next((m for m in field.metadata if isinstance(m, _Accepts)), _Accepts())


def _show(value) -> str:
    return "null" if value is None else repr(value)


def _choices(annotation) -> list[str]:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        return [str(a) for a in args]
    nested = [c for a in args if a is not type(None) for c in _choices(a)]
    return ["null", *nested] if type(None) in args else nested


_KINDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list", dict: "a mapping"}


def _kind(annotation) -> str:
    """A type as a refusal names it ("an integer", "a mapping or null")."""
    if _model_of(annotation) is not None and typing.get_origin(annotation) is None:
        return "a mapping"
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _kind(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        kinds = [_kind(a) for a in args if a is not type(None)]
        return " or ".join(kinds + ["null"] * (type(None) in args))
    return _KINDS.get(origin or annotation, str(annotation))


# ---------------------------------------------------------------------- checks across keys
def _check_combinations(config: dict[str, Any], where: str) -> None:
    """What the schema cannot say key by key: keys that only make sense together, and the
    strings whose grammar lives in the code (fixed-point types, quantizers)."""
    data, train = config["data"], config["train"]
    if data["dataset"] == "digits" and (data["path"] is not None or data["test_path"] is not None):
        raise ConfigError(f"{where}: key 'data.path' is for dataset npz or csv; the embedded digits need no file (remove it)")
    if data["dataset"] in ("npz", "csv") and data["path"] is None:
        raise ConfigError(f"{where}: key 'data.path' is missing; dataset {data['dataset']} reads a file: give its path")
    if data["test_path"] is not None and data["dataset"] != "csv":
        raise ConfigError(f"{where}: key 'data.test_path' is for csv files; an .npz file holds its test set as x_test, y_test")
    if train["early_stopping"] is not None and data["validation_fraction"] == 0 and data["dataset"] != "npz":
        raise ConfigError(
            f"{where}: key 'train.early_stopping' watches a validation set; set data.validation_fraction (e.g. 0.1)"
        )
    if config["freeze"]["output_quantizer"] is not None:
        _quantizer(config["freeze"]["output_quantizer"], f"{where}: key 'freeze.output_quantizer'")
    if config["freeze"]["input_type"] is not None:
        from ..fixed import FixedType

        try:
            FixedType.from_string(config["freeze"]["input_type"])
        except ValueError as err:
            raise ConfigError(f"{where}: key 'freeze.input_type': {err}") from None


def check_train(values: dict[str, Any], where: str = "train") -> None:
    """Refuse training arguments of the wrong type or out of range, as the ``train`` section of a
    configuration would (its keys with a range; the others are left to the caller)."""
    for key, value in values.items():
        field = TrainSection.model_fields.get(key)
        good = _accepts(field).range if field is not None else None
        if good is None:
            continue
        try:
            TrainSection.model_validate({key: value})
        except ValidationError:
            raise ConfigError(f"{where}: {key} must be {good}, got {value!r}") from None


# -------------------------------------------------------------------------------- layers
_LAYER_BASE_KWARGS = {"name", "dtype", "trainable"}


def _layer_classes() -> dict[str, type]:
    import keras

    from ..training import layers as q

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


# arguments every Keras layer takes that a configuration has no use for: accepted, not listed
_KERAS_INTERNALS = {"args", "autocast", "dtype", "lora_alpha", "lora_rank", "quantization_config", "rank", "synchronized"}


def _check_shape(spec, where: str) -> None:
    """A model list's entry has the shape of one: a mapping of one layer name to its arguments
    (a mapping, or nothing), or ``Residual`` to a list of such entries. Checked also where the
    layers' names and arguments are not (``load_config(layers=False)``), since every reader of
    the model list takes each entry apart."""
    if isinstance(spec, str):
        raise ConfigError(
            f"{where} is the bare name {spec!r}; write it as a mapping of the layer to its arguments, e.g. '- {spec}: {{}}'"
        )
    if not (isinstance(spec, dict) and len(spec) == 1):
        raise ConfigError(f"{where} must be one mapping like {{QuantDense: {{units: 128}}}}, got {_show(spec)}")
    ((cls_name, kwargs),) = spec.items()
    if cls_name == RESIDUAL:
        if not (isinstance(kwargs, list) and kwargs):
            raise ConfigError(f"{where}.{RESIDUAL} must be a list of layers, whose output is added to the block's input")
        for j, inner in enumerate(kwargs):
            if isinstance(inner, dict) and RESIDUAL in inner:
                raise ConfigError(f"{where}.{RESIDUAL}[{j}]: a Residual block cannot hold another; list its layers")
            _check_shape(inner, f"{where}.{RESIDUAL}[{j}]")
    elif not (kwargs is None or isinstance(kwargs, dict)):
        raise ConfigError(f"{where}.{cls_name} must map argument names to values, got {_show(kwargs)}")


def _check_layer(spec, where: str) -> None:
    _check_shape(spec, where)
    ((cls_name, kwargs),) = spec.items()
    classes = _layer_classes()
    if cls_name == RESIDUAL:
        for j, inner in enumerate(kwargs):
            _check_layer(inner, f"{where}.{RESIDUAL}[{j}]")
        return
    if cls_name not in classes:
        raise ConfigError(
            f"{where}: unknown layer {cls_name!r}{did_you_mean(cls_name, [*classes, RESIDUAL])}; "
            f"available: {', '.join([*classes, RESIDUAL])}"
        )
    kwargs = kwargs or {}
    allowed = set(_LAYER_BASE_KWARGS)
    for klass in classes[cls_name].__mro__:
        if "__init__" in vars(klass):
            allowed |= {p for p in inspect.signature(klass.__init__).parameters if p not in ("self", "kwargs")}
    if cls_name in WEIGHTED_LAYERS:
        allowed |= _KERAS_DENSE_KWARGS
    allowed |= set(getattr(classes[cls_name], "BATCHNORM_KEYS", ()))
    _check_cut_calls(kwargs, f"{where}.{cls_name}")
    for key in kwargs:
        if key not in allowed:
            hint = ""
            if str(key).rstrip().endswith(")"):
                hint = f" (the tail of a call cut at a comma? {_QUOTE_HINT})"
            shown = sorted(allowed - _KERAS_INTERNALS)
            hint = hint or did_you_mean(key, shown)
            raise ConfigError(f"{where}.{cls_name}: unknown key {key!r}{hint}; known keys: {', '.join(shown)}")
    from ..training import quantizers

    for key in QUANTIZER_KEYS:
        if isinstance(kwargs.get(key), str):
            try:
                quantizers.check(kwargs[key])
            except ValueError as err:
                raise ConfigError(f"{where}.{cls_name}.{key}: {err}") from None


_QUOTE_HINT = "quote quantizer strings that contain commas, e.g. quantizer: 'quantized_bits(5, 3)'"


def _check_cut_calls(kwargs: dict, where: str) -> None:
    """Refuse a call that YAML's flow style cut at its commas: ``{quantizer: quantized_bits(5, 3)}``
    reads as ``quantizer: 'quantized_bits(5'`` and a key ``'3)'`` without a value; say so and
    how to quote it."""
    items = list(kwargs.items())
    for i, (key, value) in enumerate(items):
        if not (isinstance(value, str) and value.count("(") > value.count(")")):
            continue
        parts = [value]
        for rest, rest_value in items[i + 1 :]:
            if rest_value is not None:
                break
            parts.append(str(rest))
            if str(rest).rstrip().endswith(")"):
                break
        if len(parts) == 1:  # no cut tail follows: the quantizer's own check says what is wrong
            continue
        raise ConfigError(
            f"{where}.{key}: {value!r} has an unclosed '(' (in a flow mapping {{...}} YAML splits a value at its commas); "
            f"quote quantizer strings that contain commas, here {key}: {', '.join(parts)!r}"
        )


# a layer's arguments that take a quantizer (a string in a configuration)
QUANTIZER_KEYS = (
    "input_quantizer",
    "kernel_quantizer",
    "depthwise_quantizer",
    "pointwise_quantizer",
    "bias_quantizer",
    "quantizer",
)


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
    from ..training import constraints

    where = f"model[{path.replace('.', f'].{RESIDUAL}[')}].{cls_name}"
    kwargs = dict(kwargs)
    key = int(path) if path.isdigit() else path
    if key in names:
        kwargs["name"] = names[key]
    for q in QUANTIZER_KEYS:
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
    from ..training import quantizers

    try:
        return quantizers.get(value)
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None


def check_export(export: dict[str, Any], where: str = "config", layers: dict[int, str] | None = None) -> None:
    """Refuse export options the target (:class:`edgebnn.backends.target.Target`) does not
    accept, when the configuration is loaded (before any training), and spell the accepted ones
    as export and estimate do (letter case is free in a config). A per-layer ``reuse_factor``
    must name weighted layers of the model (``layers``, see :func:`layer_names`). Imports no hls4ml."""
    from ..backends.target import BACKENDS, IO_TYPES, STRATEGIES, Target, TargetError, choice, hls_tool_family

    for key, choices in (("backend", (*BACKENDS, RTL)), ("io_type", IO_TYPES), ("strategy", STRATEGIES)):
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
    folding = export.get("folding", "auto")
    if isinstance(folding, dict):
        if export.get("backend") != RTL:
            raise ConfigError(
                f"{where}: key 'export.folding' is the rtl backend's (PE x SIMD per layer); "
                f"backend {export.get('backend')} takes reuse_factor instead (or set backend: rtl)"
            )
        if layers is not None:
            unknown = [name for name in folding if name not in layers.values()]
            if unknown:
                raise ConfigError(
                    f"{where}: key 'export.folding' names {', '.join(map(repr, unknown))}, which is not a weighted "
                    f"layer of the model; its weighted layers are {', '.join(layers.values()) or 'none'}"
                )
        export["folding"] = {name: list(pair) for name, pair in folding.items()}
    try:
        Target(**hls_options(export))
    except TargetError as err:
        raise ConfigError(f"{where}: export: {err}") from None


# the export section's backend that is edgebnn's own Verilog design (the others are hls4ml's)
RTL = "rtl"


def is_rtl(config: dict[str, Any]) -> bool:
    """Whether a loaded configuration exports edgebnn's RTL design (``export.backend: rtl``)."""
    return config["export"].get("backend") == RTL


def hls_options(export: dict[str, Any]) -> dict[str, Any]:
    """The export section as :class:`~edgebnn.backends.target.Target` keywords: without the rtl
    backend's ``folding``; an rtl run's hls4ml options describe the hls4ml design its estimate
    is set beside (hls4ml's default backend, Vitis)."""
    options = {k: v for k, v in export.items() if k != "folding"}
    if options.get("backend") == RTL:
        options["backend"] = "Vitis"
    return options


def target_of(config: dict[str, Any], board):
    """The :class:`~edgebnn.backends.target.Target` a loaded configuration builds for ``board``
    (for an rtl run: the hls4ml design its estimate is set beside, see :func:`hls_options`)."""
    from ..backends.target import Target

    return Target(board=board, **hls_options(config["export"]))


# ---------------------------------------------------------------------------- edgebnn init
_STARTER_MODEL = """\
model:                    # {}
  - QuantDense:
      units: 32                         # fits the pynq-z2 at the default Latency strategy; 128 units need
                                        # export strategy: Resource, reuse_factor: 8 (examples/digits_bnn.yaml)
      input_quantizer: quantized_bits(8, 0, keep_negative=False)   # the data's grid (digits / 16)
      kernel_quantizer: ste_sign        # binary weights; 'quantized_bits(4, 0, alpha=1)' for 4-bit ones
      kernel_constraint: weight_clip(1.0)
      use_bias: false
  - BatchNormalization: {{momentum: 0.9}}  # folded with the next sign into integer thresholds
  - QuantDense:
      units: 10
      input_quantizer: ste_sign
      kernel_quantizer: ste_sign
      kernel_constraint: weight_clip(1.0)
      use_bias: false
  - BatchNormalization: {{momentum: 0.9}}
  - QuantActivation:
      quantizer: quantized_bits(5, 3)    # 5-bit logits at the output
"""


def _examples_dir():
    from ..resources import examples_dir

    return examples_dir()


def starter_config(example: str | None = None) -> str:
    """The text of a commented starter configuration for ``edgebnn init``: every section and key
    with its default and description (both from the schema) and a small binarized MLP on the
    digits, or the configuration of ``example`` (a file name in examples/ or examples/zoo/, with
    or without ``.yaml``; they ship with the package) followed by every key it leaves at its
    default, commented."""

    if example is not None:
        folder = _examples_dir()
        name = example if example.endswith(".yaml") else example + ".yaml"
        candidates = [folder / name, folder / "zoo" / name]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            names = sorted(p.stem for p in [*folder.glob("*.yaml"), *folder.glob("zoo/*.yaml")]) if folder.is_dir() else []
            known = ", ".join(names) if names else f"none in {str(folder)!r} (reinstall edgebnn)"
            raise ConfigError(f"--example {example!r} is not an example configuration; the examples are: {known}")
        text = found.read_text(encoding="utf-8")
        given = yaml.safe_load(text) or {}
        body, tail = text.rstrip().splitlines(), []
        for section, model in _sections().items():
            rest = [key for key in model.model_fields if key not in (given.get(section) or {})]
            if not rest:
                continue
            keys = []
            for key in rest:
                line, inner = _starter_lines(model, section, key)
                keys += [f"# {line}", *(f"#   {sub}" for sub in inner)]
            if not _insert_in_section(body, section, keys):  # a section the example leaves out: after it
                tail += [f"# {section}:", *(f"#   {k[2:]}" for k in keys)]
        lines = [f"# edgebnn run configuration, from examples/{found.relative_to(folder)}", *body, ""]
        if tail:
            lines += ["# the sections this example leaves at their defaults (uncomment to change one):", *tail]
        return "\n".join(lines) + "\n"
    top = RunConfig.model_fields
    lines = [
        "# edgebnn run configuration: edit it, then `edgebnn run THIS_FILE -o runs/NAME`",
        "# (every key is optional but model; the values shown are the defaults)",
        f"name: {_yaml_scalar(DEFAULTS['name'])}      # {top['name'].description}",
        f"board: {_yaml_scalar(DEFAULTS['board'])}    # {top['board'].description}",
        "",
    ]
    for section, model in _sections().items():
        lines.append(f"{section}:                # {top[section].description}")
        for key in model.model_fields:
            line, inner = _starter_lines(model, section, key)
            lines += [f"  {line}", *(f"  #   {sub}" for sub in inner)]
        lines.append("")
        if section == "data":
            lines.append(_STARTER_MODEL.format(top["model"].description))
    return "\n".join(lines)


def _insert_in_section(lines: list[str], section: str, keys: list[str]) -> bool:
    """Write the commented ``keys`` (``# key: value ...``) at the end of the top-level ``section``
    of a configuration's ``lines``, indented as its keys, so that uncommenting them gives valid
    YAML (a section in flow style, ``data: {...}``, is rewritten in block style first). False when
    the section is not there."""
    head = next((i for i, line in enumerate(lines) if re.match(rf"{section}:(\s|$)", line)), None)
    if head is None:
        return False
    flow = re.match(rf"{section}:\s*(\{{.*\}})\s*(#.*)?$", lines[head])
    if flow:
        mapping = yaml.safe_load(flow.group(1)) or {}
        block = [f"  {k}: {_yaml_scalar(v)}" for k, v in mapping.items()]
        lines[head : head + 1] = [*([flow.group(2)] if flow.group(2) else []), f"{section}:", *block]
        head += 1 if flow.group(2) else 0
    last, indent = head, "  "
    for j in range(head + 1, len(lines)):
        line = lines[j]
        if line.strip() and not line[0].isspace() and not line.startswith("#"):
            break  # the next section
        if line.strip() and line[0].isspace() and not line.lstrip().startswith("#"):
            if last == head:
                indent = line[: len(line) - len(line.lstrip())]
            last = j
    lines[last + 1 : last + 1] = [indent + k for k in keys]
    return True


def _starter_lines(model: type[BaseModel], section: str, key: str) -> tuple[str, list[str]]:
    """A key's line (its default and description) and, for a sub-section that is null by default,
    the lines of its keys, to write in place of the null: the key is then written without a value
    (null in YAML), so that uncommenting its keys makes it their mapping."""
    field = model.model_fields[key]
    inner = _model_of(field.annotation)
    if inner and DEFAULTS[section][key] is None:
        subs = [f"{k}: {_yaml_scalar(f.default)}   # {f.description}" for k, f in inner.model_fields.items()]
        return f"{key}:   # {field.description}", subs
    return f"{key}: {_yaml_scalar(DEFAULTS[section][key])}   # {field.description}", []


def _yaml_scalar(value) -> str:
    """``value`` as YAML reads it back (PyYAML reads ``1e-08`` as a string, ``1.0e-08`` as a number)."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
