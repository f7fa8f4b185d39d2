"""Open synthesis and place-and-route of an RTL project: Yosys, then nextpnr where there is one.

Three flows, one record (:class:`SynthRecord`):

- ``xilinx``: Yosys ``synth_xilinx -flatten -abc9`` out of context (no I/O or clock buffers),
  family ``xc7`` for 7-series parts and ``xcu`` / ``xcup`` for UltraScale(+). Counts only: Yosys
  does not place, so ``fmax_mhz`` is None and the capacity comes from the board profile.
- ``ice40``: ``synth_ice40`` then ``nextpnr-ice40`` (``--up5k --package sg48`` from the part
  ``iCE40UP5K-SG48I``), utilization and Fmax from nextpnr's JSON report.
- ``ecp5``: ``synth_ecp5`` then ``nextpnr-ecp5`` (``--85k --package CABGA381 --speed 6`` from
  ``LFE5U-85F-6BG381C``), likewise.

LUT, FF, CARRY, DSP and block RAM are Yosys's cell counts after technology mapping, in the
device's own units (6-input LUTs and BRAM18 halves on Xilinx; LUT4s and 4 Kb or 18 Kb EBR blocks
on iCE40 and ECP5); place and route adds the logic cells it used and the Fmax it reached. The
scripts, the tools' logs and raw reports and ``record.json`` are written into
``<project>/synth/<flow>/``; ``record.json`` is written last, so a folder without one is a run
that did not finish.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import shutil
import time
from typing import Any

from ... import progress
from ...boards import FLOWS
from ...errors import EdgebnnError
from . import tools

_PNR_TOOL = {"ice40": "nextpnr-ice40", "ecp5": "nextpnr-ecp5"}
DEFAULT_TIMEOUT_S = 3600.0


class SynthError(EdgebnnError):
    """A synthesis request edgebnn cannot carry out (unknown flow or part, no sources, no top)."""


@dataclasses.dataclass(frozen=True)
class SynthRecord:
    """What one flow made of a design; the same fields for every flow.

    ``lut``, ``ff``, ``carry``, ``dsp``, ``bram`` are Yosys's counts (``bram`` in the device's
    block-RAM units: BRAM18 on Xilinx, where a RAMB36 is two); ``fmax_mhz`` is nextpnr's
    (None where the flow does not place and route, or the design has no clocked path);
    ``capacity`` the device's totals of the same names (None where unknown); ``logic_cells``
    (used, available) the placed logic cells (ICESTORM_LC, TRELLIS_COMB) or None; ``tools`` each
    tool's version line; ``io_shell_ff`` the flip-flops of the I/O shell the design was placed in
    (counted in ``ff`` and the logic cells; None without one, see :func:`io_shell`).
    """

    flow: str
    part: str
    top: str
    lut: int
    ff: int
    carry: int
    dsp: int
    bram: int
    fmax_mhz: float | None
    clock_mhz: float | None
    capacity: dict[str, int] | None
    logic_cells: tuple[int, int] | None
    tools: dict[str, str]
    cells: dict[str, int]
    seconds: float
    io_shell_ff: int | None = None

    def utilization(self) -> dict[str, float] | None:
        """Used / available of ``lut``, ``ff``, ``dsp``, ``bram`` (None without a capacity)."""
        if self.capacity is None:
            return None
        return {k: getattr(self, k) / v for k, v in self.capacity.items() if v}

    @property
    def timing_met(self) -> bool | None:
        if self.fmax_mhz is None or self.clock_mhz is None:
            return None
        return self.fmax_mhz >= self.clock_mhz

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["logic_cells"] = None if self.logic_cells is None else list(self.logic_cells)
        return d

    def __str__(self) -> str:
        used = f"{self.lut:,} LUT, {self.ff:,} FF, {self.carry:,} CARRY, {self.dsp} DSP, {self.bram} BRAM"
        placed = "" if self.logic_cells is None else f", {self.logic_cells[0]:,} of {self.logic_cells[1]:,} logic cells"
        fmax = "" if self.fmax_mhz is None else f", Fmax {self.fmax_mhz:.1f} MHz"
        return f"{self.flow} {self.part}: {used}{placed}{fmax}"


# ---------------------------------------------------------------------- parts
def xilinx_family(part: str, family: str = "") -> str:
    """Yosys's ``synth_xilinx -family`` for a Xilinx part (and the board's family name)."""
    p, f = part.lower(), family.lower()
    if "ultrascale+" in f or "ultrascale plus" in f or re.match(r"xc(zu|k26|u\d|vu\d+p|ku\d+p|au|vp)", p):
        return "xcup"
    if "ultrascale" in f or re.match(r"xc(vu|ku)\d", p):
        return "xcu"
    if re.match(r"xc7", p):
        return "xc7"
    raise SynthError(
        f"part '{part}' is not a 7-series or UltraScale(+) Xilinx part; the xilinx flow knows xc7*, xcku*, xcvu*, xczu*, xcu*"
    )


_ICE40 = re.compile(r"^ice40(?P<dev>up5k|up3k|u4k|hx8k|hx4k|hx1k|lp8k|lp4k|lp1k|lp384)-(?P<pkg>[a-z]+\d+)[ic]?$")
_ECP5 = re.compile(r"^lfe5(?P<kind>u|um|um5g)-(?P<size>12|25|45|85)f-(?P<speed>\d)(?P<pkg>[a-z]+)(?P<pins>\d+)[ci]?$")
_ECP5_PACKAGES = {"bg": "CABGA", "mg": "CSFBGA", "tg": "TQFP"}


def nextpnr_device_args(flow: str, part: str) -> list[str]:
    """nextpnr's device, package (and speed) options for ``part``."""
    p = part.lower()
    if flow == "ice40":
        m = _ICE40.match(p)
        if m:
            return [f"--{m['dev']}", "--package", m["pkg"]]
        raise SynthError(f"part '{part}' is not an iCE40 part name like 'iCE40UP5K-SG48I'; fix the board's 'part' field")
    m = _ECP5.match(p)
    if m and m["pkg"] in _ECP5_PACKAGES:
        device = f"--{m['size']}k" if m["kind"] == "u" else f"--{m['kind']}-{m['size']}k"
        return [device, "--package", f"{_ECP5_PACKAGES[m['pkg']]}{m['pins']}", "--speed", m["speed"]]
    raise SynthError(f"part '{part}' is not an ECP5 part name like 'LFE5U-85F-6BG381C'; fix the board's 'part' field")


