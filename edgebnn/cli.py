"""The ``edgebnn`` command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading

from . import progress
from .backends.target import BACKENDS, HLS_TOOLS, IO_TYPES, STRATEGIES
from .errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES,
    EXIT_DOES_NOT_FIT,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_MISMATCH,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USER_ERROR,
    EdgebnnError,
    Terminated,
)

# quiet TensorFlow's start-up chatter before anything imports it
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _quiet_tensorflow() -> None:
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)


def _log(msg: str) -> None:
    print(msg, flush=True)


def _with_tensorflow(hls4ml: bool = False) -> None:
    """Import TensorFlow (and hls4ml, which imports it too) quietly: its C++ start-up logging
    ignores TF_CPP_MIN_LOG_LEVEL. Only the commands that need them call this."""
    from . import _QuietStderr

    shown = progress.bars_enabled() and "tensorflow" not in sys.modules
    if shown:  # on a terminal, a first line at once: TensorFlow's start-up takes seconds
        print("starting TensorFlow ...", end="", file=sys.stderr, flush=True)
    try:
        with _QuietStderr():
            import tensorflow  # noqa: F401

            if hls4ml:
                import hls4ml
    finally:
        if shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
    _quiet_tensorflow()


def _check_config_first(path: str) -> None:
    """Refuse a configuration file's mistakes that need no Keras (every key but the layers'
    arguments) before TensorFlow's seconds of start-up; the stage checks it in full."""
    from .run.config import load_config

    load_config(path, layers=False)


def _check_run_first(path: str, *needs: str) -> None:
    """Refuse a run folder that is missing, or lacks a current input of the stage (``needs``),
    before TensorFlow's seconds of start-up; the stage checks it again."""
    from .run.runfolder import RunFolder

    run = RunFolder.open(path)
    if needs:
        from .run.stages import run_config

        config = run_config(run, layers=False)  # the sections' digests, without Keras
        for name in needs:
            run.require(name, config)


def cmd_run(args) -> int:
    from .run.stages import check_train_first

    if args.resume:
        if not os.path.isdir(args.output):
            from .run.runfolder import RunFolderError

            raise RunFolderError(
                f"run folder {args.output!r} does not exist, so there is no training to resume; start the run with "
                f"`edgebnn run {args.config} -o {args.output}`"
            )
        check_train_first(args.output, resume=True)
    else:
        check_train_first(args.config, args.output, force=args.force)
    _with_tensorflow(hls4ml=True)
    from .run.pipeline import run

    summary = run(args.config, args.output, force=args.force, log=progress.log, resume=args.resume)
    if summary is None:  # a multi_worker task other than the chief: the chief runs the later stages
        progress.log(
            "trained with the other workers; the chief writes the run folder and runs the later stages", at=progress.QUIET
        )
        return EXIT_OK
    if any(summary["mismatches"].values()) or summary.get("stream_leftovers"):
        return EXIT_MISMATCH
    return EXIT_OK if summary["resources"]["fits"] else EXIT_DOES_NOT_FIT


def cmd_init(args) -> int:
    from .outputs import check_output
    from .run.config import starter_config

    text = starter_config(args.example)
    path = os.path.abspath(args.config)
    if os.path.isdir(path):
        raise EdgebnnError(f"{args.config!r} is a folder; name the configuration file to write, e.g. my_run.yaml")
    if os.path.lexists(path) and not args.force:
        raise EdgebnnError(f"{args.config!r} already exists; choose another name or pass --force to overwrite it")
    check_output(os.path.join(os.path.dirname(path), ".edgebnn-init-check"), what="configuration file")
    _write_text(path, text, "configuration file")
    progress.log(
        f"wrote {args.config}: edit it, then `edgebnn run {args.config} -o runs/{_stem(args.config)}`", at=progress.QUIET
    )
    return EXIT_OK


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0] or "run"


def cmd_train(args) -> int:
    from .run.stages import check_train_first

    check_train_first(args.source, args.output, force=args.force, resume=args.resume)
    _with_tensorflow()
    from .run.stages import train_stage

    model = os.path.join(args.source, "model.keras") if args.output is None else None
    before = _modified(model)
    run = train_stage(args.source, args.output, force=args.force, resume=args.resume)
    if run is None:  # a multi_worker task other than the chief
        progress.log("trained with the other workers; the chief wrote the run folder", at=progress.QUIET)
        return EXIT_OK
    if before is not None and _modified(model) == before:  # a finished run resumed: it said "nothing to do"
        return EXIT_OK
    progress.log(f"trained: {run / 'model.keras'}; next: `edgebnn freeze {run}`", at=progress.QUIET)
    return EXIT_OK


