"""Every graph op's RTL unit against the emulator: each example graph of tests/graphs.py (together
they hold every op) exported as RTL, simulated with Verilator on edge inputs (ties, values out
of range, zeros) and compared node by node, once with the default folding and once folded to
one product per cycle; and an Icarus Verilog run of one design, a second simulator's word."""

import subprocess

import numpy as np
import pytest
from graphs import OP_GRAPHS, binary_mlp, edge_inputs

from edgebnn.backends import rtl
from edgebnn.backends.rtl.folding import resolve
from edgebnn.emulate import emulate

pytestmark = [pytest.mark.rtl, pytest.mark.slow]


def _assert_traced_equal(project, graph, x):
    got = project.trace(x)
    want = emulate(graph, x, return_all=True)
    for node in graph.nodes:  # in graph order: the first node that differs is named
        assert np.array_equal(got[node.name], want[node.name]), f"{graph.name}: node {node.name!r} ({node.op}) differs"


@pytest.mark.parametrize("name", OP_GRAPHS)
def test_every_op_graph_simulates_exactly(tmp_path, name):
    graph = OP_GRAPHS[name]()
    project = rtl.export(graph, tmp_path / "p").compile()
    _assert_traced_equal(project, graph, edge_inputs(graph, n=120))


@pytest.mark.parametrize("name", ["every_op", "depthwise", "ops_1d"])
def test_folded_to_one_product_per_cycle_it_still_simulates_exactly(tmp_path, name):
    graph = OP_GRAPHS[name]()
    folding = {k: (1, 1) for k in resolve(graph, None)}
    project = rtl.export(graph, tmp_path / "p", folding=folding).compile()
    x = edge_inputs(graph, n=40, seed=1)
    _assert_traced_equal(project, graph, x)
    out, _ = project.run_codes(project._codes(x), stall_seed=99)
    assert np.array_equal(graph.output.type.from_codes(out), emulate(graph, x))


def test_icarus_agrees_with_verilator(tmp_path):
    """The design's Verilog is plain enough for a second simulator: Icarus runs a testbench that
    streams hex input beats and prints the output beats, which equal Verilator's and the emulator's."""
    graph = binary_mlp(sizes=(8, 6, 4), out_levels="fixed<4,2>")
    project = rtl.export(graph, tmp_path / "p", folding={"dense0": (2, 4), "dense1": (2, 3)})
    x = edge_inputs(graph, n=40, seed=4)
    codes = project._codes(x)
    t_in, t_out = graph.input.type, graph.output.type
    words = []
    for row in codes:
        word = 0
        for lane, c in enumerate(row):
            word |= (int(c) & ((1 << t_in.width) - 1)) << (lane * t_in.width)
        words.append(format(word, "x"))
    hdl = project.hdl_dir
    (hdl / "tb_in.hex").write_text("\n".join(words) + "\n")
    n, in_bits = len(codes), graph.input.shape[-1] * t_in.width
    out_bits = graph.output.shape[-1] * t_out.width
    (hdl / "tb.v").write_text(f"""
module tb;
  reg clk = 0, rst = 1;
  reg [{in_bits - 1}:0] mem [0:{n - 1}];
  reg [{in_bits - 1}:0] data;
  reg valid = 0;
  wire ready, out_valid;
  wire [{out_bits - 1}:0] out_data;
  integer sent = 0, got = 0;
  {project.top} dut(.clk(clk), .rst(rst), .s_axis_tdata(data), .s_axis_tvalid(valid), .s_axis_tready(ready),
    .m_axis_tdata(out_data), .m_axis_tvalid(out_valid), .m_axis_tready(1'b1));
  always #5 clk = !clk;
  initial begin
    $readmemh("tb_in.hex", mem);
    repeat (3) @(posedge clk);
    rst <= 0;
  end
  always @(posedge clk) if (!rst) begin
    if (valid && ready) sent = sent + 1;
    if (out_valid) begin
      $display("%h", out_data);
      got = got + 1;
      if (got == {n}) $finish;
    end
    valid <= sent < {n};
    data <= mem[sent < {n} ? sent : 0];
  end
endmodule
""")
    sources = [str(p.relative_to(hdl)) for p in project.sources] + ["tb.v"]
    subprocess.run(["iverilog", "-g2005", "-o", "tb.vvp", "-s", "tb", *sources], cwd=hdl, check=True, timeout=120)
    done = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=hdl, capture_output=True, text=True, check=True, timeout=300)
    beats = [int(line, 16) for line in done.stdout.split() if all(ch in "0123456789abcdef" for ch in line)]
    assert len(beats) == n
    got = np.array(
        [[(b >> (lane * t_out.width)) & ((1 << t_out.width) - 1) for lane in range(graph.output.shape[-1])] for b in beats]
    )
    got = np.where(got >= 1 << (t_out.width - 1), got - (1 << t_out.width), got) if t_out.signed else got
    assert np.array_equal(t_out.from_codes(got), emulate(graph, x))
    assert np.array_equal(t_out.from_codes(got), project.predict(x))