# ---------------------------------------------------------------------- parsing
# Xilinx cells counted as LUTs: logic LUTs, and LUTs used as shift registers or distributed RAM
# (as Vivado's utilization report counts them)
_XILINX_LUTRAM = {
    "RAM32X1S": 1, "RAM32X1D": 2, "RAM64X1S": 1, "RAM64X1D": 2, "RAM128X1S": 2, "RAM128X1D": 4,
    "RAM256X1S": 4, "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8, "SRL16E": 1, "SRLC32E": 1,
}  # fmt: skip
_BRAM18_UNITS = {"RAMB18E1": 1, "RAMB36E1": 2, "RAMB18E2": 1, "RAMB36E2": 2, "FIFO18E1": 1, "FIFO36E1": 2}


def cell_counts(stat: dict) -> dict[str, int]:
    """Cell type -> count of the whole design from Yosys's ``stat -json`` output."""
    design = stat.get("design")
    if design is None:  # one module: no "design" total
        modules = list(stat.get("modules", {}).values())
        if len(modules) != 1:
            raise SynthError("Yosys's stat report has no design total; synthesize with -flatten")
        design = modules[0]
    cells = design.get("num_cells_by_type")
    if cells is None:
        raise SynthError("Yosys's stat report has no 'num_cells_by_type'; this Yosys writes a report edgebnn cannot read")
    return {name.lstrip("\\$"): int(n) for name, n in cells.items()}