def _modified(path: str | None) -> int | None:
    try:
        return os.stat(path).st_mtime_ns if path is not None else None
    except OSError:
        return None


def cmd_freeze(args) -> int:
    _check_run_first(args.run, "model.keras")
    _with_tensorflow()
    from .run.stages import freeze_stage

    graph = freeze_stage(args.run)
    progress.log(
        f"froze {len(graph.nodes)} nodes into {os.path.join(args.run, 'graph.npz')}; next: `edgebnn export {args.run}`",
        at=progress.QUIET,
    )
    return EXIT_OK


def cmd_export(args) -> int:
    _check_run_first(args.run, "graph.npz")
    _with_tensorflow(hls4ml=True)
    from .run.stages import export_stage

    project = export_stage(args.run)
    progress.log(f"exported {project.path}; next: `edgebnn csim {args.run}`", at=progress.QUIET)
    return EXIT_OK


def cmd_csim(args) -> int:
    _check_run_first(args.run, "graph.npz")
    _with_tensorflow(hls4ml=True)
    from .run.stages import csim_stage

    csim_stage(args.run)
    progress.log(f"next: `edgebnn verify {args.run}`", at=progress.NORMAL)
    return EXIT_OK


def cmd_synth(args) -> int:
    from .run.stages import synth_stage

    synth_stage(args.run, timeout=args.timeout)
    progress.log(f"next: `edgebnn estimate {args.run}` (the cost model beside these counts) or `edgebnn report {args.run}`")
    return EXIT_OK


def cmd_verify(args) -> int:
    if args.require_csim:  # before the work: a gate that needs all three legs
        from .run.runfolder import FILES, RunFolder, RunFolderError

        run = RunFolder.open(args.run)
        if not (run / FILES["csim"]).exists():
            raise RunFolderError(
                f"run folder {str(run)!r} has no {FILES['csim']} yet and --require-csim asks for the C-simulation leg; "
                f"run `edgebnn csim {run}` first"
            )
    _check_run_first(args.run, "model.keras", "graph.npz")
    _with_tensorflow(hls4ml=True)
    from .run.stages import verified, verify_stage

    result = verify_stage(args.run)
    mm = result["mismatches"]
    csim = "not run" if mm["emulator_vs_csim"] is None else mm["emulator_vs_csim"]
    if not verified(result):
        verdict = "MISMATCH"
    elif mm["emulator_vs_csim"] is None:
        verdict = f"Keras = emulator bit for bit (the C-simulation has not run: `edgebnn csim {args.run}`, then verify again)"
    else:
        verdict = "VERIFIED bit for bit"
    progress.log(
        f"{verdict}: {result['samples']} samples, Keras vs emulator {mm['keras_vs_emulator']}, emulator vs C-simulation {csim}",
        at=progress.QUIET,
    )
    for m in result["first_mismatches"]:
        progress.log(f"  first {m['between']}: sample {m['sample']} at {m['layer']} ({m['source']})", at=progress.QUIET)
    for w in result["stream_leftovers"]:
        progress.log(f"  C-simulation: {w}", at=progress.QUIET)
    return EXIT_OK if verified(result) else EXIT_MISMATCH


def cmd_report(args) -> int:
    from .run.runfolder import RunFolder
    from .run.stages import report_stage

    html, _ = report_stage(args.run, log=lambda msg: None)
    progress.log(f"wrote {html}", at=progress.QUIET)
    unfinished = RunFolder.open(args.run).unfinished_training()
    if unfinished is not None:  # the report shows what was finished; this is what is not
        progress.log(
            f"its training stopped after epoch {unfinished['epoch']} of {unfinished['epochs']}: continue it with "
            f"`{unfinished['resume']}`",
            at=progress.QUIET,
        )
    return EXIT_OK


def cmd_summary(args) -> int:
    if os.path.isdir(args.source):
        _check_run_first(args.source, "model.keras")
    else:
        _check_config_first(args.source)
    _with_tensorflow()
    from .summary import summary

    source = args.source
    if os.path.isdir(source):
        from .run.runfolder import RunFolder
        from .run.stages import load_trained, run_config

        run = RunFolder.open(source)
        model = load_trained(run, run_config(run))
    else:
        from .run.config import build_model, load_config
        from .run.stages import load_data

        config = load_config(source)
        data = load_data(config, source)
        model = build_model(config, data.x_train.shape[1:])  # untrained: the structure is what counts here
    s = summary(model)
    if args.json:
        import json

        print(json.dumps(s.to_dict(), indent=2))
    else:
        print(s.table())
    return EXIT_OK


