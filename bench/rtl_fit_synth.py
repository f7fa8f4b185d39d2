"""A graph's folding found by the RTL fit for a board, exported, synthesized (and placed and
routed on iCE40 and ECP5) with the open tools: the model's counts beside the tools'.

    .venv/bin/python bench/rtl_fit_synth.py RUN_OR_GRAPH --board pynq-z2 --limit 0.6
    .venv/bin/python bench/rtl_fit_synth.py RUN_OR_GRAPH --board icebreaker --folding '{"dense0": [1, 8]}'

The project is written into ``--out`` (a new folder), its reports under ``synth/``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

from edgebnn.backends.rtl import export
from edgebnn.backends.rtl.cost import design_cost
from edgebnn.backends.rtl.fit import fit, on_board
from edgebnn.backends.rtl.synth import synthesize
from edgebnn.boards import load_board
from edgebnn.graph import Graph


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph", help="a graph.npz or a run folder holding one")
    ap.add_argument("--board", default="pynq-z2")
    ap.add_argument("--limit", type=float, default=0.6)
    ap.add_argument("--folding", help="a JSON mapping node -> [pe, simd] instead of the fit")
    ap.add_argument("--out", required=True, help="the project folder to write (must not exist)")
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args(argv)
    path = pathlib.Path(args.graph)
    graph = Graph.load(path / "graph.npz" if path.is_dir() else path)
    board = load_board(args.board)
    start = time.perf_counter()
    if args.folding:
        folding = {k: tuple(v) for k, v in json.loads(args.folding).items()}
        cost = on_board(design_cost(graph, folding)[0], board.flow, [])
        print(f"given folding {folding}: model {cost}")
    else:
        found = fit(graph, board, limit=args.limit)
        folding, cost = found.folding, found.cost
        print(f"fit in {time.perf_counter() - start:.2f} s: {found}")
    project = export(graph, args.out, folding=folding)
    rec = synthesize(project, board, timeout=args.timeout)
    print(f"model : {cost.lut:,} LUT, {cost.ff:,} FF, {cost.dsp} DSP, {cost.bram} BRAM")
    print(f"tools : {rec.lut:,} LUT, {rec.ff:,} FF, {rec.dsp} DSP, {rec.bram} BRAM, {rec.carry} CARRY ({rec.seconds:g} s)")
    util = rec.utilization() or {}
    print("utilization: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in util.items()))
    if rec.logic_cells is not None:
        print(f"placed: {rec.logic_cells[0]:,} of {rec.logic_cells[1]:,} logic cells, Fmax {rec.fmax_mhz} MHz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
