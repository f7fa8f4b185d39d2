"""Random models, checked Keras = emulator = C-simulation bit for bit (see edgebnn/testing/fuzz.py).

    python bench/fuzz.py --models 500 --csim 50 --seed 0 [--rtl 20] [--save fuzz-failures] [--coverage]
    python bench/fuzz.py --replay fuzz-failures/seed-17

Prints one line per model that is not ``ok`` (or every model with ``--verbose``) and one
summary line; saves each mismatching or crashing model with its inputs under ``--save``.
Exits 1 when any model mismatches or crashes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=int, default=100, help="random models to check (default 100)")
    p.add_argument(
        "--csim", type=int, default=0, help="how many to C-simulate (each where it adds ops or forms not C-simulated yet)"
    )
    p.add_argument(
        "--rtl", type=int, default=0, help="how many other agreeing models to export as RTL and simulate with Verilator"
    )
    p.add_argument("--seed", type=int, default=0, help="first seed; model i uses seed + i")
    p.add_argument("--save", default="fuzz-failures", help="folder for failing models (default fuzz-failures)")
    p.add_argument("--replay", metavar="FOLDER", help="re-check one saved failure and print its outcome")
    p.add_argument("--verbose", action="store_true", help="print every model's outcome and layers")
    p.add_argument("--coverage", action="store_true", help="print how many agreeing models used each graph op and quantizer form")
    args = p.parse_args(argv)

    from edgebnn import fuzz

    if args.replay:
        case = fuzz.load_failure(args.replay)
        import json

        with open(os.path.join(args.replay, "outcome.json")) as fh:
            saved = json.load(fh)
        if saved["csim"]:  # in a child process, as the run did: the C-simulation may abort it
            outcome = fuzz.check_in_child(saved["seed"], saved["csim"], saved.get("target"), replay=args.replay)
        else:
            outcome = fuzz.check(case, None)
        print("\n".join(case.layers))
        print(outcome.line())
        return 0 if outcome.status in ("ok", "refused", "warned", "keras-error") else 1

    t0 = time.time()

    def progress(outcome):
        if args.verbose or outcome.status not in ("ok", "refused"):
            print(outcome.line(), flush=True)
            if args.verbose:
                print("    " + "\n    ".join(outcome.layers), flush=True)

    summary = fuzz.run(args.models, args.csim, args.seed, save_dir=args.save, progress=progress, rtl=args.rtl)
    if args.coverage:
        print_coverage(summary)
    print(f"{summary.line()} ({time.time() - t0:.0f} s)")
    if summary.failures:
        print(f"failing models saved under {args.save}/ (replay with --replay {args.save}/seed-N)")
    return 1 if summary.failures else 0


def print_coverage(summary) -> None:
    """One row per graph op (every op edgebnn knows, 0 where none was generated) and per quantizer
    form seen: models that agreed, emulated, C-simulated per io type and RTL-simulated."""
    from edgebnn.graph.ops import OPS

    table = summary.coverage()
    rows = [(op, table.get(op, {})) for op in OPS] + [(k, v) for k, v in sorted(table.items()) if k not in OPS]
    print(f"{'op or form':44} {'emulated':>9} {'io_parallel':>12} {'io_stream':>10} {'rtl':>5}")
    for key, row in rows:
        counts = (
            f"{row.get('emulated', 0):9d} {row.get('io_parallel', 0):12d} {row.get('io_stream', 0):10d} {row.get('rtl', 0):5d}"
        )
        print(f"{key:44} {counts}")
    missing = [op for op in OPS if op not in table]
    print("ops no agreeing model used: " + (", ".join(missing) if missing else "none"))


if __name__ == "__main__":
    sys.exit(main())