def cmd_boards(args) -> int:
    from .boards import list_boards

    boards = list_boards()
    if args.json:
        import dataclasses
        import json

        print(json.dumps([dataclasses.asdict(b) for b in boards], indent=2))
        return 0
    # LUT are 6-input on Xilinx, 4-input on iCE40 and ECP5; BRAM counts blocks of the size shown
    print(f"{'name':<14} {'part':<26} {'flow':<7} {'LUT':>9} {'FF':>10} {'DSP':>6} {'BRAM':>9} {'URAM':>5} {'clock':>7}")
    for b in boards:
        bram = f"{b.bram18:,}x{b.bram_kbit}K"
        print(
            f"{b.name:<14} {b.part:<26} {b.flow:<7} {b.lut:>9,} {b.ff:>10,} {b.dsp:>6,} {bram:>9} {b.uram:>5,} "
            f"{b.clock_period_ns:>5g}ns"
        )
    return 0


def cmd_estimate(args) -> int:
    from .backends.target import Target
    from .boards import list_boards, load_board
    from .estimate import estimate, fit
    from .graph import Graph

    path = args.graph
    options, board_name = {}, args.board
    given = {
        "backend": args.backend,
        "strategy": args.strategy,
        "reuse_factor": args.reuse_factor,
        "io_type": args.io_type,
        "clock_period_ns": args.clock,
        "hls_tool": args.hls_tool,
    }
    given = {k: v for k, v in given.items() if v is not None}
    for out, option, suffix in ((args.plot, "--plot", ".svg"), (args.json, "--json", ".json"), (args.csv, "--csv", ".csv")):
        if out:
            _check_out_path(out, option, suffix)  # before the work, not after it
    if args.margin is not None and not args.fit:
        raise EdgebnnError("--margin applies to --fit only; add --fit or leave --margin out")
    if args.margin is not None and not args.margin >= 0:
        raise EdgebnnError(f"--margin must be a fraction >= 0 (0.1 for 10%), got {args.margin:g}")
    run = _run_folder(path)
    if run is not None:  # a run folder: its own board and export options (its config), unless given here
        from .run.config import hls_options
        from .run.stages import estimate_stage, run_config

        config = run_config(run, layers=False)  # checked in full when trained; no Keras here
        own = not given and args.types is None and not args.fit
        if own and board_name in (None, config["board"]) and args.limit == DEFAULT_LIMIT:
            est, results = estimate_stage(run, log=lambda msg: None, limit=args.limit)  # the run's estimate.*
            if isinstance(est, dict):  # an rtl run: its design's estimate (the hls4ml ones are in estimate.json)
                from .run.stages import rtl_table

                print(rtl_table(est))
                _write_estimates(results, args)
                return EXIT_OK
            for other in results:
                progress.log(_board_line(other), at=progress.VERBOSE)
            _print_estimates([est], args)
            _write_estimates(results, args)
            return EXIT_OK
        options = {k: v for k, v in hls_options(config["export"]).items() if v is not None}
        board_name = board_name or config["board"]
        path = os.path.join(path, "graph.npz")
    elif os.path.isdir(path):  # a folder of an earlier edgebnn: its summary.json
        options, run_board = _run_export_options(path)
        board_name = board_name or run_board
        path = os.path.join(path, "graph.npz")
    board_name = board_name or "pynq-z2"
    options.update(given)
    target = Target(**options)  # checked before the graph is read
    graph = Graph.load(path)
    if not args.fit and {"reuse_factor", "strategy", "io_type"} & set(given):
        # a reuse factor given here that hls4ml would snap to another: its figures would be labelled wrongly
        from .backends.hls4ml import reuse

        reuse.check(target, reuse.matrices(graph), graph.name)
    # "all": every board hls4ml can build for (iCE40 and ECP5 boards are the RTL backend's)
    boards = [b for b in list_boards() if b.hls4ml] if board_name == "all" else [load_board(board_name)]
    results = []
    many = len(boards) > 1 and not args.fit  # fit shows a status line of its own
    with progress.bar(len(boards), "estimating", unit="board") if many else contextlib.nullcontext(progress._NoBar()) as bar:
        for board in boards:
            if args.fit:
                shown = _fit_progress(board.name)
                found = fit(graph, board, limit=args.limit, target=target, types=args.types, progress=shown, margin=args.margin)
                if shown is not None:
                    print("\r\033[K", end="", file=sys.stderr, flush=True)  # the status line gives way to the answer
                progress.log(f"{board.name}: {found}", at=progress.QUIET)
                est = found.estimate
                if est is None:
                    est = estimate(
                        graph,
                        board,
                        utilization_limit=args.limit,
                        target=target.replace(reuse_factor=found.tried[-1][0]),
                        types=args.types,
                    )
            else:
                est = estimate(graph, board, utilization_limit=args.limit, target=target, types=args.types)
            results.append(est)
            progress.log(_board_line(est), at=progress.VERBOSE)
            bar.update(1)
    _print_estimates(results, args)
    _write_estimates(results, args)
    return EXIT_OK  # a report, also when nothing fits: its table says "fits: no"


