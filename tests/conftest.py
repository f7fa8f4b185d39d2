"""Fixtures shared by the test modules. Helpers that are plain functions live in tests/graphs.py
(hand-built graphs, their export and C-simulation checks) and tests/bn.py (BatchNormalization
parameters).

Tiers (markers registered in pyproject.toml): ``csim`` compiles C++ (an hls4ml C-simulation or the
ap_fixed harness), ``train`` trains a model, ``rtl`` runs the RTL backend's tools (a Verilator
build, Yosys, nextpnr), ``slow`` takes long; the rest is the fast tier,
``pytest -m "not csim and not train and not slow and not rtl"``. The quick tier, ``pytest -m quick``, is
chosen here (:func:`pytest_collection_modifyitems`): every test function of the fast tier once
(its first parametrization), the tests marked ``quick`` by hand, and in a module with neither
its first test, so that every module is touched.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(__file__))  # tests/graphs.py, tests/bn.py

import numpy as np
import pytest


@pytest.fixture
def xla_allowed():
    """Keras drops jit_compile=True while TensorFlow's op determinism is on; see fuzz.xla_allowed."""
    from edgebnn.fuzz import xla_allowed

    with xla_allowed():
        yield


@pytest.fixture(scope="session")
def fwd_grad():
    """``fwd_grad(q, values, upstream=None, **kw)``: (q(x, **kw), d loss / dx) as NumPy arrays for
    x = float32 ``values``; the loss is the sum of q(x), or of q(x) * ``upstream`` when given."""
    import tensorflow as tf

    def fwd_grad(q, values, upstream=None, **kw):
        x = tf.constant(np.asarray(values, dtype=np.float32))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = q(x, **kw)
            loss = y if upstream is None else y * tf.constant(np.asarray(upstream, np.float32))
        return y.numpy(), tf.convert_to_tensor(tape.gradient(loss, x)).numpy()  # a gather's gradient is IndexedSlices

    return fwd_grad


# ------------------------------------------------- hls4ml projects exported and compiled once per graph
@pytest.fixture(scope="session", autouse=True)
def csim_build_cache(tmp_path_factory):
    """The session's shared C-simulation build cache (``EDGEBNN_CSIM_CACHE``, unless it is set
    already): a project exported identically by more than one test is compiled once, also
    across pytest-xdist workers (their sessions share the run's temporary folder; the cache's
    writes are atomic). Tests of the cache itself point the variable elsewhere."""
    if os.environ.get("EDGEBNN_CSIM_CACHE"):
        yield os.environ["EDGEBNN_CSIM_CACHE"]
        return
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # .../pytest-N/popen-gw0 -> .../pytest-N
    folder = os.path.join(base, "csim-cache")
    os.makedirs(folder, exist_ok=True)
    os.environ["EDGEBNN_CSIM_CACHE"] = folder
    try:
        yield folder
    finally:
        os.environ.pop("EDGEBNN_CSIM_CACHE", None)


def pytest_generate_tests(metafunc):
    """A test module with ``CASES = {name: (build, export kwargs)}`` runs each test that takes
    ``compiled`` once per case, unless the test chooses its cases with its own parametrize."""
    cases = getattr(metafunc.module, "CASES", None)
    if cases is None or "compiled" not in metafunc.fixturenames:
        return
    chosen = {
        name.strip()
        for mark in metafunc.definition.iter_markers("parametrize")
        for name in (mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0])
    }
    if "compiled" not in chosen:
        metafunc.parametrize("compiled", list(cases), indirect=True, scope="module")


@pytest.fixture(scope="module")
def compiled(request, tmp_path_factory):
    """(name, graph, project): the module's case ``CASES[name]`` built, exported for the PYNQ-Z2
    into a folder named after the module (test_hls -> hls) and compiled; once per module and case."""
    from graphs import PYNQ, export_quietly

    build, kwargs = request.module.CASES[request.param]
    graph = build()
    path = tmp_path_factory.mktemp(request.module.__name__.removeprefix("test_")) / request.param
    project = export_quietly(graph, path, board=PYNQ, **kwargs)
    project.compile()
    return request.param, graph, project


def pytest_configure(config):
    """TensorFlow's C++ start-up lines (CUDA drivers, oneDNN) ignore TF_CPP_MIN_LOG_LEVEL: it is
    imported once here with stderr muted, so that they never reach the test output."""
    from edgebnn import _QuietStderr

    with _QuietStderr():
        import tensorflow  # noqa: F401
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # pytest-xdist: hand out the modules in the order chosen below


HEAVY = ("csim", "train", "slow", "rtl")

# The long modules of the whole suite (fuzz runs, Verilator builds, C-simulations, training), the
# longest first. With ``-n 2 --dist loadfile`` pytest-xdist gives a worker the next module in
# collection order as it runs out of work, and on its own orders the modules by their number of
# tests, which left the fuzz and RTL modules (few tests, minutes each) to the end, one worker
# running them alone. These go first and the short modules after (most tests first), so that the
# two workers end together.
LONGEST_FIRST = (
    "tests/test_fuzz.py",
    "tests/test_rtl_ops.py",
    "tests/test_fuzz_runs.py",
    "tests/test_hls_conv.py",
    "tests/test_hls.py",
    "tests/test_quantizer_rounding.py",
    "tests/test_hls_stream.py",
    "tests/test_train_resume.py",
    "tests/test_report.py",
    "tests/test_stage_freshness.py",
    "tests/test_stages.py",
    "tests/test_rtl_fuzz.py",
    "tests/test_rtl_run.py",
    "tests/test_rtl_synth.py",
    "tests/test_rtl.py",
    "tests/test_csim_cache.py",
    "tests/test_conformance.py",
    "tests/test_distribute.py",
    "tests/test_cli.py",
    "tests/freeze/test_calibrate.py",
    "tests/test_interrupted_training.py",
)


def _module_order(items) -> list:
    counts: dict = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        counts[module] = counts.get(module, 0) + 1
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    order = sorted(counts, key=lambda m: (rank.get(m, len(rank)), -counts[m] if m not in rank else 0))
    position = {module: i for i, module in enumerate(order)}
    return sorted(items, key=lambda item: position[item.nodeid.split("::")[0]])


def pytest_collection_modifyitems(items):
    """A test that takes ``compiled`` (this fixture or a module's own of that name) needs a
    compiled C-simulation: it is in the csim tier without marking each one. Then the quick tier
    is chosen (see the module docstring), and the modules are ordered (see LONGEST_FIRST)."""
    items[:] = _module_order(items)
    for item in items:
        if "compiled" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.csim)
    modules: dict = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    for module_items in modules.values():
        chosen, functions = [], set()
        for item in module_items:
            if item.get_closest_marker("quick"):
                chosen.append(item)
            elif not any(item.get_closest_marker(m) for m in HEAVY):
                function = (item.cls.__name__ if item.cls else "", getattr(item, "originalname", item.name))
                if function not in functions:
                    functions.add(function)
                    chosen.append(item)
        for item in chosen or module_items[:1]:
            item.add_marker(pytest.mark.quick)
