"""The hardware units the op lowerings are built from, each a function writing one Verilog module:

``mvau``     the matrix-vector unit (FINN's MVAU): a weighted sum over one input beat, folded PE x SIMD
``window``   the sliding-window generator: a frame buffer that emits each output position's window
``map_unit`` a per-beat function of one or more input beats (threshold, cast, affine, pooling of a
             window, add, concatenate), registered through a skid buffer
``rebeat``   a stream regrouped into beats of another size (flatten, reshape)
``wrapper``  a node's module as a chain of two units (a convolution: window then MVAU)

A :class:`Unit` is what a lowering returns: its Verilog modules (the node's own last), its ROM
files, and a line on its cycles.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ....fixed import FixedType
from ..hdl import cast_function, ext, hex_word, signed_bits, slit

# ROMs of more bits than this go to block RAM (rom_style "block"), smaller ones to LUTs
BLOCK_ROM_BITS = 4096


@dataclasses.dataclass
class Unit:
    """A node's hardware: ``modules`` (Verilog texts, the node's own module last), ``mems``
    (ROM file name -> its ``$readmemh`` text), ``cycles`` (a line on its cycles per sample) and
    ``interval`` (its cycles per sample when its output is never stalled)."""

    modules: list[str]
    mems: dict[str, str] = dataclasses.field(default_factory=dict)
    cycles: str = ""
    interval: int = 1


def _ports(n_in: int, in_bits: list[int], out_bits: int) -> str:
    ins = "".join(
        f"  input [{b - 1}:0] in{i}_data, input in{i}_valid, output in{i}_ready,\n" for i, b in zip(range(n_in), in_bits)
    )
    return f"  input clk, input rst,\n{ins}  output [{out_bits - 1}:0] out_data, output out_valid, input out_ready"


def _clog2(n: int) -> int:
    return max(1, math.ceil(math.log2(max(n, 2))))


# ------------------------------------------------------------------------------------------ MVAU
def weight_mode(w: np.ndarray, xlo: float, xhi: float, nonzero: bool) -> str:
    """How the MVAU multiplies: ``xnor`` (inputs +-1, never 0, weights +-1: XNOR and popcount),
    ``pm1`` (inputs in {-1, 0, +1}, weights +-1: XNOR and popcount of the nonzero inputs),
    ``addsub`` (weights +-1: an add/subtract tree), ``tern`` (weights in {-1, 0, +1}: add, subtract
    or skip) or ``mul`` (a product that synthesis maps to DSPs)."""
    aw = np.abs(w)
    if w.size and np.all(aw == 1):
        if xlo >= -1 and xhi <= 1:
            return "xnor" if nonzero else "pm1"
        return "addsub"
    if w.size and np.all(aw <= 1):
        return "tern"
    return "mul"


def mvau(
    name: str,
    src_type: FixedType,
    out_type: FixedType,
    w: np.ndarray,
    wt: FixedType,
    bias: np.ndarray | None,
    pshift: int,
    bshift: int,
    sum_exp: int,
    pe: int,
    simd: int,
    mode: str,
    xmax: int,
    what: str,
) -> Unit:
    """The MVAU of ``w`` (N, M) codes on ``wt`` over input beats of N codes of ``src_type``: per
    beat, ``y = cast((x @ w) << pshift + bias << bshift)`` from the grid ``2**sum_exp`` to
    ``out_type``, M codes out. PE output channels in parallel, SIMD inputs per cycle: N/SIMD x
    M/PE cycles per beat. ``xmax`` bounds the input codes' magnitude."""
    n, m = w.shape
    nf, sf = m // pe, n // simd
    iw, ow = src_type.width, out_type.width
    wb = {"xnor": 1, "pm1": 1, "addsub": 1, "tern": 2, "mul": wt.width}[mode]
    if mode in ("xnor", "pm1"):
        bound = n
    else:
        bound = int(np.max(np.abs(w).sum(axis=0), initial=0)) * int(xmax)
    aw = signed_bits(-bound, bound) + 1
    bw = 2 if bias is None else signed_bits(int(np.min(bias, initial=0)), int(np.max(bias, initial=0)))
    tw = max(aw + pshift, bw + bshift) + 2
    # the ROM: word nf*SF + sf holds w[sf*SIMD + s, nf*PE + p] at bits (p*SIMD + s)*WB
    if mode in ("xnor", "pm1", "addsub"):
        codes = (w > 0).astype(np.int64)
    elif mode == "tern":
        codes = w.astype(np.int64) & 3
    else:
        codes = w.astype(np.int64) & ((1 << wb) - 1)
    word_bits = pe * simd * wb
    lines = []
    for f in range(nf):
        for s in range(sf):
            block = codes[s * simd : (s + 1) * simd, f * pe : (f + 1) * pe]  # (SIMD, PE)
            word = 0
            for p in range(pe):
                for k in range(simd):
                    word |= int(block[k, p]) << ((p * simd + k) * wb)
            lines.append(hex_word(word, word_bits))
    mem_name = f"{name}_weights.mem"
    style = "block" if word_bits * nf * sf > BLOCK_ROM_BITS else "distributed"
    nfb, sfb, ab = _clog2(nf), _clog2(sf), _clog2(nf * sf)
    xs = f"b_x[s*{iw} +: {iw}]"
    xe = ext("b_x", f"s*{iw}", src_type)
    xmsb = f"b_x[s*{iw} + {iw - 1}]"
    wsel = f"b_w[(p*{simd} + s)*{wb} +: {wb}]"
    wrow = f"b_w[p*{simd} +: {simd}]"
    if mode == "xnor":
        term = [f"        hits = hits + {{{xmsb} ~^ {wsel}}};  // a -1 product: x < 0 and w > 0, or x > 0 and w < 0"]
        counted = [f"      hits = $countones(~(xneg ^ {wrow}));"]
        psum = f"{slit(simd, aw)} - (hits <<< 1)"
    elif mode == "pm1":
        term = [
            f"        if ({xs} != 0) begin",
            "          terms = terms + 1'b1;",
            f"          hits = hits + {{{xmsb} ~^ {wsel}}};",
            "        end",
        ]
        counted = ["      terms = $countones(nz);", f"      hits = $countones(nz & ~(xneg ^ {wrow}));"]
        psum = "terms - (hits <<< 1)"
    elif mode == "addsub":
        term = [f"        psum = {wsel} ? psum + {xe} : psum - {xe};"]
        psum = None
    elif mode == "tern":
        term = [
            f"        if ({wsel} == 2'b01) psum = psum + {xe};",
            f"        else if ({wsel} == 2'b11) psum = psum - {xe};",
        ]
        psum = None
    else:
        wexpr = f"$signed({wsel})" if wt.signed else f"$signed({{1'b0, {wsel}}})"
        term = [f"        psum = psum + {xe} * {wexpr};"]
        psum = None
    bias_lines = []
    if bias is not None:
        bias_lines.append("  always @* begin")
        bias_lines.append(f"    case (b_nf)  // the bias of output channels nf*{pe} .. nf*{pe}+{pe - 1}")
        for f in range(nf):
            parts = ", ".join(hex_lit(int(bias[f * pe + p]), bw) for p in reversed(range(pe)))
            bias_lines.append(f"      {f}: bias_row = {{{parts}}};")
        bias_lines.append(f"      default: bias_row = {pe * bw}'d0;")
        bias_lines += ["    endcase", "  end"]
    total = f"(accp <<< {pshift})" if pshift else "accp"
    if bias is not None:
        b = f"$signed(bias_row[p*{bw} +: {bw}])"
        total += f" + ({b} <<< {bshift})" if bshift else f" + {b}"
    cast_name = "to_out"
    # one loop over the PE lanes: Yosys unrolls it, Verilator keeps a long one a loop (the unfolded
    # digits BNN built in 99 s so; as a generate block per lane its C++ was 21 MB, over 25 minutes)
    comb = [
        "  genvar gs;",
        "  generate",
        "    for (gs = 0; gs < SIMD; gs = gs + 1) begin : input_bits",
        f"      assign xneg[gs] = b_x[gs*{iw} + {iw - 1}];",
        f"      assign nz[gs] = b_x[gs*{iw} +: {iw}] != 0;",
        "    end",
        "  endgenerate",
        "  always @* begin",
        "    for (p = 0; p < PE; p = p + 1) begin",
        "      psum = 0;",
        "      hits = 0;",
        "      terms = 0;",
    ]
    loop = ["      for (s = 0; s < SIMD; s = s + 1) begin", *term, "      end"]
    if mode in ("xnor", "pm1"):
        # Verilator counts a word's ones in one instruction: the same count, a faster simulation
        comb += ["`ifdef VERILATOR", *counted, "`else", *loop, "`endif"]
    else:
        comb += loop
    if psum is not None:
        comb.append(f"      psum = {psum};")
    comb += [
        f"      accp = b_first ? psum : $signed(acc[p*{aw} +: {aw}]) + psum;" if sf > 1 else "      accp = psum;",
        f"      acc_next[p*{aw} +: {aw}] = accp;",
        f"      total = {total};",
        f"      fold_out[p*{ow} +: {ow}] = {cast_name}(total);",
        "    end",
        "  end",
    ]
    if nf > 1:
        comb += ["  always @* begin", "    res_next = res;", f"    res_next[b_nf*{pe * ow} +: {pe * ow}] = fold_out;", "  end"]
    else:
        comb += ["  always @* res_next = fold_out;"]
    text = f"""{what}
module {name} (
{_ports(1, [n * iw], m * ow)}
);
  localparam N = {n}, M = {m}, PE = {pe}, SIMD = {simd}, NF = {nf}, SF = {sf};
  // weights: word nf*SF + sf holds w[sf*SIMD + s][nf*PE + p] at bits (p*SIMD + s)*{wb} ({mode})
  (* rom_style = "{style}" *) reg [{word_bits - 1}:0] weights [0:{nf * sf - 1}];
  initial $readmemh("{mem_name}", weights);

{cast_function(cast_name, tw, out_type.lsb_exp - sum_exp, out_type)}

  // stage A: the input beat held while its folds are read out; the next one waits in a skid
  // buffer (so a beat can enter every cycle and the input's ready is a register)
  wire [{n * iw - 1}:0] in_buf;
  wire in_full;
  reg [{n * iw - 1}:0] x;
  reg busy;
  reg [{nfb - 1}:0] nf;
  reg [{sfb - 1}:0] sf;
  reg [{ab - 1}:0] waddr;
  // stage B: one fold's SIMD inputs and PE x SIMD weights, the PE accumulators
  reg b_valid, b_first, b_last, b_done;
  reg [{nfb - 1}:0] b_nf;
  reg [{simd * iw - 1}:0] b_x;
  reg [{word_bits - 1}:0] b_w;
  reg [{pe * aw - 1}:0] acc, acc_next;
  reg [{pe * ow - 1}:0] fold_out;
  reg [{m * ow - 1}:0] res, res_next, out_r;
  reg out_valid_r;
  reg [{pe * bw - 1}:0] bias_row;
  wire [{simd - 1}:0] xneg, nz;  // one fold's input signs, and which inputs are not 0
  reg signed [{aw - 1}:0] psum, accp;
  reg signed [{_clog2(simd + 1) + 1}:0] hits, terms;
  reg signed [{tw - 1}:0] total;
  integer p, s;

  wire a_last = busy && nf == NF - 1 && sf == SF - 1;
  wire stall = b_valid && b_done && out_valid_r && !out_ready;
  wire load = in_full && (!busy || a_last) && !stall;
  assign out_data = out_r;
  assign out_valid = out_valid_r;
  edgebnn_skid #(.W({n * iw})) in_reg (
    .clk(clk), .rst(rst), .in_data(in0_data), .in_valid(in0_valid), .in_ready(in0_ready),
    .out_data(in_buf), .out_valid(in_full), .out_ready(load)
  );

  always @(posedge clk) if (busy && !stall) b_w <= weights[waddr];
{chr(10).join(bias_lines)}
{chr(10).join(comb)}

  always @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      b_valid <= 1'b0;
      out_valid_r <= 1'b0;
    end else begin
      if (out_valid_r && out_ready) out_valid_r <= 1'b0;
      if (!stall) begin
        b_valid <= busy;
        if (busy) begin
          b_x <= x[sf*SIMD*{iw} +: SIMD*{iw}];
          b_first <= sf == 0;
          b_last <= sf == SF - 1;
          b_done <= a_last;
          b_nf <= nf;
          waddr <= waddr + 1'b1;
          if (sf == SF - 1) begin
            sf <= 0;
            nf <= nf + 1'b1;
          end else sf <= sf + 1'b1;
          if (a_last) busy <= 1'b0;
        end
        if (b_valid) begin
          acc <= acc_next;
          if (b_last) res <= res_next;
          if (b_done) begin
            out_r <= res_next;
            out_valid_r <= 1'b1;
          end
        end
        if (load) begin
          x <= in_buf;
          busy <= 1'b1;
          nf <= 0;
          sf <= 0;
          waddr <= 0;
        end
      end
    end
  end
endmodule
"""
    return Unit([text], {mem_name: "\n".join(lines) + "\n"}, f"{sf} x {nf} = {sf * nf} cycles per beat", sf * nf)


