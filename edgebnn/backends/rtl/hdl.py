"""Verilog text shared by the units: identifiers from node names, literals, the exact fixed-point
conversion (rounding and overflow modes as ``edgebnn.fixed`` defines them) as a Verilog function,
the stream shape of a node, ROM files, and the library modules every design carries (a skid
buffer that keeps the ready path one register long, a FIFO).

Streams: a node's output is a stream of beats, one beat per position of its shape's leading
axes, each beat holding the last axis's ``lanes`` codes, lane ``l`` in bits ``[l*W +: W]`` (``W``
the node's type width, two's complement for a signed type). Every unit has ports ``clk``, ``rst``
(synchronous, active high), per input ``i`` ``in<i>_data/_valid/_ready`` and ``out_data``,
``out_valid``, ``out_ready``; a beat moves on a clock edge where valid and ready are both high.
Every unit's ready is a register or a function of its own registers and its input's valid (a
register of the unit before), so no ready signal is chained combinationally through units.
"""

from __future__ import annotations

import math
import re

from ...fixed import FixedType

_KEYWORDS = set(
    (  # noqa: SIM905 - one readable block of words
        "always and assign automatic begin buf bufif0 bufif1 case casex casez cell cmos config deassign "
        "default defparam design disable edge else end endcase endconfig endfunction endgenerate endmodule "
        "endprimitive endspecify endtable endtask event for force forever fork function generate genvar "
        "highz0 highz1 if ifnone incdir include initial inout input instance integer join large liblist "
        "library localparam macromodule medium module nand negedge nmos nor noshowcancelled not notif0 "
        "notif1 or output parameter pmos posedge primitive pull0 pull1 pulldown pullup pulsestyle_ondetect "
        "pulsestyle_onevent rcmos real realtime reg release repeat rnmos rpmos rtran rtranif0 rtranif1 "
        "scalared showcancelled signed small specify specparam strong0 strong1 supply0 supply1 table task "
        "time tran tranif0 tranif1 tri tri0 tri1 triand trior trireg unsigned use uwire vectored wait wand "
        "weak0 weak1 while wire wor xnor xor logic bit byte int shortint longint string type struct union "
        "enum class interface clk rst top "
    ).split()
)


def ident(name: str, taken: set[str]) -> str:
    """A Verilog identifier for the node ``name`` (other characters become ``_``), unique in ``taken``
    (which it joins), never a keyword."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "node"
    if base[0].isdigit() or base[0] == "_":
        base = "n" + base
    if base.lower() in _KEYWORDS:
        base += "_node"
    out, i = base, 2
    while out.lower() in taken:
        out, i = f"{base}_{i}", i + 1
    taken.add(out.lower())
    return out


def slit(value: int, width: int) -> str:
    """A signed Verilog literal of ``width`` bits for the integer ``value``."""
    value = int(value)
    return f"{width}'sd{value}" if value >= 0 else f"-{width}'sd{-value}"


def signed_bits(lo: int, hi: int) -> int:
    """Bits of the narrowest two's complement integer holding every integer in [lo, hi]."""
    bits = 1
    for v in (int(lo), int(hi)):
        bits = max(bits, (v.bit_length() if v >= 0 else (-v - 1).bit_length()) + 1)
    return bits


def ext(bus: str, at, t: FixedType) -> str:
    """The ``t`` code in ``bus`` from bit ``at`` (an int or a Verilog expression) on, as a
    signed value of ``t.width + 1`` bits."""
    w = t.width
    code = f"{bus}[{at} +: {w}]"
    if not t.signed:
        return f"$signed({{1'b0, {code}}})"
    msb = f"{bus}[{at + w - 1}]" if isinstance(at, int) else f"{bus}[{at} + {w - 1}]"
    return f"$signed({{{msb}, {code}}})"


def code_bits(t: FixedType) -> int:
    """Bits of a signed value that holds every code of ``t``."""
    return t.width + (0 if t.signed else 1)


def beats(node) -> int:
    """Beats per sample of ``node``'s stream: one per position of the leading axes of its shape."""
    return math.prod(node.shape[:-1])


def lanes(node) -> int:
    """Codes per beat of ``node``'s stream: its last axis."""
    return node.shape[-1]


