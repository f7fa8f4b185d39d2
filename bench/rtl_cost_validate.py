"""The RTL cost models against Yosys: every weighted and threshold unit of a set of generated
designs synthesized alone (``synth_xilinx -flatten -abc9``, xc7), its LUT/FF/CARRY/DSP/BRAM
beside the model's, and the error per unit.

    .venv/bin/python bench/rtl_cost_validate.py                 # the validation designs (not fitted on)
    .venv/bin/python bench/rtl_cost_validate.py --set fit       # the designs the coefficients were fitted on
    .venv/bin/python bench/rtl_cost_validate.py --set check     # a second held-out set (other seeds and shapes)
    .venv/bin/python bench/rtl_cost_validate.py --refit         # least squares of the coefficients on the fit set

Yosys's counts are kept in ``--cache`` (a JSON file, default bench/.rtl_cost_cache.json) by the
content of each unit's Verilog, so a second run synthesizes only what changed. The target: the
LUT model within 15% of Yosys on every validation unit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from graphs import binary_mlp

from edgebnn.backends.rtl import export
from edgebnn.backends.rtl.cost import node_cost, unit_features
from edgebnn.backends.rtl.synth import synthesize

PART = "xc7z020clg400-1"
CACHE_PATH = [ROOT / "bench" / ".rtl_cost_cache.json"]

TWO_BIT = {"input_type": "fixed<2,2,RND_CONV,SAT>"}
# 31 thresholds per channel into 5-bit codes at the end, as the digits BNN's last layer
LEVELS_31 = {"out_levels": "fixed<5,5,RND_CONV,SAT>", "out_thresholds": 31}

# (layer sizes, seed, folding[, binary_mlp's other arguments]): the fit set and the validation
# set share no design
DESIGNS = {
    "fit": [
        # deep PE folding (32 folds): the result's write multiplexer
        ((16, 32, 16), 10, {"dense0": (1, 16), "dense1": (2, 32)}, TWO_BIT),
        ((8, 64, 4), 12, {"dense0": (2, 8), "dense1": (1, 16)}, TWO_BIT),
        ((16, 12, 8, 4), 0, {"dense0": (4, 8), "dense1": (8, 12), "dense2": (4, 8)}),
        ((32, 16, 10), 2, {"dense0": (8, 8), "dense1": (5, 16)}),
        ((64, 32, 10), 3, {"dense0": (4, 16), "dense1": (2, 32)}),
        # XNOR units folded over SIMD (an accumulator) behind a small add/subtract layer of 2-bit inputs
        ((16, 32, 12), 8, {"dense0": (8, 8), "dense1": (4, 16)}, TWO_BIT),
        ((16, 24, 8), 9, {"dense0": (4, 4), "dense1": (2, 6)}, TWO_BIT),
        ((16, 48, 20), 29, {"dense0": (6, 8), "dense1": (5, 12)}, TWO_BIT),
        ((32, 24, 16), 30, {"dense0": (4, 8), "dense1": (4, 8)}),
        ((16, 40, 12), 32, {"dense0": (8, 16), "dense1": (3, 20)}, TWO_BIT),
        # an XNOR layer of sign inputs folded over PE only, its output converted (no threshold after it)
        ((16, 24, 12), 31, {"dense0": (24, 16), "dense1": (4, 24)}),
        # add/subtract first layers of 8-bit inputs with SIMD unfolded (each PE's tree and the
        # shared input sum over the whole beat, no accumulator)
        ((64, 16, 10), 33, {"dense0": (1, 64), "dense1": (2, 16)}),
        ((32, 24, 8), 34, {"dense0": (3, 32), "dense1": (4, 12)}),
        # XNOR units with a sign built in, and a last layer with 31 thresholds built in
        ((16, 48, 32, 10), 21, {"dense0": (8, 8), "dense1": (4, 16), "dense2": (2, 16)}, {**TWO_BIT, **LEVELS_31}),
        ((32, 64, 64, 10), 22, {"dense0": (4, 8), "dense1": (8, 32), "dense2": (1, 16)}, LEVELS_31),
        # wide beats folded deep (32 PE folds of a 128-code result, 8 SIMD folds)
        ((32, 128, 64, 10), 28, {"dense0": (4, 8), "dense1": (2, 16), "dense2": (1, 8)}, LEVELS_31),
        ((32, 96, 48, 10), 25, {"dense0": (8, 16), "dense1": (6, 32), "dense2": (2, 16)}, LEVELS_31),
        (
            (16, 64, 32, 6),
            26,
            {"dense0": (4, 4), "dense1": (2, 16), "dense2": (3, 8)},
            {**TWO_BIT, "out_levels": "fixed<3,3,RND_CONV,SAT>", "out_thresholds": 7},
        ),
        (
            (48, 32, 24, 10),
            27,
            {"dense0": (2, 16), "dense1": (8, 8), "dense2": (5, 24)},
            {"out_levels": "fixed<4,4,RND_CONV,SAT>", "out_thresholds": 15},
        ),
    ],
    "validate": [
        ((24, 20, 6), 5, {"dense0": (5, 12), "dense1": (3, 10)}),
        ((40, 20, 8), 6, {"dense0": (4, 8), "dense1": (4, 10)}),
        # the digits BNN's shape at the example's folding (block RAM weights), and 7 output levels
        ((64, 128, 128, 10), 23, {"dense0": (4, 8), "dense1": (4, 16), "dense2": (1, 16)}, LEVELS_31),
        (
            (24, 40, 20, 6),
            24,
            {"dense0": (5, 6), "dense1": (4, 20), "dense2": (3, 10)},
            {"out_levels": "fixed<3,3,RND_CONV,SAT>", "out_thresholds": 7},
        ),
    ],
    # a second held-out set, chosen before the model's form was reworked and never fitted on:
    # other seeds and shapes, the same kinds of unit as the validation set
    "check": [
        ((32, 20, 8), 40, {"dense0": (4, 8), "dense1": (2, 10)}),
        ((24, 36, 12), 41, {"dense0": (6, 12), "dense1": (4, 12)}, TWO_BIT),
        ((48, 64, 32, 10), 42, {"dense0": (8, 16), "dense1": (4, 16), "dense2": (2, 8)}, LEVELS_31),
        (
            (20, 30, 16, 4),
            43,
            {"dense0": (5, 10), "dense1": (4, 15), "dense2": (2, 8)},
            {"out_levels": "fixed<3,3,RND_CONV,SAT>", "out_thresholds": 7},
        ),
    ],
}


def units(which: str, work: pathlib.Path):
    """Each (design label, node, graph, folding, project) of the set ``which``, exported under ``work``."""
    for i, (sizes, seed, folding, *kwargs) in enumerate(DESIGNS[which]):
        graph = binary_mlp(sizes=sizes, seed=seed, **(kwargs[0] if kwargs else {}))
        project = export(graph, work / f"p{i}", folding=folding)
        label = "-".join(map(str, sizes))
        for node in graph.nodes:
            # a threshold built into the MVAU it reads has no unit of its own
            if node.op == "dense" or (node.op == "threshold" and node.name not in project.meta["fused"].values()):
                yield label, node, graph, project


def measure(project, node, cache: dict) -> dict:
    module = project.meta["nodes"][node.name]
    text = (project.path / "hdl" / f"{module}.v").read_text() + (project.path / "hdl" / "edgebnn_lib.v").read_text()
    for mem in sorted((project.path / "hdl").glob(f"{module}_*.mem")):
        text += mem.read_text()
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    if key not in cache:
        rec = synthesize(project, flow="xilinx", part=PART, top=module, log=lambda *a, **k: None)
        cache[key] = {k: getattr(rec, k) for k in ("lut", "ff", "carry", "dsp", "bram")}
        save(cache)  # kept if a later unit is stopped
    return cache[key]


def save(cache: dict) -> None:
    tmp = CACHE_PATH[0].with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, CACHE_PATH[0])  # whole or not at all, also when stopped


def refit(rows) -> None:
    """Non-negative least squares of the relative error (each row divided by Yosys's count): the
    MVAU's LUTs per unit of each term (``mvau.LUT_COEF``'s keys: the popcount or tree and the
    accumulator per weight mode, then the shared terms), and the threshold's LUTs per comparator
    bit and per output bit."""
    from scipy.optimize import nnls

    from edgebnn.backends.rtl.cost import mvau
    from edgebnn.backends.rtl.hdl import code_bits

    names = list(mvau.LUT_COEF)
    a, b = [], []
    for _, n, g, f, got in rows:
        if n.op == "dense":
            terms = mvau.lut_terms(unit_features(g, n, f))
            a.append([terms.get(k, 0) / got["lut"] for k in names])
            b.append(1.0)
    coef, _ = nnls(np.array(a, float), np.array(b))
    print("MVAU LUT_COEF = {" + ", ".join(f'"{k}": {v:.3f}' for k, v in zip(names, coef)) + "}")
    a, b = [], []
    for _, n, g, _f, got in rows:
        if n.op == "threshold":
            c, k = n.params["thresholds"].shape
            xb = code_bits(g.sources(n)[0].type)
            a.append([c * k * xb / got["lut"], c * n.type.width / got["lut"]])
            b.append(1.0)
    if not a:
        print("threshold: no unit of its own in the fit set (each is built into its MVAU)")
        return
    coef, _ = nnls(np.array(a, float), np.array(b))
    print(f"threshold LUT_PER_COMPARE_BIT = {coef[0]:.3f}, LUT_PER_OUT_BIT = {coef[1]:.3f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=tuple(DESIGNS), default="validate")
    ap.add_argument("--refit", action="store_true", help="least-squares the MVAU LUT coefficients on the fit set")
    ap.add_argument("--cache", default=str(CACHE_PATH[0]))
    args = ap.parse_args(argv)
    cache_path = CACHE_PATH[0] = pathlib.Path(args.cache)
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="rtl_cost_") as work:  # the exported designs, removed at the end
        try:
            for label, node, graph, project in units("fit" if args.refit else args.set, pathlib.Path(work)):
                got = measure(project, node, cache)
                fold = project.folding.get(node.name)
                rows.append((label, node, graph, fold, got))
                model = node_cost(graph, node, fold)
                err = (model.lut - got["lut"]) / max(got["lut"], 1)
                print(
                    f"{label:<12} {node.name:<8} {node.op:<9} {fold or ''!s:<9} LUT {got['lut']:>6} model {model.lut:>6} "
                    f"({100 * err:+6.1f}%)  FF {got['ff']:>5} model {model.ff:>5}  "
                    f"CARRY {got['carry']:>4} model {model.carry:>4}  "
                    f"DSP {got['dsp']:>3} model {model.dsp:>3}  BRAM18 {got['bram']:>2} model {model.bram:>2}",
                    flush=True,
                )
        finally:
            save(cache)
    if args.refit:
        refit(rows)
        return 0
    errors = [abs(node_cost(g, n, f).lut - got["lut"]) / max(got["lut"], 1) for _, n, g, f, got in rows]
    worst, within = max(errors), sum(e <= 0.15 for e in errors)
    print(
        f"{len(rows)} units ({args.set} set): LUT error median {100 * float(np.median(errors)):.1f}%, "
        f"worst {100 * worst:.1f}%, {within} of {len(rows)} within 15%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