def hex_lit(value: int, bits: int) -> str:
    """A ``bits``-bit Verilog hex literal of ``value``'s two's complement."""
    return f"{bits}'h{hex_word(value, bits)}"


# ---------------------------------------------------------------------------------------- window
def window(
    name: str,
    h: int,
    w: int,
    c: int,
    iw: int,
    kh: int,
    kw: int,
    strides,
    padding,
    pad_code: int,
    what: str,
) -> Unit:
    """The sliding-window generator: a line buffer of the last kh rows of the H x W input (beats of
    C codes of ``iw`` bits, row-major) that emits, per output position in row-major order, the
    kh x kw window (padding [[top, bottom], [left, right]] by ``pad_code``, ``strides``) as one
    beat of kh*kw*C codes in (kh, kw, C) order: the order of im2col and of the weight rows.

    Pixel ``p`` of a sample lives in slot ``p mod B`` (B = kh*W); a window is emitted once its
    last real pixel has arrived, and a pixel is taken only while its slot holds no pixel of the
    first row the current window reads (every later window reads rows from there on), so input
    and output overlap and the buffer never loses a pixel still needed."""
    (pt, pb), (pl, pr) = padding
    sh, sw = strides
    ho, wo = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    beat = c * iw
    taps = kh * kw
    n = h * w
    b = min(kh * w, n)
    pad_beat = "{" + ", ".join([f"{iw}'h{hex_word(pad_code, iw)}"] * c) + "}"
    text = f"""{what}
module {name} (
{_ports(1, [beat], taps * beat)}
);
  localparam H = {h}, W = {w}, HO = {ho}, WO = {wo}, N = {n}, B = {b};
  reg [{beat - 1}:0] lines [0:B-1];
  reg [{_clog2(n + 1)}:0] rc;  // pixels of this sample received
  reg [{_clog2(b)}:0] wp;  // the slot of the next pixel
  reg [{_clog2(ho)}:0] oy;
  reg [{_clog2(wo)}:0] ox;
  reg outs_done;  // every window of this sample has left
  reg [{taps * beat - 1}:0] win, out_r;
  reg out_valid_r;
  integer i, j, iy, ix, r0, rl, cl, first, last, got;
  wire can_emit = !outs_done && got > last && got > 0;  // a window of padding only waits for its sample
  assign in0_ready = !outs_done ? (got < N && got - first < B) : got < N;
  assign out_data = out_r;
  assign out_valid = out_valid_r;

  always @* begin
    got = rc;
    r0 = oy * {sh} - {pt};
    rl = r0 + {kh - 1};
    cl = ox * {sw} - {pl} + {kw - 1};
    if (r0 < 0) r0 = 0;
    if (rl > H - 1) rl = H - 1;
    if (cl > W - 1) cl = W - 1;
    first = r0 * W;  // the first pixel any window from this one on reads
    last = rl * W + cl;  // the last pixel this window reads
    for (i = 0; i < {kh}; i = i + 1)
      for (j = 0; j < {kw}; j = j + 1) begin
        iy = oy * {sh} + i - {pt};
        ix = ox * {sw} + j - {pl};
        if (iy >= 0 && iy < H && ix >= 0 && ix < W)
          win[(i*{kw} + j)*{beat} +: {beat}] = lines[(iy*W + ix) % B];
        else
          win[(i*{kw} + j)*{beat} +: {beat}] = {pad_beat};
      end
  end

  always @(posedge clk) begin
    if (rst) begin
      rc <= 0;
      wp <= 0;
      oy <= 0;
      ox <= 0;
      outs_done <= 1'b0;
      out_valid_r <= 1'b0;
    end else begin
      if (in0_valid && in0_ready) begin
        lines[wp] <= in0_data;
        wp <= (wp == B - 1) ? 0 : wp + 1'b1;
        rc <= rc + 1'b1;
      end
      if (out_valid_r && out_ready) out_valid_r <= 1'b0;
      if (can_emit && (!out_valid_r || out_ready)) begin
        out_r <= win;
        out_valid_r <= 1'b1;
        if (ox == WO - 1) begin
          ox <= 0;
          if (oy == HO - 1) begin
            oy <= 0;
            outs_done <= 1'b1;
          end else oy <= oy + 1'b1;
        end else ox <= ox + 1'b1;
      end
      if (outs_done && got == N) begin  // the sample is through: the next one starts at slot 0
        rc <= 0;
        wp <= 0;
        outs_done <= 1'b0;
      end
    end
  end
endmodule
"""
    return Unit([text], {}, f"a line buffer of {b} positions, {ho * wo} windows", max(n, ho * wo) + 1)