def cast_function(name: str, in_bits: int, shift: int, t: FixedType) -> str:
    """A Verilog function ``name`` taking a signed value of ``in_bits`` bits on a grid ``2**shift``
    times finer than ``t``'s (coarser when ``shift`` < 0) and returning its ``t`` code (``t.width``
    bits), exactly as ``FixedType.cast_codes`` converts: ``t``'s rounding, then its overflow mode."""
    w, lo, hi = t.width, t.min_code, t.max_code
    if shift > 0:
        rw = max(in_bits - shift + 2, w + 2)
    else:
        rw = max(in_bits - shift + 1, w + 2)
    lines = [
        f"  function [{w - 1}:0] {name};  // to {t}: its rounding, then its overflow mode",
        f"    input signed [{in_bits - 1}:0] v;",
        f"    reg signed [{rw - 1}:0] r;",
    ]
    body = []
    if shift > 0:
        half = 1 << (shift - 1)
        # v sign-extended past the shift, so the bits shifted out exist even when shift > in_bits
        lines.append(f"    reg signed [{in_bits + shift - 1}:0] vx;")
        lines.append(f"    reg [{shift - 1}:0] rem;")
        lines.append("    reg up;")
        body += ["    vx = v;", f"    r = vx >>> {shift};", f"    rem = vx[{shift - 1}:0];"]
        gt, eq, nz, neg = f"(rem > {shift}'d{half})", f"(rem == {shift}'d{half})", "(rem != 0)", f"v[{in_bits - 1}]"
        up = {
            "TRN": "1'b0",
            "TRN_ZERO": f"{neg} && {nz}",
            "RND": f"{gt} || {eq}",
            "RND_ZERO": f"{gt} || ({eq} && {neg})",
            "RND_INF": f"{gt} || ({eq} && !{neg})",
            "RND_MIN_INF": gt,
            "RND_CONV": f"{gt} || ({eq} && r[0])",
        }[t.rounding]
        body += [f"    up = {up};", "    r = r + up;"]
    elif shift < 0:
        body.append(f"    r = v <<< {-shift};")
    else:
        body.append("    r = v;")
    over, under = f"(r > {slit(hi, rw)})", f"(r < {slit(lo, rw)})"
    sym = t.overflow == "SAT_SYM" and t.signed and w > 1
    mask = (1 << w) - 1
    if t.overflow in ("SAT", "SAT_SYM"):
        low = -hi if sym else lo
        under_sym = f"(r <= {slit(lo, rw)})" if sym else under
        body += [
            f"    if {over} {name} = {w}'d{hi & mask};",
            f"    else if {under_sym} {name} = {w}'d{low & mask};",
            f"    else {name} = r[{w - 1}:0];",
        ]
    elif t.overflow == "SAT_ZERO":
        body += [f"    if ({over} || {under}) {name} = {w}'d0;", f"    else {name} = r[{w - 1}:0];"]
    else:  # WRAP, with ap_fixed's N saturation bits when out of range
        n = t.sat_bits
        if n:
            keep = (1 << (w - n)) - 1
            if not t.signed:
                neg_set = pos_set = ((1 << n) - 1) << (w - n)
            else:
                neg_set, pos_set = 1 << (w - 1), (1 << (w - 1)) - (1 << (w - n))
            body += [
                f"    if ({over} || {under})",
                f"      {name} = (r[{w - 1}:0] & {w}'d{keep}) | (r[{rw - 1}] ? {w}'d{neg_set} : {w}'d{pos_set});",
                f"    else {name} = r[{w - 1}:0];",
            ]
        else:
            body.append(f"    {name} = r[{w - 1}:0];")
    return "\n".join(lines + ["    begin"] + body + ["    end", "  endfunction"])


def hex_word(value: int, bits: int) -> str:
    """``value``'s low ``bits`` bits as hex digits (a line of a ``$readmemh`` file)."""
    return format(int(value) & ((1 << bits) - 1), f"0{max(1, -(-bits // 4))}x")


def header(title: str, lines: list[str]) -> str:
    """The comment block that opens a generated module: what it computes, its folding, its cycles."""
    out = [f"// {title}"] + [f"//   {line}" for line in lines]
    return "\n".join(out)


LIBRARY = """\
// edgebnn_lib.v: the stream primitives every edgebnn RTL design uses.

// A two-register skid buffer: in_ready is a register, so a ready never travels combinationally
// through units; a beat passes in one cycle and the stream runs at one beat per cycle.
module edgebnn_skid #(parameter W = 8) (
  input clk, input rst,
  input [W-1:0] in_data, input in_valid, output in_ready,
  output [W-1:0] out_data, output out_valid, input out_ready
);
  reg [W-1:0] main_data, spare_data;
  reg main_valid, spare_valid;
  assign in_ready = !spare_valid;
  assign out_data = main_data;
  assign out_valid = main_valid;
  always @(posedge clk) begin
    if (rst) begin
      main_valid <= 1'b0;
      spare_valid <= 1'b0;
    end else if (!main_valid || out_ready) begin
      if (spare_valid) begin
        main_data <= spare_data;
        main_valid <= 1'b1;
        spare_valid <= 1'b0;
      end else begin
        main_data <= in_data;
        main_valid <= in_valid;
      end
    end else if (in_valid && !spare_valid) begin
      spare_data <= in_data;
      spare_valid <= 1'b1;
    end
  end
endmodule

// A FIFO of DEPTH beats (a fork's branch buffer: sized so that the other branches of a fork can
// run ahead by a whole sample without a deadlock at their join).
module edgebnn_fifo #(parameter W = 8, parameter DEPTH = 2, parameter AW = 1) (
  input clk, input rst,
  input [W-1:0] in_data, input in_valid, output in_ready,
  output [W-1:0] out_data, output out_valid, input out_ready
);
  reg [W-1:0] mem [0:DEPTH-1];
  reg [AW-1:0] rd, wr;
  reg [AW:0] count;
  wire push = in_valid && in_ready;
  wire pop = out_valid && out_ready;
  assign in_ready = count != DEPTH;
  assign out_valid = count != 0;
  assign out_data = mem[rd];
  always @(posedge clk) begin
    if (rst) begin
      rd <= 0;
      wr <= 0;
      count <= 0;
    end else begin
      if (push) begin
        mem[wr] <= in_data;
        wr <= (wr == DEPTH - 1) ? 0 : wr + 1'b1;
      end
      if (pop) rd <= (rd == DEPTH - 1) ? 0 : rd + 1'b1;
      count <= count + push - pop;
    end
  end
endmodule
"""
