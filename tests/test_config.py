import os

import pytest

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
    config = check_config({"model": [{"QuantDense": {"units": 3, "kernel_quantizer": "ste_sgn"}}]})
    with pytest.raises(ConfigError, match=r"model\[0\]\.QuantDense\.kernel_quantizer: unknown quantizer 'ste_sgn'"):
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
