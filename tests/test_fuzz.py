"""The random-model fuzzer in CI: fixed seeds, Keras (batch sizes 1 and 32) = emulator, and a
few C-simulations in io_parallel and io_stream. A long run is ``bench/fuzz.py``."""

import warnings

import numpy as np
import pytest
from graphs import fuzz_cases

from edgebnn import fuzz


@pytest.mark.slow  # 36 models, minutes on 2 cores
def test_fuzzed_models_agree_or_are_refused_in_one_sentence():
    summary = fuzz.run(models=36, seed=0)
    counts = summary.counts()
    assert not summary.failures, "\n".join(o.line() for o in summary.failures)
    assert counts["ok"] >= 24, counts  # the generator makes models freeze accepts, not only refusals
    for outcome in summary.outcomes:
        if outcome.status == "refused":
            assert "\n" not in outcome.message and len(outcome.message) < 600, outcome.message


def test_generator_is_reproducible_and_inputs_hit_ties_and_range_ends():
    a, b = fuzz.random_model(9), fuzz.random_model(9)  # its first layer quantizes the input (no front-door form)
    assert a.layers == b.layers and np.array_equal(a.x, b.x)
    assert [w.tolist() for w in a.model.get_weights()] == [w.tolist() for w in b.model.get_weights()]
    from edgebnn import quantizers

    first = next(layer for layer in a.model.layers if hasattr(layer, "input_quantizer"))  # functional: an InputLayer first
    t = quantizers.get(first.input_quantizer).hardware().type
    scaled = a.x.astype(np.float64) / 2.0**t.lsb_exp
    assert np.any(scaled % 1 == 0.5)  # exact ties
    assert np.any(a.x > t.max) and np.any(a.x < t.min)  # out of range both ways


@pytest.fixture(scope="module")
def saved_seed_3(tmp_path_factory):
    """(outcome, folder): the model of seed 3 checked and saved as a failure, once for the module."""
    case = fuzz.random_model(3)
    outcome = fuzz.check(case)
    return outcome, fuzz.save_failure(case, outcome, tmp_path_factory.mktemp("saved"))


def test_a_saved_failure_replays_to_the_same_outcome(saved_seed_3):
    outcome, folder = saved_seed_3
    again = fuzz.check(fuzz.load_failure(folder))
    assert (again.status, again.message) == (outcome.status, outcome.message)


