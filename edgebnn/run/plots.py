"""The report's charts as SVG text: training curves, resources per layer, utilization per board and
the confusion matrix.

Each function returns one standalone ``<svg>`` document (no XML prolog, no DOCTYPE, no comments,
no external reference) drawn by matplotlib's Agg-free SVG writer with fixed settings: the same
input gives the same bytes (``svg.hashsalt`` fixed, no date or creator in the metadata, text kept
as ``<text>`` so it stays searchable and selectable). matplotlib is imported when a chart is
drawn, not with :mod:`edgebnn`. Strings from files (layer and board names) are never parsed as
mathtext and are escaped by the SVG writer.

Shapes drawn with an SVG ``id`` (matplotlib's ``gid``, made unique by a suffix) that tests and
styles can find by its start: ``limit-line`` (the utilization limit, in segments that leave gaps around
labels), ``over-mark`` (the mark at the end of a bar clipped at 100 %), ``value-label`` (a bar's
value) and ``best-epoch`` (the best epoch's line in the training curves).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

# The resources drawn (URAM is left out: most boards have none and the designs use none).
RESOURCES = (("lut", "LUT"), ("ff", "FF"), ("dsp", "DSP"), ("bram18", "BRAM18"))
COLORS = {"lut": "#4477aa", "ff": "#66ccee", "dsp": "#228833", "bram18": "#ccbb44"}
TRAIN_COLOR, VAL_COLOR, LR_COLOR, LIMIT_COLOR, OVER_COLOR = "#4477aa", "#ee6677", "#777777", "#aa3377", "#cc3311"

_RC = {
    "svg.hashsalt": "edgebnn",
    "svg.fonttype": "none",
    "svg.image_inline": True,
    "text.parse_math": False,
    "text.usetex": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "lines.linewidth": 1.6,
    "path.simplify": False,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.facecolor": "white",
}
_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


def _pyplot():
    """matplotlib's pyplot on the Agg backend, imported on first use."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _figure(width: float, height: float, **kw):
    plt = _pyplot()
    import matplotlib

    with matplotlib.rc_context(_RC):
        return plt.subplots(figsize=(width, height), **kw)


def _svg(fig) -> str:
    """The figure as standalone SVG text (deterministic), and the figure closed."""
    import matplotlib

    plt = _pyplot()
    buf = io.StringIO()
    try:
        with matplotlib.rc_context(_RC):
            fig.savefig(buf, format="svg", metadata=_METADATA)
    finally:
        plt.close(fig)
    text = buf.getvalue()
    text = re.sub(r"<\?xml[^>]*\?>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    text = re.sub(r"<!--.*?-->\s*", "", text, flags=re.S)
    return text.strip() + "\n"


def _as_dict(estimate) -> dict[str, Any]:
    return estimate if isinstance(estimate, Mapping) else estimate.to_dict()


def _floats(values) -> list[float]:
    """A curve's values as floats (a value not recorded as NaN, which leaves a gap)."""
    return [math.nan if v is None else float(v) for v in values]


def _pct(value: float | None) -> str:
    if value is None or math.isinf(value):
        return "board has 0"
    return f"{value:.0f}%" if value >= 10 else f"{value:.1f}%"


# ---------------------------------------------------------------------------------------- training
def training_curves(history: Mapping[str, Any], narrow: bool = False) -> str:
    """Loss, accuracy (train and, when present, validation) and the learning rate per epoch, as SVG;
    the best epoch (``history["best_epoch"]``) is marked in every panel. The panels stand side by
    side, or one above the other when ``narrow`` (for a phone's width)."""
    epochs = list(history.get("epoch") or range(1, len(history.get("loss", [])) + 1))
    has_lr = bool(history.get("learning_rate"))
    n = 3 if has_lr else 2
    fig, axes = _figure(4.2, 2.3 * n, nrows=n) if narrow else _figure(10.0, 3.0, ncols=n)
    panels = [
        (axes[0], "loss", "loss"),
        (axes[1], "accuracy", "accuracy"),
    ]
    best = history.get("best_epoch")
    with _rc():
        for ax, key, title in panels:
            if history.get(key):
                ax.plot(epochs, _floats(history[key]), color=TRAIN_COLOR, label="train")
            if history.get(f"val_{key}"):
                ax.plot(epochs, _floats(history[f"val_{key}"]), color=VAL_COLOR, label="validation")
            ax.set_title(title)
            ax.set_xlabel("epoch")
            if key == "accuracy":
                ax.yaxis.set_major_formatter(_percent_formatter())
        if has_lr:
            ax = axes[2]
            ax.plot(epochs, _floats(history["learning_rate"]), color=LR_COLOR, label="learning rate")
            ax.set_title("learning rate")
            ax.set_xlabel("epoch")
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        for ax_index, ax in enumerate(axes):
            ax.xaxis.set_major_locator(_integer_locator())
            if best is not None:
                ax.axvline(
                    best, color="#222222", linestyle=":", linewidth=1, gid=f"best-epoch-{ax_index}", label=f"best epoch ({best})"
                )
        for ax, _, _ in panels:
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="best")
        fig.tight_layout()
    return _svg(fig)