# ----------------------------------------------------------------------------------- map / merge
def map_unit(name: str, in_bits: list[int], out_bits: int, body: list[str], what: str, functions: str = "") -> Unit:
    """A unit whose output beat ``y`` is a function of its input beats (``body`` assigns ``y``
    from ``in<i>_data``), registered through a skid buffer; with several inputs a beat leaves when
    every input holds one (a join)."""
    k = len(in_bits)
    all_valid = " && ".join(f"in{i}_valid" for i in range(k))
    readies = "\n".join(f"  assign in{i}_ready = take;" for i in range(k))
    text = f"""{what}
module {name} (
{_ports(k, in_bits, out_bits)}
);
{functions}
  wire [{out_bits - 1}:0] y;
  wire skid_ready;
  wire all_valid = {all_valid};
  wire take = skid_ready && all_valid;
{readies}
{chr(10).join(body)}
  edgebnn_skid #(.W({out_bits})) out_reg (
    .clk(clk), .rst(rst), .in_data(y), .in_valid(all_valid), .in_ready(skid_ready),
    .out_data(out_data), .out_valid(out_valid), .out_ready(out_ready)
  );
endmodule
"""
    return Unit([text], {}, "1 cycle per beat", 1)


# ---------------------------------------------------------------------------------------- rebeat
def rebeat(name: str, total: int, in_lanes: int, out_lanes: int, iw: int, what: str) -> Unit:
    """A sample of ``total`` codes regrouped from beats of ``in_lanes`` into beats of ``out_lanes``
    (the row-major order kept): stored whole, then emitted."""
    n_in, n_out = total // in_lanes, total // out_lanes
    text = f"""{what}
module {name} (
{_ports(1, [in_lanes * iw], out_lanes * iw)}
);
  reg [{total * iw - 1}:0] buffer;
  reg filling;
  reg [{_clog2(n_in) - 1}:0] wr;
  reg [{_clog2(n_out) - 1}:0] rd;
  reg [{out_lanes * iw - 1}:0] out_r;
  reg out_valid_r;
  assign in0_ready = filling;
  assign out_data = out_r;
  assign out_valid = out_valid_r;
  always @(posedge clk) begin
    if (rst) begin
      filling <= 1'b1;
      wr <= 0;
      rd <= 0;
      out_valid_r <= 1'b0;
    end else begin
      if (in0_valid && filling) begin
        buffer[wr*{in_lanes * iw} +: {in_lanes * iw}] <= in0_data;
        if (wr == {n_in - 1}) begin
          wr <= 0;
          filling <= 1'b0;
        end else wr <= wr + 1'b1;
      end
      if (out_valid_r && out_ready) out_valid_r <= 1'b0;
      if (!filling && (!out_valid_r || out_ready)) begin
        out_r <= buffer[rd*{out_lanes * iw} +: {out_lanes * iw}];
        out_valid_r <= 1'b1;
        if (rd == {n_out - 1}) begin
          rd <= 0;
          filling <= 1'b1;
        end else rd <= rd + 1'b1;
      end
    end
  end
endmodule
"""
    return Unit([text], {}, f"{n_in} cycles to fill, {n_out} to emit", n_in + n_out)


