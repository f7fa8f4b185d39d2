"""Run the example zoo: each ``examples/zoo/*.yaml`` through ``edgebnn run`` (train, freeze,
export, C-simulate, verify, estimate, in the io type its ``export`` section names), then the same
frozen graph exported and C-simulated in the other io type too, and print the table the README
shows (accuracy in Keras and deployed, mismatches per io type, estimated resources on the
config's board).

    python examples/zoo.py                     # all ten, into runs/zoo/<name>
    python examples/zoo.py binary_mlp xnor_cnn --out /tmp/zoo
    python examples/zoo.py bireal_cnn --epochs 1 # a quick check (the config copy in --out)

Each run folder is replaced (``--force``). About 10 minutes on 2 cores for all of them.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import warnings

ZOO = pathlib.Path(__file__).resolve().parent / "zoo"
IO_TYPES = ("io_parallel", "io_stream")


def other_io(config_path: pathlib.Path, run_dir: pathlib.Path, io_type: str) -> tuple[int, int, int]:
    """(samples, Keras vs emulator, emulator vs C-simulation) of the run's frozen graph exported
    in ``io_type`` (the same board and options otherwise) and verified on the test split."""
    import keras

    from edgebnn.backends.hls4ml import HLSExportWarning, export
    from edgebnn.boards import load_board
    from edgebnn.config import load_config, target_of
    from edgebnn.data import load_dataset
    from edgebnn.graph import Graph
    from edgebnn.verify import verify

    config = load_config(config_path)
    config["export"]["io_type"] = io_type
    target = target_of(config, load_board(config["board"]))
    _, _, x_te, _ = load_dataset(**config["data"])
    model = keras.models.load_model(run_dir / "model.keras", safe_mode=True)
    graph = Graph.load(run_dir / "graph.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HLSExportWarning)
        project = export(graph, run_dir / f"hls_project_{io_type}", target=target, force=True)
    project.compile()
    report = verify(model, graph, x_te, project=project)
    return report.samples, report.keras_vs_emulator, report.emulator_vs_csim


def _with_epochs(path: pathlib.Path, epochs: int, out: pathlib.Path) -> pathlib.Path:
    """A copy of the config ``path`` in ``out`` that trains ``epochs`` epochs."""
    import yaml

    config = yaml.safe_load(path.read_text())
    config.setdefault("train", {})["epochs"] = epochs
    out.mkdir(parents=True, exist_ok=True)
    copy = out / f"{path.stem}.yaml"
    copy.write_text(yaml.safe_dump(config, sort_keys=False))
    return copy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="examples to run (default: all of examples/zoo)")
    parser.add_argument("--out", default="runs/zoo", help="folder for the run folders (default runs/zoo)")
    parser.add_argument("--epochs", type=int, help="train each this many epochs instead (its config copied into --out)")
    args = parser.parse_args(argv)
    if args.epochs is not None and args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    from edgebnn.config import load_config
    from edgebnn.pipeline import run

    paths = sorted(ZOO.glob("*.yaml"))
    if args.names:
        known = {p.stem: p for p in paths}
        unknown = [n for n in args.names if n not in known]
        if unknown:
            print(f"zoo: no example {', '.join(unknown)}; the zoo has {', '.join(known)}", file=sys.stderr)
            return 2
        paths = [known[n] for n in args.names]
    rows = []
    for path in paths:
        out = pathlib.Path(args.out) / path.stem
        print(f"== {path.stem}", flush=True)
        if args.epochs is not None:
            path = _with_epochs(path, args.epochs, pathlib.Path(args.out))
        summary = run(path, out, force=True, log=lambda line: None)
        io = load_config(path)["export"]["io_type"]
        checks = {io: (summary["samples"], *summary["mismatches"].values())}
        for other in IO_TYPES:
            if other != io:
                checks[other] = other_io(path, out, other)
        res = summary["resources"]
        util = res["utilization_percent"]
        rows.append(
            (
                path.stem,
                f"{100 * summary['accuracy_keras']:.1f}%",
                f"{100 * summary['accuracy_deployed']:.1f}%",
                *(f"{checks[t][1]} / {checks[t][2]}" for t in IO_TYPES),
                io,
                f"{util['lut']:.0f}%",
                f"{util['ff']:.0f}%",
                f"{util['bram18']:.0f}%",
                f"{util['dsp']:.0f}%",
                "yes" if res["fits"] else "no",
            )
        )
        print(f"   {' | '.join(rows[-1][1:])}", flush=True)
    head = (
        "example",
        "Keras",
        "deployed",
        "io_parallel K/E, E/C",
        "io_stream K/E, E/C",
        "estimated in",
        "LUT",
        "FF",
        "BRAM18",
        "DSP",
        "fits",
    )
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    bad = [r[0] for r in rows if any(cell != "0 / 0" for cell in r[3:5])]
    if bad:
        print(f"zoo: mismatches in {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
