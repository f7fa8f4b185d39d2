"""FPGA board profiles: what a device offers, read from one small YAML file per board.

The shipped profiles live in the repository's ``boards/`` folder, installed as package data
and found with :func:`edgebnn.resources.boards_dir`. A user adds a board by adding a file
there, by putting it in a folder listed in the ``EDGEBNN_BOARD_PATH`` environment variable
(``os.pathsep`` separated; searched before the shipped folder, so a user's file can replace a
shipped one), or by passing the path of a ``.yaml`` file to :func:`load_board`. A board is
found by its file name without ``.yaml``, which must equal its ``name`` field.

A profile has exactly these fields (counts are whole-device totals, not a board's free share)::

    name: pynq-z2                  # lower-case id, equal to the file name
    part: xc7z020clg400-1          # the Vivado part
    family: zynq-7000              # device family, for the reader
    lut: 53200                     # 6-input LUTs
    ff: 106400                     # flip-flops
    dsp: 220                       # DSP slices
    dsp_type: DSP48E1              # one of DSP_TYPES (sets the multiplier port widths)
    bram18: 280                    # 18 Kb block RAMs (one 36 Kb block = two)
    uram: 0                        # 288 Kb UltraRAMs
    clock_period_ns: 10            # default clock when estimate() is given none
    source: DS190 ...              # where the numbers come from

and may have these (absent, they take the values shown)::

    flow: xilinx                   # the open synthesis flow: xilinx (Yosys counts only), ice40 or
                                   # ecp5 (Yosys and nextpnr); only xilinx boards are hls4ml targets
    bram_kbit: 18                  # the size of one block RAM counted in bram18 (4 on iCE40)

On iCE40 and ECP5 boards ``lut`` counts 4-input LUTs, ``ff`` flip-flops, ``dsp`` the hard
multipliers (SB_MAC16, MULT18X18D) and ``bram18`` the embedded block RAMs of ``bram_kbit`` each.

Anything else, a missing field, a wrong type or a negative count is refused with a
:class:`BoardError` whose one sentence names the file and the field.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

import yaml

from .errors import EdgebnnError, did_you_mean
from .resources import boards_dir

# Signed operand widths (A port, B port) of one multiplier slice: UG479 (DSP48E1, 25x18) and
# UG579 (DSP48E2, 27x18). edgebnn.estimate splits wider products over several slices.
DSP_TYPES = {"DSP48E1": (25, 18), "DSP48E2": (27, 18), "SB_MAC16": (16, 16), "MULT18X18D": (18, 18)}

# the open flows of edgebnn.backends.rtl.synth; hls4ml builds for Xilinx parts only
FLOWS = ("xilinx", "ice40", "ecp5")
HLS4ML_FLOWS = ("xilinx",)

RESOURCES = ("lut", "ff", "dsp", "bram18", "uram")

_STR_FIELDS = ("name", "part", "family", "dsp_type", "source")
_COUNT_FIELDS = RESOURCES
_FIELDS = ("name", "part", "family", "lut", "ff", "dsp", "dsp_type", "bram18", "uram", "clock_period_ns", "source")
_OPTIONAL = {"flow": "xilinx", "bram_kbit": 18}
_ENV_PATH = "EDGEBNN_BOARD_PATH"


class BoardError(EdgebnnError):
    """A board profile that is missing, unknown or malformed."""


@dataclasses.dataclass(frozen=True)
class Board:
    name: str
    part: str
    family: str
    lut: int
    ff: int
    dsp: int
    dsp_type: str
    bram18: int
    uram: int
    clock_period_ns: float
    source: str
    flow: str = "xilinx"
    bram_kbit: int = 18
    path: str = dataclasses.field(default="", compare=False)

    def resources(self) -> dict[str, int]:
        """Available resources by name (``lut``, ``ff``, ``dsp``, ``bram18``, ``uram``)."""
        return {key: getattr(self, key) for key in RESOURCES}

    @property
    def dsp_ports(self) -> tuple[int, int]:
        """Signed operand widths of one DSP multiplier, e.g. (25, 18) for DSP48E1."""
        return DSP_TYPES[self.dsp_type]

    @property
    def hls4ml(self) -> bool:
        """Whether hls4ml can build for this board (a Xilinx part)."""
        return self.flow in HLS4ML_FLOWS


def require_hls4ml(board: Board) -> Board:
    """``board``, or a BoardError when it is an open-flow board hls4ml cannot build for."""
    if not board.hls4ml:
        raise BoardError(
            f"board '{board.name}' ({board.part}) is an {board.flow} board, which hls4ml cannot build for; "
            f"choose a Xilinx board (see `edgebnn boards`) or the RTL backend (export: {{backend: rtl}})"
        )
    return board


def load_board(name_or_path) -> Board:
    """The board called ``name_or_path`` (e.g. ``"pynq-z2"``), or read from a ``.yaml`` path."""
    if isinstance(name_or_path, Board):
        return name_or_path
    if isinstance(name_or_path, os.PathLike) or (
        isinstance(name_or_path, str) and (name_or_path.endswith((".yaml", ".yml")) or os.sep in name_or_path)
    ):
        path = pathlib.Path(name_or_path)
        if not path.is_file():
            raise BoardError(f"board file '{path}' does not exist; pass a board name or the path of a .yaml profile")
        return _read(path)
    if not isinstance(name_or_path, str):
        raise BoardError(f"a board is given by name or by the path of a .yaml file, not {name_or_path!r}")
    files = _board_files()
    if name_or_path not in files:
        known = ", ".join(sorted(files)) or "none"
        raise BoardError(
            f"unknown board '{name_or_path}'{did_you_mean(name_or_path, files)}; known boards are {known} "
            "(or pass the path of a .yaml profile)"
        )
    return _read(files[name_or_path], expect_name=name_or_path)


def list_boards() -> list[Board]:
    """Every board that :func:`load_board` can find by name, sorted by name."""
    return [_read(path, expect_name=name) for name, path in sorted(_board_files().items())]


def _search_dirs() -> list[pathlib.Path]:
    extra = [pathlib.Path(p) for p in os.environ.get(_ENV_PATH, "").split(os.pathsep) if p]
    return extra + [boards_dir()]


def _board_files() -> dict[str, pathlib.Path]:
    """Board name -> file; earlier folders win, so a user's profile can replace a shipped one."""
    files: dict[str, pathlib.Path] = {}
    for folder in _search_dirs():
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                files.setdefault(path.stem, path)
    return files


