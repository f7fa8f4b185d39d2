"""Failures a user can cause and fix, and the command line's exit codes.

An :class:`EdgebnnError` is a user's problem: its message is one sentence naming the file, key
or layer at fault and what to do. The command line prints it as one line and exits with
:data:`EXIT_USER_ERROR`. Anything else reaching the command line is a bug in edgebnn: one line
``edgebnn: internal error: ...`` and :data:`EXIT_INTERNAL_ERROR`.
"""

import re

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_USER_ERROR = 2
EXIT_DOES_NOT_FIT = 3
EXIT_INTERNAL_ERROR = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a Unix tool whose reader stopped reading ends
EXIT_TERMINATED = 143  # 128 + SIGTERM

# The one table of exit codes: the CLI's --help and the README show it, the tests read it.
EXIT_CODES = (
    (EXIT_OK, "success (for run: verified bit for bit and fits the board)"),
    (EXIT_MISMATCH, "run, verify: Keras, emulator and C-simulation are not bit-exact (the run folder keeps the evidence)"),
    (EXIT_USER_ERROR, "user error: a bad config, argument, file or output path (one line names it)"),
    (EXIT_DOES_NOT_FIT, "run: verified bit for bit, but the design does not fit the board"),
    (EXIT_INTERNAL_ERROR, "internal error: a bug in edgebnn (please report it; EDGEBNN_DEBUG=1 shows the traceback)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); nothing half-written is left behind (training keeps its last checkpoint)"),
    (EXIT_TERMINATED, "terminated (SIGTERM); nothing half-written is left behind (training keeps its last checkpoint)"),
    (EXIT_BROKEN_PIPE, "the output's reader stopped reading (e.g. `| head`): edgebnn stopped there, quietly, as Unix tools do"),
)


def did_you_mean(name, known) -> str:
    """`` (did you mean 'x'?)`` naming the closest of ``known`` to a misspelt ``name``, or ''."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class EdgebnnError(ValueError):
    """Base of every user-facing edgebnn error; the message names the culprit and the fix."""


_LONG_LIST = re.compile(r"([\[(])((?:\s*-?[\d.e+-]+\s*,){8,}\s*-?[\d.e+-]+\s*)([\])])")


def brief(message: str) -> str:
    """``message`` with every list of more than 8 numbers shown as its first four, an ellipsis
    and its last two with their count (``[1, 2, 6, 7, ..., 57, 59] (42 values)``), so that a
    refusal naming a layer's 64 chosen channels stays one readable sentence."""

    def short(m: re.Match) -> str:
        items = [v.strip() for v in m.group(2).split(",")]
        return f"{m.group(1)}{', '.join(items[:4])}, ..., {', '.join(items[-2:])}{m.group(3)} ({len(items)} values)"

    return _LONG_LIST.sub(short, message)


class OutputError(EdgebnnError):
    """An output path that cannot be written, or must not be replaced."""


class ToolMissingError(EdgebnnError):
    """An open hardware tool (Yosys, nextpnr) that is not installed; the message names the pip
    extra or the system package that brings it."""


class ToolFailedError(EdgebnnError):
    """An open hardware tool that stopped with an error or ran past its timeout; the message
    names the tool, its last error line and the log that holds the rest."""


class Terminated(BaseException):
    """Raised by the command line's SIGTERM handler so that clean-up runs as for Ctrl-C.

    A BaseException, like KeyboardInterrupt, so that no ``except Exception`` swallows it.
    """
