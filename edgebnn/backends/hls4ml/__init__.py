"""The hls4ml backend: export a deployment graph to an hls4ml project and run its C-simulation.

The project is written by hls4ml itself (its ``ModelGraph``, optimizer flows, writer and
``nnet_utils``); edgebnn only hands it a layer list and a configuration read from the graph.
The modules, in the order an export runs them:

``exporter``         ``export()``: option checks, the graph's refusals, the staged project folder
``ops/<op>.py``      each op's lowering: hls4ml class, refusals, layer entry, precisions, post-flow check
``model``            the node chain hls4ml gets, layer names, the configuration and layer list, and the
                     check of hls4ml's model after its flows against the graph
``threshold_layer``  edgebnn's ``EdgebnnThreshold`` hls4ml layer, its templates and registration
``pad_layer``        edgebnn's ``EdgebnnPad2D`` / ``EdgebnnPad1D`` hls4ml layers (constant padding), the same way
``pool_layer``       edgebnn's ``EdgebnnPool2D`` hls4ml layer (2-D pools of any strides, io_stream too), the same way
``project``          ``HLSProject``: compile, ``predict`` (C-simulation, large batches across the cores), ``trace``
``csim_cache``       compile once: the C-simulation library's content key, its cache in the project folder and
                     the shared one ``EDGEBNN_CSIM_CACHE`` names; the g++ flags
``csim_worker``      a chunk of a large ``predict`` in a process of its own (imports only NumPy and ctypes)
``cost/<op>.py``     each op's resources and latency as hls4ml builds it, for ``edgebnn.estimate``

Every precision is set explicitly, and after hls4ml's flows have run the model is checked
against the graph (layers, every type, every weight), so an hls4ml pass that rewrites
anything stops the export instead of producing a project that is silently not bit-exact.

Importing this package imports neither hls4ml, TensorFlow nor Keras: the names below are
imported from their submodules on first use (``exporter`` and ``model`` import hls4ml).

- ``export``, ``open_project``, ``check_output_path``, (``exporter``); ``BACKENDS``, ``IO_TYPES``, ``STRATEGIES``
  (``edgebnn.backends.target``)
- ``HLSProject``, ``HLSExportWarning``, ``check_compiler`` (``project``)
"""

from __future__ import annotations

import importlib as _importlib

# public name -> the module that defines it (relative to this package), imported on first use
_NAMES = {
    "export": ".exporter",
    "open_project": ".exporter",
    "check_output_path": ".exporter",
    "BACKENDS": "..target",
    "IO_TYPES": "..target",
    "STRATEGIES": "..target",
    "HLSProject": ".project",
    "HLSExportWarning": ".project",
    "check_compiler": ".project",
}


def __getattr__(name):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(_NAMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
