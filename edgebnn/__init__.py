"""edgebnn: train binarized and low-bit networks in Keras 3, ship them to FPGAs bit for bit.

The pipeline: quantizers -> layers -> ``freeze`` -> deployment graph -> ``emulate`` /
``export`` / ``estimate``; ``verify`` proves Keras = emulator = C-simulation.

``import edgebnn`` is light: it imports none of its submodules and neither TensorFlow, Keras
nor hls4ml. Each name below is imported on first use, and the deployment side (``fixed``,
``graph``, ``emulate``, ``estimate``, ``boards``, ``verify``) never imports TensorFlow or Keras.
A failing import (a missing dependency, a broken module) raises where the name is used.

Names at the package root:

- verbs, always the functions: ``edgebnn.freeze``, ``edgebnn.emulate``, ``edgebnn.estimate``,
  ``edgebnn.verify``, ``edgebnn.summary`` (each defined in the submodule of the same name) and
  ``edgebnn.export`` (from ``edgebnn.backends.hls4ml``);
- classes: ``edgebnn.Graph``, ``edgebnn.FixedType``, ``edgebnn.Target``;
- ``edgebnn.propose_input_type(x)``: the fixed-point type of a data set (for ``freeze(input_type=)``);
- ``edgebnn.load_model(path)``: a saved model with edgebnn's layers (Keras ``safe_mode``);
- every submodule by its name (``edgebnn.boards``, ``edgebnn.layers``, ``edgebnn.backends``, ...),
  except the five that share a verb's name.

A verb keeps its name also after ``import edgebnn.estimate`` (the import system would bind the
submodule there; the package does not let it). Python evaluates ``import edgebnn.estimate as m``
and ``from edgebnn import estimate`` by reading that attribute, so both give the function too.
For the module of a verb use ``importlib.import_module("edgebnn.estimate")``, or import names
from it: ``from edgebnn.estimate import fit``.

The layers, quantizers, constraints and optimizers register themselves with Keras when their
modules are imported (``from edgebnn.layers import QuantDense`` does). ``import edgebnn`` imports
the layers, quantizers, constraints and optimizers itself when Keras is imported (at once if it
is already, else right after Keras's own import), so that saved models load with
``keras.models.load_model`` and no ``custom_objects``, in either order of the imports.

The package is arranged by the pipeline's sides: ``training/`` (quantizers, layers, constraints,
optimizers, the training loop, distribute, data), the verbs and the deployment side (``freeze/``,
``graph/``, ``fixed``, ``forms``, ``emulate``, ``estimate/``, ``backends/``, ``verify``), ``run/``
(the run configuration, stages, run folder, report) with ``cli`` at the root, and ``testing/``
(the random-model fuzzer). The modules keep the paths they had at the package root before
(``edgebnn.layers``, ``edgebnn.quantizers``, ``edgebnn.train``, ``edgebnn.config``,
``edgebnn.fuzz``, ...): ``_MOVED`` below maps each to its home, and importing either name gives
the same module object (so ``isinstance``, ``monkeypatch`` and saved Keras configs that name the
old modules keep working).
"""

from __future__ import annotations

import importlib as _importlib
import importlib.machinery as _importlib_machinery
import importlib.util as _importlib_util
import os as _os
import sys as _sys
import types as _types

__version__ = "0.3.0"


def _running_the_cli() -> bool:
    argv = getattr(_sys, "orig_argv", _sys.argv)
    if _sys.argv and _os.path.basename(_sys.argv[0]) == "edgebnn":
        return True
    return any(a == "-m" and b in ("edgebnn", "edgebnn.cli") for a, b in zip(argv, argv[1:]))


def _leave_at_start_up(signum, frame):  # pragma: no cover - exercised in a subprocess
    # Nothing is written while the command line starts, so Ctrl-C or SIGTERM then leaves at
    # once with one line; edgebnn.cli.main takes over after.
    name, code = ("interrupted", 130) if signum == _signal.SIGINT else ("terminated (SIGTERM)", 143)
    _os.write(_STDERR, f"edgebnn: {name} while starting; nothing was written\n".encode())
    _os._exit(code)


if _running_the_cli():
    import signal as _signal

    _STDERR = _os.dup(2)
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