def resources(flow: str, cells: dict[str, int]) -> dict[str, int]:
    """``lut``, ``ff``, ``carry``, ``dsp``, ``bram`` from the mapped cell counts of ``flow``."""
    n = lambda pred: sum(v for k, v in cells.items() if pred(k))
    if flow == "xilinx":
        return {
            "lut": n(lambda k: re.fullmatch(r"LUT[1-6]", k)) + sum(cells.get(k, 0) * w for k, w in _XILINX_LUTRAM.items()),
            "ff": n(lambda k: re.fullmatch(r"FD[RSCP]E(_1)?|LDCE|LDPE", k)),
            "carry": n(lambda k: k in ("CARRY4", "CARRY8")),
            "dsp": n(lambda k: k.startswith("DSP48")),
            "bram": sum(cells.get(k, 0) * w for k, w in _BRAM18_UNITS.items()),
        }
    if flow == "ice40":
        return {
            "lut": cells.get("SB_LUT4", 0),
            "ff": n(lambda k: k.startswith("SB_DFF")),
            "carry": cells.get("SB_CARRY", 0),
            "dsp": cells.get("SB_MAC16", 0),
            "bram": n(lambda k: k.startswith("SB_RAM40_4K")),
        }
    if flow == "ecp5":
        return {
            # a CCU2C carry cell holds two LUT4s, a DPR16X4 distributed RAM two slices' worth
            "lut": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 2 * cells.get("TRELLIS_DPR16X4", 0),
            "ff": n(lambda k: k in ("TRELLIS_FF",) or k.startswith("FD1")),
            "carry": cells.get("CCU2C", 0),
            "dsp": cells.get("MULT18X18D", 0),
            "bram": cells.get("DP16KD", 0) + cells.get("PDPW16KD", 0),
        }
    raise SynthError(f"unknown flow {flow!r}; use one of {', '.join(FLOWS)}")


_PNR_CELLS = {
    "ice40": {"logic": "ICESTORM_LC", "lut": "ICESTORM_LC", "ff": "ICESTORM_LC", "dsp": "ICESTORM_DSP", "bram": "ICESTORM_RAM"},
    "ecp5": {"logic": "TRELLIS_COMB", "lut": "TRELLIS_COMB", "ff": "TRELLIS_FF", "dsp": "MULT18X18D", "bram": "DP16KD"},
}


def pnr_report(flow: str, report: dict) -> tuple[float | None, dict[str, int], tuple[int, int]]:
    """(Fmax in MHz of the slowest clock or None, the device's capacity, (used, available)
    logic cells) from nextpnr's ``--report`` JSON."""
    names = _PNR_CELLS[flow]
    util = report.get("utilization", {})
    missing = [cell for cell in set(names.values()) if cell not in util]
    if missing:
        raise SynthError(
            f"nextpnr's report has no utilization of {', '.join(sorted(missing))}; this nextpnr is not one edgebnn reads"
        )
    capacity = {key: int(util[cell]["available"]) for key, cell in names.items() if key != "logic"}
    logic = (int(util[names["logic"]]["used"]), int(util[names["logic"]]["available"]))
    achieved = [clock["achieved"] for clock in report.get("fmax", {}).values() if "achieved" in clock]
    return (min(achieved) if achieved else None), capacity, logic


# ---------------------------------------------------------------------- the I/O shell
SHELL = "edgebnn_io_shell"
SHELL_FILE = "io_shell.v"
SHELL_PINS = 8  # data pins each way of the shell
SHELL_ABOVE = 32  # a top with more port bits than this is placed inside the shell