def wiring(name: str, bits: int, what: str) -> Unit:
    """A unit that passes its stream on unchanged (a reshape that keeps the beats)."""
    text = f"""{what}
module {name} (
{_ports(1, [bits], bits)}
);
  assign out_data = in0_data;
  assign out_valid = in0_valid;
  assign in0_ready = out_ready;
endmodule
"""
    return Unit([text], {}, "wiring, 0 cycles", 0)


def chain(
    name: str, first: Unit, second: Unit, first_name: str, second_name: str, in_bits: int, mid_bits: int, out_bits: int, what: str
) -> Unit:
    """The node's module ``name`` as ``first`` feeding ``second`` (modules ``first_name`` and ``second_name``)."""
    text = f"""{what}
module {name} (
{_ports(1, [in_bits], out_bits)}
);
  wire [{mid_bits - 1}:0] window_data;
  wire window_valid, window_ready;
  {first_name} window (
    .clk(clk), .rst(rst), .in0_data(in0_data), .in0_valid(in0_valid), .in0_ready(in0_ready),
    .out_data(window_data), .out_valid(window_valid), .out_ready(window_ready)
  );
  {second_name} compute (
    .clk(clk), .rst(rst), .in0_data(window_data), .in0_valid(window_valid), .in0_ready(window_ready),
    .out_data(out_data), .out_valid(out_valid), .out_ready(out_ready)
  );
endmodule
"""
    return Unit(first.modules + second.modules + [text], {**first.mems, **second.mems}, "", 0)
