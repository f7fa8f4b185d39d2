"""edgebnn: train binarized and low-bit networks in Keras 3, ship them to FPGAs bit for bit.

The pipeline: quantizers -> layers -> ``freeze`` -> deployment graph -> ``emulate`` /
``export`` / ``estimate``; ``verify`` proves Keras = emulator = C-simulation.

Importing the package registers its layers and quantizers with Keras (when Keras is
installed), so saved models load without ``custom_objects``. The graph, the emulator, the
exporter and the estimator never import TensorFlow themselves and work without it.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .fixed import FixedType  # noqa: F401
from .graph import Graph  # noqa: F401
from .emulate import emulate  # noqa: F401

try:  # registration with Keras; the deployment side works without Keras installed
    from . import constraints, layers, quantizers  # noqa: F401
except ImportError:  # pragma: no cover - exercised by the TensorFlow-free test in a subprocess
    pass

_LAZY = {
    "freeze": ("edgebnn.freeze", "freeze"),
    "verify": ("edgebnn.verify", "verify"),
    "export": ("edgebnn.hls", "export"),
    "estimate": ("edgebnn.estimate", "estimate"),
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