DEFAULT_LIMIT = 0.8


def _run_folder(path: str):
    """The run folder at ``path`` (edgebnn's marker and config.yaml), else None."""
    from .outputs import MARKER
    from .run.runfolder import RunFolder

    if os.path.isdir(path) and os.path.isfile(os.path.join(path, MARKER)) and os.path.isfile(os.path.join(path, "config.yaml")):
        return RunFolder.open(path)
    return None


def _board_line(est) -> str:
    """One board's estimate in a line (``--verbose``)."""
    use = ", ".join(f"{k.upper()} {est.utilization[k]:.1f}%" for k in _BAR_KEYS)
    return f"estimated {est.board.name}: {use}, reuse factor {est.reuse_factor}, fits: {'yes' if est.fits else 'no'}"


def _print_estimates(results, args) -> None:
    for est in results:
        print(est.table())
        print()
    print(_utilization_bars(results))


def _write_estimates(results, args) -> None:
    import json

    if args.plot:
        from .run.plots import utilization

        _write_text(args.plot, utilization(results), "plot file")
        progress.log(f"wrote {args.plot}", at=progress.QUIET)
    if args.json:
        _write_text(args.json, json.dumps([e.to_dict() for e in results], indent=2) + "\n", "JSON file")
        progress.log(f"wrote {args.json}", at=progress.QUIET)
    if args.csv:
        from .run.stages import estimates_csv

        _write_text(args.csv, estimates_csv(results), "CSV file")
        progress.log(f"wrote {args.csv}", at=progress.QUIET)


def _fit_progress(board: str):
    """On a terminal, a status line on stderr for ``fit``'s progress (each reuse factor it
    estimates, overwritten by the next); None elsewhere (nothing in logs)."""
    if not progress.bars_enabled():
        return None

    def show(rf: int, fits: bool) -> None:
        print(f"\r\033[K{board}: reuse factor {rf} {'fits' if fits else 'does not fit'}", end="", file=sys.stderr, flush=True)

    return show


def _run_export_options(folder: str) -> tuple[dict, str | None]:
    """The export options (as Target keywords) and the board a run folder was built with (its
    summary.json); none when the folder has no readable summary."""
    import json

    try:
        with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
            summary = json.load(fh)
    except (OSError, ValueError):
        return {}, None
    export = summary.get("export") if isinstance(summary, dict) else None
    board = summary.get("board") if isinstance(summary, dict) and isinstance(summary.get("board"), str) else None
    if not isinstance(export, dict):
        return {}, board
    keys = ("backend", "io_type", "strategy", "reuse_factor", "clock_period_ns", "hls_tool", "part")
    options = {k: export[k] for k in keys if export.get(k) is not None}
    if options.get("backend") == "rtl":  # an rtl run's hls4ml estimate is set beside its design with hls4ml's default
        del options["backend"]
    return options, board


def _check_out_path(path: str, option: str, suffix: str) -> None:
    """An output file of ``estimate`` (--plot, --json, --csv): its folder exists and is writable."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise EdgebnnError(f"{option} {path!r} is a folder; name an {suffix} file")
    if not os.path.isdir(folder):
        raise EdgebnnError(f"{option} {path!r}: folder {folder!r} does not exist; create it or choose another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise EdgebnnError(f"{option} {path!r}: no permission to write in {folder!r}; choose another path")


def _write_text(path: str, text: str, what: str) -> None:
    """Write ``text`` to ``path`` completely or not at all."""
    from .outputs import write_file

    write_file(path, lambda fh: fh.write(text), what=what)


_BAR_KEYS = ("lut", "ff", "dsp", "bram18")


def _utilization_bars(results, width: int = 40) -> str:
    """One text bar per board and resource: percent of the board, '|' marks the limit."""
    lines = ["utilization per board (% of the device; | marks the limit, > means over 100%)"]
    for est in results:
        lines.append(f"{est.board.name} (reuse factor {est.reuse_factor}, fits: {'yes' if est.fits else 'no'})")
        for key in _BAR_KEYS:
            pct = est.utilization[key]
            filled = width if pct == float("inf") else min(width, round(width * pct / 100))
            bar = list("#" * filled + "." * (width - filled))
            mark = min(width - 1, round(width * est.utilization_limit))
            bar[mark] = "|"
            over = ">" if pct > 100 else " "
            text = "inf" if pct == float("inf") else f"{pct:5.1f}%"
            lines.append(f"  {key.upper():<7}{''.join(bar)}{over} {text}")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (its own are a usage block and a line)."""

    def error(self, message):
        self.exit(EXIT_USER_ERROR, f"edgebnn: error: {message}; see '{self.prog} --help'\n")


