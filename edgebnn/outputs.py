"""Output folders and files that appear complete or not at all, and never at a user's expense.

Every folder :func:`staged_dir` creates holds a marker file, :data:`MARKER`. With
``marked_only`` (what ``edgebnn run --force`` uses), an existing folder is replaced only if it
holds that marker, so ``--force`` cannot delete a folder edgebnn did not write. A regular file,
a symbolic link, the current folder and any folder that contains it are never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import shutil
import signal
import tempfile

from .errors import OutputError

MARKER = ".edgebnn-output"
_MARKER_TEXT = "This folder was written by edgebnn; `edgebnn run --force` may replace it.\n"

# errors that mean "this place cannot be written", not a bug: reported as one user-facing line
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG}


# how many outputs are being written now (staged folders and files not yet complete): while none
# is, an interrupt has nothing to clean up and the command line leaves at once (edgebnn.cli)
_open_outputs = 0


def writing() -> bool:
    """Whether an output folder or file is being written now (see :func:`staged_dir`)."""
    return _open_outputs > 0


# what a Ctrl-C or SIGTERM that finds nothing being written says after its first words (the
# command line then leaves at once): how to go on from what is kept
_interrupt_notes: list[str] = []


@contextlib.contextmanager
def interrupt_note(note: str):
    """While in this block, an interrupt that finds nothing being written ends with ``note``."""
    _interrupt_notes.append(note)
    try:
        yield
    finally:
        _interrupt_notes.pop()


def current_interrupt_note() -> str | None:
    return _interrupt_notes[-1] if _interrupt_notes else None


class OutputExistsError(OutputError, FileExistsError):
    """The output path exists and may not (or must not) be replaced."""


def check_output(
    final: str | os.PathLike, force: bool = False, what: str = "output folder", marked_only: bool = False
) -> pathlib.Path:
    """The absolute output path, after refusing what :func:`staged_dir` must not do.

    Writes nothing, so callers run it before any long work.
    """
    final = pathlib.Path(os.path.abspath(os.fspath(final)))
    if final.parent == final:
        raise OutputError(f"{what} {str(final)!r} is the root of the file system; name a new folder instead")
    if os.path.lexists(final):
        if not force:
            raise OutputExistsError(f"{what} {str(final)!r} already exists; choose another path or pass --force to replace it")
        if final.is_symlink() or not final.is_dir():
            kind = "a symbolic link" if final.is_symlink() else "a file, not a folder"
            raise OutputExistsError(
                f"{what} {str(final)!r} is {kind}; --force only replaces a folder that edgebnn wrote, so choose another path"
            )
        cwd = pathlib.Path.cwd().resolve()
        real = final.resolve()
        if real == cwd or real in cwd.parents:
            raise OutputExistsError(
                f"{what} {str(final)!r} is the current folder or contains it; --force will not replace it, so name a new folder"
            )
        if marked_only and not (final / MARKER).is_file():
            raise OutputExistsError(
                f"{what} {str(final)!r} was not written by edgebnn (it has no {MARKER} file); --force only "
                "replaces edgebnn's own folders, so remove it yourself or choose another path"
            )
    ancestor = final.parent
    while not os.path.lexists(ancestor):
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"cannot create {what} {str(final)!r}: {str(ancestor)!r} is a file, not a folder; choose another path")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot create {what} {str(final)!r}: no permission to write in {str(ancestor)!r}; choose a folder you can write to"
        )
    return final


@contextlib.contextmanager
def staged_dir(final: str | os.PathLike, force: bool = False, what: str = "output folder", marked_only: bool = False):
    """Yield a temporary folder beside ``final``; on success move it to ``final``.

    An existing ``final`` is refused unless ``force`` (and, with ``marked_only``, unless it holds
    :data:`MARKER`); see :func:`check_output`. It is replaced only once the new content is
    complete (and put back if the move fails). On any error or interrupt the temporary folder,
    and any parent folder created for it, is removed. A failure to write (full disk, read-only
    or forbidden folder) becomes one :class:`OutputError` line. Text files that mention the
    temporary folder's path (hls4ml records its output folder) are pointed at ``final``
    before the move.
    """
    final = check_output(final, force=force, what=what, marked_only=marked_only)
    created: list[pathlib.Path] = []
    tmp = None
    done = False
    global _open_outputs
    _open_outputs += 1
    try:
        try:
            for parent in reversed([final.parent, *final.parent.parents]):
                if not os.path.lexists(parent):
                    parent.mkdir()
                    created.append(parent)
            with _signals_held():  # an interrupt inside mkdtemp would leave a folder not yet named in tmp
                tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; the result is an ordinary folder
            (tmp / MARKER).write_text(_MARKER_TEXT)
        except OSError as err:
            raise OutputError(f"cannot create {what} {str(final)!r}: {_reason(err)}") from err
        try:
            yield tmp
            _retarget_text_files(tmp, final)
            with _signals_held():  # Ctrl-C or SIGTERM between the two moves would lose both folders
                if os.path.lexists(final):
                    old = pathlib.Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
                    os.replace(final, old / "previous")
                    try:
                        os.replace(tmp, final)
                    except BaseException:
                        os.replace(old / "previous", final)
                        raise
                    finally:
                        shutil.rmtree(old, ignore_errors=True)
                else:
                    os.replace(tmp, final)
        except OSError as err:
            if err.errno not in _WRITE_ERRNOS:
                raise
            raise OutputError(f"cannot write {what} {str(final)!r}: {_reason(err)}") from err
        done = True
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if not done:
            for parent in reversed(created):
                with contextlib.suppress(OSError):
                    parent.rmdir()  # only if still empty
        _open_outputs -= 1


def write_file(path, write, mode: str = "w", what: str = "file") -> None:
    """Write ``path`` completely or not at all: ``write(fh)`` fills a temporary file beside it,
    which then replaces ``path``. A failure is one :class:`OutputError` naming ``what`` and the
    path (the temporary file removed)."""
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    global _open_outputs
    _open_outputs += 1
    try:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            write(fh)
        os.replace(tmp, path)
    except OSError as err:
        raise OutputError(
            f"cannot write {what} {path!r}: {err.strerror or err}; choose a path you can write to (and check the free space)"
        ) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
        _open_outputs -= 1


@contextlib.contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM back (delivered on exit) while the folders are swapped."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held) if hasattr(signal, "pthread_sigmask") else None
    try:
        yield
    finally:
        if previous is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _reason(err: OSError) -> str:
    advice = {
        errno.ENOSPC: "free some space or choose another path",
        errno.EDQUOT: "free some space or choose another path",
        errno.EFBIG: "choose another file system",
    }.get(err.errno, "choose a folder you can write to")
    return f"{err.strerror or err}; {advice}"


def _retarget_text_files(folder: pathlib.Path, final: pathlib.Path) -> None:
    """Replace the staging path by the final one in text files (binaries are left alone: a
    compiled library is rebuilt by the next compile)."""
    needle, replacement = str(folder).encode(), str(final).encode()
    for root, _, files in os.walk(folder):
        for fname in files:
            path = os.path.join(root, fname)
            with open(path, "rb") as fh:
                data = fh.read()
            if needle in data and b"\0" not in data:
                with open(path, "wb") as fh:
                    fh.write(data.replace(needle, replacement))
