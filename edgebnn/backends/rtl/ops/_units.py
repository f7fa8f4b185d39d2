"""The hardware units the op lowerings are built from, each a function writing one Verilog module:

``mvau``     the matrix-vector unit (FINN's MVAU): a weighted sum over one input beat, folded PE x SIMD,
             with the threshold that is its only reader built in (FINN's MVTU)
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


def _tree(terms: list[str]) -> str:
    """The sum of ``terms`` as a balanced tree of additions (a log-depth adder tree, where a chain
    of additions would be as deep as it is long)."""
    if not terms:
        return "0"
    while len(terms) > 1:
        terms = [f"({a} + {b})" for a, b in zip(terms[0::2], terms[1::2])] + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def _sized_tree(terms: list[str], width: int, signed: bool, adders: dict[str, str]) -> str:
    """The sum of ``terms`` (each ``width`` bits, two's complement when ``signed``) as a balanced
    tree whose adders are one bit wider per level (an adder written in a wider context is built
    as wide as that context); the adder functions it calls join ``adders`` (name -> text)."""
    level, w = list(terms), width
    while len(level) > 1:
        name = f"{'s' if signed else 'u'}add{w}"
        sign = "signed " if signed else ""
        adders[name] = (
            f"  function automatic {sign}[{w}:0] {name};  // {w}-bit operands, their sum in {w + 1} bits\n"
            f"    input {sign}[{w - 1}:0] a, b;\n    {name} = a + b;\n  endfunction"
        )
        level = [f"{name}({a}, {b})" for a, b in zip(level[0::2], level[1::2])] + ([level[-1]] if len(level) % 2 else [])
        w += 1
    return level[0] if level else "0"


def fused_thresholds(then, out_type: FixedType, bias, pshift: int, bshift: int, sum_exp: int, bound: int, reach):
    """For a threshold node ``then`` reading the MVAU's output: per output channel ``c`` and
    threshold ``k``, the least accumulator value from which ``thresholds[c, k]`` is reached (the
    accumulator through the bias and the conversion to ``out_type``, as the MVAU computes it),
    over the values channel ``c``'s accumulator can take (``reach``: per channel its least and
    greatest); ``-bound`` when always reached there, ``bound + 1`` when never. None when a
    channel's count is not monotone over them (a conversion that wraps) or they are too many to
    tabulate."""
    t = np.asarray(then.params["thresholds"], dtype=np.int64)
    m = t.shape[0]
    lo = np.clip(np.asarray(reach[0], dtype=np.int64), -bound, bound)
    hi = np.clip(np.asarray(reach[1], dtype=np.int64), -bound, bound)
    if int(np.sum(hi - lo + 1)) * max(t.shape[1], 1) > 1 << 25:
        return None
    first = np.empty(t.shape, dtype=np.int64)
    for c in range(m):
        acc = np.arange(lo[c], hi[c] + 1, dtype=np.int64)
        b = 0 if bias is None else int(bias[c])
        codes = out_type.cast_codes((acc << pshift) + (b << bshift), sum_exp)
        reached = codes[None, :] >= t[c][:, None]  # (K, accumulator values)
        if np.any(reached[:, :-1] & ~reached[:, 1:]):
            return None
        at = np.where(reached.any(axis=1), acc[np.argmax(reached, axis=1)], bound + 1)
        first[c] = np.where(at == lo[c], -bound, at)
    return first


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
    then=None,
    reach=None,
) -> Unit:
    """The MVAU of ``w`` (N, M) codes on ``wt`` over input beats of N codes of ``src_type``: per
    beat, ``y = cast((x @ w) << pshift + bias << bshift)`` from the grid ``2**sum_exp`` to
    ``out_type``, M codes out. PE output channels in parallel, SIMD inputs per cycle: N/SIMD x
    M/PE cycles per beat. ``xmax`` bounds the input codes' magnitude.

    With ``then`` (and ``reach``, per output channel the least and greatest value of its
    accumulator) (a threshold node, the MVAU's only reader) the unit is FINN's MVTU: each PE's
    finished accumulator is compared with its channel's thresholds (moved onto the accumulator,
    so neither bias nor conversion is built) and only the threshold's codes are kept and sent;
    the MVAU's own values then leave only on the ``tap_*`` port of a simulation (EDGEBNN_TAPS).

    Pipeline: stage A counts the folds of the input beat, which stays on ``in0_data`` (the
    upstream unit's register) until its last fold; stage B holds one fold's SIMD inputs and
    weights and adds into the PE accumulators; stage C converts (or thresholds) the finished
    accumulators of a PE fold into the result beat, which leaves through a skid buffer whose
    ready (a register) is the only stall, so no ready path crosses the unit."""
    n, m = w.shape
    nf, sf = m // pe, n // simd
    iw = src_type.width
    wb = {"xnor": 1, "pm1": 1, "addsub": 1, "tern": 2, "mul": wt.width}[mode]
    if mode in ("xnor", "pm1"):
        bound = n
    else:
        bound = int(np.max(np.abs(w).sum(axis=0), initial=0)) * int(xmax)
    aw = signed_bits(-bound, bound + 1) + 1
    first_reached = None
    if then is not None:
        first_reached = fused_thresholds(then, out_type, bias, pshift, bshift, sum_exp, bound, reach)
        if first_reached is None:
            return None
    dw = out_type.width
    ow = then.type.width if then is not None else dw
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
    depth = nf * sf
    style = rom_style(word_bits, depth)
    nfb, sfb, ab = _clog2(nf), _clog2(sf), _clog2(depth)
    xe = lambda s: ext("b_x", f"{s}*{iw}" if isinstance(s, str) else s * iw, src_type)
    wsel = lambda s: f"b_w[(p*{simd} + {s})*{wb} +: {wb}]"
    cw = _clog2(simd + 1) + 2
    zero = slit(0, iw + 1)
    adders: dict[str, str] = {}
    if mode == "xnor":
        # braces make each product a 1-bit operand: a ~ in a wider context would invert the padding too
        agree = [f"{{~(xneg[{s}] ^ {wsel(s)})}}" for s in range(simd)]
        tree = [f"      hits = {_sized_tree(agree, 1, False, adders)};  // products of -1: x < 0 and w > 0, or x > 0 and w < 0"]
        counted = ["      hits = $countones(~(xneg ^ b_w[p*SIMD +: SIMD]));"]
        psum = [f"      psum = {slit(simd, aw)} - (hits <<< 1);"]
    elif mode == "pm1":
        agree = [f"{{nz[{s}] & ~(xneg[{s}] ^ {wsel(s)})}}" for s in range(simd)]
        tree = [f"      hits = {_sized_tree(agree, 1, False, adders)};"]
        counted = ["      hits = $countones(nz & ~(xneg ^ b_w[p*SIMD +: SIMD]));"]
        psum = ["      psum = terms - (hits <<< 1);"]
    elif mode == "addsub":
        # sum(w x) = 2 sum(x where w > 0) - sum(x): one shared sum, per PE a sum of selected inputs
        sel = [f"({wsel(s)} ? {xe(s)} : {zero})" for s in range(simd)]
        tree = [f"      psum = ({_sized_tree(sel, iw + 1, True, adders)} <<< 1) - xsum;"]
        # Verilator: the same sum by bit planes, sum over b of 2**b (-2**b for a signed code's top
        # bit) times the count of selected inputs whose bit b is set: a few word popcounts per PE
        # where the tree's selections are SIMD data-dependent branches of the C++ (the unrolled
        # digits BNN simulated 1.5x faster so, with the unrolled loops); exact: the sum is taken
        # modulo 2**psum's width, which holds it
        sign = lambda b: "-" if src_type.signed and b == iw - 1 else "+"
        planes = [f"{sign(b)} ($countones(b_w[p*SIMD +: SIMD] & xbits[{b}*SIMD +: SIMD]) <<< {b})" for b in range(iw)]
        counted = [f"      psum = ((0 {' '.join(planes)}) <<< 1) - xsum;"]
        psum = []
    elif mode == "tern":
        pos = [f"({wsel(s)} == 2'b01 ? {xe(s)} : {zero})" for s in range(simd)]
        neg = [f"({wsel(s)} == 2'b11 ? {xe(s)} : {zero})" for s in range(simd)]
        tree = [f"      psum = {_sized_tree(pos, iw + 1, True, adders)} - {_sized_tree(neg, iw + 1, True, adders)};"]
        psum = []
    else:
        wexpr = lambda s: f"$signed({wsel(s)})" if wt.signed else f"$signed({{1'b0, {wsel(s)}}})"
        tree = [f"      psum = {_tree([f'{xe(s)} * {wexpr(s)}' for s in range(simd)])};"]
        psum = []
    comb_b = [
        "  genvar gs;",
        "  generate",
        "    for (gs = 0; gs < SIMD; gs = gs + 1) begin : input_bits",
        f"      assign xneg[gs] = b_x[gs*{iw} + {iw - 1}];",
        f"      assign nz[gs] = b_x[gs*{iw} +: {iw}] != 0;",
        "    end",
        "  endgenerate",
    ]
    if mode == "addsub":
        comb_b.append(f"  assign xsum = {_sized_tree([xe(s) for s in range(simd)], iw + 1, True, adders)};  // shared by the PEs")
        comb_b += [
            "`ifdef VERILATOR",
            f"  wire [{iw * simd - 1}:0] xbits;  // bit plane b: bit b of each of the fold's inputs, at b*SIMD",
            "  generate",
            "    for (gs = 0; gs < SIMD; gs = gs + 1) begin : input_planes",
            *(f"      assign xbits[{b}*SIMD + gs] = b_x[gs*{iw} + {b}];" for b in range(iw)),
            "    end",
            "  endgenerate",
            "`endif",
        ]
    if mode == "pm1":
        comb_b.append(f"  assign terms = {_sized_tree([f'nz[{s}]' for s in range(simd)], 1, False, adders)};")
    # one loop over the PE lanes: Yosys unrolls it, and so does Verilator up to its --unroll-count
    # (sim/build.py) while the body stays under its statement limit (as a generate block per lane
    # the unfolded digits BNN's C++ was 21 MB, over 25 minutes to build; unrolled so, 3.5 MB, 35 s)
    comb_b += [
        "  always @* begin : accumulate  // its own loop variable: two blocks sharing one would wake each other",
        "    integer p;",
        "    for (p = 0; p < PE; p = p + 1) begin",
    ]
    if mode in ("xnor", "pm1", "addsub"):
        # Verilator counts a word's ones in a few instructions: the same count, a faster simulation
        comb_b += ["`ifdef VERILATOR", *counted, "`else", *tree, "`endif"]
    else:
        comb_b += tree
    comb_b += psum
    comb_b += [
        f"      acc_next[p*{aw} +: {aw}] = b_first ? psum : $signed(acc[p*{aw} +: {aw}]) + psum;"
        if sf > 1
        else f"      acc_next[p*{aw} +: {aw}] = psum;",
        "    end",
        "  end",
    ]
    # stage C: the finished accumulators of PE fold c_nf
    rows = []  # (name, bits per lane, per channel its value)
    cast_name = "to_out"
    a_p = f"$signed(acc[p*{aw} +: {aw}])"
    with_bias = "" if bias is None else f" + ($signed(bias_row[p*{bw} +: {bw}]) <<< {bshift})"
    conv = [f"      total = (acc_p <<< {pshift}){with_bias};"]
    conv.append(f"      dense_fold[p*{dw} +: {dw}] = {cast_name}(total);")
    if bias is not None:
        rows.append(("bias_row", bw, [int(v) for v in bias]))
    k = 0
    if then is not None:
        k = first_reached.shape[1]
        cb = max(1, math.ceil(math.log2(k + 1)))  # bits of a count of 0 .. k thresholds
        lv = np.asarray(then.params["levels"], dtype=np.int64)
        rows.append(("thr_row", aw, [list(map(int, r)) for r in first_reached]))
        same = bool(np.all(lv == lv[:1]))
        if same:
            pick = f"LEVELS[j*{ow} +: {ow}]"
            padded = [int(v) for v in lv[0]] + [int(lv[0][-1])] * ((1 << cb) - (k + 1))
            table = "{" + ", ".join(hex_lit(v, ow) for v in reversed(padded)) + "}"
        else:
            lv = np.concatenate([lv, np.repeat(lv[:, -1:], (1 << cb) - (k + 1), axis=1)], axis=1)
            rows.append(("level_row", ow, [list(map(int, r)) for r in lv]))
            pick = f"level_row[(p*{1 << cb} + j)*{ow} +: {ow}]"
        # stage C compares (the comparisons are registered), stage D picks the level: the
        # thresholds ascend, so the comparisons read 1..10..0 and the level of the last 1 is
        # picked by a one-hot select (no count, no adder chain)
        stage_c = [
            f"      for (j = 0; j < {k}; j = j + 1)",
            f"        c_reached[p*{k} + j] = acc_p >= $signed(thr_row[(p*{k} + j)*{aw} +: {aw}]);",
        ]
        stage_d = [
            "  always @* begin : pick_level",
            "    integer p, j;",
            "    for (p = 0; p < PE; p = p + 1) begin",
            f"      last_reached = {{d_reached[p*{k} +: {k}], 1'b1}} & ~{{1'b0, d_reached[p*{k} +: {k}]}};",
            f"      fold_out[p*{ow} +: {ow}] = {ow}'d0;",
            f"      for (j = 0; j <= {k}; j = j + 1)",
            f"        fold_out[p*{ow} +: {ow}] = fold_out[p*{ow} +: {ow}] | ({{{ow}{{last_reached[j]}}}} & {pick});",
            "    end",
            "  end",
        ]
    else:
        stage_c = [*conv, f"      fold_out[p*{ow} +: {ow}] = dense_fold[p*{dw} +: {dw}];"]
    comb_c = [
        "  always @* begin : finish",
        "    integer p, j;",
        "    for (p = 0; p < PE; p = p + 1) begin",
        f"      acc_p = {a_p};",
        *stage_c,
    ]
    if then is not None:
        comb_c += ["`ifdef EDGEBNN_TAPS", *conv, "`endif"]
    comb_c += ["    end", "  end"]
    # the output stage: C, or D behind the registered comparisons of a built-in threshold
    o = "c" if then is None else "d"
    if then is not None:
        comb_c += stage_d
    for row, bits, vals in rows:
        per = len(vals[0]) if isinstance(vals[0], list) else 1
        words = []
        for f in range(nf):
            flat = []
            for p in range(pe):
                v = vals[f * pe + p]
                flat += v if isinstance(v, list) else [v]
            words.append(f"{{{', '.join(hex_lit(x, bits) for x in reversed(flat))}}}")
        what_row = f"{row}: output channels nf*{pe} .. nf*{pe}+{pe - 1}"
        if nf == 1:
            comb_c.append(f"  assign {row} = {words[0]};  // {what_row}")
        elif row == "bias_row":
            comb_c += ["  always @* begin", f"    case (c_nf)  // {what_row}"]
            comb_c += [f"      {f}: {row} = {word};" for f, word in enumerate(words)]
            comb_c += [f"      default: {row} = {pe * per * bits}'d0;", "    endcase", "  end"]
        elif row == "thr_row":
            # a table read as its PE fold's accumulators finish, so stage C compares registers only
            comb_c += ["  always @(posedge clk) if (b_valid && b_last && !stall)", f"    case (b_nf)  // {what_row}"]
            comb_c += [f"      {f}: {row} <= {word};" for f, word in enumerate(words)]
            comb_c += [f"      default: {row} <= {pe * per * bits}'d0;", "    endcase"]
        else:  # the levels, read as the comparisons are registered for stage D
            comb_c += ["  always @(posedge clk) if (c_valid && !stall)", f"    case (c_nf)  // {what_row}"]
            comb_c += [f"      {f}: {row} <= {word};" for f, word in enumerate(words)]
            comb_c += [f"      default: {row} <= {pe * per * bits}'d0;", "    endcase"]
    out_bits = m * ow
    if nf > 1:
        # the PE folds of a beat come in order 0 .. NF-1, so the result beat is a shift register:
        # each fold enters at the top and, NF folds later, fold f sits at bits f*PE*OW (no
        # multiplexer writing a fold at its index)
        comb_c += [f"  always @* res_next = {{fold_out, res[{out_bits - 1}:{pe * ow}]}};"]
    else:
        comb_c += ["  always @* res_next = fold_out;"]
    taps = ""
    tap_ports = ""
    if then is not None:
        tap_ports = f"\n`ifdef EDGEBNN_TAPS\n  , output [{m * dw - 1}:0] tap_data, output tap_valid\n`endif"
        tap_res = [
            f"  reg [{m * dw - 1}:0] dense_res, dense_next;",
            "  always @* begin",
            "    dense_next = dense_res;",
            f"    dense_next[c_nf*{pe * dw} +: {pe * dw}] = dense_fold;",
            "  end",
        ]
        taps = "\n".join(
            [
                "`ifdef EDGEBNN_TAPS",
                "  // the MVAU's own values (the threshold's input), for a simulation's trace only",
                *tap_res,
                "  // complete when stage D sends the beat (stage C wrote its last PE fold a cycle before)",
                "  assign tap_data = dense_res;",
                "  assign tap_valid = push;",
                "  always @(posedge clk) if (c_valid && !stall) dense_res <= dense_next;",
                "`endif",
            ]
        )
    if depth == 1:
        rom = [
            f"  // weights: one word (PE x SIMD products per beat), a constant; bit (p*SIMD + s)*{wb} is w[s][p] ({mode})",
            f"  wire [{word_bits - 1}:0] b_w = {word_bits}'h{lines[0]};",
        ]
        rom_read = ""
        mems = {}
    else:
        rom = [
            f"  // weights: word nf*SF + sf holds w[sf*SIMD + s][nf*PE + p] at bits (p*SIMD + s)*{wb} ({mode})",
            f'  (* rom_style = "{style}" *) reg [{word_bits - 1}:0] weights [0:{depth - 1}];',
            f'  initial $readmemh("{mem_name}", weights);',
            f"  reg [{word_bits - 1}:0] b_w;",
        ]
        rom_read = "  always @(posedge clk) if (active) b_w <= weights[waddr];"
        mems = {mem_name: "\n".join(lines) + "\n"}
    row_kind = "wire" if nf == 1 else "reg"  # one PE fold: its tables are constants
    stage_d_regs = stage_d_reset = ""
    if then is not None:
        stage_d_reset = "\n      d_valid <= 1'b0;"
        stage_d_regs = (
            "\n      d_valid <= c_valid;\n      if (c_valid) begin\n        d_reached <= c_reached;\n"
            "        d_nf <= c_nf;\n        d_done <= c_done;\n      end"
        )
    decl_b = []
    if mode == "addsub":
        decl_b.append(f"  wire signed [{aw - 1}:0] xsum;")
    if mode == "pm1":
        decl_b.append(f"  wire signed [{cw - 1}:0] terms;")
    if mode in ("xnor", "pm1"):
        decl_b.append(f"  reg signed [{cw - 1}:0] hits;")
    decl_b = "\n".join(decl_b)
    thr_decl = ""
    if then is not None:
        thr_decl = "\n".join(
            [
                f"  {row_kind} [{pe * k * aw - 1}:0] thr_row;",
                f"  reg [{pe * k - 1}:0] c_reached, d_reached;  // per PE and threshold of its channel: reached",
                "  // stage D: the level of each PE's count of thresholds reached",
                "  reg d_valid, d_done;",
                f"  reg [{nfb - 1}:0] d_nf;",
                f"  reg [{k}:0] last_reached;  // one-hot: how many thresholds a PE's channel reached",
            ]
        )
        if not same:
            thr_decl += f"\n  {row_kind} [{pe * (1 << cb) * ow - 1}:0] level_row;"
        else:
            thr_decl += f"\n  localparam [{(1 << cb) * ow - 1}:0] LEVELS = {table};  // the level of each count"
    text = f"""{what}
module {name} (
{_ports(1, [n * iw], out_bits)}{tap_ports}
);
  localparam N = {n}, M = {m}, PE = {pe}, SIMD = {simd}, NF = {nf}, SF = {sf};
{chr(10).join(rom)}

{cast_function(cast_name, tw, out_type.lsb_exp - sum_exp, out_type)}
{chr(10).join(adders.values())}

  // stage A: the folds of the input beat, which waits on in0_data until its last fold is read
  reg [{nfb - 1}:0] nf;
  reg [{sfb - 1}:0] sf;
  reg [{ab - 1}:0] waddr;
  // stage B: one fold's SIMD inputs and PE x SIMD weights, the PE accumulators
  reg b_valid, b_first, b_last, b_done;
  reg [{nfb - 1}:0] b_nf;
  reg [{simd * iw - 1}:0] b_x;
  reg [{pe * aw - 1}:0] acc, acc_next;
  wire [{simd - 1}:0] xneg, nz;  // one fold's input signs, and which inputs are not 0
{decl_b}
  reg signed [{aw - 1}:0] psum;
  // stage C: a finished PE fold's accumulators to the result beat
  reg c_valid, c_done;
  reg [{nfb - 1}:0] c_nf;
  reg signed [{aw - 1}:0] acc_p;
  reg signed [{tw - 1}:0] total;
  {row_kind} [{pe * bw - 1}:0] bias_row;
  reg [{pe * dw - 1}:0] dense_fold;
  reg [{pe * ow - 1}:0] fold_out;
  reg [{out_bits - 1}:0] res, res_next;
{thr_decl}

  wire out_free;  // the output skid buffer can take a beat (a register)
  wire stall = !out_free;
  wire active = in0_valid && !stall;
  reg a_last;  // the fold read now is the beat's last (a register: the input's ready is one gate)
  wire push = {o}_valid && {o}_done && !stall;
  assign in0_ready = active && a_last;
  edgebnn_skid #(.W({out_bits})) out_reg (
    .clk(clk), .rst(rst), .in_data(res_next), .in_valid(push), .in_ready(out_free),
    .out_data(out_data), .out_valid(out_valid), .out_ready(out_ready)
  );

