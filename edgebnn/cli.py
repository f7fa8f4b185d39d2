"""The ``edgebnn`` command line."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from .backends.target import BACKENDS, HLS_TOOLS, IO_TYPES, STRATEGIES
from .errors import (
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


def cmd_run(args) -> int:
    from . import _QuietStderr

    with _QuietStderr():  # the only command that needs TensorFlow imports it here, quietly
        import tensorflow  # noqa: F401
    from .pipeline import run

    _quiet_tensorflow()
    summary = run(args.config, args.output, force=args.force, log=_log)
    if any(summary["mismatches"].values()) or summary.get("stream_leftovers"):
        return EXIT_MISMATCH
    return EXIT_OK if summary["resources"]["fits"] else EXIT_DOES_NOT_FIT


def cmd_boards(args) -> int:
    from .boards import list_boards

    boards = list_boards()
    print(f"{'name':<14} {'part':<26} {'LUT':>9} {'FF':>10} {'DSP':>6} {'BRAM18':>7} {'URAM':>5} {'clock':>7}")
    for b in boards:
        print(
            f"{b.name:<14} {b.part:<26} {b.lut:>9,} {b.ff:>10,} {b.dsp:>6,} {b.bram18:>7,} {b.uram:>5,} {b.clock_period_ns:>5g}ns"
        )
    return 0


def cmd_estimate(args) -> int:
    from .backends.target import Target
    from .boards import list_boards, load_board
    from .estimate import estimate, fit
    from .graph import Graph

    path = args.graph
    options, board_name = {}, args.board
    if os.path.isdir(path):  # a run folder: its own board and export options, unless given here
        options, run_board = _run_export_options(path)
        board_name = board_name or run_board
        path = os.path.join(path, "graph.npz")
    board_name = board_name or "pynq-z2"
    given = {
        "backend": args.backend,
        "strategy": args.strategy,
        "reuse_factor": args.reuse_factor,
        "io_type": args.io_type,
        "clock_period_ns": args.clock,
        "hls_tool": args.hls_tool,
    }
    options.update({k: v for k, v in given.items() if v is not None})
    target = Target(**options)  # checked before the graph is read
    if args.plot:
        _check_plot_path(args.plot)  # before the work, not after it
    graph = Graph.load(path)
    boards = list_boards() if board_name == "all" else [load_board(board_name)]
    results = []
    for board in boards:
        if args.fit:
            progress = _fit_progress(board.name)
            found = fit(graph, board, limit=args.limit, target=target, progress=progress)
            if progress is not None:
                print("\r\033[K", end="", file=sys.stderr, flush=True)  # the status line gives way to the answer
            print(f"{board.name}: {found}")
            est = found.estimate
            if est is None:
                est = estimate(graph, board, utilization_limit=args.limit, target=target.replace(reuse_factor=found.tried[-1][0]))
        else:
            est = estimate(graph, board, utilization_limit=args.limit, target=target)
        print(est.table())
        print()
        results.append(est)
    print(_utilization_bars(results))
    if args.plot:
        _write_text(args.plot, _utilization_svg(results), "plot file")
        print(f"wrote {args.plot}")
    return EXIT_OK  # a report, also when nothing fits: its table says "fits: no"


def _fit_progress(board: str):
    """On a terminal, a status line on stderr for ``fit``'s progress (each reuse factor it
    estimates, overwritten by the next); None elsewhere (nothing in logs)."""
    if not sys.stderr.isatty():
        return None

    def progress(rf: int, fits: bool) -> None:
        print(f"\r\033[K{board}: reuse factor {rf} {'fits' if fits else 'does not fit'}", end="", file=sys.stderr, flush=True)

    return progress


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
    return {k: export[k] for k in keys if export.get(k) is not None}, board


def _check_plot_path(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise EdgebnnError(f"--plot {path!r} is a folder; name an .svg file")
    if not os.path.isdir(folder):
        raise EdgebnnError(f"--plot {path!r}: folder {folder!r} does not exist; create it or choose another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise EdgebnnError(f"--plot {path!r}: no permission to write in {folder!r}; choose another path")


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


def _utilization_svg(results) -> str:
    """A small hand-made SVG bar chart: one group of bars per board."""
    colors = {"lut": "#4e79a7", "ff": "#f28e2b", "dsp": "#e15759", "bram18": "#76b7b2"}
    bar_h, gap, left, plot_w = 10, 8, 120, 400
    group_h = len(_BAR_KEYS) * bar_h + gap
    height = 40 + group_h * len(results)
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + plot_w + 80}" height="{height}" '
            f'font-family="sans-serif" font-size="10">'
        ),
        '<text x="4" y="14" font-size="12">utilization per board (% of the device)</text>',
    ]
    for i, est in enumerate(results):
        y0 = 28 + i * group_h
        parts.append(f'<text x="4" y="{y0 + 2 * bar_h}">{est.board.name}</text>')
        for j, key in enumerate(_BAR_KEYS):
            pct = est.utilization[key]
            w = plot_w if pct == float("inf") else min(plot_w, plot_w * pct / 100)
            y = y0 + j * bar_h
            parts.append(
                f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{colors[key]}">'
                f"<title>{key.upper()} {pct:.1f}%</title></rect>"
            )
            parts.append(f'<text x="{left + w + 3:.1f}" y="{y + bar_h - 3}">{key.upper()} {pct:.1f}%</text>')
        lim = left + plot_w * est.utilization_limit
        parts.append(
            f'<line x1="{lim:.1f}" y1="{y0}" x2="{lim:.1f}" y2="{y0 + len(_BAR_KEYS) * bar_h}" '
            'stroke="black" stroke-dasharray="2,2"/>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (its own are a usage block and a line)."""

    def error(self, message):
        self.exit(EXIT_USER_ERROR, f"edgebnn: error: {message}; see '{self.prog} --help'\n")


