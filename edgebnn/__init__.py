"""edgebnn: train binarized and low-bit networks in Keras 3, ship them to FPGAs bit for bit.

The pipeline: quantizers -> layers -> ``freeze`` -> deployment graph -> ``emulate`` /
``export`` / ``estimate``; ``verify`` proves Keras = emulator = C-simulation.

Importing the package registers its layers and quantizers with Keras (when Keras is
installed), so saved models load without ``custom_objects``. The graph, the emulator, the
exporter and the estimator never import TensorFlow themselves and work without it.
"""

from __future__ import annotations

import os as _os
import sys as _sys

__version__ = "0.1.0"


def _running_the_cli() -> bool:
    argv = getattr(_sys, "orig_argv", _sys.argv)
    if _sys.argv and _os.path.basename(_sys.argv[0]) == "edgebnn":
        return True
    return any(a == "-m" and b in ("edgebnn", "edgebnn.cli") for a, b in zip(argv, argv[1:]))


def _leave_at_start_up(signum, frame):  # pragma: no cover - exercised in a subprocess
    # Nothing is written while the command line starts (importing TensorFlow takes seconds), so
    # Ctrl-C or SIGTERM then leaves at once with one line; edgebnn.cli.main takes over after.
    name, code = ("interrupted", 130) if signum == _signal.SIGINT else ("terminated (SIGTERM)", 143)
    _os.write(_STDERR, f"edgebnn: {name} while starting; nothing was written\n".encode())
    _os._exit(code)


if _running_the_cli():
    import signal as _signal

    _STDERR = _os.dup(2)  # _QuietStderr silences fd 2 during the TensorFlow import
    for _sig in (_signal.SIGINT, _signal.SIGTERM):
        if _signal.getsignal(_sig) is not _signal.SIG_IGN:
            _signal.signal(_sig, _leave_at_start_up)


class _QuietStderr:
    """Silence file descriptor 2 (TensorFlow's C++ start-up logging ignores
    TF_CPP_MIN_LOG_LEVEL); Python exceptions still propagate and print after it."""

    def __enter__(self):
        _sys.stderr.flush()
        self._saved = _os.dup(2)
        devnull = _os.open(_os.devnull, _os.O_WRONLY)
        _os.dup2(devnull, 2)
        _os.close(devnull)

    def __exit__(self, *exc):
        _os.dup2(self._saved, 2)
        _os.close(self._saved)
        return False

# the pipeline's verbs as functions. Importing them here also keeps each name bound to the
# function: importing a submodule of the same name later does not rebind it.
from .emulate import emulate  # noqa: F401
from .estimate import estimate  # noqa: F401
from .fixed import FixedType  # noqa: F401
from .graph import Graph  # noqa: F401
from .verify import verify  # noqa: F401

try:  # registration with Keras; the deployment side works without Keras installed
    if _running_the_cli():
        _os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        with _QuietStderr():
            import tensorflow  # noqa: F401
    from . import constraints, layers, quantizers  # noqa: F401
    from .freeze import freeze  # noqa: F401
    from .summary import summary  # noqa: F401
except ImportError:  # pragma: no cover - exercised by the TensorFlow-free test in a subprocess
    pass

_LAZY = {
    "export": ("edgebnn.hls", "export"),
    "quantizers": ("edgebnn.quantizers", None),
    "layers": ("edgebnn.layers", None),
    "constraints": ("edgebnn.constraints", None),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'edgebnn' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    mod = importlib.import_module(module)
    return mod if attr is None else getattr(mod, attr)