{rom_read}
{chr(10).join(comb_b)}
{chr(10).join(comb_c)}
{taps}

  always @(posedge clk) begin
    if (rst) begin
      nf <= 0;
      sf <= 0;
      waddr <= 0;
      a_last <= NF == 1 && SF == 1;
      b_valid <= 1'b0;
      c_valid <= 1'b0;{stage_d_reset}
    end else if (!stall) begin
      b_valid <= in0_valid;
      c_valid <= b_valid && b_last;
      if (in0_valid) begin
        b_x <= in0_data[sf*SIMD*{iw} +: SIMD*{iw}];
        b_first <= sf == 0;
        b_last <= sf == SF - 1;
        b_done <= a_last;
        b_nf <= nf;
        waddr <= a_last ? 0 : waddr + 1'b1;
        a_last <= a_last ? NF == 1 && SF == 1 : waddr == NF*SF - 2;
        if (sf == SF - 1) begin
          sf <= 0;
          nf <= a_last ? 0 : nf + 1'b1;
        end else sf <= sf + 1'b1;
      end
      if (b_valid) begin
        acc <= acc_next;
        c_nf <= b_nf;
        c_done <= b_done;
      end
      if ({o}_valid) res <= res_next;{stage_d_regs}
    end
  end
endmodule
"""
    return Unit([text], mems, f"{sf} x {nf} = {sf * nf} cycles per beat", sf * nf)


def rom_style(word_bits: int, depth: int) -> str:
    """Where a ROM of ``depth`` words of ``word_bits`` goes: ``constant`` (one word), ``block``
    RAM when it holds more than ``BLOCK_ROM_BITS`` bits, else ``distributed`` (LUTs)."""
    if depth == 1:
        return "constant"
    return "block" if word_bits * depth > BLOCK_ROM_BITS else "distributed"


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
    name: str,
    first: Unit,
    second: Unit,
    first_name: str,
    second_name: str,
    in_bits: int,
    mid_bits: int,
    out_bits: int,
    what: str,
    tap_bits: int = 0,
) -> Unit:
    """The node's module ``name`` as ``first`` feeding ``second`` (modules ``first_name`` and
    ``second_name``); ``tap_bits`` > 0 passes ``second``'s simulation tap port on."""
    tap_ports = tap_pass = ""
    if tap_bits:
        tap_ports = f"\n`ifdef EDGEBNN_TAPS\n  , output [{tap_bits - 1}:0] tap_data, output tap_valid\n`endif"
        tap_pass = "\n`ifdef EDGEBNN_TAPS\n    , .tap_data(tap_data), .tap_valid(tap_valid)\n`endif"
    text = f"""{what}
module {name} (
{_ports(1, [in_bits], out_bits)}{tap_ports}
);
  wire [{mid_bits - 1}:0] window_data;
  wire window_valid, window_ready;
  {first_name} window (
    .clk(clk), .rst(rst), .in0_data(in0_data), .in0_valid(in0_valid), .in0_ready(in0_ready),
    .out_data(window_data), .out_valid(window_valid), .out_ready(window_ready)
  );
  {second_name} compute (
    .clk(clk), .rst(rst), .in0_data(window_data), .in0_valid(window_valid), .in0_ready(window_ready),
    .out_data(out_data), .out_valid(out_valid), .out_ready(out_ready){tap_pass}
  );
endmodule
"""
    return Unit(first.modules + second.modules + [text], {**first.mems, **second.mems}, "", 0)
