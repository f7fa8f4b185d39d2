"""Output folders that appear complete or not at all."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import tempfile


@contextlib.contextmanager
def staged_dir(final: str | os.PathLike, force: bool = False, what: str = "output folder"):
    """Yield a temporary folder beside ``final``; on success move it to ``final``.

    An existing ``final`` is refused unless ``force``; then it is replaced only once the new
    content is complete (and put back if the move fails). On any error or interrupt the
    temporary folder is removed. Text files that mention the temporary folder's path (hls4ml
    records its output folder) are pointed at ``final`` before the move.
    """
    final = pathlib.Path(final).absolute()
    if final.exists() and not force:
        raise FileExistsError(f"{what} {str(final)!r} already exists; choose another path or pass --force to replace it")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; the result is an ordinary folder
    try:
        yield tmp
        _retarget_text_files(tmp, final)
        if final.exists():
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
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


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