def _read(path: pathlib.Path, expect_name: str | None = None) -> Board:
    where = f"board file '{path}'"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        detail = str(err).replace("\n", " ")
        raise BoardError(f"{where} cannot be read as YAML ({detail})") from None
    if not isinstance(data, dict):
        raise BoardError(f"{where} must hold a mapping of the fields {', '.join(_FIELDS)}")
    for key in data:
        if key not in _FIELDS and key not in _OPTIONAL:
            raise BoardError(f"{where} has unknown field '{key}'; the fields are {', '.join((*_FIELDS, *_OPTIONAL))}")
    for key in _FIELDS:
        if key not in data:
            raise BoardError(f"{where} is missing field '{key}'")
    for key in _STR_FIELDS:
        value = data[key]
        if not isinstance(value, str) or not value.strip():
            raise BoardError(f"{where}: field '{key}' must be a non-empty string, got {value!r}")
    for key in _COUNT_FIELDS:
        value = data[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise BoardError(f"{where}: field '{key}' must be an integer count, got {value!r}")
        if value < 0:
            raise BoardError(f"{where}: field '{key}' must not be negative, got {value}")
    clock = data["clock_period_ns"]
    if not isinstance(clock, (int, float)) or isinstance(clock, bool) or not clock > 0 or clock == float("inf"):
        raise BoardError(f"{where}: field 'clock_period_ns' must be a positive number, got {clock!r}")
    if data["dsp_type"] not in DSP_TYPES:
        raise BoardError(f"{where}: field 'dsp_type' is {data['dsp_type']!r}; this edgebnn knows {', '.join(DSP_TYPES)}")
    flow = data.get("flow", _OPTIONAL["flow"])
    if flow not in FLOWS:
        raise BoardError(f"{where}: field 'flow' is {flow!r}; use one of {', '.join(FLOWS)}")
    kbit = data.get("bram_kbit", _OPTIONAL["bram_kbit"])
    if not isinstance(kbit, int) or isinstance(kbit, bool) or kbit <= 0:
        raise BoardError(f"{where}: field 'bram_kbit' must be a positive integer (Kb per block RAM), got {kbit!r}")
    if expect_name is not None and data["name"] != expect_name:
        raise BoardError(
            f"{where}: field 'name' is {data['name']!r} but the file is named '{path.name}'; "
            f"make them equal so the board can be found by name"
        )
    values = {key: data[key] for key in _FIELDS}
    values["clock_period_ns"] = float(clock)
    return Board(**values, flow=flow, bram_kbit=kbit, path=str(path))