# the exit codes each command can return besides those of every command (EVERY_COMMAND)
EVERY_COMMAND = (EXIT_OK, EXIT_USER_ERROR, EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_BROKEN_PIPE)
COMMAND_EXIT_CODES = {"run": (EXIT_MISMATCH, EXIT_DOES_NOT_FIT), "verify": (EXIT_MISMATCH,)}


def _exit_codes_text(command: str | None = None) -> str:
    """The exit codes ``command`` can return (every one without a command)."""
    if command is None:
        return "exit codes:\n" + "\n".join(f"  {code:>3}  {text}" for code, text in EXIT_CODES)
    codes = set(EVERY_COMMAND) | set(COMMAND_EXIT_CODES.get(command, ()))
    lines = []
    for code, text in EXIT_CODES:
        if code not in codes:
            continue
        if code == EXIT_OK and command != "run":
            text = "success"
        if command not in ("run", "train"):
            text = text.replace(" (training keeps its last checkpoint)", "")
        lines.append(f"  {code:>3}  {text}")
    return "exit codes:\n" + "\n".join(lines)


# what --verbose adds, per command
VERBOSE_HELP = {
    "run": "print every training epoch's line (off a terminal the default prints the first, the last and every "
    "(epochs // 10)-th)",
    "estimate": "print a line per board estimated",
}
VERBOSE_HELP["train"] = VERBOSE_HELP["run"]


def _reuse_factor_arg(text: str):
    """``--reuse-factor``: one integer for every weighted node, or ``NODE=RF,...`` per node (the
    others 1), as the run config's ``export.reuse_factor`` takes it."""
    if "=" not in text:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer nor NODE=RF pairs (e.g. 8 or d0=4,d1=2)") from None
    mapping = {}
    for pair in text.split(","):
        name, _, value = pair.partition("=")
        if not name.strip() or not value.strip().lstrip("-").isdigit():
            raise argparse.ArgumentTypeError(f"{pair!r} in {text!r} is not NODE=RF with an integer RF (e.g. d0=4,d1=2)")
        mapping[name.strip()] = int(value)
    return mapping


def _types_arg(text: str):
    """``--types``: the types a what-if design is built with where they differ from the graph's,
    as estimate's ``types=`` takes them: a YAML/JSON file, or the mapping itself written inline
    (``'{"*": {"accum": "fixed<16,6>"}}'``). Read as plain data (``yaml.safe_load``)."""
    import yaml

    source = text
    if os.path.isfile(text):
        try:
            with open(text, encoding="utf-8") as fh:
                source = fh.read()
        except (OSError, UnicodeDecodeError) as err:
            raise argparse.ArgumentTypeError(f"cannot read types file {text!r} ({err})") from None
    try:
        value = yaml.safe_load(source)
    except yaml.YAMLError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a file nor a mapping of node names (or '*') to {{accum|result|weight: type}}, "
            """e.g. '{"*": {"accum": "fixed<16,6>"}}'"""
        )
    return value


def _example(*lines: str) -> str:
    return "example:\n" + "\n".join(f"  {line}" for line in lines)


def build_parser() -> argparse.ArgumentParser:
    """The command line: the options before a command, then each command with its own."""
    p = _top_parser()
    # before the command (edgebnn -q run ...) or after it
    _verbosity(p, "verbosity_top", "print more: every training epoch's line, a line per board estimated")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_init, _add_train, _add_stages, _add_estimate, _add_report, _add_run, _add_summary, _add_boards):
        add(sub)
    return p


