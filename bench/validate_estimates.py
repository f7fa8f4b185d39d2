"""Validate edgebnn.estimate against published hls4ml synthesis results.

    python bench/validate_estimates.py [CSV] [--no-keras]

For every row of the CSV (default: the shared reference file) whose architecture the
deployment graph can express and this script rebuilds (chains of Dense and relu; Conv2D,
MaxPool2D and Flatten now freeze, export and estimate, but the Keras rebuild of convolution rows
is not written yet, so they are listed as not covered with that reason), the design is rebuilt through the
public API: a Keras model of that architecture and precision (``QuantDense`` with
``quantized_bits`` quantizers, relu, ``QuantActivation`` casts) -> ``edgebnn.freeze`` ->
``edgebnn.estimate`` with the row's board (found by its part), strategy, reuse factor,
io_type, clock and the types hls4ml built it with (``types=``). Nothing depends on the row's
name. Other rows are listed with the reason they are not covered.

Weights: the CSV holds none. Each layer's weights are drawn at random (seeded) from Keras's
default initializer range (Glorot uniform), put on the row's weight grid with no zero among
them, and then the row's count of zero weights (``n_zero_weights``) is set to zero at random
positions across the whole network. Biases are left out (a bias is one more term of an adder
tree). A softmax that ends the design is stripped by ``freeze(..., strip_softmax=True)`` and
its hls4ml cost is added by the estimator (``graph.meta["stripped_softmax"]``);
BatchNormalization layers of the original designs are not part of an edgebnn graph and are
not estimated. Latency is estimated for the row's HLS tool (``hls_tool`` + ``hls_version``,
Vivado HLS vs Vitis HLS operator timing).

After the per-row table, the median errors are printed per source repository: no constant is
fitted to the CSV, so each repository's figures show how the fixed model does on a group of
designs built by one team with one tool.

Resources are compared with post-synthesis utilization (``vsynth_*``, BRAM tiles x 2 =
BRAM18) where the row has it, latency and II with the HLS report (``latency_max``,
``II_max``); the error against the HLS tool's own resource estimate (``csynth_*``) is printed
as well. The last line is exactly::

    median abs error: LUT x% FF y% DSP z% latency w%
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

DEFAULT_CSV = "/work/shared/reference/hls4ml_synthesis_results.csv"
SEED = 0

_TYPE = re.compile(r"ap_(u?)fixed<\s*(\d+)\s*,\s*(-?\d+)[^>]*>")


class NotCovered(Exception):
    """A row the estimator cannot rebuild yet; the message says why."""


# ----------------------------------------------------------------------------- parsing


def parse_types(text: str) -> list[tuple[bool, int, int]]:
    """(signed, width, integer) of every ap_fixed / ap_ufixed in ``text``, in order."""
    return [(u != "u", int(w), int(i)) for u, w, i in _TYPE.findall(text or "")]


def parse_architecture(text: str) -> list[tuple[str, int, int]]:
    """The chain as (kind, n_in, n_out) steps: ("dense", a, b), ("relu", n, n)."""
    steps = []
    if re.search(r"LSTM|GRU|RNN", text):
        raise NotCovered("recurrent layers have no graph node")
    if re.search(r"DWConv|PWConv|SeparableConv|DepthwiseConv", text):
        raise NotCovered("depthwise / separable convolution has no graph node yet (only Conv2D)")
    if re.search(r"Conv", text):
        raise NotCovered(
            "convolution row: Conv2D, MaxPool2D and Flatten are modelled, but this script's Keras "
            "rebuild of convolution rows is not written yet"
        )
    for token in re.split(r"\s*->\s*(?![^()]*\))", text.split(" (")[0] if text.startswith("Input(") else text):
        token = token.strip()
        m = re.fullmatch(r"Dense\((\d+)->(\d+)\)(\+ReLU)?", token)
        if m:
            steps.append(("dense", int(m[1]), int(m[2])))
            if m[3]:
                steps.append(("relu", int(m[2]), int(m[2])))
        elif token.lower().startswith("relu"):
            steps.append(("relu", steps[-1][2], steps[-1][2]))
        elif token.lower() == "softmax":
            steps.append(("softmax", steps[-1][2], steps[-1][2]))
        elif token.lower() == "linear" or re.fullmatch(r"Input\(\d+\)", token):
            continue
        elif re.fullmatch(r"BN\(\d+\)", token):
            continue  # not estimated (see the module docstring)
        else:
            raise NotCovered(f"layer {token!r} is not modelled")
    if not any(s[0] == "dense" for s in steps):
        raise NotCovered("no Dense layer")
    return steps


def design_of(row: dict) -> dict:
    """Everything the rebuild needs from one CSV row (raises NotCovered)."""
    if row["model_type"] != "MLP":
        parse_architecture(row["architecture"])  # the precise reason, where there is one
        raise NotCovered(f"{row['model_type']} (convolution rows come with convolution export)")
    steps = parse_architecture(row["architecture"])
    weights = parse_types(row["weight_precision"])
    acts = parse_types(row["activation_precision"])
    accum = parse_types(row["accum_precision"])
    if not weights or not acts or not accum:
        raise NotCovered("precision columns cannot be read")
    signed_acts = [t for t in acts if t[0]]
    unsigned_acts = [t for t in acts if not t[0]]
    default = (True, 16, 6)
    data = default if default in acts else signed_acts[0]  # inputs and dense results
    relu = unsigned_acts[0] if unsigned_acts else data  # relu outputs
    rfs = [int(v) for v in row["reuse_factor"].split(";")]
    strategies = row["strategy"].split(";")
    if len(set(rfs)) > 1 or len(set(strategies)) > 1:
        raise NotCovered("per-layer reuse factors or strategies")
    n_weights = sum(a * b for kind, a, b in steps if kind == "dense")
    if n_weights != int(row["n_weights"]):
        raise NotCovered(f"architecture has {n_weights} weights, the row says {row['n_weights']}")
    try:
        zeros = int(row["n_zero_weights"])
    except ValueError:
        raise NotCovered(f"n_zero_weights is {row['n_zero_weights']!r}, not a count") from None
    notes = row.get("notes", "")
    multipliers = "dsp" if "forced to DSP" in notes else "lut" if "forced to fabric" in notes else "auto"
    if any(kind == "softmax" for kind, _, _ in steps[:-1]):
        raise NotCovered("a softmax before the last layer")
    return {
        "steps": steps,
        "weight": weights[0],
        "data": data,
        "relu": relu,
        "accum": accum[0],
        "reuse_factor": rfs[0],
        "strategy": strategies[0].capitalize(),
        "io_type": row["io_type"],
        "clock": float(row["clock_ns"]),
        "part": row["part"],
        "zeros": zeros,
        "multipliers": multipliers,
        "hls_tool": f"{row['hls_tool']} {row['hls_version']}",
        "source": row["source_repo"],
    }


def board_for_part(part: str):
    from edgebnn.boards import list_boards

    device = part.lower().split("-")[0]
    for board in list_boards():
        norm = board.part.lower().replace("-", "")
        if norm.startswith(device) and not norm[len(device) : len(device) + 1].isdigit():
            return board
    raise NotCovered(f"no board profile has the device of part {part}")


def fixed_string(t) -> str:
    signed, width, integer = t
    return f"{'' if signed else 'u'}fixed<{width},{integer}>"


# ----------------------------------------------------------------------------- weights


def draw_weights(design: dict, seed: int = SEED) -> list[np.ndarray]:
    """Integer codes per dense layer: Glorot-uniform values on the weight grid, no zero among
    them, then exactly ``zeros`` of all the network's weights set to zero."""
    rng = np.random.default_rng(seed)
    signed, width, integer = design["weight"]
    lsb = 2.0 ** (integer - width)
    hi_code = 2 ** (width - signed) - 1
    lo_code = -(2 ** (width - 1)) if signed else 0
    layers = []
    for kind, n_in, n_out in design["steps"]:
        if kind != "dense":
            continue
        limit = np.sqrt(6.0 / (n_in + n_out))
        codes = np.round(rng.uniform(-limit, limit, size=(n_in, n_out)) / lsb).astype(np.int64)
        codes = np.clip(codes, lo_code, hi_code)
        zero = codes == 0
        codes[zero] = rng.choice([c for c in (1, -1) if lo_code <= c <= hi_code], size=int(zero.sum()))
        layers.append(codes)
    flat = np.concatenate([c.ravel() for c in layers])
    flat[rng.choice(flat.size, size=min(design["zeros"], flat.size), replace=False)] = 0
    out, start = [], 0
    for c in layers:
        out.append(flat[start : start + c.size].reshape(c.shape))
        start += c.size
    return out


