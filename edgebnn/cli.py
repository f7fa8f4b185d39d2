"""The ``edgebnn`` command line."""

from __future__ import annotations

import argparse
import os
import sys

# quiet TensorFlow's start-up chatter before anything imports it
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _quiet_tensorflow() -> None:
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)


def _log(msg: str) -> None:
    print(msg, flush=True)


def cmd_run(args) -> int:
    from .pipeline import run

    _quiet_tensorflow()
    summary = run(args.config, args.output, force=args.force, log=_log)
    mm = summary["mismatches"]
    return 1 if any(mm.values()) else 0


def cmd_boards(args) -> int:
    from .boards import list_boards

    boards = list_boards()
    print(f"{'name':<14} {'part':<26} {'LUT':>9} {'FF':>10} {'DSP':>6} {'BRAM18':>7} {'URAM':>5} {'clock':>7}")
    for b in boards:
        print(f"{b.name:<14} {b.part:<26} {b.lut:>9,} {b.ff:>10,} {b.dsp:>6,} {b.bram18:>7,} {b.uram:>5,} "
              f"{b.clock_period_ns:>5g}ns")
    return 0


def cmd_estimate(args) -> int:
    from .boards import list_boards, load_board
    from .estimate import estimate
    from .graph import Graph

    path = args.graph
    if os.path.isdir(path):
        path = os.path.join(path, "graph.npz")
    graph = Graph.load(path)
    boards = list_boards() if args.board == "all" else [load_board(args.board)]
    for board in boards:
        est = estimate(graph, board, strategy=args.strategy, reuse_factor=args.reuse_factor, io_type=args.io_type)
        print(f"{board.name} ({board.part}):")
        print(est.table())
        print()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edgebnn", description="Train binarized networks in Keras 3 and ship them to FPGAs, bit for bit.")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="train, freeze, export, C-simulate, verify and estimate one configuration")
    r.add_argument("config", help="run configuration (YAML), e.g. examples/digits_bnn.yaml")
    r.add_argument("-o", "--output", required=True, help="output folder (must not exist unless --force)")
    r.add_argument("--force", action="store_true", help="replace an existing output folder")
    r.set_defaults(func=cmd_run)

    b = sub.add_parser("boards", help="list the board profiles")
    b.set_defaults(func=cmd_boards)

    e = sub.add_parser("estimate", help="estimate resources and latency of a frozen graph")
    e.add_argument("graph", help="a graph file (graph.npz) or a run folder")
    e.add_argument("--board", default="pynq-z2", help="board name, or 'all'")
    e.add_argument("--strategy", default="Latency", choices=["Latency", "Resource"])
    e.add_argument("--reuse-factor", type=int, default=1)
    e.add_argument("--io-type", default="io_parallel", choices=["io_parallel", "io_stream"])
    e.set_defaults(func=cmd_estimate)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from .errors import EdgebnnError

    try:
        return args.func(args)
    except (EdgebnnError, FileExistsError) as err:
        print(f"edgebnn: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("edgebnn: interrupted; nothing was left half-written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
