import os

import pytest
import yaml

from edgebnn.config import ConfigError, build_model, check_config, load_config


def write(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_example_loads_and_builds():
    config = load_config("examples/digits_bnn.yaml")
    assert config["board"] == "pynq-z2" and config["data"]["test_fraction"] == 0.2
    model = build_model(config, (64,))
    assert [type(l).__name__ for l in model.layers][:2] == ["QuantDense", "BatchNormalization"]
    assert model.layers[0].input_quantizer.hardware().type.width == 8


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("model: []\ntrain: {epoch: 3}\n", r"unknown key 'train\.epoch'"),
        ("model: []\ntrain: {epochs: ten}\n", r"key 'train\.epochs' must be an integer, got str 'ten'"),
        ("model: []\nbord: pynq-z2\n", r"unknown key 'bord'"),
        ("model: []\ndata: 3\n", r"key 'data' must be a mapping"),
        ("model: []\ntrain: {epochs: true}\n", r"'train\.epochs' must be an integer"),
        ("model:\n  - QuantDense: {unit: 3}\n", r"model\[0\]\.QuantDense: unknown key 'unit'"),
        ("model:\n  - Conv9D: {}\n", r"model\[0\]: unknown layer 'Conv9D'"),
        ("train: {epochs: 3}\n", r"missing key 'model'"),
        ("model: [\n", r"not valid YAML"),
    ],
)
def test_bad_configs_name_the_key(tmp_path, text, pattern):
    with pytest.raises(ConfigError, match=pattern) as info:
        load_config(write(tmp_path, text))
    assert "\n" not in str(info.value)


def test_bad_quantizer_string_is_named():
    with pytest.raises(ConfigError, match=r"model\[0\]\.QuantDense\.kernel_quantizer: unknown quantizer 'ste_sgn'"):
        check_config({"model": [{"QuantDense": {"units": 3, "kernel_quantizer": "ste_sgn"}}]})
    # a value out of range is refused where the quantizer is built, before any training
    config = check_config({"model": [{"QuantDense": {"units": 3, "kernel_quantizer": "quantized_bits(0, 0)"}}]})
    with pytest.raises(ConfigError, match=r"model\[0\]\.QuantDense\.kernel_quantizer: .*needs at least 1 bit"):
        build_model(config, (4,))


def test_yaml_is_loaded_safely(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda command: calls.append(command) or 0)  # what an unsafe loader would call
    with pytest.raises(
        ConfigError,
        match=r"line 1: refused Python tag !!python/object/apply:os\.system; configs are "
        r"plain data and cannot run code",
    ):
        load_config(write(tmp_path, "model: !!python/object/apply:os.system ['true']\n"))
    assert calls == []  # the loader refused the tag: nothing ran


