"""Board profiles: the shipped files, lookup by name or path, and refusal of malformed files."""

import ast
import pathlib
import re

import pytest
import yaml

from edgebnn.backends.rtl.synth import nextpnr_device_args
from edgebnn.boards import DSP_TYPES, Board, BoardError, list_boards, load_board, require_hls4ml
from edgebnn.errors import EdgebnnError
from edgebnn.resources import boards_dir

SHIPPED = sorted(p for p in boards_dir().glob("*.yaml"))

VALID = {
    "name": "my-board",
    "part": "xc7z010clg400-1",
    "family": "zynq-7000",
    "lut": 17600,
    "ff": 35200,
    "dsp": 80,
    "dsp_type": "DSP48E1",
    "bram18": 120,
    "uram": 0,
    "clock_period_ns": 10,
    "source": "DS190 device table",
}


def write(folder: pathlib.Path, data, name="my-board.yaml") -> pathlib.Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_pynq_z2_numbers():
    b = load_board("pynq-z2")
    assert isinstance(b, Board)
    assert (b.part, b.lut, b.ff, b.dsp, b.dsp_type, b.bram18, b.uram, b.clock_period_ns) == (
        "xc7z020clg400-1",
        53200,
        106400,
        220,
        "DSP48E1",
        280,
        0,
        10.0,
    )
    assert b.dsp_ports == (25, 18)
    assert b.resources() == {"lut": 53200, "ff": 106400, "dsp": 220, "bram18": 280, "uram": 0}


def test_zcu104_numbers():
    b = load_board("zcu104")
    assert (b.part, b.lut, b.ff, b.dsp, b.dsp_type, b.bram18, b.uram) == (
        "xczu7ev-ffvc1156-2-e",
        230400,
        460800,
        1728,
        "DSP48E2",
        624,
        96,
    )
    assert b.dsp_ports == (27, 18)


def test_shipped_boards_are_the_ones_later_issues_want():
    names = {p.stem for p in SHIPPED}
    assert names >= {
        "pynq-z2",
        "zcu104",
        "pynq-z1",
        "arty-a7-100t",
        "zc706",
        "ultra96-v2",
        "zcu102",
        "kv260",
        "alveo-u50",
        "alveo-u200",
        "alveo-u250",
        "alveo-u280",
        "vcu118",
        "icebreaker",
        "ulx3s-85f",
    }
    assert (boards_dir() / "__init__.py").is_file()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_file_is_valid(path):
    b = load_board(path)
    assert b.name == path.stem
    assert b == load_board(path.stem) == load_board(str(path))
    assert b.source.strip()
    assert b.dsp_type in DSP_TYPES
    assert min(b.lut, b.dsp, b.bram18) > 0 and b.uram >= 0
    raw = yaml.safe_load(path.read_text())
    fields = {"name", "part", "family", "lut", "ff", "dsp", "dsp_type", "bram18", "uram", "clock_period_ns", "source", "flow"}
    if b.flow == "xilinx":
        # datasheet structure: a 36 Kb block is two BRAM18, and 7-series / UltraScale+ logic has
        # two flip-flops per LUT
        assert b.part.startswith("xc") and b.hls4ml
        assert b.bram18 % 2 == 0 and b.bram_kbit == 18
        assert b.ff == 2 * b.lut
        assert set(raw) == fields
    else:
        # iCE40 and ECP5 logic: one flip-flop per 4-input LUT; the part names nextpnr's device
        assert b.ff == b.lut and not b.hls4ml and b.uram == 0
        assert set(raw) == fields | {"bram_kbit"}
        assert nextpnr_device_args(b.flow, b.part)[0].startswith("--")


def test_list_boards_is_every_file_sorted():
    boards = list_boards()
    assert [b.name for b in boards] == sorted(p.stem for p in SHIPPED)
    assert all(isinstance(b, Board) for b in boards)


def test_unknown_name_lists_the_known_names():
    with pytest.raises(BoardError) as err:
        load_board("pynq-z3")
    msg = str(err.value)
    assert "'pynq-z3'" in msg
    for p in SHIPPED:
        assert p.stem in msg
    assert "\n" not in msg


def test_board_error_is_a_value_error_and_a_user_error():
    assert issubclass(BoardError, ValueError) and issubclass(BoardError, EdgebnnError)


def test_load_from_path_and_board_passthrough(tmp_path):
    path = write(tmp_path, VALID)
    b = load_board(path)
    assert (b.name, b.lut, b.clock_period_ns, b.path) == ("my-board", 17600, 10.0, str(path))
    assert load_board(str(path)) == b
    assert load_board(b) is b


def test_missing_path(tmp_path):
    with pytest.raises(BoardError, match="does not exist"):
        load_board(tmp_path / "nothere.yaml")


def test_user_folder_adds_a_board(tmp_path, monkeypatch):
    write(tmp_path, VALID)
    monkeypatch.setenv("EDGEBNN_BOARD_PATH", str(tmp_path))
    assert load_board("my-board").lut == 17600
    assert "my-board" in [b.name for b in list_boards()]
    assert load_board("pynq-z2").lut == 53200


def test_user_folder_can_replace_a_shipped_board(tmp_path, monkeypatch):
    write(tmp_path, {**VALID, "name": "pynq-z2", "lut": 1}, name="pynq-z2.yaml")
    monkeypatch.setenv("EDGEBNN_BOARD_PATH", str(tmp_path))
    assert load_board("pynq-z2").lut == 1


def test_name_must_match_the_file_name(tmp_path, monkeypatch):
    write(tmp_path, {**VALID, "name": "other"})
    monkeypatch.setenv("EDGEBNN_BOARD_PATH", str(tmp_path))
    with pytest.raises(BoardError) as err:
        load_board("my-board")
    assert "my-board.yaml" in str(err.value) and "'name'" in str(err.value)


