"""Building blocks the hls4ml op costs share, each defined once.

* Constants in hardware: a constant product needs as many shifted copies of the input as its
  canonical signed-digit form has non-zero digits (:func:`_csd_digits`); a constant's
  effective width is its odd part plus a sign bit (trailing zeros are a free shift,
  :func:`_signed_bits`); Vivado's generic LUT multiplier keeps one partial product per ``1``
  bit of the binary magnitude (:func:`_popcount`).
* Balanced adder trees (:func:`_adder_tree`): level ``l`` halves the partial sums, each
  ``min(acc_bits, term_bits + l)`` bits wide.
* DSP slices per product (:func:`_dsp_slices`): one DSP48E1 multiplies 25x18 signed bits, a
  DSP48E2 27x18 (UG479, UG579); a wider product takes
  ``min(ceil(a/A)*ceil(b/B), ceil(a/B)*ceil(b/A))`` slices.
* RAMB18 (:func:`_bram18`): a memory ``depth`` words deep and ``width`` bits wide takes
  ``ceil(width / port) * ceil(depth / max_depth)`` BRAM18 with the widest port for that depth
  (512x36, 1Kx18, 2Kx9, 4Kx4, 8Kx2, 16Kx1; UG473, UG573).
* Line buffers of io_stream windows (:func:`_line_buffers`): hls4ml keeps ``k - 1`` rows per
  channel as ``ap_shift_reg`` of the input width ``W``, built as SRL32 LUTs (``ceil(W / 32)``
  LUTs per bit) up to ``line_buffer_srl_max_depth`` and in BRAM18 beyond.
* Reuse factors: hls4ml 1.3.0's valid ones for a Resource dense (:func:`valid_reuse_factors`,
  ``FPGABackend._validate_reuse_factor``) and its snapping of an invalid one to the nearest
  (:func:`_closest_reuse_factor`, ``get_closest_reuse_factor``).
* Design-wide rules: io_stream FIFOs and stream reads/writes (:func:`_stream`), the logic
  Vivado removes because nothing reads it (:func:`_live_outputs`), and Vivado's cap on DSP
  inference at the device's count (:func:`_cap_dsp`).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from edgebnn.boards import Board
from edgebnn.graph import Graph, Node
from edgebnn.graph.ops._oned import as_2d, row

from ..ops._merge import merge_steps
from .context import ModelConstants, _Context
from .row import LayerEstimate


def _matrix_shape(node: Node) -> tuple[int, int]:
    """(n_in, n_out) of a dense node's weights, or of a conv2d (depthwise_conv2d: its full
    kernel's) node's im2col dense unit."""
    w = node.params["weight"]
    return (int(np.prod(w.shape[:-1])), int(node.shape[-1]))


def _positions(node: Node) -> int:
    """Positions of a node's last axis (pixels of an image, 1 for a vector)."""
    return int(np.prod(node.shape[:-1])) if len(node.shape) > 1 else 1


def _signed_bits(magnitude: np.ndarray, signed: bool) -> np.ndarray:
    """Bits of a constant's odd part (trailing zeros are a free shift), plus the sign bit."""
    m = magnitude.astype(np.int64)
    odd = m // np.where(m > 0, m & -m, 1)
    bits = np.zeros(m.shape, dtype=np.int64)
    while np.any(odd > 0):
        bits += odd > 0
        odd >>= 1
    return bits + (1 if signed else 0)


def _popcount(magnitude: np.ndarray) -> np.ndarray:
    """'1' bits of each constant's binary magnitude."""
    n = magnitude.astype(np.int64).copy()
    ones = np.zeros(n.shape, dtype=np.int64)
    while np.any(n > 0):
        ones += n & 1
        n >>= 1
    return ones


def _csd_digits(magnitude: np.ndarray) -> np.ndarray:
    """Non-zero digits of each constant in canonical signed-digit (non-adjacent) form: a
    constant multiplier is that many shifted copies of the input added together."""
    n = magnitude.astype(np.int64).copy()
    digits = np.zeros(n.shape, dtype=np.int64)
    while np.any(n > 0):
        odd = (n & 1) == 1
        d = np.where(odd, 2 - (n & 3), 0)  # +1 or -1 where odd
        digits += odd
        n = (n - d) >> 1
    return digits


