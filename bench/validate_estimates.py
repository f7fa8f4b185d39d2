"""Validate edgebnn.estimate against published hls4ml synthesis results.

    python bench/validate_estimates.py [CSV] [--intervals]

For every row of the CSV (default: ``bench/reference/hls4ml_synthesis_results.csv``) whose
architecture the deployment graph can express (chains of Dense, Conv1D, Conv2D, depthwise and
pointwise Conv2D, MaxPool2D, MaxPool1D, GlobalMaxPool1D, Flatten, relu and a final softmax or sigmoid, and the
ZeroPad hls4ml inserts before a 2-D convolution; :func:`parse_architecture` reads both spellings
the table uses and checks every size against the chain), the design is rebuilt through the
public API: a Keras model of that architecture and precision (``QuantDense`` / ``QuantConv1D`` /
``QuantConv2D`` / ``QuantDepthwiseConv2D`` with ``quantized_bits`` quantizers, ``MaxPooling2D``, ``MaxPooling1D``,
``GlobalMaxPooling1D``, ``ZeroPadding2D``, ``Flatten``, relu, ``QuantActivation`` casts) ->
``edgebnn.freeze`` -> ``edgebnn.estimate`` with the row's board (found by its part), strategy,
reuse factor (a row listing several, as hls4ml snapped them per layer, gets the one model-wide
value that snaps to exactly those), io_type, clock and the types hls4ml built it with
(``types=``). Nothing depends on the row's name. Other rows are listed with the reason they are
not covered.

Weights: the CSV holds none. Each layer's weights are drawn at random (seeded) from Keras's
default initializer range (Glorot uniform over the kernel's fans), put on the row's weight grid
with no zero among them, and then the row's count of zero weights (``n_zero_weights``; a stated
share such as "~50%" gives that share of the weights) is set to zero at random positions across
the whole network. Biases are left out (a bias is one more term of an adder tree). A softmax
that ends the design is stripped by ``freeze(..., strip_softmax=True)`` and its hls4ml cost is
added by the estimator (``graph.meta["stripped_softmax"]``); a sigmoid that ends the design is
left out (freeze has no sigmoid; hls4ml's is one lookup per output in a 1,024-entry table, a
cycle or two and one small ROM, not estimated); BatchNormalization layers of the original
designs are not part of an edgebnn graph and are not estimated. Latency is estimated
for the row's HLS tool (``hls_tool`` + ``hls_version``, Vivado HLS vs Vitis HLS operator timing).

After the per-row table: the median errors per source repository, by op family (a design
counts under every family it has: the published figures are whole designs) and by design size
(weights), the leave-one-source-out view for every repository with 3 or more rows (its own
medians, and how many of its figures lie inside intervals derived from the other repositories'
rows), and how many figures lie inside the shipped intervals
(``edgebnn.estimate.intervals``). ``--intervals`` also prints the intervals these rows give, in
that module's form. Rows whose ``held_back`` column is 1 get their own medians (overall and by
design size) right after the per-row table and are left out of every summary after it and of
``--intervals``: no constant or interval was set from them.

Resources are compared with post-synthesis utilization (``vsynth_*``, BRAM tiles x 2 =
BRAM18) where the row has it, latency and II with the HLS report (``latency_max``,
``II_max``); the error against the HLS tool's own resource estimate (``csynth_*``) is printed
as well. Without ``--intervals`` the last line is exactly::

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

DEFAULT_CSV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference", "hls4ml_synthesis_results.csv")
SEED = 0

_TYPE = re.compile(r"ap_(u?)fixed<\s*(\d+)\s*,\s*(-?\d+)[^>]*>")


class NotCovered(Exception):
    """A row the estimator cannot rebuild yet; the message says why."""


# ----------------------------------------------------------------------------- parsing


def parse_types(text: str) -> list[tuple[bool, int, int]]:
    """(signed, width, integer) of every ap_fixed / ap_ufixed in ``text``, in order."""
    return [(u != "u", int(w), int(i)) for u, w, i in _TYPE.findall(text or "")]


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split("x"))


def _check(what: str, given, derived) -> None:
    if given is not None and tuple(given) != tuple(derived):
        raise NotCovered(f"{what}: the row says {given}, the chain before it gives {derived}")


def parse_architecture(text: str) -> list[tuple]:
    """The chain as steps: ("dense", a, b), ("relu"|"softmax"|"flatten", in, out) with ``in``
    and ``out`` sizes or shapes, and ("conv2d"|"dwconv2d"|"maxpool2d", in_shape, out_shape,
    attrs) for the spatial layers (``valid`` padding, as the table's ``out=`` sizes say). Two
    spellings are read: the table's ``Conv2D(in=HxWxC,k=KxK,f=F,s=S,out=HxW)`` /
    ``MaxPool2D(PxP,in=HxWxC)`` and the tutorial's ``Input(HxWxC) -> Conv2D(KxK,f=F)+ReLU ->
    MaxPool2x2 -> Flatten(N) -> Dense(N)+ReLU``; every size is checked against the chain. A
    ``ZeroPad`` step before a convolution whose ``in=`` is larger than the chain's shape becomes a
    ("pad2d", in, out, {"pad": ...}) step; one that opens the chain is already in the first ``in=``."""
    steps: list[tuple] = []
    if re.search(r"LSTM|GRU|RNN", text):
        raise NotCovered("recurrent layers have no graph node")
    text = re.split(r";| \(", text)[0]  # a trailing remark: "...; ~50% sparsity", "... (Keras Sequential)"
    shape: tuple[int, ...] | None = None
    zero_pad = False  # a ZeroPad step: the next convolution's in= includes the padding

    def cur() -> tuple[int, ...]:
        if shape is None:
            raise NotCovered(f"the chain does not say its input's shape before {token!r}")
        return shape

    for token in re.split(r"\s*->\s*(?![^()]*\))", text.strip()):
        token = token.strip()
        relu = False
        if re.search(r"\+ReLU$", token, re.I):
            token, relu = token[: -len("+ReLU")], True
        if m := re.fullmatch(r"Input\((\d+(?:x\d+)*)\)", token):
            shape = _shape(m[1])
        elif m := re.fullmatch(r"Dense\((\d+)->(\d+)\)", token):
            if shape is not None:
                _check(token, (int(m[1]),), shape if len(shape) == 1 else (int(np.prod(shape)),))
                if len(shape) > 1:
                    steps.append(("flatten", shape, (int(np.prod(shape)),)))
            steps.append(("dense", int(m[1]), int(m[2])))
            shape = (int(m[2]),)
        elif m := re.fullmatch(r"Dense\((\d+)\)", token):
            if len(cur()) > 1:
                steps.append(("flatten", shape, (int(np.prod(shape)),)))
            steps.append(("dense", int(np.prod(shape)), int(m[1])))
            shape = (int(m[1]),)
        elif m := re.fullmatch(r"(DW|PW|)Conv2D\((.*)\)", token):
            parts = [x.strip() for x in m[2].split(",")]
            args = dict(a.split("=", 1) if "=" in a else ("k", a) for a in parts if "=" in a or re.fullmatch(r"\d+x\d+", a))
            given_in = _shape(args["in"]) if "in" in args else None
            if zero_pad and given_in is not None and shape is not None and given_in != shape:
                steps.append(_zero_pad(token, shape, given_in))
                shape = given_in
            if given_in is not None and shape is not None and given_in != shape:
                raise NotCovered(f"{token}: the row's in={args['in']} is not what the chain before it gives ({shape})")
            h, w, c = given_in or cur()
            kh, kw = _shape(args["k"])
            stride = int(args.get("s", 1))
            depthwise = m[1] == "DW"
            f = c if depthwise else int(args["f"])
            if depthwise and int(args["f"]) != c:
                raise NotCovered(f"{token}: a depthwise convolution with a depth multiplier")
            out = ((h - kh) // stride + 1, (w - kw) // stride + 1, f)
            _check(token, _shape(args["out"]) + (f,) if "out" in args else None, out)
            steps.append(("dwconv2d" if depthwise else "conv2d", (h, w, c), out, {"k": (kh, kw), "s": stride}))
            shape = out
        elif m := re.fullmatch(r"Conv1D\((.*)\)", token):
            args = dict(a.strip().split("=", 1) for a in m[1].split(","))
            given_in = _shape(args["in"]) if "in" in args else None
            if given_in is not None and shape is not None and given_in != shape:
                raise NotCovered(f"{token}: the row's in={args['in']} is not what the chain before it gives ({shape})")
            length, c = given_in or cur()
            k, stride, f = int(args["k"]), int(args.get("s", 1)), int(args["f"])
            same = args.get("pad", "valid") == "same"
            out = (-(-length // stride) if same else (length - k) // stride + 1, f)
            _check(token, (int(args["out"]), f) if "out" in args else None, out)
            steps.append(("conv1d", (length, c), out, {"k": k, "s": stride, "same": same}))
            shape = out
        elif m := re.fullmatch(r"GlobalMaxPool1D\(in=(\d+x\d+)\)", token):
            _check(token, _shape(m[1]), cur())
            steps.append(("gmaxpool1d", shape, (shape[-1],)))
            shape = (shape[-1],)
        elif m := re.fullmatch(r"MaxPool1D\((\d+),in=(\d+x\d+)\)", token):
            _check(token, _shape(m[2]), cur())
            length, c = cur()
            pool = int(m[1])
            steps.append(("maxpool1d", (length, c), (length // pool, c), {"pool": pool}))
            shape = (length // pool, c)
        elif m := re.fullmatch(r"MaxPool(?:2D)?\(?(\d+)x(\d+)(?:,in=(\d+x\d+x\d+))?\)?", token):
            if m[3]:
                _check(token, _shape(m[3]), cur())
            h, w, c = cur()
            ph, pw = int(m[1]), int(m[2])
            out = (h // ph, w // pw, c)
            steps.append(("maxpool2d", (h, w, c), out, {"pool": (ph, pw)}))
            shape = out
        elif m := re.fullmatch(r"Flatten\((\d+)\)", token):
            _check(token, (int(m[1]),), (int(np.prod(cur())),))
            steps.append(("flatten", shape, (int(m[1]),)))
            shape = (int(m[1]),)
        elif token.lower().startswith("relu"):
            relu = True
        elif token.lower() == "softmax":
            steps.append(("softmax", steps[-1][2], steps[-1][2]))
        elif token.lower() == "sigmoid":
            steps.append(("sigmoid", steps[-1][2], steps[-1][2]))
        elif token.lower() == "linear":
            pass
        elif token == "ZeroPad":
            zero_pad = True
            continue
        elif re.fullmatch(r"BN\(\d+\)", token):
            pass  # not estimated (see the module docstring)
        else:
            raise NotCovered(f"layer {token!r} is not modelled")
        if relu:
            steps.append(("relu", steps[-1][2], steps[-1][2]))
        zero_pad = False
    if not any(s[0] in WEIGHTED for s in steps):
        raise NotCovered("no Dense or convolution layer")
    return steps


WEIGHTED = ("dense", "conv1d", "conv2d", "dwconv2d")


def _zero_pad(token: str, shape: tuple[int, ...], padded: tuple[int, ...]) -> tuple:
    """The ("pad2d", in, out, {"pad": ((top, bottom), (left, right))}) step of a ZeroPad that
    hls4ml inserted before ``token``: the rows before and the columns left of the image get the
    smaller half, as Keras's ``same`` padding does."""
    (h, w, c), (hp, wp, cp) = shape, padded
    if cp != c or hp < h or wp < w:
        raise NotCovered(f"{token}: a ZeroPad from {shape} cannot give in={padded}")
    top, left = (hp - h) // 2, (wp - w) // 2
    return ("pad2d", shape, padded, {"pad": ((top, hp - h - top), (left, wp - w - left))})


def n_weights_of(step: tuple) -> int:
    kind = step[0]
    if kind == "dense":
        return step[1] * step[2]
    if kind == "conv1d":
        return step[3]["k"] * step[1][1] * step[2][1]
    kh, kw = step[3]["k"]
    return kh * kw * step[1][2] * (1 if kind == "dwconv2d" else step[2][2])


def kernel_shape(step: tuple) -> tuple[int, ...]:
    kind = step[0]
    if kind == "dense":
        return (step[1], step[2])
    if kind == "conv1d":
        return (step[3]["k"], step[1][1], step[2][1])
    kh, kw = step[3]["k"]
    return (kh, kw, step[1][2], 1 if kind == "dwconv2d" else step[2][2])


def family(steps: list[tuple]) -> str:
    """The op family a design is grouped under: "conv" when it has a convolution, else "dense"."""
    return "conv" if any(s[0] in ("conv1d", "conv2d", "dwconv2d") for s in steps) else "dense"


def _zeros(text: str, n_weights: int) -> tuple[int, bool]:
    """The row's count of zero weights, and whether it is only a stated share ("~50%...")."""
    text = text.strip()
    if re.fullmatch(r"\d+", text):
        return int(text), False
    m = re.match(r"~?\s*(\d+(?:\.\d+)?)\s*%", text)
    if m:
        return round(n_weights * float(m[1]) / 100), True
    raise NotCovered(f"n_zero_weights is {text!r}, not a count")


def _rf_requested(rfs: list[int], steps: list[tuple], strategy: str) -> int:
    """The model-wide reuse factor that, snapped per layer as hls4ml does, gives exactly the
    row's set of compiled values (a row lists several when hls4ml snapped some layers)."""
    if len(set(rfs)) == 1:
        return rfs[0]
    if strategy != "Resource":
        raise NotCovered("per-layer reuse factors under the Latency strategy")
    from edgebnn.backends.hls4ml.cost.blocks import _closest_reuse_factor, valid_reuse_factors

    shapes = []
    for s in steps:
        if s[0] == "dense":
            shapes.append((s[1], s[2]))
        elif s[0] == "conv1d":
            shapes.append((s[3]["k"] * s[1][1], s[2][1]))
        elif s[0] in ("conv2d", "dwconv2d"):
            kh, kw = s[3]["k"]
            shapes.append((kh * kw * s[1][2], s[2][2]))  # the im2col unit (a depthwise one: its full kernel)
    for rf in sorted(set(rfs)):
        if {_closest_reuse_factor(valid_reuse_factors(a, b), rf) for a, b in shapes} == set(rfs):
            return rf
    raise NotCovered(f"no one reuse factor snaps to the row's per-layer values {';'.join(map(str, rfs))}")


def design_of(row: dict) -> dict:
    """Everything the rebuild needs from one CSV row (raises NotCovered)."""
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
    # relu outputs: an unsigned type, else a saturating signed one (a QKeras quantized
    # activation hls4ml builds as ap_fixed<W,I,AP_RND,AP_SAT>), else the data type
    saturating = [parse_types(m[0])[0] for m in _TYPE.finditer(row["activation_precision"]) if not m[1] and "SAT" in m[0]]
    relu = unsigned_acts[0] if unsigned_acts else next((t for t in saturating if t != data), data)
    # "X (output_dense: Y)": the last dense layer's weights are Y, the others X
    last_weight = weights[1] if len(weights) > 1 and re.search(r"output_dense:", row["weight_precision"]) else weights[0]
    rfs = [int(v) for v in row["reuse_factor"].split(";")]
    strategies = row["strategy"].split(";")
    if len(set(strategies)) > 1:
        raise NotCovered("per-layer strategies (" + ", ".join(strategies) + ")")
    strategy = strategies[0].capitalize()
    n_weights = sum(n_weights_of(s) for s in steps if s[0] in WEIGHTED)
    if n_weights != int(row["n_weights"]):
        raise NotCovered(f"architecture has {n_weights} weights, the row says {row['n_weights']}")
    zeros, approx = _zeros(row["n_zero_weights"], n_weights)
    notes = row.get("notes", "")
    multipliers = "dsp" if "forced to DSP" in notes else "lut" if "forced to fabric" in notes else "auto"
    if any(kind == "softmax" for kind, *_ in steps[:-1]):
        raise NotCovered("a softmax before the last layer (freeze strips only a final softmax)")
    if any(kind == "sigmoid" for kind, *_ in steps[:-1]):
        raise NotCovered("a sigmoid before the last layer (only a final one is left out)")
    return {
        "steps": steps,
        "weight": weights[0],
        "last_weight": last_weight,
        "data": data,
        "relu": relu,
        "accum": accum[0],
        "reuse_factor": _rf_requested(rfs, steps, strategy),
        "strategy": strategy,
        "io_type": row["io_type"],
        "clock": float(row["clock_ns"]),
        "part": row["part"],
        "zeros": zeros,
        "zeros_approx": approx,
        "multipliers": multipliers,
        "hls_tool": f"{row['hls_tool']} {row['hls_version']}",
        "source": row["source_repo"],
        "family": family(steps),
    }


def board_for_part(part: str):
    from edgebnn.boards import list_boards

    device = part.lower().split("-")[0]
    # a 7-series "TL" part (e.g. xc7a200tl, the low-voltage -2L grade) is the "T" device's silicon
    devices = (device, device[:-1]) if device.startswith("xc7") and device.endswith("tl") else (device,)
    for device in devices:
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
    """Integer codes per weighted layer (its kernel's shape): Glorot-uniform values on the
    weight grid, no zero among them, then exactly ``zeros`` of all the network's weights set
    to zero."""
    rng = np.random.default_rng(seed)
    weighted = [s for s in design["steps"] if s[0] in WEIGHTED]
    layers = []
    for i, step in enumerate(weighted):
        shape = kernel_shape(step)
        signed, width, integer = design.get("last_weight", design["weight"]) if i == len(weighted) - 1 else design["weight"]
        lsb = 2.0 ** (integer - width)
        hi_code = 2 ** (width - signed) - 1
        lo_code = -(2 ** (width - 1)) if signed else 0
        receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        fan_in, fan_out = receptive * shape[-2], receptive * shape[-1]
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        codes = np.round(rng.uniform(-limit, limit, size=shape) / lsb).astype(np.int64)
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
    """The row's design as a deployment graph: Keras model -> edgebnn.freeze. Each layer reads
    what hls4ml gives it: the first its quantized input, a relu its cast to the relu type, any
    other layer's result the design's result type (a ``QuantActivation`` cast), the last
    weighted layer's result its own type (``types=`` in :func:`estimate_row`)."""
    import keras

    import edgebnn  # noqa: F401  (registers the layers)
    from edgebnn.freeze import freeze
    from edgebnn.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense, QuantDepthwiseConv2D

    def qbits(t):
        signed, width, integer = t
        return f"quantized_bits({width}, {integer - signed}, keep_negative={signed})"

    steps = design["steps"]
    first_shape = steps[0][1] if isinstance(steps[0][1], tuple) else (steps[0][1],)
    layers, weighted, wi = [keras.Input(first_shape)], [], 0
    n_weighted = sum(s[0] in WEIGHTED for s in steps)
    for i, step in enumerate(steps):
        kind = step[0]
        if kind in WEIGHTED:
            last = wi == n_weighted - 1
            wtype = design.get("last_weight", design["weight"]) if last else design["weight"]
            common = {
                "input_quantizer": qbits(design["data"]) if wi == 0 else None,
                "use_bias": False,
                "name": f"{kind}{wi}",
            }
            if kind == "dense":
                layer = QuantDense(step[2], kernel_quantizer=qbits(wtype), **common)
            elif kind == "conv1d":
                padding = "same" if step[3]["same"] else "valid"
                layer = QuantConv1D(
                    step[2][1], step[3]["k"], strides=step[3]["s"], padding=padding, kernel_quantizer=qbits(wtype), **common
                )
            elif kind == "conv2d":
                layer = QuantConv2D(step[2][2], step[3]["k"], strides=step[3]["s"], kernel_quantizer=qbits(wtype), **common)
            else:
                layer = QuantDepthwiseConv2D(step[3]["k"], strides=step[3]["s"], depthwise_quantizer=qbits(wtype), **common)
            layers.append(layer)
            weighted.append((layer, weights[wi], wtype))
            wi += 1
            relu_next = i + 1 < len(steps) and steps[i + 1][0] == "relu"
            # between layers hls4ml casts a result to its result type; the last weighted layer
            # writes its result type itself (types= below), no activation layer follows it
            if not relu_next and not last:
                layers.append(QuantActivation(qbits(design["data"]), name=f"result{wi - 1}"))
        elif kind == "sigmoid":  # a final sigmoid is left out (module docstring)
            continue
        elif kind == "softmax":  # hls4ml's softmax: stripped by freeze, its cost added by the estimator
            layers.append(keras.layers.Activation("softmax", name="softmax"))
        elif kind == "relu":
            layers.append(keras.layers.Activation("relu", name=f"relu{i}"))
            layers.append(QuantActivation(qbits(design["relu"]), name=f"relu{i}_out"))
        elif kind == "maxpool2d":
            layers.append(keras.layers.MaxPooling2D(step[3]["pool"], name=f"maxpool{i}"))
        elif kind == "maxpool1d":
            layers.append(keras.layers.MaxPooling1D(step[3]["pool"], name=f"maxpool{i}"))
        elif kind == "pad2d":
            layers.append(keras.layers.ZeroPadding2D(step[3]["pad"], name=f"pad{i}"))
        elif kind == "flatten":
            layers.append(keras.layers.Flatten(name=f"flatten{i}"))
        elif kind == "gmaxpool1d":
            layers.append(keras.layers.GlobalMaxPooling1D(name=f"gmaxpool{i}"))
        else:
            raise NotCovered(f"step {kind} has no rebuild")
    model = keras.Sequential(layers)
    for layer, codes, (_, width, integer) in weighted:
        layer.weights[0].assign((codes * 2.0 ** (integer - width)).astype("float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return freeze(model, name="row", strip_softmax=True)


def estimate_row(design: dict, graph):
    from edgebnn.estimate import estimate

    accum = fixed_string(design["accum"])
    from edgebnn.backends.hls4ml.cost import WEIGHTED_OPS

    result = fixed_string(design["data"])
    types = {n.name: {"accum": accum, "result": result} for n in graph.compute_nodes() if n.op in WEIGHTED_OPS}
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


def cycles_tight(est, true):
    """Within issue 34's bound: 10% or 2 cycles (``cycles_ok`` is the looser 20% or 3)."""
    return abs(est - true) <= max(2, 0.1 * true)


def tight_summary(rs: list[dict]) -> str:
    """A group against issue 34's bounds: latency and II within 10% or 2 cycles of the HLS
    report, and the DSP median against the HLS estimate over the rows that give one (most
    held-back rows have no post-synthesis figure)."""
    lat = sum(r["hls"]["latency"] is not None and cycles_tight(r["est"]["latency"], r["hls"]["latency"]) for r in rs)
    ii = sum(r["hls"]["II"] is not None and cycles_tight(r["est"]["II"], r["hls"]["II"]) for r in rs)
    dsp = [r["err_c"]["DSP"] for r in rs if r["err_c"]["DSP"] is not None]
    return (
        f"{len(rs)} rows: latency within 10% or 2 cycles {lat}/{len(rs)}, II {ii}/{len(rs)}; "
        f"DSP vs csynth {_median(dsp):.1f}% ({len(dsp)} rows)"
    )


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
        "held_back": (row.get("held_back") or "").strip() == "1",
        "tool": f"{row['hls_tool']} {row['hls_version']}",
        "est": mine,
        "vsynth": vs,
        "csynth": cs,
        "hls": hls,
        "err_v": {k: rel_error(mine[k], v) for k, v in vs.items()},
        "err_c": {k: rel_error(mine[k], v) for k, v in cs.items()},
        "err_t": {k: rel_error(mine[k], v) for k, v in hls.items()},
        "ok_t": {k: v is not None and cycles_ok(mine[k], v) for k, v in hls.items()},
        "family": est.family,
        "ops": sorted({r.op for r in est.rows}),
        "n_weights": int(row["n_weights"]),
        "intervals": est.intervals,
        # (published - estimate) / estimate: what the intervals are made of
        "resid": {
            **{k.lower(): _resid(mine[k], vs[k]) for k in ("LUT", "FF", "DSP", "BRAM18")},
            "latency": _resid(mine["latency"], hls["latency"]),
        },
    }


def _resid(est, true):
    if true is None or not est:
        return None
    return (true - est) / est


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
        "stripped by freeze and estimated as hls4ml's (stable) softmax, a trailing sigmoid left out; latency uses "
        "the row's HLS tool"
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
    held_back = [r for r in results if r["held_back"]]
    if held_back:
        # rows marked held_back=1 were added after the model's constants were set and are used for
        # nothing but this check: every summary below this block is over the other rows
        p(f"held-back rows (held_back=1; no constant or interval was set from them): {_medians(held_back)}")
        for fam, ops in OP_FAMILIES.items():
            rs = [r for r in held_back if any(op in ops for op in r["ops"])]
            if rs:
                p(f"  held back, {fam:<15} {_medians(rs)}")
        for lo, hi, label in SIZES:
            rs = [r for r in held_back if r["n_weights"] >= lo and (hi is None or r["n_weights"] < hi)]
            if rs:
                p(f"  held back, {label:<15} {_medians(rs)}")
        p(f"  held back, inside the shipped intervals: {coverage(held_back)}")
        p("  held back, against issue 34's bounds (latency and II within 10% or 2 cycles; DSP vs the HLS estimate):")
        p(f"    all             {tight_summary(held_back)}")
        for lo, hi, label in SIZES:
            rs = [r for r in held_back if r["n_weights"] >= lo and (hi is None or r["n_weights"] < hi)]
            if rs:
                p(f"    {label:<15} {tight_summary(rs)}")
        results = [r for r in results if not r["held_back"]]
        p(f"the summaries below are over the {len(results)} rows not held back")
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
    _print_breakdowns(results, p)
    p(f"resource medians below are over the {n_v} rows with post-synthesis results; latency over all {len(results)} rows")
    p(
        "median abs error: "
        + " ".join(f"{k} {_median(r['err_v'][k] for r in results):.1f}%" for k in ("LUT", "FF", "DSP"))
        + f" latency {_median(r['err_t']['latency'] for r in results):.1f}%"
    )


OP_FAMILIES = {
    "dense": ("dense",),
    "conv": ("conv1d", "conv2d", "depthwise_conv2d"),
    "pool": ("maxpool1d", "maxpool2d", "avgpool1d", "avgpool2d", "sumpool1d", "sumpool2d"),
    "activation": ("cast", "threshold", "softmax"),
}
SIZES = ((0, 1000, "< 1k weights"), (1000, 10000, "1k-10k weights"), (10000, None, ">= 10k weights"))


def _medians(rs: list[dict]) -> str:
    """The medians of a group: resources vs post-synthesis (rows with it), latency and II."""
    n_v = sum(r["vsynth"]["LUT"] is not None for r in rs)
    res = " ".join(f"{k} {_median(r['err_v'][k] for r in rs):.1f}%" for k in ("LUT", "FF", "DSP")) if n_v else "no vsynth"
    return (
        f"{len(rs)} rows ({n_v} vsynth): {res}; latency {_median(r['err_t']['latency'] for r in rs):.1f}% "
        f"(ok {sum(r['ok_t']['latency'] for r in rs)}/{len(rs)}), II ok {sum(r['ok_t']['II'] for r in rs)}/{len(rs)}"
    )


def derive_intervals(results: list[dict]) -> dict:
    """(p10, p90) of the residuals per family ("dense", "conv", and "all" pooled) and figure,
    where a family has at least ``MIN_ROWS`` of them (a figure with fewer even pooled has none)."""
    from edgebnn.estimate.intervals import KEYS, MIN_ROWS

    out: dict = {}
    for fam in ("all", "dense", "conv"):
        table = {}
        for key in KEYS:
            vals = [r["resid"][key] for r in results if fam in ("all", r["family"]) and r["resid"][key] is not None]
            if len(vals) >= MIN_ROWS:
                table[key] = (round(float(np.percentile(vals, 10)), 3), round(float(np.percentile(vals, 90)), 3))
        out[fam] = table
    return out


def coverage(rs: list[dict], table=None) -> str:
    """How many published figures of ``rs`` lie inside their estimate's interval (``table``:
    the shipped intervals when None)."""
    from edgebnn.estimate.intervals import KEYS, bounds

    parts = []
    for key in KEYS:
        inside, n, none = 0, 0, 0
        for r in rs:
            v = r["resid"][key]
            if v is None:
                continue
            try:
                lo, hi = bounds(r["family"], key, table)
            except KeyError:  # fewer than MIN_ROWS residuals to derive it from
                none += 1
                continue
            inside += lo <= v <= hi
            n += 1
        if n:
            parts.append(f"{key} {inside}/{n}")
        elif none:
            parts.append(f"{key} - (too few residuals elsewhere)")
    return ", ".join(parts)


def _print_breakdowns(results: list[dict], p) -> None:
    p("by op family (the published figures are whole designs: a design counts under every op family it has):")
    for fam, ops in OP_FAMILIES.items():
        rs = [r for r in results if any(op in ops for op in r["ops"])]
        if rs:
            p(f"  {fam:<10} {_medians(rs)}")
    p("by design size:")
    for lo, hi, label in SIZES:
        rs = [r for r in results if r["n_weights"] >= lo and (hi is None or r["n_weights"] < hi)]
        if rs:
            p(f"  {label:<15} {_medians(rs)}")
    sources = sorted({r["source"] for r in results})
    held = [s for s in sources if sum(r["source"] == s for r in results) >= 3]
    if held:
        p(
            "leave-one-source-out, sources with 3+ rows (the model's constants are fixed; the intervals are "
            "derived from the other sources' rows and checked on the held-out ones):"
        )
        for src in held:
            mine = [r for r in results if r["source"] == src]
            rest = [r for r in results if r["source"] != src]
            p(f"  {src}: {_medians(mine)}; inside intervals: {coverage(mine, derive_intervals(rest))}")
    p(f"inside the shipped intervals (edgebnn.estimate.intervals, 10th-90th percentile): {coverage(results)}")


def run(csv_path: str, out=sys.stdout, builder=None, intervals: bool = False):
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
    if intervals:
        print("INTERVALS = " + repr(derive_intervals([r for r in results if not r["held_back"]])), file=out)
    return results, skipped


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="?", default=DEFAULT_CSV, help="CSV with the reference file's columns")
    ap.add_argument(
        "--intervals",
        action="store_true",
        help="also print the residual intervals of these rows as edgebnn.estimate.intervals.INTERVALS",
    )
    args = ap.parse_args(argv)
    run(args.csv, intervals=args.intervals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
