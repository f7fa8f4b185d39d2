"""The one validated target: choices spelled canonically, every bad option one sentence naming it,
board part and clock taken unless given, and no hls4ml, TensorFlow or Keras imported."""

import subprocess
import sys

import numpy as np
import pytest

from edgebnn.backends.target import BACKENDS, HLS_TOOLS, IO_TYPES, STRATEGIES, Target, TargetError
from edgebnn.boards import load_board


def test_defaults_and_canonical_spelling():
    t = Target(backend="vivado", io_type="IO_STREAM", strategy="resource", reuse_factor=np.int64(4))
    assert (t.backend, t.io_type, t.strategy, t.reuse_factor) == ("Vivado", "io_stream", "Resource", 4)
    assert type(t.reuse_factor) is int
    assert t.tool == "vivado_hls" and t.hls_tool is None  # the Vivado backend is built by Vivado HLS
    assert t.replace(backend="Vitis").tool == "vitis_hls"
    d = Target()
    assert (d.backend, d.io_type, d.strategy, d.reuse_factor, d.tool) == ("Vitis", "io_parallel", "Latency", 1, "vitis_hls")
    assert (d.part, d.clock_period_ns) == (None, None)
    assert Target(hls_tool="Vivado HLS 2019.2").tool == "vivado_hls"
    assert set(HLS_TOOLS) == {"vitis_hls", "vivado_hls"}


def test_board_gives_part_and_clock_unless_given():
    board = load_board("pynq-z2")
    t = Target(board=board)
    assert (t.device_part, t.clock_ns) == (board.part, 10) and (t.part, t.clock_period_ns) == (None, None)
    t = Target(
        board={"name": "x", "part": "xc7z020clg400-1", "clock_period_ns": 5.0}, clock_period_ns=3.3, part="xczu9eg-ffvb1156-2-e"
    )
    assert (t.device_part, t.clock_ns) == ("xczu9eg-ffvb1156-2-e", 3.3)
    zcu104 = load_board("zcu104")
    moved = Target(board=board, clock_period_ns=4).replace(board=zcu104)
    assert (moved.device_part, moved.clock_ns) == (zcu104.part, 4)  # the given clock stays, the part follows the board
    with pytest.raises(TargetError, match="board b has no 'part'"):
        Target(board={"name": "b", "clock_period_ns": 5})
    assert Target(board={"name": "b", "clock_period_ns": 5}, part="xc7a35tcpg236-1").device_part == "xc7a35tcpg236-1"


def test_per_node_reuse_factor():
    t = Target(reuse_factor={"d0": 4})
    assert (t.reuse_factor_of("d0"), t.reuse_factor_of("d1"), t.model_reuse_factor) == (4, 1, 1)
    assert t.to_dict()["reuse_factor"] == {"d0": 4}


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"backend": "Quartus"}, "backend 'Quartus' is not supported; use one of " + ", ".join(BACKENDS)),
        ({"io_type": "stream"}, "io_type 'stream' is not supported; use one of " + ", ".join(IO_TYPES)),
        ({"strategy": 3}, "strategy 3 is not supported; use one of " + ", ".join(STRATEGIES)),
        ({"reuse_factor": 0}, "reuse factor must be an integer >= 1, got 0"),
        ({"reuse_factor": 2.5}, "reuse factor must be an integer >= 1, got 2.5"),
        ({"reuse_factor": True}, "reuse factor must be an integer >= 1, got True"),
        ({"reuse_factor": {"d0": -1}}, "reuse factor of node 'd0' must be an integer >= 1, got -1"),
        ({"clock_period_ns": 0}, "clock_period must be a positive number of ns, got 0"),
        ({"clock_period_ns": float("nan")}, "clock_period must be a positive number of ns"),
        ({"clock_period_ns": "5"}, "clock_period must be a positive number of ns, got '5'"),
        ({"hls_tool": "quartus"}, "unknown hls_tool 'quartus'"),
        ({"part": ""}, "FPGA part must be a non-empty string"),
    ],
)
def test_bad_option_is_one_sentence_naming_it(kwargs, words):
    with pytest.raises(TargetError) as err:
        Target(**kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_target_is_frozen():
    with pytest.raises(AttributeError):
        Target().io_type = "io_stream"


def test_imports_nothing_heavy():
    code = (
        "import sys, edgebnn.backends.target\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'hls4ml')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_board_may_be_given_by_name_as_export_and_estimate_take_it():
    from edgebnn.boards import BoardError, load_board

    by_name = Target(board="pynq-z2", io_type="io_stream")
    assert by_name == Target(board=load_board("pynq-z2"), io_type="io_stream")
    assert (by_name.clock_ns, by_name.device_part) == (10.0, "xc7z020clg400-1")
    with pytest.raises(BoardError, match=r"^unknown board 'pynq-z3' \(did you mean 'pynq-z2'\?\); known boards are .*pynq-z2"):
        Target(board="pynq-z3")