def top_ports(text: str, top: str) -> list[tuple[str, str, int]]:
    """(direction, name, width) of each port of module ``top`` in Verilog ``text`` (ANSI
    declarations; what an `ifdef leaves out of synthesis is skipped)."""
    m = re.search(rf"^\s*module\s+{re.escape(top)}\s*(#\s*\(.*?\)\s*)?\((.*?)\);", text, re.S | re.M)
    if m is None:
        raise SynthError(f"module '{top}' has no ANSI port list edgebnn can read; give a top with one")
    body = re.sub(r"`ifdef.*?`endif", "", m.group(2), flags=re.S)
    ports, direction, width = [], None, 1
    for item in re.sub(r"//[^\n]*", "", body).split(","):
        words = item.strip()
        if not words:
            continue
        d = re.match(r"(input|output|inout)\s*(wire|reg)?\s*(signed)?\s*(\[\s*(\d+)\s*:\s*(\d+)\s*\])?\s*(\w+)$", words)
        if d is not None:
            direction = d.group(1)
            width = abs(int(d.group(5)) - int(d.group(6))) + 1 if d.group(4) else 1
            ports.append((direction, d.group(7), width))
        elif re.fullmatch(r"\w+", words) and direction is not None:
            ports.append((direction, words, width))  # "input a, b": b as a
        else:
            raise SynthError(f"port '{words}' of module '{top}' is not a plain ANSI declaration edgebnn can read")
    return ports


def io_shell(top: str, ports: list[tuple[str, str, int]]) -> tuple[str, int]:
    """A top around ``top`` whose wide ports reach few pins, and its flip-flops: each input
    wider than one bit is a shift register loaded SHELL_PINS bits a cycle from the pins (every
    bit free, so synthesis cannot simplify the design behind it), and the outputs wider than
    one bit are folded into SHELL_PINS registered pins by XOR (every bit observed, so none is
    optimized away). A device has far fewer pins than a streaming design has port bits."""
    lines = [
        f"// edgebnn's I/O shell around {top} for place and route: wide ports reach {SHELL_PINS} pins each way",
        f"module {SHELL} (",
        "  input clk,",
        f"  input [{SHELL_PINS - 1}:0] pins_in,",
        f"  output reg [{SHELL_PINS - 1}:0] pins_out" + ("," if any(w == 1 for _, n, w in ports if n != "clk") else ""),
    ]
    single = [(d, n) for d, n, w in ports if w == 1 and n != "clk"]
    lines += [f"  {d} {n}{',' if i < len(single) - 1 else ''}" for i, (d, n) in enumerate(single)]
    lines.append(");")
    ff, body, outs = SHELL_PINS, [], []
    for d, n, w in ports:
        if w == 1 or n == "clk":
            continue
        body.append(f"  reg [{w - 1}:0] {n};" if d == "input" else f"  wire [{w - 1}:0] {n};")
        if d == "input":
            ff += w
            shift = f"{{{n}[{w - SHELL_PINS - 1}:0], pins_in}}" if w > SHELL_PINS else f"pins_in[{w - 1}:0]"
            body.append(f"  always @(posedge clk) {n} <= {shift};")
        else:
            outs.append((n, w))
    folds = []
    for bit in range(SHELL_PINS):
        taps = [f"{n}[{j}]" for n, w in outs for j in range(bit, w, SHELL_PINS)]
        folds.append(" ^ ".join(taps) if taps else "1'b0")
    body.append("  always @(posedge clk) pins_out <= {" + ", ".join(reversed(folds)) + "};")
    conns = ", ".join(f".{n}({n})" for _, n, _ in ports)
    body.append(f"  {top} design ({conns});")
    return "\n".join([*lines, *body, "endmodule", ""]), ff


# ---------------------------------------------------------------------- the flows
def _sources_and_top(project, top):
    path = pathlib.Path(getattr(project, "path", project))
    if not path.is_dir():
        raise SynthError(f"'{path}' is not a folder; give an RTL project or the folder of its Verilog sources")
    sources = getattr(project, "sources", None)
    if sources is None:
        sources = sorted(p for p in path.rglob("*") if p.suffix in (".v", ".sv") and "synth" not in p.relative_to(path).parts)
    rel = []
    for src in sources:
        src = pathlib.Path(src)
        full = src if src.is_absolute() else path / src
        try:
            rel.append(full.resolve().relative_to(path.resolve()).as_posix())
        except ValueError:
            raise SynthError(f"source '{src}' lies outside the project folder '{path}'; the tools see only that folder") from None
    if not rel:
        raise SynthError(f"'{path}' holds no Verilog source (.v, .sv); give the folder of an exported RTL project")
    top = top or getattr(project, "top", None)
    if top is None:
        modules = [m for src in rel for m in re.findall(r"^\s*module\s+(\w+)", (path / src).read_text(), re.MULTILINE)]
        if len(modules) != 1:
            raise SynthError(
                f"'{path}' defines {len(modules)} modules ({', '.join(modules)}); say which one is the top with top="
            )
        top = modules[0]
    return path, rel, top