@pytest.mark.parametrize(
    "text,pattern",
    [
        (
            "model: []\ntrain:\n  epochs: 3\n  batch_size: 8\n  epochs: 4\n",
            r"line 5: key 'epochs' is given twice \(first on line 3\)",
        ),
        ("model: []\nmodel: []\n", r"line 2: key 'model' is given twice \(first on line 1\)"),
    ],
)
def test_duplicate_keys_are_refused(tmp_path, text, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(write(tmp_path, text))


def test_same_key_in_different_mappings_is_fine(tmp_path):
    text = "model:\n  - QuantDense: {units: 3, use_bias: false}\n  - QuantDense: {units: 2, use_bias: false}\n"
    assert [layer["QuantDense"]["units"] for layer in load_config(write(tmp_path, text))["model"]] == [3, 2]


def test_export_section_is_checked_at_load_and_becomes_a_target(tmp_path):
    from edgebnn.boards import load_board
    from edgebnn.config import target_of

    base = "model:\n  - QuantDense: {units: 4}\n"
    with pytest.raises(ConfigError, match=r"key 'export.io_type' is 'io_serial'; use one of io_parallel, io_stream"):
        load_config(write(tmp_path, base + "export: {io_type: io_serial}\n"))
    with pytest.raises(ConfigError, match=r"key 'export.hls_tool' is 'quartus'; use vitis_hls"):
        load_config(write(tmp_path, base + "export: {hls_tool: quartus}\n"))
    config = load_config(
        write(tmp_path, base + "export: {backend: vivado, hls_tool: Vivado HLS 2019.2, strategy: resource, reuse_factor: 4}\n")
    )
    assert config["export"]["hls_tool"] == "vivado_hls" and config["export"]["strategy"] == "Resource"
    target = target_of(config, load_board("pynq-z2"))
    assert (target.backend, target.tool, target.reuse_factor, target.clock_ns) == ("Vivado", "vivado_hls", 4, 10)


def test_reuse_factor_per_layer_names_the_models_weighted_layers(tmp_path):
    """A per-layer reuse factor names QuantDense layers by their name, or by the name build_model
    gives an unnamed one (Keras's default in a fresh session), checked at load; the names are
    the graph's node names, whatever Keras built before in this process."""
    from edgebnn.boards import load_board
    from edgebnn.config import build_model, layer_names, target_of

    text = (
        "model:\n  - QuantDense: {units: 4, input_quantizer: ste_sign, kernel_quantizer: ste_sign}\n"
        "  - BatchNormalization: {}\n"
        "  - QuantDense: {units: 3, name: head, input_quantizer: ste_sign, kernel_quantizer: ste_sign}\n"
        "export: {strategy: Resource, part: xczu9eg-ffvb1156-2-e, reuse_factor: {quant_dense: 4, head: 2}}\n"
    )
    config = load_config(write(tmp_path, text))
    assert layer_names(config["model"]) == {0: "quant_dense", 2: "head"}
    target = target_of(config, load_board("pynq-z2"))
    assert target.reuse_factor == {"quant_dense": 4, "head": 2} and target.device_part == "xczu9eg-ffvb1156-2-e"
    for _ in range(2):  # the same names the second time
        assert [layer.name for layer in build_model(config, (6,)).layers][::2] == ["quant_dense", "head"]
    with pytest.raises(
        ConfigError,
        match=r"names 'quant_dense_1', which is not a weighted layer of the model; its weighted layers are "
        r"quant_dense, head \(",
    ):
        load_config(write(tmp_path, text.replace("quant_dense: 4", "quant_dense_1: 4")))


def test_export_section_is_checked_without_hls4ml(tmp_path):
    import subprocess
    import sys

    path = write(tmp_path, "model:\n  - QuantDense: {units: 4}\nexport: {strategy: Resource, reuse_factor: {quant_dense: 3}}\n")
    code = (
        "import sys\nfrom edgebnn.config import load_config\n"
        f"load_config({str(path)!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'hls4ml'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_freeze_input_type_is_checked_at_load_and_against_the_data(tmp_path):
    from types import SimpleNamespace

    import numpy as np

    from edgebnn.stages import _check_input_type

    base = "model:\n  - QuantDense: {units: 4, kernel_quantizer: ste_sign}\n"
    assert load_config(write(tmp_path, base))["freeze"]["input_type"] is None
    config = load_config(write(tmp_path, base + "freeze: {input_type: 'ufixed<5,1>'}\n"))
    assert config["freeze"]["input_type"] == "ufixed<5,1>"
    with pytest.raises(ConfigError, match=r"key 'freeze.input_type': cannot parse fixed-point type 'ufix<5,1>'"):
        load_config(write(tmp_path, base + "freeze: {input_type: 'ufix<5,1>'}\n"))
    digits = np.arange(17, dtype=np.float32) / 16
    data = SimpleNamespace(x_train=digits, x_val=None, x_test=digits[:3])
    _check_input_type(config, data, "c.yaml")  # the digits' pixels lie on it
    config["freeze"]["input_type"] = "ufixed<4,0>"
    with pytest.raises(ConfigError) as err:
        _check_input_type(config, data, "c.yaml")
    assert str(err.value) == (
        "c.yaml: key 'freeze.input_type': 1 of 20 input values are not on the grid of ufixed<4,0> (multiples of 0.0625 "
        "from 0 to 0.9375), e.g. 1; give an input type that holds them as they are, e.g. 'ufixed<5,1>'"
    )


# ---------------------------------------------------------------------- the schema's refusals
SECTION_KEYS = "name, board, data, model, freeze, train, export"
EXPORT_KEYS = "backend, io_type, strategy, reuse_factor, clock_period_ns, hls_tool, part, folding"


@pytest.mark.parametrize(
    "text,says",
    [
        # a key the schema does not know, with the keys it knows at that level
        ("bord: pynq-z2\n", f"unknown key 'bord' (did you mean 'board'?); known keys here: {SECTION_KEYS}"),
        (
            "export: {clock_period: 5}\n",
            f"unknown key 'export.clock_period' (did you mean 'clock_period_ns'?); known keys here: {EXPORT_KEYS}",
        ),
        ("export: {fpga: x}\n", f"unknown key 'export.fpga'; known keys here: {EXPORT_KEYS}"),
        ("1: 2\n", f"unknown key '1'; known keys here: {SECTION_KEYS}"),
        # a value of the wrong type: its type and value, and the type the key takes
        ("train: {batch_size: 32.0}\n", "key 'train.batch_size' must be an integer, got float 32.0"),
        ("train: {learning_rate: '0.1'}\n", "key 'train.learning_rate' must be a number, got str '0.1'"),
        ("data: {shape: 64}\n", "key 'data.shape' must be a list or null, got int 64"),
        ("data: {label_column: 1.5}\n", "key 'data.label_column' must be a column index or a header name, got float 1.5"),
        ("export: [1]\n", "key 'export' must be a mapping, got list [1]"),
        (
            "export: {reuse_factor: [4]}\n",
            "key 'export.reuse_factor' must be an integer or a mapping of layer names to integers, got list [4]",
        ),
        # YAML's true is not an integer, nor a number
        ("train: {seed: true}\n", "key 'train.seed' must be an integer, got bool True"),
        ("train: {learning_rate: false}\n", "key 'train.learning_rate' must be a number, got bool False"),
        (
            "export: {reuse_factor: true}\n",
            "key 'export.reuse_factor' must be an integer or a mapping of layer names to integers, got bool True",
        ),
        # a value out of range: what the key accepts
        ("train: {epochs: 0}\n", "key 'train.epochs' must be at least 1, got 0"),
        ("train: {seed: -1}\n", "key 'train.seed' must be an integer from 0 to 4294967295, got -1"),
        ("data: {test_fraction: 1.0}\n", "key 'data.test_fraction' must be a fraction between 0 and 1 (exclusive), got 1.0"),
        ("data: {scale: 0}\n", "key 'data.scale' must be a finite non-zero number, got 0"),
        ("train: {learning_rate: .inf}\n", "key 'train.learning_rate' must be a positive finite number, got inf"),
        ("train: {worker_timeout: 0}\n", "key 'train.worker_timeout' must be a positive number of seconds, got 0"),
        (
            "export: {clock_period_ns: -5}\n",
            "key 'export.clock_period_ns' must be a positive number of ns (or null: the board's), got -5",
        ),
        (
            "export: {reuse_factor: {quant_dense: 0}}\n",
            "key 'export.reuse_factor' must be an integer >= 1, or a mapping of layer names to integers >= 1, "
            "got {'quant_dense': 0}",
        ),
        (
            "name: my model\n",
            "key 'name' must be an identifier of at most 64 ASCII letters, digits and underscores (not starting with a "
            "digit), since it names files and the HLS project, got 'my model'",
        ),
        # a choice: the value and every accepted one
        ("train: {optimizer: adamw}\n", "key 'train.optimizer' is 'adamw'; use one of adam, sgd, rmsprop, bop"),
        ("train: {lr_schedule: linear}\n", "key 'train.lr_schedule' is 'linear'; use one of exponential, cosine, step, constant"),
        ("train: {distribute: tpu}\n", "key 'train.distribute' is 'tpu'; use one of null, mirrored, multi_worker"),
        ("data: {dataset: mnist}\n", "key 'data.dataset' is 'mnist'; use one of digits, npz, csv"),
        ("train: {optimizer: 3}\n", "key 'train.optimizer' is 3; use one of adam, sgd, rmsprop, bop"),
        # null where the key has no "default of the target" to fall back to
        ("train: {epochs: null}\n", "key 'train.epochs' must be an integer, got null"),
        ("train: {optimizer: null}\n", "key 'train.optimizer' is null; use one of adam, sgd, rmsprop, bop"),
        ("board: null\n", "key 'board' must be a string, got null"),
        ("train:\n", "key 'train' must be a mapping, got null"),
        # the keys of train.early_stopping, a section of its own
        (
            "train: {early_stopping: {patients: 3}}\n",
            "unknown key 'train.early_stopping.patients' (did you mean 'patience'?); "
            "known keys here: monitor, patience, min_delta",
        ),
        ("train: {early_stopping: {patience: 0}}\n", "key 'train.early_stopping.patience' must be an integer >= 1, got 0"),
        ("train: {early_stopping: {patience: true}}\n", "key 'train.early_stopping.patience' must be an integer, got bool True"),
        (
            "train: {early_stopping: {min_delta: -0.1}}\n",
            "key 'train.early_stopping.min_delta' must be a finite number >= 0, got -0.1",
        ),
        (
            "train: {early_stopping: {monitor: acc}}\n",
            "key 'train.early_stopping.monitor' is 'acc'; use one of val_accuracy, val_loss",
        ),
        ("train: {early_stopping: 5}\n", "key 'train.early_stopping' must be a mapping or null, got int 5"),
    ],
)
def test_each_refusal_names_the_key_the_value_and_what_is_accepted(tmp_path, text, says):
    path = write(tmp_path, "model: []\n" + text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: {says}"


def test_only_the_first_refusal_is_reported(tmp_path):
    path = write(tmp_path, "model: []\ntrain: {epochs: 0, batch_size: 0, optimizer: adamw}\nexport: {fpga: x}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: key 'train.epochs' must be at least 1, got 0"


def test_numbers_nulls_and_early_stopping_that_the_schema_accepts(tmp_path):
    text = (
        "model: []\n"
        "data: {scale: 2, offset: -1, shape: null, path: null, test_path: null, label_column: label, validation_fraction: 0.1}\n"
        "freeze: {input_type: null, output_quantizer: null}\n"
        "train: {learning_rate: 1, early_stopping: {patience: 3}, distribute: null}\n"
        "export: {clock_period_ns: null, hls_tool: null, part: null}\n"
    )
    config = load_config(write(tmp_path, text))
    assert config["data"]["scale"] == 2.0 and isinstance(config["data"]["scale"], float)  # a YAML int is a number
    assert config["data"]["label_column"] == "label" and config["train"]["learning_rate"] == 1.0
    # early_stopping comes back whole: the keys not given at their defaults
    assert config["train"]["early_stopping"] == {"monitor": "val_accuracy", "patience": 3, "min_delta": 0.0}
    assert config["export"]["clock_period_ns"] is None and config["train"]["distribute"] is None


def test_check_train_refuses_what_the_train_section_refuses():
    from edgebnn.config import check_train

    check_train({"epochs": 3, "learning_rate": 1, "optimizer": "not checked here"}, "train()")
    for values, says in (
        ({"epochs": 0}, "train(): epochs must be at least 1, got 0"),
        ({"epochs": True}, "train(): epochs must be at least 1, got True"),
        ({"warmup_epochs": -1}, "train(): warmup_epochs must be an integer >= 0, got -1"),
        ({"learning_rate": float("nan")}, "train(): learning_rate must be a positive finite number, got nan"),
        ({"worker_timeout": -1}, "train(): worker_timeout must be a positive number of seconds, got -1"),
    ):
        with pytest.raises(ConfigError) as info:
            check_train(values, "train()")
        assert str(info.value) == says


# ---------------------------------------------------------------------- defaults, documented once
def _schema_keys():
    """(section, key, field) of every key of every section, early_stopping's keys as train.early_stopping."""
    from edgebnn.config import EarlyStopping, RunConfig

    for section, field in RunConfig.model_fields.items():
        model = field.annotation
        if isinstance(model, type) and hasattr(model, "model_fields"):
            for key, inner in model.model_fields.items():
                yield section, key, inner
    for key, inner in EarlyStopping.model_fields.items():
        yield "train.early_stopping", key, inner


def test_every_default_is_in_the_starter_file_with_its_description():
    import re

    import yaml

    from edgebnn.config import DEFAULTS, EarlyStopping, RunConfig, starter_config

    text = starter_config()
    top = RunConfig.model_fields
    for key in ("name", "board"):
        assert re.search(rf"^{key}: {re.escape(DEFAULTS[key])} +# {re.escape(top[key].description)}$", text, re.M), key
    for section, key, field in _schema_keys():
        assert field.description and "\n" not in field.description, (section, key)
        if section == "train.early_stopping":  # null by default: its keys are shown commented, to write in its place
            default, line = EarlyStopping.model_fields[key].default, rf"^  #   {key}: (.+?)   # "
        else:
            default, line = DEFAULTS[section][key], rf"^  {key}:(.*?)   # "
            block = text[text.index(f"\n{section}:") :]
            assert re.search(rf"^{section}: +# {re.escape(top[section].description)}$", block, re.M), section
        found = re.search(line + re.escape(field.description) + "$", text, re.M)
        assert found and yaml.safe_load(found.group(1)) == default, (section, key)
    assert "# " + top["model"].description in text
    assert check_config(yaml.safe_load(text)) == {**DEFAULTS, "model": yaml.safe_load(text)["model"]}


def test_config_schema_is_json_schema_of_every_section_and_key():
    import json

    from edgebnn.config import DEFAULTS, config_schema

    schema = json.loads(json.dumps(config_schema()))  # plain JSON, for an editor
    assert schema["title"] == "edgebnn run configuration" and schema["additionalProperties"] is False
    assert list(schema["properties"]) == ["name", "board", "data", "model", "freeze", "train", "export"]
    assert schema["required"] == ["model"] and schema["properties"]["model"]["type"] == "array"
    defs = schema["$defs"]

    def resolve(prop):
        refs = [prop, *prop.get("anyOf", [])]
        ref = next(p["$ref"] for p in refs if "$ref" in p)
        return defs[ref.rsplit("/", 1)[1]]

    for section in ("data", "freeze", "train", "export"):
        body = resolve(schema["properties"][section])
        assert body["additionalProperties"] is False and list(body["properties"]) == list(DEFAULTS[section])
        for key, prop in body["properties"].items():
            assert prop["default"] == DEFAULTS[section][key] and prop["description"], (section, key)
    train = resolve(schema["properties"]["train"])["properties"]
    assert train["epochs"]["minimum"] == 1 and train["optimizer"]["enum"] == ["adam", "sgd", "rmsprop", "bop"]
    assert train["seed"]["maximum"] == 2**32 - 1 and train["learning_rate"]["exclusiveMinimum"] == 0
    stop = resolve(train["early_stopping"])
    assert stop["properties"]["monitor"]["enum"] == ["val_accuracy", "val_loss"] and stop["additionalProperties"] is False
    assert resolve(schema["properties"]["data"])["properties"]["dataset"]["enum"] == ["digits", "npz", "csv"]


@pytest.mark.parametrize(
    "quantizer, says",
    [
        (
            "ste_sgn",
            "model[0].QuantDense.input_quantizer: unknown quantizer 'ste_sgn' (did you mean 'ste_sign'?); "
            "known: approx_sign, binary,",
        ),
        (
            "quantized_bits(8, 0, keep_neg=False)",
            "model[0].QuantDense.input_quantizer: quantizer 'quantized_bits(8, 0, keep_neg=False)': got an unexpected "
            "keyword argument 'keep_neg'",
        ),
        ("ste_sign(", "model[0].QuantDense.input_quantizer: cannot parse quantizer 'ste_sign('"),
    ],
)
def test_a_layers_quantizer_string_is_checked_at_load(tmp_path, quantizer, says):
    """At load, before any model is built (a quantizer is parsed and its arguments bound, not built)."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"model": [{"QuantDense": {"units": 4, "input_quantizer": quantizer}}]}))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: {says}") and "\n" not in str(info.value)


def _uncommented_blocks(text):
    """Each block of commented keys in ``text`` (consecutive lines ``# key: ...``, a ``# section:``
    at the left margin starting a new one) uncommented on its own: the texts a user gets."""
    import re

    lines = text.splitlines()
    blocks, current = [], []
    for i, line in enumerate(lines):
        if re.match(r"\s*# ?\s*[A-Za-z_]\w*:(\s|$)", line):
            if current and line.startswith("# ") and not line.startswith("#  "):
                blocks.append(current)
                current = []
            current.append(i)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    for block in blocks:
        out = list(lines)
        for i in block:
            out[i] = re.sub(r"^(\s*)# ?", r"\1", out[i], count=1)
        yield [lines[i] for i in block], "\n".join(out) + "\n"


def _starters():
    import pathlib

    from edgebnn.config import starter_config

    examples = pathlib.Path(__file__).resolve().parent.parent / "examples"
    yield "starter", starter_config()
    for path in sorted([*examples.glob("*.yaml"), *examples.glob("zoo/*.yaml")]):
        yield path.stem, starter_config(path.stem)


def test_every_commented_block_of_a_starter_loads_when_uncommented(tmp_path):
    import re

    from edgebnn.config import ConfigError, load_config

    seen = 0
    for name, text in _starters():
        load_config(_write(tmp_path, "as_is.yaml", text))
        for block, uncommented in _uncommented_blocks(text):
            seen += 1
            path = _write(tmp_path, "uncommented.yaml", uncommented)
            try:
                load_config(path)
            except ConfigError as err:  # early stopping watches a validation set, which the block says
                assert "watches a validation set; set data.validation_fraction" in str(err), (name, block, err)
                fixed = re.sub(r"^(\s+)validation_fraction: 0.0", r"\1validation_fraction: 0.1", uncommented, flags=re.M)
                if fixed == uncommented:
                    fixed = uncommented.replace("\ndata:\n", "\ndata:\n  validation_fraction: 0.1\n", 1)
                load_config(_write(tmp_path, "uncommented.yaml", fixed))
    assert seen > 12


def test_init_example_keeps_one_data_section_when_its_defaults_are_uncommented(tmp_path):
    import re

    import yaml

    from edgebnn.config import load_config, starter_config

    text = starter_config("binary_cnn")
    uncommented = re.sub(r"^(\s*)# ?(\s*\w+:(\s|$))", r"\1\2", text, flags=re.M)  # every key, early stopping too
    uncommented = uncommented.replace("  validation_fraction: 0.0", "  validation_fraction: 0.1")
    config = load_config(_write(tmp_path, "cnn.yaml", uncommented))  # no "key 'data' is given twice"
    assert config["data"]["shape"] == [8, 8, 1] and config["data"]["test_fraction"] == 0.2
    assert yaml.safe_load(text)["export"]["reuse_factor"] == {"quant_conv2d_1": 4}


def _write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow
def test_the_starter_is_verified_and_fits_its_board(tmp_path, capsys):
    from edgebnn import cli
    from edgebnn.config import starter_config

    text = starter_config().replace("epochs: 50 ", "epochs: 2 ")
    assert "epochs: 2 " in text
    config = _write(tmp_path, "my.yaml", text)
    assert cli.main(["run", str(config), "-o", str(tmp_path / "runs" / "a")]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED bit for bit, and fits pynq-z2" in out


@pytest.mark.parametrize(
    "layer, says",
    [
        (
            "QuantActivation: {quantizer: quantized_bits(5, 3)}",
            "model[0].QuantActivation.quantizer: 'quantized_bits(5' has an unclosed '(' (in a flow mapping {...} YAML "
            "splits a value at its commas); quote quantizer strings that contain commas, here quantizer: 'quantized_bits(5, 3)'",
        ),
        (
            "QuantDense: {units: 4, input_quantizer: quantized_bits(8, 0, keep_negative=False), kernel_quantizer: ste_sign}",
            "quote quantizer strings that contain commas, here input_quantizer: 'quantized_bits(8, 0, keep_negative=False)'",
        ),
        (  # a tail alone (the head was given in another way): the unknown key says what it may be
            "QuantActivation: {quantizer: ste_sign, '3)': null}",
            "model[0].QuantActivation: unknown key '3)' (the tail of a call cut at a comma? quote quantizer strings that "
            "contain commas, e.g. quantizer: 'quantized_bits(5, 3)'); known keys:",
        ),
    ],
)
def test_a_quantizer_cut_at_its_commas_by_flow_style_says_to_quote_it(tmp_path, layer, says):
    from edgebnn.config import ConfigError, load_config

    path = tmp_path / "flow.yaml"
    path.write_text(f"model:\n  - {layer}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert says in str(err.value)
    path.write_text(f"model:\n  - {layer.replace('quantized_bits(5, 3)', repr('quantized_bits(5, 3)'))}\n")
    if "'3)'" not in layer and "keep_negative" not in layer:
        load_config(path)  # quoted, it loads


_MODEL = "model:\n  - QuantDense: {units: 3}\n"


@pytest.mark.parametrize(
    "text, says",
    [
        ("model:\n  - QuantDense\n", "model[0] is the bare name 'QuantDense'; write it as a mapping"),
        ("model:\n  - 3\n", "model[0] must be one mapping like {QuantDense: {units: 128}}, got 3"),
        ("model:\n  - {QuantDense: {}, Dense: {}}\n", "model[0] must be one mapping like"),
        ("model:\n  - QuantDense: [1, 2]\n", "model[0].QuantDense must map argument names to values, got [1, 2]"),
        ("model:\n  - QuantDense: 4\n", "model[0].QuantDense must map argument names to values, got 4"),
        ("model:\n  - Residual: [QuantDense]\n", "model[0].Residual[0] is the bare name 'QuantDense'"),
        ("model:\n  - Residual: {QuantDense: {}}\n", "model[0].Residual must be a list of layers"),
        ("model:\n  QuantDense: {units: 3}\n", "key 'model' must be a list, got dict"),
        ("model: 3\n", "key 'model' must be a list, got int 3"),
        (_MODEL + "train: 3\n", "key 'train' must be a mapping, got int 3"),
        (_MODEL + "train: [1, 2]\n", "key 'train' must be a mapping, got list"),
        (_MODEL + "data: [a, b]\n", "key 'data' must be a mapping, got list"),
        (_MODEL + "export: 5\n", "key 'export' must be a mapping, got int 5"),
        ("- a\n", "the top level must be a mapping"),
    ],
)
@pytest.mark.parametrize("layers", [True, False])
def test_a_model_entry_or_section_of_the_wrong_shape_is_refused_in_one_line(tmp_path, text, says, layers):
    """A bare layer name, a list where a mapping is expected, a number for a section: one line
    naming the entry, also where the layers themselves are not checked (layers=False, as the
    command line reads a run's configuration without Keras)."""
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text), layers=layers)
    assert says in str(err.value)
    assert "\n" not in str(err.value)


def test_a_bare_layer_name_is_a_user_error_of_the_command_line(tmp_path, capsys):
    from edgebnn import cli
    from edgebnn.errors import EXIT_USER_ERROR

    config = write(tmp_path, "model:\n  - QuantDense\n")
    out = tmp_path / "runs" / "a"
    assert cli.main(["run", str(config), "-o", str(out)]) == EXIT_USER_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model[0] is the bare name 'QuantDense'" in err[0], err
    assert not out.exists() and not (tmp_path / "runs").exists()
