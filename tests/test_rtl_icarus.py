"""The units' synthesis paths in a second simulator: Verilator counts an XNOR layer's ones with
``$countones`` and the tools build the adder trees, threshold tables and level lookups written
for synthesis, so Icarus Verilog (which takes the synthesis path) runs each example graph of
tests/graphs.py and must give the emulator's outputs bit for bit."""

import shutil
import subprocess

import numpy as np
import pytest
from graphs import OP_GRAPHS, binary_mlp, calibrated_mlp, edge_inputs

from edgebnn.backends import rtl
from edgebnn.emulate import emulate

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("iverilog") is None, reason="needs Icarus Verilog (apt install iverilog)"),
]


def _pack(codes: np.ndarray, width: int) -> list[str]:
    """Each row of ``codes`` as one hex word, lane ``l`` in bits [l*width +: width]."""
    words = []
    for row in codes:
        word = 0
        for lane, c in enumerate(row):
            word |= (int(c) & ((1 << width) - 1)) << (lane * width)
        words.append(format(word, "x"))
    return words


def icarus_outputs(project, codes: np.ndarray) -> np.ndarray:
    """The design's output codes for the input ``codes`` (N, *input shape), simulated by Icarus
    with input beats withheld and output readiness dropped on a fixed pattern."""
    graph = project.graph
    inp, out = graph.input, graph.output
    t_in, t_out = inp.type, out.type
    beats_in = codes.reshape(-1, inp.shape[-1])
    n_out = len(codes) * int(np.prod(out.shape[:-1]))
    hdl = project.hdl_dir
    (hdl / "tb_in.hex").write_text("\n".join(_pack(beats_in, t_in.width)) + "\n")
    in_bits, out_bits = inp.shape[-1] * t_in.width, out.shape[-1] * t_out.width
    (hdl / "tb.v").write_text(f"""
module tb;
  reg clk = 0, rst = 1;
  reg [{in_bits - 1}:0] mem [0:{len(beats_in) - 1}];
  reg [{in_bits - 1}:0] data;
  reg valid = 0, out_ready = 0;
  wire ready, out_valid;
  wire [{out_bits - 1}:0] out_data;
  integer sent = 0, got = 0, cycle = 0;
  {project.top} dut(.clk(clk), .rst(rst), .s_axis_tdata(data), .s_axis_tvalid(valid), .s_axis_tready(ready),
    .m_axis_tdata(out_data), .m_axis_tvalid(out_valid), .m_axis_tready(out_ready));
  always #5 clk = !clk;
  initial begin
    $readmemh("tb_in.hex", mem);
    repeat (3) @(posedge clk);
    rst <= 0;
  end
  always @(posedge clk) if (!rst) begin
    cycle = cycle + 1;
    if (valid && ready) sent = sent + 1;
    if (out_valid && out_ready) begin
      $display("%h", out_data);
      got = got + 1;
      if (got == {n_out}) $finish;
    end
    if (!valid || ready) begin
      valid <= sent < {len(beats_in)} && (cycle % 7) != 3;
      data <= mem[sent < {len(beats_in)} ? sent : 0];
    end
    out_ready <= (cycle % 5) != 1;
  end
endmodule
""")
    sources = [str(p.relative_to(hdl)) for p in project.sources] + ["tb.v"]
    subprocess.run(["iverilog", "-g2005", "-o", "tb.vvp", "-s", "tb", *sources], cwd=hdl, check=True, timeout=300)
    done = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=hdl, capture_output=True, text=True, check=True, timeout=900)
    words = [int(line, 16) for line in done.stdout.split() if all(ch in "0123456789abcdef" for ch in line)]
    assert len(words) == n_out
    mask = (1 << t_out.width) - 1
    got = np.array([[(w >> (lane * t_out.width)) & mask for lane in range(out.shape[-1])] for w in words], dtype=np.int64)
    if t_out.signed:
        got = np.where(got >= 1 << (t_out.width - 1), got - (1 << t_out.width), got)
    return got.reshape(len(codes), *out.shape)


@pytest.mark.parametrize("name", ["every_op", "depthwise", "lattice", "affine", "ops_1d", "dag"])
def test_every_op_graph_in_icarus(tmp_path, name):
    graph = OP_GRAPHS[name]()
    project = rtl.export(graph, tmp_path / "p")
    x = edge_inputs(graph, n=24, seed=2)
    got = icarus_outputs(project, project._codes(x))
    assert np.array_equal(graph.output.type.from_codes(got), emulate(graph, x))


@pytest.mark.parametrize(
    "graph, folding",
    [
        # multi-bit weights with a bias, then k-level thresholds fused into each MVAU
        (lambda: calibrated_mlp(), None),
        # binary weights on ternary activations (-1, 0, +1: XNOR with a mask of the zeros; add/subtract/skip)
        (
            lambda: calibrated_mlp(
                weight_type="int<2>", weight_codes=(-1, 1), act_type="int<2>", act_thresholds=2, act_levels=(-1, 0, 1)
            ),
            None,
        ),
        # binary layers, one folded and one unfolded (its weights a constant)
        (lambda: binary_mlp(sizes=(16, 12, 8, 4), out_levels="fixed<4,2>"), {"dense0": (4, 4), "dense1": (1, 12)}),
        # binary weights on signed 8-bit inputs: the add/subtract trees synthesis builds
        (lambda: binary_mlp(input_type="fixed<8,3,RND_CONV,SAT>", seed=4), {"dense0": (3, 4)}),
    ],
)
def test_fused_units_in_icarus(tmp_path, graph, folding):
    graph = graph()
    project = rtl.export(graph, tmp_path / "p", folding=folding)
    assert project.meta["fused"]  # the thresholds are built into the MVAUs
    x = edge_inputs(graph, n=60, seed=3)
    got = icarus_outputs(project, project._codes(x))
    assert np.array_equal(graph.output.type.from_codes(got), emulate(graph, x))