def _exit_codes_text() -> str:
    return "exit codes:\n" + "\n".join(f"  {code:>3}  {text}" for code, text in EXIT_CODES)


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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="edgebnn",
        description="Train binarized networks in Keras 3 and ship them to FPGAs, bit for bit.",
        epilog=_exit_codes_text() + "\n\nSet EDGEBNN_DEBUG=1 to see the traceback of an internal error.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser(
        "run",
        help="train, freeze, export, C-simulate, verify and estimate one configuration",
        epilog=_exit_codes_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("config", help="run configuration (YAML), e.g. examples/digits_bnn.yaml")
    r.add_argument("-o", "--output", required=True, help="output folder (must not exist unless --force)")
    r.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output folder, only if edgebnn wrote it (it holds .edgebnn-output)",
    )
    r.set_defaults(func=cmd_run)

    b = sub.add_parser("boards", help="list the board profiles")
    b.set_defaults(func=cmd_boards)

    e = sub.add_parser(
        "estimate",
        help="estimate resources and latency of a frozen graph",
        description="Estimate resources and latency of a frozen graph on a board. For a run folder "
        "the run's own export options are the defaults.",
    )
    e.add_argument("graph", help="a graph file (graph.npz) or a run folder")
    e.add_argument("--board", default=None, help="board name, or 'all' (default: the run's board, else pynq-z2)")
    e.add_argument("--backend", default=None, choices=BACKENDS, help="hls4ml backend (default Vitis)")
    e.add_argument("--strategy", default=None, choices=STRATEGIES, help="default Latency")
    e.add_argument(
        "--reuse-factor",
        type=_reuse_factor_arg,
        default=None,
        metavar="RF|NODE=RF,...",
        help="one reuse factor for every weighted node, or per node (the others 1); default 1",
    )
    e.add_argument("--io-type", default=None, choices=IO_TYPES, help="default io_parallel")
    e.add_argument("--clock", type=float, default=None, help="clock period in ns (default: the board's)")
    e.add_argument(
        "--hls-tool", default=None, choices=HLS_TOOLS, help="HLS tool whose scheduling sets the latency (default: the backend's)"
    )
    e.add_argument("--limit", type=float, default=0.8, help="utilization limit for 'fits' (default 0.8)")
    e.add_argument("--fit", action="store_true", help="find the smallest valid reuse factor that fits each board")
    e.add_argument("--plot", metavar="FILE.svg", help="also write the utilization bar chart as an SVG file")
    e.set_defaults(func=cmd_estimate)
    return p


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


def _signal_exit() -> int:
    """The line and exit code of the signal recorded by :func:`_on_signal`."""
    if _SIGNALLED.get("signum") == signal.SIGINT:
        line, code = "edgebnn: interrupted; nothing was left half-written", EXIT_INTERRUPTED
    else:
        line, code = "edgebnn: terminated (SIGTERM); nothing was left half-written", EXIT_TERMINATED
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
        return args.func(args)
    except EdgebnnError as err:
        _debug_traceback()
        print(f"edgebnn: error: {_one_line(err) or type(err).__name__}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # e.g. `edgebnn boards | head -1`: not a bug
        _silence_stdout()
        print(
            "edgebnn: error: the output pipe was closed before edgebnn finished writing; nothing was left half-written",
            file=sys.stderr,
        )
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        _SIGNALLED.setdefault("signum", signal.SIGINT)
        return _signal_exit()
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
