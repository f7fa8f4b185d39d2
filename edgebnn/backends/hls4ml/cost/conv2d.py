"""Cost of a ``conv2d`` node as hls4ml 1.3.0 builds a 2-D convolution.

The multipliers are one im2col dense unit of ``n_in = kh*kw*C`` inputs and ``n_out = F``
outputs: the weights reshaped to ``(kh*kw*C, F)`` and costed by :mod:`.dense` (every dense
rule applies: zero and free products, multiplier kinds, ``multiplier_limit``, adder trees,
unread outputs, the reuse factor and its snapping). hls4ml pipelines the pixel loop at
``II = R`` whatever the multipliers need (``PIPELINE II=reuse_factor``), so the unit's interval
is ``II_u = max(II_dense, R)``. ``Wx`` is the input's width.

* io_parallel: ``conv_2d_latency_cl`` (``nnet_conv2d_latency.h``) runs the unit in
  ``PartitionLoop`` over ``P = Ho*Wo`` output pixels (ParallelizationFactor 1:
  ``n_pixels = 1``): ``II = P * II_u``, latency ``= dense latency + (P - 1) * II_u``. Its
  ``fill_buffer`` selects each window element from one of the ``P`` pixel positions: a
  ``P:1`` mux of ``Wx`` bits per window element, ``n_in * Wx * ceil((P-1) /
  (mux_inputs_per_lut - 1))`` LUTs (``im2col_mux`` in the detail), and the window buffer
  ``n_in * Wx`` FFs (both only when ``P > 1``).
* io_stream: ``conv_2d_buffer_cl`` (``nnet_conv2d_stream.h``) keeps ``kh - 1`` line buffers
  per channel, ``ap_shift_reg`` of ``W`` (the input width) elements: ``(kh-1) * C`` shift
  registers of ``W * Wx`` bits (``blocks._line_buffers``: SRL32 LUTs up to
  ``line_buffer_srl_max_depth``, BRAM18 beyond), the ``kh*kw*C`` window in FFs and its pixel
  and stride counters (``blocks._window_counters``). The pixel
  loop reads one input pixel per ``II_u`` cycles: ``II = H*W * II_u``, latency
  ``= II + dense latency``. Here the pixel interval is not ``R``: under the Latency strategy it
  is the shared multipliers' interval plus ``stream_latency_pixel_cycles`` (1 when that
  interval is 1), under Resource with ``R > 1`` the reuse loop drains before the next pixel:
  ``R + stream_resource_pixel_cycles`` (the CSV's io_stream CNN rows).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from edgebnn.graph import Node

from . import dense
from .blocks import _line_buffers, _window_counters
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a conv2d node: one im2col dense unit (:mod:`.dense`) used once per output
    pixel (io_parallel) or once per input pixel (io_stream line buffers)."""
    c = ctx.c
    w = np.asarray(node.params["weight"])
    kh, kw, ch, f = w.shape
    unit = dataclasses.replace(node, op="dense", shape=(f,), params={**node.params, "weight": w.reshape(-1, f)})
    row = dense.cost(unit, src, rf, ctx, widths, warnings, live)
    # the pixel loop is pipelined at II = R whatever the multipliers need (PIPELINE II=reuse_factor)
    ii_unit = max(row.detail["ii"], row.detail["reuse_factor"])
    if ctx.io_type == "io_stream":
        r = row.detail["reuse_factor"]
        if ctx.strategy == "Resource" and r > 1:
            ii_unit = r + c.stream_resource_pixel_cycles  # the reuse loop drains every pixel
        elif row.detail["ii"] > 1:
            ii_unit = row.detail["ii"] + c.stream_latency_pixel_cycles
        else:
            ii_unit = 1
    wx = widths[src.name]["result"].width
    n_in = kh * kw * ch
    lut, ff, bram = row.lut, row.ff, row.bram18
    detail = {**row.detail, "kernel": [kh, kw], "channels": ch, "filters": f}
    if ctx.io_type == "io_stream":
        h, wdt = src.shape[0], src.shape[1]
        pixels = h * wdt
        lines, line_lut, line_bram = _line_buffers(kh, ch, wx, wdt, c)
        counter_lut, counter_ff = _window_counters(c)
        bram += line_bram
        lut += line_lut + counter_lut
        ff += n_in * wx + counter_ff  # the window and its pixel/stride counters
        ii = pixels * ii_unit
        latency = ii + row.latency
        detail.update(pixels_in=pixels, line_buffer_bits=lines * wdt, line_buffer_lut=line_lut, window_counter_lut=counter_lut)
    else:
        p = int(np.prod(node.shape[:-1]))
        mux = n_in * wx * math.ceil((p - 1) / (c.mux_inputs_per_lut - 1)) if p > 1 else 0
        lut += mux
        ff += n_in * wx if p > 1 else 0
        ii = p * ii_unit
        latency = row.latency + (p - 1) * ii_unit
        detail.update(positions=p, im2col_mux=mux)
    return LayerEstimate(node.name, "conv2d", math.ceil(lut), ff, row.dsp, bram, 0, latency, ii, detail)