def _percent_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{100 * v:.0f}%")


def _integer_locator():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True, nbins=6)


def _rc():
    import matplotlib

    return matplotlib.rc_context(_RC)


# ---------------------------------------------------------------------------------- layer resources
def layer_resources(estimate, narrow: bool = False) -> str:
    """LUT, FF, DSP and BRAM18 of each node of one estimate (an :class:`~edgebnn.estimate.Estimate`
    or its ``to_dict()``), one panel per resource, a bar per node with its count, as SVG. Where
    the design needs more of a resource than the utilization limit allows, that panel also has a
    bar for the total (``total-bar``), the board's capacity (``capacity-line``) and the limit
    (``capacity-limit``), so the bars show how far over the board it is. The panels stand side by
    side, or one above the other when ``narrow``."""
    est = _as_dict(estimate)
    rows = est["rows"]
    n = len(rows)
    limit = float(est.get("utilization_limit") or 1.0)
    over = {key: sum(r[key] for r in rows) > limit * est["available"][key] for key, _ in RESOURCES}
    if narrow:
        fig, axes = _figure(4.2, sum(0.24 * (n + over[k]) + 0.9 for k, _ in RESOURCES), nrows=len(RESOURCES))
    else:
        fig, axes = _figure(10.0, max(1.8, 0.28 * (n + any(over.values())) + 1.0), ncols=len(RESOURCES), sharey=True)
    with _rc():
        for ax, (key, label) in zip(axes, RESOURCES):
            values = [r[key] for r in rows]
            capacity, total = est["available"][key], sum(values)
            ax.barh(range(n), values, color=COLORS[key], height=0.6)
            top = max(values, default=0) or 1
            if over[key]:
                ax.barh([n], [total], color=OVER_COLOR, height=0.6, gid=f"total-bar-{key}")
                top = max(total, capacity)
            right = top * (1.45 if narrow else 1.35)
            ax.set_xlim(0, right)
            # over the capacity lines, a label keeps a white ground so that it stays readable
            ground = {"bbox": {"facecolor": "white", "edgecolor": "none", "pad": 0.5}} if over[key] else {}
            for y, v in enumerate(values):
                gid = f"value-label-{key}-{y}"
                ax.text(v + right * 0.015, y, f"{v:,}", va="center", ha="left", fontsize=7, gid=gid, **ground)
            if over[key]:
                ax.text(total + right * 0.015, n, f"{total:,}", va="center", ha="left", fontsize=7, color=OVER_COLOR)
                ax.axvline(capacity, color="#222222", linewidth=1.2, gid=f"capacity-line-{key}")
                ax.axvline(limit * capacity, color=LIMIT_COLOR, linestyle=(0, (4, 2)), linewidth=1.0, gid=f"capacity-limit-{key}")
                ax.text(capacity, -0.55, f" board {capacity:,}", fontsize=7, va="bottom", ha="left")
            ax.set_title(f"{label} (total {total:,} of {capacity:,})", fontsize=9, color=OVER_COLOR if over[key] else "black")
            ax.set_xticks([])
            ax.spines["bottom"].set_visible(False)
            if narrow or ax is axes[0]:
                drawn = n + (over[key] if narrow else any(over.values()))
                ax.set_yticks(range(drawn), [r["name"] for r in rows] + ["total"] * (drawn - n))
                ax.set_ylim(drawn - 0.5, -1.1 if drawn > n else -0.5)
        fig.tight_layout()
    return _svg(fig)


