"""A light package: the deployment side imports no TensorFlow or Keras, import errors propagate,
and the verbs at the package root stay the functions while their submodules stay importable.

Each check that depends on what a fresh interpreter has imported runs in a subprocess."""

import importlib
import subprocess
import sys
import types

import numpy as np
import pytest
from graphs import binary_mlp

import edgebnn

LIGHT = [
    "edgebnn",
    "edgebnn.fixed",
    "edgebnn.graph",
    "edgebnn.emulate",
    "edgebnn.estimate",
    "edgebnn.boards",
    "edgebnn.errors",
    "edgebnn.verify",
    "edgebnn.cli",
    # the command line's stages, run folder, progress, data and report (matplotlib only once a plot is drawn)
    "edgebnn.stages",
    "edgebnn.runfolder",
    "edgebnn.progress",
    "edgebnn.data",
    "edgebnn.report",
    "edgebnn.plots",
]
# the backends: the hls4ml package, its op lowerings and cost model import hls4ml only once an export runs
LIGHT += [
    "edgebnn.backends",
    "edgebnn.backends.target",
    "edgebnn.backends.hls4ml",
    "edgebnn.backends.hls4ml.ops",
    "edgebnn.backends.hls4ml.project",
    "edgebnn.backends.hls4ml.cost",
]
HEAVY = ("tensorflow", "keras", "hls4ml", "matplotlib")


def run_python(code: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("module", LIGHT)
def test_light_module_imports_no_tensorflow_or_keras(module):
    proc = run_python(f"import sys, {module}\nprint(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n")
    assert proc.stdout.strip() == "[]"


def test_package_root_imports_no_submodule():
    proc = run_python("import sys, edgebnn\nprint(sorted(m for m in sys.modules if m.startswith('edgebnn.')))\n")
    assert proc.stdout.strip() == "[]"


def test_the_estimate_command_imports_no_tensorflow(tmp_path):
    path = tmp_path / "g.npz"
    binary_mlp().save(path)
    proc = run_python(
        "import sys\nfrom edgebnn import cli\n"
        f"assert cli.main(['estimate', {str(path)!r}]) == 0\n"
        "assert cli.main(['boards']) == 0\n"
        f"print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []"


def test_missing_dependency_propagates_from_each_name():
    run_python(
        "import sys; sys.modules['numpy'] = None\n"
        "import edgebnn\n"  # the root itself needs nothing
        "for name in ('emulate', 'estimate', 'Graph', 'FixedType'):\n"
        "    try:\n"
        "        getattr(edgebnn, name)\n"
        "    except ImportError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(f'edgebnn.{name} hid a missing numpy')\n"
        "try:\n"
        "    import edgebnn.fixed\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('import edgebnn.fixed hid a missing numpy')\n"
    )


def test_broken_keras_side_is_not_swallowed_by_the_package_root():
    # Keras counts as imported, so the root registers the layers; a failing import there propagates
    run_python(
        "import sys, types; sys.modules['keras'] = types.ModuleType('keras')\n"
        "sys.modules['edgebnn.constraints'] = None\n"
        "try:\n"
        "    import edgebnn\n"
        "except ImportError as err:\n"
        "    assert 'edgebnn.constraints' in str(err), err\n"
        "else:\n"
        "    raise AssertionError('import edgebnn swallowed an ImportError')\n"
    )


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        edgebnn.no_such_thing  # noqa: B018
    assert not hasattr(edgebnn, "_private")


def test_verbs_are_the_functions_also_after_importing_their_submodules():
    run_python(
        "import importlib, types\n"
        "import edgebnn.emulate, edgebnn.estimate, edgebnn.verify\n"  # submodules first
        "import edgebnn\n"
        "for name in ('emulate', 'estimate', 'verify'):\n"
        "    verb = getattr(edgebnn, name)\n"
        "    module = importlib.import_module(f'edgebnn.{name}')\n"
        "    assert isinstance(verb, types.FunctionType) and verb is getattr(module, name), name\n"
        "    assert isinstance(module, types.ModuleType), name\n"
        "import edgebnn.estimate as e\n"
        "from edgebnn import emulate\n"
        "assert e is edgebnn.estimate and emulate is edgebnn.emulate\n"
        "import edgebnn.boards as b\n"
        "assert isinstance(b, types.ModuleType) and b is edgebnn.boards\n"
    )


def test_verbs_work_and_submodules_are_importable():
    g = binary_mlp()
    x = np.random.default_rng(0).integers(0, 256, size=(5, 16)) / 256
    assert np.array_equal(edgebnn.emulate(g, x), importlib.import_module("edgebnn.emulate").emulate(g, x))
    board = edgebnn.boards.load_board("pynq-z2")
    assert edgebnn.estimate(g, board).totals == importlib.import_module("edgebnn.estimate").estimate(g, board).totals
    assert isinstance(edgebnn.Graph.load, types.MethodType) and edgebnn.FixedType.from_string("fixed<4,2>").width == 4
    for name in ("freeze", "emulate", "estimate", "verify", "summary"):
        assert isinstance(getattr(edgebnn, name), types.FunctionType), name
        assert isinstance(importlib.import_module(f"edgebnn.{name}"), types.ModuleType), name
    assert edgebnn.export is importlib.import_module("edgebnn.backends.hls4ml.exporter").export
    for name in ("layers", "quantizers", "constraints", "boards", "backends", "graph", "fixed"):
        assert isinstance(getattr(edgebnn, name), types.ModuleType), name
    assert {"freeze", "export", "Graph"} <= set(dir(edgebnn))


def test_keras_imported_first_registers_the_layers():
    run_python(
        "import keras, edgebnn\n"
        "assert keras.saving.get_registered_object('edgebnn>QuantDense') is not None\n"
        "assert keras.saving.get_registered_object('edgebnn>WeightClip') is not None\n"
        "import edgebnn.freeze, edgebnn.summary\n"
        "assert edgebnn.freeze.__module__ == 'edgebnn.freeze' and edgebnn.summary.__module__ == 'edgebnn.summary'\n"
    )