def _board_settings(board, flow, part, clock_mhz):
    capacity = None
    if board is not None:
        from ...boards import load_board

        board = load_board(board)
        flow = flow or board.flow
        part = part or board.part
        clock_mhz = clock_mhz or 1000.0 / board.clock_period_ns
        capacity = {"lut": board.lut, "ff": board.ff, "dsp": board.dsp, "bram": board.bram18}
    if flow not in FLOWS:
        raise SynthError(f"unknown flow {flow!r}; use one of {', '.join(FLOWS)} (or give a board)")
    if not part:
        raise SynthError(f"the {flow} flow needs a part; give part= or a board")
    return board, flow, part, clock_mhz, capacity


def synthesize(
    project,
    board=None,
    *,
    flow: str | None = None,
    part: str | None = None,
    clock_mhz: float | None = None,
    top: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    seed: int = 1,
    log=progress.log,
) -> SynthRecord:
    """Synthesize (and place and route, on iCE40 and ECP5) ``project`` for ``board``.

    Args:
        project: an RTL project (``path``, ``top``, ``sources``) or the folder of Verilog sources.
        board: a board profile or name; gives the flow, part, clock and (Xilinx) capacity.
        flow, part, clock_mhz: given without a board, or to override the board's.
        top: the top module (the project's, or the one module of the folder). On iCE40 and
            ECP5 a top with more than SHELL_ABOVE port bits is placed inside :func:`io_shell`.
        timeout: seconds for each tool run before it is stopped.
        seed: nextpnr's placement seed (the same seed gives the same placement).
        log: where the progress lines go.
    """
    board, flow, part, clock_mhz, capacity = _board_settings(board, flow, part, clock_mhz)
    path, sources, top = _sources_and_top(project, top)
    family = xilinx_family(part, getattr(board, "family", "")) if flow == "xilinx" else None
    pnr_args = nextpnr_device_args(flow, part) if flow != "xilinx" else None
    yosys = tools.find_tool("yosys")  # every tool is found before any runs
    pnr = tools.find_tool(_PNR_TOOL[flow]) if flow != "xilinx" else None

    out = path / "synth" / flow
    rel = f"synth/{flow}"
    shell = None
    if pnr is not None:
        text = "\n".join((path / src).read_text() for src in sources)
        ports = top_ports(text, top)
        if sum(w for _, _, w in ports) > SHELL_ABOVE:
            shell = io_shell(top, ports)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    start = time.monotonic()
    synth_top = top
    if shell is not None:
        (out / SHELL_FILE).write_text(shell[0])
        sources, synth_top = [*sources, f"{rel}/{SHELL_FILE}"], SHELL
    reads = [f"read_verilog {'-sv ' if s.endswith('.sv') else ''}{s}" for s in sources]
    if flow == "xilinx":
        synth = f"synth_xilinx -flatten -abc9 -family {family} -noiopad -noclkbuf -top {synth_top}"
    elif flow == "ice40":
        dsp = " -dsp" if pnr_args[0] == "--up5k" else ""  # the UP5K has SB_MAC16 multipliers
        synth = f"synth_ice40 -abc9{dsp} -top {synth_top} -json {rel}/design.json"
    else:
        synth = f"synth_ecp5 -abc9 -top {synth_top} -json {rel}/design.json"
    # A ROM of constants marked rom_style "distributed" is LUT logic on every device (as Vivado
    # builds it); Yosys's memory mappers find no distributed mapping for a registered ROM read
    # ("no valid mapping found for memory"), so such ROMs are given to logic synthesis directly.
    roms = 'setattr -set rom_style "logic" m:* a:rom_style=distributed %i'
    stats = [f"tee -q -o {rel}/stat.json stat -json", f"tee -q -o {rel}/stat.txt stat"]
    script = "\n".join([*reads, f"hierarchy -top {synth_top}", roms, synth, *stats, ""])
    (out / "synth.ys").write_text(script)
    commands = [f"{os.path.basename(yosys.path)} -s {rel}/synth.ys"]
    pnr_cmd = None
    if pnr is not None:
        pnr_cmd = [
            *pnr_args,
            "--json", f"{rel}/design.json",
            "--report", f"{rel}/report.json",
            "--freq", f"{clock_mhz or 12:g}",
            "--seed", str(seed),
            "--timing-allow-fail",  # report the Fmax reached also when it is below the clock asked for
        ]  # fmt: skip
        commands.append(" ".join([os.path.basename(pnr.path), *pnr_cmd]))
    (out / "run.sh").write_text(
        '#!/bin/sh\n# the commands edgebnn ran, from the project folder\nset -e\ncd "$(dirname "$0")/../.."\n'
        + "\n".join(f"{c} > {rel}/{'yosys' if i == 0 else 'nextpnr'}.log" for i, c in enumerate(commands))
        + "\n"
    )
    log(f"synth: yosys {synth.split()[0]} of {top} for {part} ({len(sources)} source{'s' * (len(sources) != 1)})")
    tools.run(yosys, ["-s", f"{rel}/synth.ys"], path, f"{rel}/yosys.log", timeout, _yosys_progress(log))
    cells = cell_counts(json.loads((out / "stat.json").read_text()))
    counts = resources(flow, cells)
    fmax, logic, versions = None, None, {"yosys": yosys.version}
    if pnr is not None:
        log(f"synth: {pnr.name} placing and routing {top} on {part} at {clock_mhz or 12:g} MHz")
        tools.run(pnr, pnr_cmd, path, f"{rel}/nextpnr.log", timeout, _nextpnr_progress(log))
        fmax, capacity, logic = pnr_report(flow, json.loads((out / "report.json").read_text()))
        versions["nextpnr"] = pnr.version
    record = SynthRecord(
        flow=flow,
        part=part,
        top=top,
        **counts,
        fmax_mhz=None if fmax is None else round(float(fmax), 2),
        clock_mhz=None if clock_mhz is None else round(float(clock_mhz), 3),
        capacity=capacity,
        logic_cells=logic,
        tools=versions,
        cells=dict(sorted(cells.items())),
        io_shell_ff=None if shell is None else shell[1],
        seconds=round(time.monotonic() - start, 1),
    )
    tmp = out / "record.json.tmp"
    tmp.write_text(json.dumps(record.to_dict(), indent=2) + "\n")
    os.replace(tmp, out / "record.json")
    log(f"synth: {record} ({record.seconds:g} s)")
    return record


def read_record(project, flow: str) -> SynthRecord | None:
    """The record a finished run of ``flow`` left in the project's ``synth/`` folder, or None."""
    path = pathlib.Path(getattr(project, "path", project)) / "synth" / flow / "record.json"
    if not path.is_file():
        return None
    d = json.loads(path.read_text())
    d["logic_cells"] = None if d["logic_cells"] is None else tuple(d["logic_cells"])
    return SynthRecord(**d)


def _yosys_progress(log):
    def see(line: str) -> None:
        # the steps of the synth_* script ("2.14. Executing ABC9 pass.") at --verbose
        m = re.match(r"^\d+\.\d+\. Executing (.+?)\.?$", line)
        if m:
            log(f"  yosys: {m.group(1)}", at=progress.VERBOSE)

    return see


def _nextpnr_progress(log):
    def see(line: str) -> None:
        if re.match(r"^Info: (Placing|Routing|Running router|Max frequency for clock|Program finished)", line) or line.startswith(
            "ERROR"
        ):
            log(f"  {line[6:] if line.startswith('Info: ') else line}", at=progress.VERBOSE)

    return see