def _adder_tree(terms: np.ndarray, term_bits: int, acc_bits: int) -> tuple[int, int]:
    """Two-input adders and their summed widths for balanced trees over ``terms`` inputs each:
    level ``l`` halves the partial sums, each ``min(acc_bits, term_bits + l)`` bits wide."""
    t = terms.astype(np.int64).copy()
    adders = bits = 0
    level = 1
    while np.any(t > 1):
        n = int((t // 2).sum())
        adders += n
        bits += n * min(acc_bits, term_bits + level)
        t = t - t // 2
        level += 1
    return adders, bits


def _dsp_slices(a: np.ndarray, b: np.ndarray, ports: tuple[int, int]) -> np.ndarray:
    """DSP slices for products of ``a`` x ``b`` bits on slices with ``ports`` (A, B) inputs."""
    pa, pb = ports
    one = np.ceil(a / pa) * np.ceil(b / pb)
    two = np.ceil(a / pb) * np.ceil(b / pa)
    return np.minimum(one, two).astype(np.int64)


def valid_reuse_factors(n_in: int, n_out: int) -> list[int]:
    """hls4ml 1.3.0's valid reuse factors for a Resource dense (``FPGABackend._validate_reuse_factor``)."""
    n = n_in * n_out
    divisors = sorted({d for i in range(1, math.isqrt(n) + 1) if n % i == 0 for d in (i, n // i)})
    out = []
    for rf in divisors:
        mult_limit = math.ceil(n / min(n_in, rf))
        if (mult_limit % n_out == 0 or rf >= n_in) and (rf % n_in == 0 or rf < n_in):
            out.append(rf)
    return out


def _closest_reuse_factor(valid: list[int], chosen: int) -> int:
    """hls4ml's ``get_closest_reuse_factor``: nearest valid value, the smaller one on a tie."""
    pos = bisect.bisect_left(valid, chosen)
    if pos == 0:
        return valid[0]
    if pos == len(valid):
        return valid[-1]
    before, after = valid[pos - 1], valid[pos]
    return after if after - chosen < chosen - before else before


def _bram18(width_bits: int, depth: int, shapes) -> int:
    """RAMB18 blocks of a memory ``depth`` words deep, ``width_bits`` wide (``shapes`` as
    ``ModelConstants.bram18_shapes``)."""
    for max_depth, port in shapes:
        if depth <= max_depth:
            return math.ceil(width_bits / port)
    max_depth, port = shapes[-1]
    return math.ceil(width_bits / port) * math.ceil(depth / max_depth)


def _line_buffers(kernel_rows: int, channels: int, bits: int, depth: int, c: ModelConstants) -> tuple[int, int, int]:
    """io_stream line buffers of a ``kernel_rows``-high window: ``kernel_rows - 1`` shift
    registers per channel, ``depth`` (the input width) elements of ``bits`` bits. Returns
    (shift registers one bit wide, their LUTs as SRL32, their BRAM18 past the SRL depth)."""
    lines = max(kernel_rows - 1, 0) * channels * bits
    if lines and depth > c.line_buffer_srl_max_depth:
        return lines, 0, _bram18(lines, depth, c.bram18_shapes)
    return lines, lines * math.ceil(depth / c.srl_bits_per_lut), 0


def _window_counters(c: ModelConstants) -> tuple[int, int]:
    """(LUT, FF) of an io_stream 2-D window's pixel and stride counters: ``stream_window_counters``
    registers of ``stream_counter_bits``, each with an adder and a compare-and-select (one LUT
    per bit for each)."""
    bits = c.stream_window_counters * c.stream_counter_bits
    return math.ceil(bits * (c.lut_per_adder_bit + c.lut_per_compare_bit)), bits


def _pool_frame(node: Node, src: Node, ctx: _Context, widths, cycles: int, out_bits: int) -> dict:
    """What hls4ml's pooling layers share around their window logic (``ph x pw`` windows over
    ``C`` channels, ``Wx`` the input width):

    * io_parallel: one window unit per output element (``Ho*Wo*C``); II 1, latency the unit's
      ``cycles`` plus the tool's layer boundary, whose output registers (``out_bits`` per
      element) exist only where the boundary is a cycle.
    * io_stream: line buffers as for conv2d (``(ph-1) * C`` shift registers of ``W * Wx`` bits,
      :func:`_line_buffers`), the ``ph*pw*C*Wx`` window in FFs, the window's counters
      (:func:`_window_counters`, counted with the line buffers' LUTs) and ``C`` units used once
      per input pixel: ``II = H*W``, latency ``H*W`` plus the unit's ``cycles``.

    Returns ``units``, ``ff``, ``bram``, ``line_lut``, ``latency`` and ``ii``."""
    ph, pw = node.attrs["pool"]
    ch = int(node.shape[-1])
    wx = widths[src.name]["result"].width
    if ctx.io_type == "io_stream":
        pixels = src.shape[0] * src.shape[1]
        _, line_lut, bram = _line_buffers(ph, ch, wx, src.shape[1], ctx.c)
        counter_lut, counter_ff = _window_counters(ctx.c)
        return {
            "units": ch,
            "ff": ph * pw * ch * wx + counter_ff,
            "bram": bram,
            "line_lut": line_lut + counter_lut,
            "latency": pixels + cycles,
            "ii": pixels,
        }
    units = int(np.prod(node.shape))
    return {
        "units": units,
        "ff": units * out_bits if ctx.boundary else 0,
        "bram": 0,
        "line_lut": 0,
        "latency": cycles + ctx.boundary,
        "ii": 1,
    }


def _fifo(depth: int, word_bits: int, c: ModelConstants) -> tuple[int, int, int]:
    """(LUT, FF, BRAM18) of an hls::stream FIFO ``depth`` words of ``word_bits`` deep: up to
    ``stream_fifo_register_depth`` words it is registers; up to ``stream_fifo_srl_max_depth``
    an SRL32 shift register (``ceil(depth / 32)`` LUTs per bit, the output word registered);
    deeper a RAMB18 memory (``_bram18``), as Vivado maps the FIFOs HLS writes. Measured: an
    hls4ml CNN's 676-deep 64-bit FIFOs took BRAM (CSV row 2: 19,550 LUT, 15,004 FF, 5 tiles),
    not the 43,264 FFs of their bits."""
    if depth <= c.stream_fifo_register_depth:
        return 0, depth * word_bits, 0
    if depth <= c.stream_fifo_srl_max_depth:
        return word_bits * math.ceil(depth / c.srl_bits_per_lut), word_bits, 0
    return 0, 0, _bram18(word_bits, depth, c.bram18_shapes)


def _stream(row: LayerEstimate, node: Node | None, ctx: _Context, widths, bits: int = 0, depth: int = 1) -> LayerEstimate:
    """io_stream: each node's output goes through a FIFO as deep as its positions (pixels; 1
    for a vector; ``depth`` words of ``bits`` for a row without a node), a word per position of the last
    axis's values (:func:`_fifo`: registers, SRL or BRAM by depth), and the node reads and
    writes its stream: ``stream_cycles`` more. hls4ml's
    dense(stream) reads all inputs, runs the dense and writes all outputs in sequence (only
    the dense inside is pipelined), ``stream_dense_overhead_cycles`` more, so its II is its
    whole latency (DATAFLOW's II is the slowest process's); it copies its input stream into a
    completely partitioned ``data[n_in]`` array and holds ``res[n_out]`` until its write loop
    has sent it, ``n_in * Wx + n_out * Wr`` more register bits. io_parallel rows pass as they are."""
    if ctx.io_type != "io_stream":
        return row
    if node is not None:
        depth = _positions(node)
        word = int(node.shape[-1]) * widths[node.name]["result"].width
    else:
        word = bits
    fifo_lut, fifo_ff, fifo_bram = _fifo(depth, word, ctx.c)
    latency = row.latency + ctx.c.stream_cycles
    ii = row.ii
    arrays = 0
    if row.op == "dense":
        latency += ctx.c.stream_dense_overhead_cycles
        ii = max(ii, latency)
        # dense(stream) copies its input stream into a completely partitioned data[n_in] array
        # (DataPrepare loop), runs the dense on it and keeps res[n_out] until the ResWrite loop
        # has written it out: both arrays live across the process's sequential phases, so they
        # are registers (n_in * Wx + n_out * Wr bits) besides the dense's own pipeline registers
        arrays = row.detail["n_in"] * row.detail["input_bits"] + row.detail["n_out"] * row.detail["result_bits"]
    return dataclasses.replace(
        row,
        lut=row.lut + fifo_lut,
        ff=row.ff + fifo_ff + arrays,
        bram18=row.bram18 + fifo_bram,
        latency=latency,
        ii=ii,
        detail={
            **row.detail,
            "stream_fifo_bits": depth * word,
            "stream_fifo_depth": depth,
            "stream_array_bits": arrays,
            # dense(stream) writes its outputs only after its whole latency (Estimate.latency_cycles)
            "stream_writes_at_end": row.op == "dense",
        },
    )


def _live_outputs(graph: Graph, strategy: str, rf_of: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Per node, which elements of its last axis some later node reads (Vivado removes the
    logic of an unread value). A dense with constant weights (Latency strategy, or Resource
    with ``R = 1``) reads input ``i`` only when row ``i`` of its weights has a non-zero entry
    in a live output column; a cast and an add read what they write live, a concatenate the
    channels it writes live from each input; anything else (a threshold,
    weights in memory, the graph's output) reads or is everything."""
    nodes = graph.compute_nodes()
    live: dict[str, np.ndarray] = {}
    for node in reversed(nodes):
        width = int(node.shape[-1])
        readers = [n for n in nodes if node.name in n.inputs]
        if not readers:
            live[node.name] = np.ones(width, dtype=bool)
            continue
        need = np.zeros(width, dtype=bool)
        for r in readers:
            out = live[r.name]
            if r.op == "dense" and not (strategy == "Resource" and rf_of[r.name] > 1):
                w = np.asarray(r.params["weight"])
                need |= (w[:, out] != 0).any(axis=1)
            elif r.op in ("cast", "add"):
                need |= out
            elif r.op == "concatenate":  # the slice of the channels it writes from this node
                offsets = np.cumsum([0] + [graph[i].shape[-1] for i in r.inputs])
                for i, name in enumerate(r.inputs):
                    if name == node.name:
                        need |= out[offsets[i] : offsets[i + 1]]
            else:
                need |= True
        live[node.name] = need
    return live


def _cap_dsp(rows: list[LayerEstimate], board: Board, warnings: list[str]) -> list[LayerEstimate]:
    """Vivado's ``synth_design -max_dsp`` default: no more DSPs than the device has; the other
    multipliers are built from LUTs (taken evenly from every layer, ``lut_per_dsp`` LUTs each
    from the row's detail) and ``warnings`` says so."""
    need = sum(r.dsp for r in rows)
    if need <= board.dsp:
        return rows
    warnings.append(
        f"the design needs {need} DSPs but {board.name} has {board.dsp}; Vivado caps DSP use at the device's count "
        f"and builds the other {need - board.dsp} multipliers from LUTs (included in the LUT estimate)"
    )
    keep = board.dsp / need
    out = []
    for r in rows:
        if not r.dsp:
            out.append(r)
            continue
        dsp = math.floor(r.dsp * keep)
        moved = r.dsp - dsp
        extra = math.ceil(moved * r.detail.get("lut_per_dsp", 0.0))
        out.append(
            dataclasses.replace(
                r, dsp=dsp, lut=r.lut + extra, detail={**r.detail, "dsp_moved_to_lut": moved, "lut_for_moved_dsp": extra}
            )
        )
    return out


def _one_row(cost_2d, node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live) -> LayerEstimate:
    """The row of a 1-D node (conv1d, maxpool1d, avgpool1d, sumpool1d, zeropad1d) as ``cost_2d`` costs its one-row 2-D
    twin (``graph/ops/_oned.as_2d``: height 1), under the node's own op."""
    twin = cost_2d(as_2d(node), row(src), rf, ctx, widths, warnings, live)
    return dataclasses.replace(twin, op=node.op)


def _elementwise_frame(node: Node, ctx: _Context, live: np.ndarray | None, out_bits: int) -> dict:
    """What an elementwise hls4ml function costs besides its operators: the units it builds
    (the live elements; in io_stream one pixel's), its output registers where the tool's layer
    boundary is a cycle (``out_bits`` each), its latency and II (io_stream: one pixel per cycle)."""
    pixels = _positions(node)
    stream = ctx.io_type == "io_stream" and pixels > 1
    units = int(np.prod(node.shape)) if live is None else pixels * int(live.sum())
    if stream:
        units //= pixels
    latency = ctx.boundary
    ff = units * out_bits if latency else 0
    if stream:
        latency += pixels - 1
    return {"units": units, "ff": ff, "latency": latency, "ii": pixels if stream else 1}


def _clone(node: Node, copies: int, ctx: _Context, widths) -> LayerEstimate:
    """io_stream: hls4ml's ``Clone`` after a node that ``copies`` nodes read: one packet (a
    pixel) copied to every output stream per cycle, each copy a FIFO of the node's whole output
    (``H*W`` words of ``C * Wo`` bits, :func:`_fifo`, as ``_stream`` counts one); ``H*W`` cycles
    plus its stream cycle, II ``H*W``."""
    pixels = _positions(node)
    word = int(node.shape[-1]) * widths[node.name]["result"].width
    fifo = copies * pixels * word
    lut, ff, bram = (copies * v for v in _fifo(pixels, word, ctx.c))
    return LayerEstimate(
        f"clone_{node.name}",
        "clone",
        lut,
        ff,
        0,
        bram,
        0,
        pixels + ctx.c.stream_cycles,
        pixels,
        {"copies": copies, "stream_fifo_bits": fifo},
    )


def _longest_path(graph: Graph, rows: list[LayerEstimate]) -> tuple[str, ...]:
    """The rows on the path of the largest total latency from the input to the output: a node
    starts when its slowest input is done (a ``clone_<name>`` row sits between a node and its
    readers); a row without a node (the softmax) follows the output."""
    by_name = {r.name: r for r in rows}
    done: dict[str, tuple[int, tuple[str, ...]]] = {graph.input.name: (0, ())}
    for node in graph.compute_nodes():
        starts = []
        for name in node.inputs:
            t, path = done[name]
            clone = by_name.get(f"clone_{name}")
            if clone is not None:
                t, path = t + clone.latency, path + (clone.name,)
            starts.append((t, path))
        t, path = max(starts, key=lambda s: s[0])
        done[node.name] = (t + by_name[node.name].latency, path + (node.name,))
    nodes = {n.name for n in graph.nodes}
    return done[graph.output.name][1] + tuple(r.name for r in rows if r.name not in nodes and r.op != "clone")


def _merge_chain(node: Node, src: list[Node], ctx: _Context, widths, step_row) -> LayerEstimate:
    """A merge (add, concatenate) as hls4ml builds it: its two-input merges
    (``ops._merge.merge_steps``: one for two inputs), each costed by ``step_row(step, result_bits)``,
    a partial result's stream in io_stream as :func:`_stream` counts one (the node's own is added
    with its row), summed into one row: resources and latencies add (each merge waits for the one
    before), the II is the slowest merge's; ``detail`` is the last merge's with ``merges`` and the
    per-merge numbers summed."""
    steps = merge_steps(node, src, ctx.io_type)
    rows = []
    for step in steps:
        if step is steps[-1]:
            rows.append(step_row(step, widths[node.name]["result"].width))
        else:
            row = step_row(step, step.type.width)
            depth = int(np.prod(step.shape[:-1]))
            rows.append(_stream(row, None, ctx, widths, bits=int(step.shape[-1]) * step.type.width, depth=depth))
    last = rows[-1]
    detail = dict(last.detail, merges=len(steps), inputs=len(src))
    for key in ("adders", "adder_bits"):
        if key in last.detail:
            detail[key] = sum(r.detail[key] for r in rows)
    total = {key: sum(getattr(r, key) for r in rows) for key in ("lut", "ff", "dsp", "bram18", "uram", "latency")}
    return dataclasses.replace(last, name=node.name, ii=max(r.ii for r in rows), detail=detail, **total)