def _top_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(
        prog="edgebnn",
        description="Train binarized networks in Keras 3 and ship them to FPGAs, bit for bit.\n\n"
        "A run folder holds one configuration's run, stage by stage: init writes a starter configuration, "
        "train makes the run folder,\nand each later stage starts from the previous one's saved output:\n"
        "  init -> train -> freeze -> export -> csim -> verify -> [synth] -> estimate -> report   (run: all of them;\n"
        "  synth for export backend rtl: Verilog, simulated by Verilator, synthesized by Yosys and nextpnr)",
        epilog=_exit_codes_text() + "\n\nSet EDGEBNN_DEBUG=1 to see the traceback of an internal error.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"edgebnn {__version__}")
    return p


def _verbosity(parser, dest, verbose) -> None:
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_const", const=progress.QUIET, dest=dest, help="print results only")
    talk.add_argument("-v", "--verbose", action="store_const", const=progress.VERBOSE, dest=dest, help=verbose)


def _command(sub, name, func, help, example, description=None):
    """A command's parser: its help, description and example, its exit codes, -q and -v."""
    c = sub.add_parser(
        name,
        help=help,
        description=description or help[0].upper() + help[1:] + ".",
        epilog=example + "\n\n" + _exit_codes_text(name),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _verbosity(c, "verbosity", VERBOSE_HELP.get(name, "print more detail (the default prints a line per step)"))
    c.set_defaults(func=func)
    return c


def _run_arg(c) -> None:
    c.add_argument("run", metavar="RUN", help="a run folder made by `edgebnn train` (or `edgebnn run`)")


def _add_init(sub) -> None:
    """edgebnn init CONFIG.yaml"""
    i = _command(
        sub,
        "init",
        cmd_init,
        "write a commented starter configuration to edit",
        _example("edgebnn init my_bnn.yaml", "edgebnn init my_cnn.yaml --example digits_bnn_bop"),
    )
    i.add_argument("config", metavar="CONFIG.yaml", help="the configuration file to write")
    i.add_argument("--example", default=None, help="start from a configuration in examples/ (default: the digits BNN)")
    i.add_argument("--force", action="store_true", help="overwrite an existing file")


def _add_train(sub) -> None:
    """edgebnn train CONFIG.yaml -o RUN | RUN"""
    tr = _command(
        sub,
        "train",
        cmd_train,
        "train a configuration into a run folder (a checkpoint every epoch)",
        _example(
            "edgebnn train examples/digits_bnn.yaml -o runs/digits",
            "edgebnn train runs/digits --resume      # after Ctrl-C: continue from the last epoch",
            "edgebnn train runs/digits               # train again with runs/digits/config.yaml",
            "edgebnn train runs/digits --force       # ... even when its training was interrupted (start over)",
        ),
    )
    tr.add_argument("source", metavar="CONFIG.yaml|RUN", help="a configuration file (with -o) or a run folder")
    tr.add_argument("-o", "--output", metavar="RUN", default=None, help="the run folder to make (with a configuration file)")
    again = tr.add_mutually_exclusive_group()
    again.add_argument(
        "--force",
        action="store_true",
        help="with -o: replace an existing run folder edgebnn wrote, once the new one is trained; with RUN: train it "
        "again from epoch 1 even though it holds an unfinished training (whose checkpoint is discarded)",
    )
    again.add_argument("--resume", action="store_true", help="continue a run folder's training from its last checkpoint")


def _add_stages(sub) -> None:
    """The stages after training, each on a run folder: freeze, export, csim, verify, synth."""
    f = _command(
        sub,
        "freeze",
        cmd_freeze,
        "freeze the trained model into integer/binary weights and fixed-point types (graph.npz)",
        _example("edgebnn freeze runs/digits"),
    )
    _run_arg(f)
    x = _command(
        sub,
        "export",
        cmd_export,
        "export the frozen graph as an hls4ml project (hls_project/), or as Verilog with backend rtl (rtl/)",
        _example("edgebnn export runs/digits"),
    )
    _run_arg(x)
    c = _command(
        sub,
        "csim",
        cmd_csim,
        "compile the exported project's C-simulation (or, backend rtl, its Verilator simulation) and run it on the "
        "test set (csim.npz, rtlsim.npz)",
        _example("edgebnn csim runs/digits"),
    )
    _run_arg(c)
    v = _command(
        sub,
        "verify",
        cmd_verify,
        "check Keras = emulator = C-simulation bit for bit on the test set (verify.json; exit 1 on a mismatch)",
        _example("edgebnn verify runs/digits", "edgebnn verify runs/digits --require-csim   # a CI gate: all three legs"),
    )
    _run_arg(v)
    v.add_argument(
        "--require-csim",
        action="store_true",
        help="refuse (exit 2) when the C-simulation has not run, instead of verifying Keras = emulator alone",
    )
    sy = _command(
        sub,
        "synth",
        cmd_synth,
        "synthesize an rtl run's design with Yosys, and place and route it with nextpnr on iCE40/ECP5 (synth.json)",
        _example("edgebnn synth runs/digits_rtl"),
    )
    _run_arg(sy)
    sy.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="seconds each tool may run before it is stopped (default 3600)"
    )


def _add_estimate(sub) -> None:
    """edgebnn estimate GRAPH|RUN and its what-if options"""
    e = _command(
        sub,
        "estimate",
        cmd_estimate,
        "estimate resources and latency of a frozen graph",
        _example(
            "edgebnn estimate runs/digits                       # the run's board and export options",
            "edgebnn estimate runs/digits --board all --strategy Resource --fit",
            "edgebnn estimate graph.npz --board zcu104 --json est.json --csv est.csv --plot est.svg",
        ),
        description="Estimate resources and latency of a frozen graph on a board. For a run folder the run's own board "
        "and export options are the defaults, and without other options the result is the run's estimate "
        "(estimate.json, .txt and .csv in the folder: the run's board and every board profile).",
    )
    e.add_argument("graph", help="a graph file (graph.npz) or a run folder")
    e.add_argument("--board", default=None, help="board name, or 'all' (default: the run's board, else pynq-z2)")
    e.add_argument("--backend", default=None, choices=BACKENDS, help="hls4ml backend (default: the run's, else Vitis)")
    e.add_argument("--strategy", default=None, choices=STRATEGIES, help="default: the run's, else Latency")
    e.add_argument(
        "--reuse-factor",
        type=_reuse_factor_arg,
        default=None,
        metavar="RF|NODE=RF,...",
        help="one reuse factor for every weighted node, or per node (the others 1); refused where hls4ml would build "
        "another (default: the run's, else 1)",
    )
    e.add_argument("--io-type", default=None, choices=IO_TYPES, help="default: the run's, else io_parallel")
    e.add_argument("--clock", type=float, default=None, help="clock period in ns (default: the run's, else the board's)")
    e.add_argument(
        "--hls-tool",
        default=None,
        choices=HLS_TOOLS,
        help="HLS tool whose scheduling sets the latency\n(default: the run's, else the backend's)",
    )
    e.add_argument(
        "--types",
        type=_types_arg,
        default=None,
        metavar="FILE|MAPPING",
        help="what if the design used other types: node (or '*') -> {accum|result|weight: type}, "
        """as a YAML/JSON file or inline, e.g. '{"*": {"accum": "fixed<16,6>"}}' (the graph's own by default)""",
    )
    e.add_argument("--limit", type=float, default=DEFAULT_LIMIT, help="utilization limit for 'fits' (default 0.8)")
    e.add_argument("--fit", action="store_true", help="find the smallest valid reuse factor that fits each board")
    e.add_argument(
        "--margin",
        type=float,
        default=None,
        metavar="FRACTION",
        help="with --fit, a design fits only when the top of each resource's calibrated interval (from published "
        "designs' errors) times 1 + FRACTION is under the limit, e.g. 0 or 0.1",
    )
    e.add_argument("--plot", metavar="FILE.svg", help="also write the utilization bar chart as an SVG file")
    e.add_argument("--json", metavar="FILE.json", help="also write the estimates as JSON")
    e.add_argument("--csv", metavar="FILE.csv", help="also write the estimates as CSV (a row per node and board)")


def _add_report(sub) -> None:
    """edgebnn report RUN"""
    rp = _command(
        sub,
        "report",
        cmd_report,
        "write report.html (one self-contained page) and report.json",
        _example("edgebnn report runs/digits && chromium runs/digits/report.html"),
    )
    _run_arg(rp)


def _add_run(sub) -> None:
    """edgebnn run CONFIG.yaml -o RUN: every stage"""
    r = _command(
        sub,
        "run",
        cmd_run,
        "train, freeze, export, C-simulate, verify, estimate and report one configuration",
        _example(
            "edgebnn run examples/digits_bnn.yaml -o runs/digits", "edgebnn run examples/digits_bnn.yaml -o runs/digits --resume"
        ),
    )
    r.add_argument("config", metavar="CONFIG.yaml", help="run configuration (YAML), e.g. examples/digits_bnn.yaml")
    r.add_argument("-o", "--output", required=True, metavar="RUN", help="run folder (must not exist unless --force or --resume)")
    again = r.add_mutually_exclusive_group()
    again.add_argument(
        "--force",
        action="store_true",
        help="replace an existing run folder, only if edgebnn wrote it (it holds .edgebnn-output), once the new one is trained",
    )
    again.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted training of RUN from its last checkpoint, then run every later stage",
    )


