"""The RTL backend: a deployment graph as a streaming dataflow design in Verilog, one unit per
node, simulated bit for bit with Verilator.

The modules, in the order an export runs them:

``exporter``       ``export()``: the graph's refusals, the folding, each node's unit, the top, the
                   staged project folder
``folding``        per folded node (dense, convolutions) its PE x SIMD: checks, the default
``ops/<op>.py``    each op's lowering: its refusals and its unit (see ``ops/__init__``)
``ops/_units``     the units: MVAU, window generator, map/join, regrouping
``hdl``            Verilog helpers: names, literals, the exact fixed-point conversion, the library
``project``        ``RTLProject``: compile (once per content), ``predict``, ``trace``, cycles
``sim/``           the Verilator batch harness (C++, ctypes) and its build

Importing this package imports neither TensorFlow, Keras nor hls4ml: the names below are
imported from their submodules on first use.

- ``export``, ``check`` (``exporter``); ``RTLProject`` (``project``); ``resolve_folding`` (``folding.resolve``)
"""

from __future__ import annotations

import importlib as _importlib

# public name -> (module relative to this package, its name there), imported on first use
_NAMES = {
    "export": (".exporter", "export"),
    "check": (".exporter", "check"),
    "RTLProject": (".project", "RTLProject"),
    "resolve_folding": (".folding", "resolve"),
}


def __getattr__(name):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _NAMES[name]
    value = getattr(_importlib.import_module(module, __name__), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