def _without(key):
    return {k: v for k, v in VALID.items() if k != key}


MALFORMED = [
    ("missing", _without("lut"), "lut", "missing field"),
    ("missing-source", _without("source"), "source", "missing field"),
    ("string-count", {**VALID, "dsp": "many"}, "dsp", "integer"),
    ("float-count", {**VALID, "bram18": 140.5}, "bram18", "integer"),
    ("bool-count", {**VALID, "uram": True}, "uram", "integer"),
    ("negative", {**VALID, "ff": -1}, "ff", "negative"),
    ("unknown-key", {**VALID, "luts": 5}, "luts", "unknown field"),
    ("empty-name", {**VALID, "name": ""}, "name", "string"),
    ("number-part", {**VALID, "part": 7020}, "part", "string"),
    ("zero-clock", {**VALID, "clock_period_ns": 0}, "clock_period_ns", "positive"),
    ("text-clock", {**VALID, "clock_period_ns": "10ns"}, "clock_period_ns", "positive"),
    ("dsp-type", {**VALID, "dsp_type": "DSP58"}, "dsp_type", "DSP48E1"),
    ("flow", {**VALID, "flow": "gowin"}, "flow", "ice40"),
    ("bram-kbit", {**VALID, "bram_kbit": 0}, "bram_kbit", "positive"),
]


@pytest.mark.parametrize("data,field,words", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_file_names_file_and_field(tmp_path, data, field, words):
    path = write(tmp_path, data)
    with pytest.raises(BoardError) as err:
        load_board(path)
    msg = str(err.value)
    assert str(path) in msg
    assert f"'{field}'" in msg
    assert words in msg
    assert "\n" not in msg


@pytest.mark.parametrize("text", ["- a\n- b\n", "lut: [1, 2\n", ""], ids=["list", "bad-yaml", "empty"])
def test_not_a_mapping_is_refused_naming_the_file(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(BoardError) as err:
        load_board(path)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_malformed_file_in_the_search_path_stops_list_boards(tmp_path, monkeypatch):
    write(tmp_path, {**VALID, "lut": -5})
    monkeypatch.setenv("EDGEBNN_BOARD_PATH", str(tmp_path))
    with pytest.raises(BoardError, match="'lut'"):
        list_boards()


def test_board_module_imports_no_tensorflow_or_hls4ml():
    import edgebnn.boards as mod

    tree = ast.parse(pathlib.Path(mod.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {n for n in names if n.split(".")[0] in ("tensorflow", "keras", "hls4ml")}


def test_at_least_twelve_boards_and_the_cli_lists_them(capsys):
    from edgebnn.cli import main

    assert len(SHIPPED) >= 12
    assert main(["boards"]) == 0
    out = capsys.readouterr().out
    for p in SHIPPED:
        assert p.stem in out
    assert "xc7z007sclg400-1" in out and "220" in out
    assert re.search(r"^icebreaker\s+iCE40UP5K-SG48I\s+ice40\s+5,280\s+5,280\s+8\s+30x4K\s", out, re.M)
    assert re.search(r"^ulx3s-85f\s+LFE5U-85F-6BG381C\s+ecp5\s+83,640\s+83,640\s+156\s+208x18K\s", out, re.M)
    assert re.search(r"^pynq-z2\s+xc7z020clg400-1\s+xilinx\s+53,200\s", out, re.M)


def test_open_flow_boards_and_the_default_flow(tmp_path):
    ice, ecp = load_board("icebreaker"), load_board("ulx3s-85f")
    assert (ice.flow, ice.lut, ice.ff, ice.dsp, ice.bram18, ice.bram_kbit) == ("ice40", 5280, 5280, 8, 30, 4)
    assert (ecp.flow, ecp.lut, ecp.ff, ecp.dsp, ecp.bram18, ecp.bram_kbit) == ("ecp5", 83640, 83640, 156, 208, 18)
    assert nextpnr_device_args("ice40", ice.part) == ["--up5k", "--package", "sg48"]
    assert nextpnr_device_args("ecp5", ecp.part) == ["--85k", "--package", "CABGA381", "--speed", "6"]
    # a profile without the optional fields is a Xilinx board of 18 Kb block RAMs
    b = load_board(write(tmp_path, VALID))
    assert (b.flow, b.bram_kbit, b.hls4ml) == ("xilinx", 18, True)
    assert require_hls4ml(b) is b


@pytest.mark.parametrize("name", ["icebreaker", "ulx3s-85f"])
def test_hls4ml_refuses_an_open_flow_board_in_one_sentence(name, tmp_path):
    from graphs import binary_mlp

    from edgebnn.estimate import estimate, fit

    graph = binary_mlp(sizes=(4, 3, 2), seed=3)
    for call in (lambda: estimate(graph, name), lambda: fit(graph, name)):
        with pytest.raises(BoardError) as err:
            call()
        msg = str(err.value)
        assert f"'{name}'" in msg and "hls4ml cannot build for" in msg and "backend: rtl" in msg and "\n" not in msg
    # the every-board estimate skips them: they are the RTL backend's
    from edgebnn.cli import main

    path = tmp_path / "g.npz"
    graph.save(path)
    out = tmp_path / "all.json"
    assert main(["estimate", str(path), "--board", "all", "--json", str(out)]) == 0
    import json

    boards = {e["board"]["name"] if isinstance(e["board"], dict) else e["board"] for e in json.loads(out.read_text())}
    assert "pynq-z2" in boards and name not in boards