# name at the package root -> (submodule, attribute), imported on first use
_NAMES = {
    "freeze": ("freeze", "freeze"),
    "emulate": ("emulate", "emulate"),
    "estimate": ("estimate", "estimate"),
    "verify": ("verify", "verify"),
    "summary": ("summary", "summary"),
    "export": ("backends.hls4ml", "export"),
    "Graph": ("graph", "Graph"),
    "FixedType": ("fixed", "FixedType"),
    "propose_input_type": ("fixed", "propose_input_type"),
    "Target": ("backends.target", "Target"),
    "load_model": ("training.layers", "load_model"),
}
_VERB_MODULES = frozenset(name for name, (module, _) in _NAMES.items() if module == name)

# a module's path at the package root before the package was arranged by side -> its home
_MOVED = {
    "quantizers": "training.quantizers",
    "layers": "training.layers",
    "constraints": "training.constraints",
    "optimizers": "training.optimizers",
    "train": "training.loop",
    "distribute": "training.distribute",
    "data": "training.data",
    "config": "run.config",
    "stages": "run.stages",
    "runfolder": "run.runfolder",
    "pipeline": "run.pipeline",
    "report": "run.report",
    "plots": "run.plots",
    "fuzz": "testing.fuzz",
}


class _MovedModule:
    """The loader of an old path: imports the module's home and puts that same module object
    under the old name in ``sys.modules`` (the import system then returns it)."""

    def __init__(self, home: str):
        self.home = home

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        _sys.modules[module.__name__] = _importlib.import_module(self.home)

    def get_code(self, name):
        # ``python -m edgebnn.<old name>`` runs the module's home as the main module
        return compile(f"import runpy\nrunpy.run_module({self.home!r}, run_name='__main__', alter_sys=True)", name, "exec")


class _MovedModules:
    """Finds ``edgebnn.<old name>`` for each module of ``_MOVED``."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        package, _, old = name.partition(".")
        if package != __name__ or old not in _MOVED:
            return None
        return _importlib_machinery.ModuleSpec(name, _MovedModule(f"{__name__}.{_MOVED[old]}"))


_sys.meta_path.append(_MovedModules)


def __getattr__(name):
    if name in _NAMES:
        module, attr = _NAMES[name]
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), attr)
    elif not name.startswith("_") and _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        value = _importlib.import_module(f"{__name__}.{name}")  # errors inside it propagate
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))


class _Package(_types.ModuleType):
    def __setattr__(self, name, value):
        # Importing a submodule binds it to the package attribute of its name; for the
        # submodules named like a verb, the verb keeps the name (``__getattr__`` provides it).
        if name in _VERB_MODULES and isinstance(value, _types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def _register_with_keras() -> None:
    from . import constraints, layers, optimizers, quantizers  # noqa: F401 - they register themselves with Keras


def _importing_edgebnn(but: str = "") -> bool:
    """One of edgebnn's modules (other than ``but``) is being imported: registering then would
    import the layers in the middle of it (an import circle)."""
    return any(
        getattr(getattr(m, "__spec__", None), "_initializing", False)
        for name, m in list(_sys.modules.items())
        if name.startswith(f"{__name__}.") and name != but
    )


class _WhenKerasLoads:
    """Registers edgebnn's objects with Keras once Keras is imported, so that ``import edgebnn``
    then ``keras.models.load_model(...)`` loads a saved model as larq's layers load after
    ``import larq``, while ``import edgebnn`` itself imports no Keras. A finder that lets the
    other finders find ``keras`` and edgebnn's submodules and, after each one's own code ran,
    registers once Keras is there and no edgebnn module is half imported (Keras imported by
    one of edgebnn's modules registers when the outermost of them is done)."""

    def __init__(self):
        self._finding = False

    def find_spec(self, name, path=None, target=None):
        if self._finding or not (name == "keras" or name.startswith(f"{__name__}.")):
            return None
        self._finding = True
        try:
            spec = _importlib_util.find_spec(name)
        finally:
            self._finding = False
        loader = getattr(spec, "loader", None)
        if loader is not None and hasattr(loader, "exec_module"):
            run = loader.exec_module

            def exec_module(module):
                run(module)
                self.register(module.__name__)

            loader.exec_module = exec_module  # this spec's loader only
        return spec

    def register(self, done: str = "") -> None:
        if self in _sys.meta_path and _sys.modules.get("keras") is not None and not _importing_edgebnn(but=done):
            _sys.meta_path.remove(self)
            _register_with_keras()


if _sys.modules.get("keras") is not None:  # Keras is loaded already: register edgebnn's objects with it
    _register_with_keras()
else:
    _sys.meta_path.insert(0, _WhenKerasLoads())