def _add_summary(sub) -> None:
    """edgebnn summary RUN|CONFIG.yaml"""
    sm = _command(
        sub,
        "summary",
        cmd_summary,
        "per-layer precision, parameters per bit width and MACs of a run's model (or of a configuration's, untrained)",
        _example("edgebnn summary runs/digits", "edgebnn summary examples/digits_bnn.yaml --json"),
    )
    sm.add_argument("source", metavar="RUN|CONFIG.yaml", help="a run folder or a configuration file")
    sm.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _add_boards(sub) -> None:
    """edgebnn boards"""
    b = _command(sub, "boards", cmd_boards, "list the board profiles", _example("edgebnn boards", "edgebnn boards --json"))
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")


# the signal that is unwinding the command and, on the command line, the stderr it set aside
_SIGNALLED: dict = {}


def _on_signal(signum, frame):
    """Ctrl-C raises KeyboardInterrupt and SIGTERM :class:`Terminated`, so that an output being
    written is removed on the way out. While none is, there is nothing to clean up: the command
    line leaves at once, as at start-up (edgebnn/__init__).

    The exception can surface inside a library's C code (TensorFlow turns it into a SystemError
    and prints a traceback of its own); so the signal is recorded, :func:`main` ends with the
    signal's line and exit code whatever exception arrives, and on the command line stderr is
    muted until then (the one line goes to the stderr set aside)."""
    import edgebnn

    outputs = sys.modules.get("edgebnn.outputs")
    if not edgebnn._running_the_cli() or (outputs is not None and outputs.writing()):  # main() called from Python: unwind
        if "signum" not in _SIGNALLED:
            _SIGNALLED["signum"] = signum
            if edgebnn._running_the_cli():
                _SIGNALLED["stderr"] = _mute_stderr()
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()
    sys.stdout.flush()
    note = None if outputs is None else outputs.current_interrupt_note()
    if note is not None:  # a run past its training: how to go on from the stages it finished
        name, code = ("interrupted", EXIT_INTERRUPTED) if signum == signal.SIGINT else ("terminated (SIGTERM)", EXIT_TERMINATED)
        os.write(edgebnn._STDERR, f"edgebnn: {name}; {note}\n".encode())  # the stderr set aside at start-up
        os._exit(code)
    edgebnn._leave_at_start_up(signum, frame)