# -------------------------------------------------------------------------------------- utilization
def utilization(estimates: Sequence, narrow: bool = False) -> str:
    """Utilization of each board, as SVG: one group per board, a bar per resource (LUT, FF, DSP,
    BRAM18) in % of the device, a legend and the utilization limit as a dashed line. A bar over
    100 % stops at the axis end with a mark (``over-mark``) and its real value as label; the limit
    line leaves a gap wherever a label lies across it. ``narrow``: drawn for a phone's width."""
    fig, _ = _utilization_figure(estimates, narrow)
    return _svg(fig)


def _utilization_figure(estimates: Sequence, narrow: bool = False):
    """The utilization chart as a matplotlib figure and its axes (for :func:`utilization`; tests
    measure where its labels and the limit line fall)."""
    ests = [_as_dict(e) for e in estimates]
    n_res = len(RESOURCES)
    bar_h, group_gap = 0.8, 1.0
    group_h = n_res * bar_h + group_gap
    height = max(2.4, 0.95 + 0.125 * n_res * len(ests) + 0.1 * len(ests))
    fig, ax = _figure(4.4 if narrow else 8.0, height)
    legend_cols = 3 if narrow else None
    with _rc():
        centers, labels = [], []
        spans = []  # (y0, y1) of each bar, to break the limit line around its label
        texts = []
        for g, est in enumerate(ests):
            top = g * group_h
            board = est["board"]["name"] if isinstance(est["board"], Mapping) else str(est["board"])
            fits = "fits" if est.get("fits") else "does not fit"
            centers.append(top + (n_res - 1) * bar_h / 2)
            labels.append(f"{board}\n{fits}")
            for i, (key, _name) in enumerate(RESOURCES):
                y = top + i * bar_h
                pct = est["utilization_percent"].get(key)
                shown = 100.0 if pct is None or pct > 100 else pct
                ax.barh(y, shown, height=bar_h * 0.85, color=COLORS[key], label=_name if g == 0 else None)
                over = pct is None or pct > 100
                if over:
                    mark = f"over-mark-{g}-{i}"
                    ax.plot([100.0], [y], marker=">", color=OVER_COLOR, markersize=7, clip_on=False, gid=mark, zorder=5)
                    t = ax.text(103.5, y, _pct(pct), va="center", ha="left", fontsize=7, color=OVER_COLOR, fontweight="bold")
                else:
                    t = ax.text(shown + 1.0, y, _pct(pct), va="center", ha="left", fontsize=7)
                t.set_gid(f"value-label-{g}-{i}")
                texts.append(t)
                spans.append((y - bar_h / 2, y + bar_h / 2))
        ax.set_xlim(0, 100)
        ax.set_ylim(len(ests) * group_h - group_gap + bar_h * 0.1, -bar_h * 0.9)
        ax.set_yticks(centers, labels)
        ax.set_xticks([0, 20, 40, 60, 80, 100], [f"{v}%" for v in (0, 20, 40, 60, 80, 100)])
        ax.set_xlabel("% of the device")
        ax.tick_params(axis="y", length=0)
        ax.spines["right"].set_visible(True)
        ax.spines["right"].set_linestyle((0, (1, 2)))
        limits = sorted({float(e["utilization_limit"]) for e in ests})
        # the legend sits above the axes, where the limit line never runs
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=legend_cols or n_res + 1, borderaxespad=0.3)
        fig.tight_layout()
        fig.subplots_adjust(right=0.8 if narrow else 0.86)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        inv = ax.transData.inverted()
        boxes = []
        for t in texts:
            bb = t.get_window_extent(renderer)
            (x0, y0), (x1, y1) = inv.transform([(bb.x0, bb.y0), (bb.x1, bb.y1)])
            boxes.append((min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)))
        y_lo, y_hi = sorted(ax.get_ylim())
        for limit in limits:
            x = 100.0 * limit
            pad = 0.15 * bar_h
            blocked = sorted((b[2] - pad, b[3] + pad) for b in boxes if b[0] - 0.8 <= x <= b[1] + 0.8)
            start = y_lo
            segments = []
            for b0, b1 in blocked:
                if b0 > start:
                    segments.append((start, b0))
                start = max(start, b1)
            if start < y_hi:
                segments.append((start, y_hi))
            for k, (s0, s1) in enumerate(segments):
                ax.plot(
                    [x, x],
                    [s0, s1],
                    color=LIMIT_COLOR,
                    linestyle=(0, (4, 2)),
                    linewidth=1.2,
                    gid=f"limit-line-{100 * limit:g}-{k}",
                    label=f"limit {100 * limit:g}%" if k == 0 else None,
                )
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=legend_cols or n_res + len(limits), borderaxespad=0.3)
    return fig, ax