def test_bench_replays_a_saved_failure_in_a_fresh_interpreter(saved_seed_3):
    """bench/fuzz.py --replay loads the model itself (edgebnn's Keras objects registered first)."""
    import os
    import subprocess
    import sys

    outcome, folder = saved_seed_3
    bench = os.path.join(os.path.dirname(__file__), "..", "bench", "fuzz.py")
    proc = subprocess.run([sys.executable, bench, "--replay", str(folder)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == (0 if outcome.status in ("ok", "refused", "warned") else 1), proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == outcome.line()


def test_a_wrong_graph_is_reported_as_a_mismatch(monkeypatch):
    """The fuzzer's own check can fail: a freeze that flips the output levels is caught."""
    import importlib

    freeze_module = importlib.import_module("edgebnn.freeze")
    real = freeze_module.freeze

    def broken(model, **kwargs):
        graph = real(model, **kwargs)
        if graph.output.op == "threshold":
            graph.output.params["levels"][:] = graph.output.params["levels"][:, ::-1]
        return graph

    monkeypatch.setattr(freeze_module, "freeze", broken)
    outcomes = [fuzz.check(fuzz.random_model(s)) for s in range(6)]
    assert any(o.status == "mismatch" and "Keras (batch 1) vs emulator" in o.message for o in outcomes)


def test_random_targets_are_built_as_given_and_cover_every_option():
    """The C-simulated exports take random backends, strategies and reuse factors (model-wide
    and per weighted node), each one hls4ml keeps as given; the outcome line shows them."""
    from graphs import calibrated_mlp

    from edgebnn.backends.hls4ml import reuse
    from edgebnn.backends.target import Target

    graph = calibrated_mlp()
    seen = set()
    for seed in range(40):
        for io_type in ("io_parallel", "io_stream"):
            options = fuzz.random_target(np.random.default_rng(seed), graph, io_type)
            reuse.check(Target(io_type=io_type, **options), reuse.matrices(graph), graph.name)
            rf = options["reuse_factor"]
            seen |= {options["backend"], options["strategy"], type(rf).__name__, (options["strategy"], rf != 1)}
    assert {"Vitis", "Vivado", "Latency", "Resource", "int", "dict", ("Resource", True)} <= seen
    line = fuzz.Outcome(
        3, "ok", csim="io_stream", target={"backend": "Vivado", "strategy": "Resource", "reuse_factor": {"d0": 4}}
    ).line()
    assert line == "seed 3 [io_stream, Vivado, Resource, rf d0=4]: ok"


def test_layer_lines_are_the_lines_of_the_model_the_seed_builds():
    """fuzz.layer_lines draws a seed's layers without building the model: the same lines (the
    Keras names of a branching model's tensors aside, which count up per process)."""
    import re

    def unnamed(lines):
        return [re.sub(r"\b([a-z][a-z0-9_]*?)_\d+\b", r"\1", line) for line in lines]

    kinds = set()
    for seed in range(12):
        lines = fuzz.layer_lines(seed)
        case = fuzz.random_model(seed)
        assert unnamed(lines) == unnamed(case.layers), seed
        kinds.add("1-D" if seed % 3 == 2 else "functional" if case.layers[0] == "functional" else "chain")
    assert kinds == {"1-D", "functional", "chain"}


def test_some_models_end_with_a_batchnorm_head_that_freezes_to_an_affine_node():

    from edgebnn.freeze import freeze

    cases = fuzz_cases(lambda layers: layers[-1].startswith("BatchNormalization"), 4)
    outcomes = [fuzz.check(case) for case in cases]
    assert not [o for o in outcomes if o.status in ("mismatch", "crash")], [o.line() for o in outcomes]
    case = next(c for c, o in zip(cases, outcomes) if o.status == "ok")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert freeze(case.model).nodes[-1].op == "affine"


def test_a_quarter_of_the_seeds_branch_and_merge():
    import keras

    merges = set()
    branching = []
    for seed in range(60):
        if seed % 3 == 2 or np.random.default_rng((seed, 1)).random() >= fuzz.BRANCHING:  # 1-D seeds do not branch
            continue
        case = fuzz.random_model(seed)
        layers = case.model.layers
        assert case.layers[0] == "functional" and any(isinstance(l, (keras.layers.Add, keras.layers.Concatenate)) for l in layers)
        merges |= {type(l).__name__ for l in layers if isinstance(l, (keras.layers.Add, keras.layers.Concatenate))}
        branching.append(seed)
    assert len(branching) >= 5 and merges == {"Add", "Concatenate"}


def test_a_checking_process_that_aborts_or_hangs_is_a_crash_and_the_run_goes_on():
    """A C++ assertion in the C-simulation aborts the process that loaded the library: the
    fuzzer C-simulates in a child process and reports its end as a crash outcome."""
    import sys

    aborts = [sys.executable, "-c", "import os, sys; sys.stderr.write('nnet_conv1d.h:42: Assertion failed\\n'); os.abort()"]
    out = fuzz.check_in_child(11, "io_stream", command=aborts)
    assert (out.seed, out.status, out.csim) == (11, "crash", "io_stream")
    assert out.message == ("the checking process ended by signal SIGABRT without an outcome: nnet_conv1d.h:42: Assertion failed")
    hangs = [sys.executable, "-c", "import time; time.sleep(60)"]
    out = fuzz.check_in_child(12, "io_parallel", timeout=1, command=hangs)
    assert out.status == "crash" and out.message.startswith("the check did not finish within 1 s")
    line = fuzz._OUTCOME_MARK + '{"seed": 13, "status": "ok", "csim": "io_parallel", "ops": ["input", "dense"]}'
    prints = [sys.executable, "-c", f"print('C-simulation output'); print({line!r})"]
    assert fuzz.check_in_child(13, "io_parallel", command=prints) == fuzz.Outcome(
        13, "ok", csim="io_parallel", ops=["input", "dense"]
    )


def test_the_child_process_checks_the_same_model():
    """``python -m edgebnn.fuzz`` rebuilds the model of the seed: the same layers, ops, forms and
    outcome as the check in this process (no C-simulation here: that is the slow test's)."""
    import keras

    keras.backend.clear_session()  # layer names as in a fresh process, as fuzz.run does
    here = fuzz.check(fuzz.random_model(5))
    assert here.status == "ok" and here.ops
    assert fuzz.check_in_child(5, None) == here


def test_tensorflow_failing_to_run_the_model_is_said_and_is_not_a_crash(monkeypatch):
    """Seed 262 of a long run: oneDNN aborted the model's own predict. That is TensorFlow's, a
    ``keras-error`` outcome with TensorFlow's reason; the run's failures stay edgebnn's."""
    import importlib

    import tensorflow as tf

    def aborts(model, **kwargs):
        raise tf.errors.AbortedError(None, None, "Graph execution error:\nOperation received an exception: no primitive")

    monkeypatch.setattr(importlib.import_module("edgebnn.freeze"), "freeze", aborts)
    out = fuzz.check(fuzz.random_model(0))
    assert out.status == "keras-error"
    assert out.message == "TensorFlow could not run the model: AbortedError: Operation received an exception: no primitive"
    summary = fuzz.Summary(0, [out])
    assert not summary.failures and summary.line().endswith("; 1 models TensorFlow itself could not run")


def test_a_partial_input_quantizer_never_indexes_channels_a_view_removed():
    """Seed 49003: a Reshape after the QuantActivation whose partial quantizer the next layer took
    as its input quantizer halved the channels it indexes; the generator crashed."""
    case = fuzz.random_model(49003)
    assert case.model.predict(case.x, verbose=0).shape[0] == len(case.x)