# ----------------------------------------------------------------------------- rebuilding


def build_graph(design: dict, weights: list[np.ndarray]):
    """The row's design as a deployment graph: Keras model -> edgebnn.freeze."""
    import keras

    import edgebnn  # noqa: F401  (registers the layers)
    from edgebnn.freeze import freeze
    from edgebnn.layers import QuantActivation, QuantDense

    def qbits(t):
        signed, width, integer = t
        return f"quantized_bits({width}, {integer - signed}, keep_negative={signed})"

    steps = design["steps"]
    n_in = steps[0][1]
    layers, dense_layers, wi = [keras.Input((n_in,))], [], 0
    first = True
    for i, (kind, _, b) in enumerate(steps):
        if kind == "dense":
            layer = QuantDense(
                b,
                input_quantizer=qbits(design["data"]) if first else None,
                kernel_quantizer=qbits(design["weight"]),
                use_bias=False,
                name=f"dense{wi}",
            )
            layers.append(layer)
            dense_layers.append((layer, weights[wi]))
            wi += 1
            first = False
            relu_next = i + 1 < len(steps) and steps[i + 1][0] == "relu"
            last = all(k != "dense" for k, _, _ in steps[i + 1 :])
            # between layers hls4ml casts the dense result to its result type; the last dense
            # writes its result type itself (types= below), no activation layer follows it
            if not relu_next and not last:
                layers.append(QuantActivation(qbits(design["data"]), name=f"result{wi - 1}"))
        elif kind == "softmax":  # hls4ml's softmax: stripped by freeze, its cost added by the estimator
            layers.append(keras.layers.Activation("softmax", name="softmax"))
        else:
            layers.append(keras.layers.Activation("relu", name=f"relu{wi - 1}"))
            layers.append(QuantActivation(qbits(design["relu"]), name=f"relu{wi - 1}_out"))
    model = keras.Sequential(layers)
    _, width, integer = design["weight"]
    lsb = 2.0 ** (integer - width)
    for layer, codes in dense_layers:
        layer.kernel.assign((codes * lsb).astype("float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return freeze(model, name="row", strip_softmax=True)


def estimate_row(design: dict, graph):
    from edgebnn.estimate import estimate

    accum = fixed_string(design["accum"])
    types = {n.name: {"accum": accum, "result": fixed_string(design["data"])} for n in graph.compute_nodes() if n.op == "dense"}
    return estimate(
        graph,
        board_for_part(design["part"]),
        strategy=design["strategy"],
        reuse_factor=design["reuse_factor"],
        io_type=design["io_type"],
        clock_period=design["clock"],
        utilization_limit=1.0,
        types=types,
        multipliers=design["multipliers"],
        hls_tool=design["hls_tool"],
    )


# ----------------------------------------------------------------------------- comparing


def _num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def rel_error(est, true):
    if true is None:
        return None
    if true == 0:
        return 0.0 if est == 0 else 100.0
    return 100.0 * abs(est - true) / true


def cycles_ok(est, true):
    return abs(est - true) <= max(3, 0.2 * true)


def compare(row: dict, est) -> dict:
    tot = est.totals
    mine = {
        "LUT": tot["lut"],
        "FF": tot["ff"],
        "DSP": tot["dsp"],
        "BRAM18": tot["bram18"],
        "latency": est.latency_cycles,
        "II": est.ii,
    }
    vs = {
        "LUT": _num(row["vsynth_LUT"]),
        "FF": _num(row["vsynth_FF"]),
        "DSP": _num(row["vsynth_DSP"]),
        "BRAM18": None if _num(row["vsynth_BRAM_tiles"]) is None else 2 * _num(row["vsynth_BRAM_tiles"]),
    }
    cs = {
        "LUT": _num(row["csynth_LUT"]),
        "FF": _num(row["csynth_FF"]),
        "DSP": _num(row["csynth_DSP"]),
        "BRAM18": _num(row["csynth_BRAM_18K"]),
    }
    hls = {"latency": _num(row["latency_max"]), "II": _num(row["II_max"])}
    return {
        "id": row["id"],
        "name": row["short_name"],
        "group": row["replicate_group"] or row["short_name"],
        "source": row["source_repo"],
        "tool": f"{row['hls_tool']} {row['hls_version']}",
        "est": mine,
        "vsynth": vs,
        "csynth": cs,
        "hls": hls,
        "err_v": {k: rel_error(mine[k], v) for k, v in vs.items()},
        "err_c": {k: rel_error(mine[k], v) for k, v in cs.items()},
        "err_t": {k: rel_error(mine[k], v) for k, v in hls.items()},
        "ok_t": {k: v is not None and cycles_ok(mine[k], v) for k, v in hls.items()},
    }


def _fmt(v):
    return "-" if v is None else f"{v:.0f}"


def _pct(v):
    return "-" if v is None else f"{v:.0f}%"


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def print_report(results: list[dict], skipped: list[tuple[str, str, str]], out=sys.stdout):
    p = lambda *a: print(*a, file=out)
    p(
        f"{len(results)} rows estimated; weights are random (seed {SEED}, Glorot-uniform on each row's weight grid, "
        "with the row's count of zero weights set to zero), biases and BatchNorm left out; a trailing softmax is "
        "stripped by freeze and estimated as hls4ml's (stable) softmax; latency uses the row's HLS tool"
    )
    p(
        "resources vs post-synthesis (vsynth; '-' where the row has none) and vs the HLS estimate (csynth); "
        "latency and II vs the HLS report"
    )
    head = f"{'id':>3} {'name':<30} {'what':<8} {'estimate':>9} {'vsynth':>9} {'err':>6} {'csynth':>9} {'err':>6}"
    p(head)
    p("-" * len(head))
    for r in results:
        for k in ("LUT", "FF", "DSP", "BRAM18"):
            p(
                f"{r['id']:>3} {r['name'][:30]:<30} {k:<8} {_fmt(r['est'][k]):>9} {_fmt(r['vsynth'][k]):>9} "
                f"{_pct(r['err_v'][k]):>6} {_fmt(r['csynth'][k]):>9} {_pct(r['err_c'][k]):>6}"
            )
        for k in ("latency", "II"):
            ok = "ok" if r["ok_t"][k] else "off"
            p(
                f"{r['id']:>3} {r['name'][:30]:<30} {k:<8} {_fmt(r['est'][k]):>9} {_fmt(r['hls'][k]):>9} "
                f"{_pct(r['err_t'][k]):>6} {'':>9} {ok:>6}"
            )
    if skipped:
        p("")
        p(f"{len(skipped)} rows not covered:")
        for rid, name, why in skipped:
            p(f"{rid:>3} {name:<34} {why}")
    p("")
    n_v = sum(r["vsynth"]["LUT"] is not None for r in results)
    lat_ok = sum(r["ok_t"]["latency"] for r in results)
    ii_ok = sum(r["ok_t"]["II"] for r in results)
    p(
        f"latency within 20% or 3 cycles: {lat_ok}/{len(results)} rows; II: {ii_ok}/{len(results)} rows; "
        f"median abs error II {_median(r['err_t']['II'] for r in results):.1f}%"
    )
    p(
        "median abs error vs csynth (all rows): "
        + " ".join(f"{k} {_median(r['err_c'][k] for r in results):.1f}%" for k in ("LUT", "FF", "DSP"))
    )
    # held-out view: the constants are fixed (nothing is fitted), so the error of each source
    # repository's rows is what a new repository's rows would see if they behave alike
    p("per source repository (constants fixed; latency ok = within 20% or 3 cycles):")
    for src in sorted({r["source"] for r in results}):
        rs = [r for r in results if r["source"] == src]
        tools = ", ".join(sorted({r["tool"] for r in rs}))
        has_v = any(r["vsynth"]["LUT"] is not None for r in rs)
        which, key = ("vsynth", "err_v") if has_v else ("csynth", "err_c")
        res = which + " " + " ".join(f"{k} {_median(r[key][k] for r in rs):.1f}%" for k in ("LUT", "FF", "DSP"))
        p(
            f"  {src} ({len(rs)} rows; {tools}): latency {_median(r['err_t']['latency'] for r in rs):.1f}% "
            f"(ok {sum(r['ok_t']['latency'] for r in rs)}/{len(rs)}), II ok {sum(r['ok_t']['II'] for r in rs)}/{len(rs)}; "
            f"{res}"
        )
    # leave-one-source-out: the medians without each repository's rows (nothing is fitted, so
    # this shows how much one repository's designs move the headline figures)
    sources = sorted({r["source"] for r in results})
    if len(sources) > 1:
        p("leave-one-source-out median abs error (vsynth resources, latency):")
        for src in sources:
            rest = [r for r in results if r["source"] != src]
            p(
                f"  without {src}: "
                + " ".join(f"{k} {_median(r['err_v'][k] for r in rest):.1f}%" for k in ("LUT", "FF", "DSP"))
                + f" latency {_median(r['err_t']['latency'] for r in rest):.1f}%"
            )
    p(f"resource medians below are over the {n_v} rows with post-synthesis results; latency over all {len(results)} rows")
    p(
        "median abs error: "
        + " ".join(f"{k} {_median(r['err_v'][k] for r in results):.1f}%" for k in ("LUT", "FF", "DSP"))
        + f" latency {_median(r['err_t']['latency'] for r in results):.1f}%"
    )


def run(csv_path: str, out=sys.stdout, builder=None):
    builder = builder or build_graph
    with open(csv_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    results, skipped = [], []
    for row in rows:
        try:
            design = design_of(row)
            board_for_part(design["part"])
        except NotCovered as why:
            skipped.append((row["id"], row["short_name"], str(why)))
            continue
        graph = builder(design, draw_weights(design))
        results.append(compare(row, estimate_row(design, graph)))
    print_report(results, skipped, out)
    return results, skipped


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="?", default=DEFAULT_CSV, help="CSV with the reference file's columns")
    args = ap.parse_args(argv)
    run(args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
