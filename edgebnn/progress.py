"""Progress on long work (training, the C-simulation's compile and run, estimation over boards),
drawn with tqdm on stderr, and the command line's verbosity.

Bars appear only where someone watches: stderr is a terminal, ``--quiet`` was not given and the
``CI`` environment variable is not set. Elsewhere (logs, pipes, CI) there are no bars, only the
plain log lines on stdout, so a log file holds no carriage returns.

Verbosity (``--quiet`` / default / ``--verbose``) is one level shared by the command line:
``QUIET`` prints the result lines only, ``NORMAL`` adds a line per step, ``VERBOSE`` adds
details (each training epoch, each board, hls4ml's warnings).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

QUIET, NORMAL, VERBOSE = 0, 1, 2

_state = {"level": NORMAL}


def set_level(level: int) -> None:
    _state["level"] = level


def level() -> int:
    return _state["level"]


def bars_enabled() -> bool:
    """Whether progress bars are drawn: a terminal on stderr, not quiet, not CI."""
    if _state["level"] <= QUIET or os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def log(msg: str, at: int = NORMAL) -> None:
    """Print ``msg`` on stdout when the verbosity is at least ``at``, above any bar."""
    if _state["level"] < at:
        return
    bar = _state.get("bar")
    if bar is not None:
        bar.write(msg, file=sys.stdout)
    else:
        if _state.get("working"):  # the status line gives way (it is drawn again at its next tick)
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        print(msg, flush=True)


@contextlib.contextmanager
def bar(total: int | None, desc: str, unit: str = "it") -> Iterator:
    """A tqdm bar (a no-op object when bars are off): ``update(n)``, ``set_postfix_str(s)``."""
    if not bars_enabled():
        yield _NoBar()
        return
    from tqdm import tqdm

    b = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    _state["bar"] = b
    try:
        yield b
    finally:
        _state.pop("bar", None)
        b.close()


@contextlib.contextmanager
def working(desc: str) -> Iterator[None]:
    """A line with the elapsed time for work that reports no progress of its own (g++)."""
    if not bars_enabled():
        yield
        return
    stop = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        while not stop.wait(0.5):
            sys.stderr.write(f"\r\033[K{desc} ... {time.monotonic() - start:.0f} s")
            sys.stderr.flush()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    _state["working"] = True
    try:
        yield
    finally:
        _state.pop("working", None)
        stop.set()
        thread.join()
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def write(self, s: str, file=None) -> None:
        print(s, file=file or sys.stdout, flush=True)
