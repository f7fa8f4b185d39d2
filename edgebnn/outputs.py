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
    content is complete. On any error or interrupt the temporary folder is removed.
    """
    final = pathlib.Path(final).absolute()
    if final.exists() and not force:
        raise FileExistsError(f"{what} {str(final)!r} already exists; choose another path or pass --force to replace it")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        yield tmp
        if final.exists():
            old = pathlib.Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
            os.replace(final, old / "x")
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