def _mute_stderr() -> int | None:
    """Point file descriptor 2 at /dev/null and return a copy of the original (None if that fails)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        return saved
    except (OSError, ValueError, AttributeError):
        return None


def _signal_exit(line: str | None = None) -> int:
    """The line (``line`` when the command gave its own) and exit code of the signal recorded by
    :func:`_on_signal`."""
    if _SIGNALLED.get("signum") == signal.SIGINT:
        default, code = "edgebnn: interrupted; nothing was left half-written", EXIT_INTERRUPTED
    else:
        default, code = "edgebnn: terminated (SIGTERM); nothing was left half-written", EXIT_TERMINATED
    line = line or default
    saved = _SIGNALLED.get("stderr")
    if saved is not None:
        os.write(saved, (line + "\n").encode())
    else:
        print(line, file=sys.stderr)
    return code


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv=None) -> int:
    """Run one command; every failure ends here as exactly one line on stderr and an exit code
    from :data:`edgebnn.errors.EXIT_CODES`."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C and SIGTERM unwind (staging folders are removed on the way out) or, with
        # nothing being written, leave at once (edgebnn/__init__ set a start-up handler)
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # a background job ignores Ctrl-C
                previous[sig] = signal.signal(sig, _on_signal)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help (0) or an argument error (2), already printed
            return exc.code if isinstance(exc.code, int) else EXIT_USER_ERROR
        level = getattr(args, "verbosity", None)
        level = getattr(args, "verbosity_top", None) if level is None else level
        progress.set_level(progress.NORMAL if level is None else level)
        return args.func(args)
    except EdgebnnError as err:
        _debug_traceback()
        print(f"edgebnn: error: {_one_line(err) or type(err).__name__}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # e.g. `edgebnn estimate RUN --board all | head -3`: the reader has what it wanted
        _silence_stdout()
        # quietly, as Unix tools end in a pipe; not 0: the command stopped before its end (a run
        # would not have finished), which `set -o pipefail` should see
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt as exc:
        line = getattr(exc, "line", None)  # training: whether a checkpoint was kept, how to resume
        _SIGNALLED.setdefault("signum", signal.SIGTERM if getattr(exc, "terminated", False) else signal.SIGINT)
        return _signal_exit(line)
    except Terminated:
        _SIGNALLED.setdefault("signum", signal.SIGTERM)
        return _signal_exit()
    except Exception as err:  # noqa: BLE001 - the boundary: any other failure is a bug, said in one line
        if "signum" in _SIGNALLED:  # the signal's exception, changed on its way through C code
            return _signal_exit()
        _debug_traceback()
        print(
            f"edgebnn: internal error: {type(err).__name__}: {_one_line(err)} "
            "(please report it; set EDGEBNN_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        _SIGNALLED.clear()


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests)
        pass


def _debug_traceback() -> None:
    if os.environ.get("EDGEBNN_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exc()


if __name__ == "__main__":
    sys.exit(main())