# --------------------------------------------------------------------------------- confusion matrix
def confusion_matrix(matrix: Sequence[Sequence[int]], narrow: bool = False) -> str:
    """A confusion matrix (rows: true label, columns: predicted label) with its counts, as SVG
    (``narrow``: for a phone's width)."""
    import numpy as np

    m = np.asarray(matrix, dtype=np.int64)
    n = m.shape[0]
    size = min(4.4 if narrow else 7.0, max(3.0, 0.42 * n + 1.6))
    fig, ax = _figure(size, size * 0.9)
    with _rc():
        rows = m.sum(axis=1, keepdims=True)
        share = np.divide(m, rows, out=np.zeros(m.shape, dtype=np.float64), where=rows > 0)
        mesh = ax.pcolormesh(np.arange(n + 1) - 0.5, np.arange(n + 1) - 0.5, share, cmap="Blues", vmin=0.0, vmax=1.0)
        # the shade is a share of the row (a class's samples), not the count written in the cell
        bar = fig.colorbar(mesh, ax=ax, fraction=0.046, pad=0.04)
        # the scale is one rectangle filled with an SVG gradient (see _gradient_fill): matplotlib's
        # 256 cells, which browsers antialias one by one, show bands, and a bitmap is no vector
        bar.solids.set_visible(False)
        from matplotlib.patches import Rectangle

        bar.ax.add_patch(Rectangle((0, 0), 1, 1, transform=bar.ax.transAxes, facecolor=_FILL_MARK, gid="colour-scale", zorder=0))
        bar.set_label("share of the true label's samples", fontsize=8)
        bar.ax.tick_params(labelsize=7)
        for i in range(n):
            for j in range(m.shape[1]):
                if m[i, j]:
                    color = "white" if share[i, j] > 0.5 else "#222222"
                    ax.text(j, i, str(int(m[i, j])), ha="center", va="center", fontsize=7 if n > 12 else 8, color=color)
        ax.set_xlim(-0.5, m.shape[1] - 0.5)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_xticks(range(m.shape[1]))
        ax.set_yticks(range(n))
        ax.set_xlabel("predicted (deployed)")
        ax.set_ylabel("true label")
        ax.set_aspect("equal")
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.tick_params(length=0)
        fig.tight_layout()
    return _gradient_fill(_svg(fig), "colour-scale", "Blues")


# the colour a shape is drawn in to be filled by a gradient afterwards (not SVG's default black,
# which matplotlib leaves unwritten)
_FILL_MARK = "#123456"


def _gradient_fill(svg: str, gid: str, cmap: str) -> str:
    """``svg`` with the shape drawn under ``gid`` filled by a vertical gradient of the colormap
    ``cmap`` (its low end at the bottom)."""
    import matplotlib

    colormap = matplotlib.colormaps[cmap]
    stops = "".join(
        f'<stop offset="{k / 32:.5f}" stop-color="{matplotlib.colors.to_hex(colormap(1 - k / 32))}"/>' for k in range(33)
    )
    defs = f'<defs><linearGradient id="{gid}-gradient" x1="0" y1="0" x2="0" y2="1">{stops}</linearGradient></defs>'
    head, found, tail = svg.partition(f'<g id="{gid}">')
    if not found:
        raise ValueError(f"the chart has no shape {gid!r} to fill")
    shape, end, rest = tail.partition("</g>")
    if f"fill: {_FILL_MARK}" not in shape:
        raise ValueError(f"the shape {gid!r} is not filled with the mark colour")
    shape = shape.replace(f"fill: {_FILL_MARK}", f"fill: url(#{gid}-gradient)", 1)
    return head + defs + found + shape + end + rest
