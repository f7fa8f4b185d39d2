"""verify counts mismatching samples exactly and names the first node where paths part."""

import copy
import warnings

import keras
import numpy as np
import pytest
from bn import randomize_bn
from graphs import PYNQ

import edgebnn  # noqa: F401
from edgebnn.backends.hls4ml import export
from edgebnn.freeze import freeze
from edgebnn.layers import QuantActivation, QuantDense
from edgebnn.verify import verify

pytestmark = pytest.mark.csim  # every test reads the project the module compiles once


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    keras.utils.set_random_seed(0)  # the kernels: the tampered channel must matter (it did not for some draws)
    model = keras.Sequential(
        [
            keras.Input((10,)),
            QuantDense(
                16,
                input_quantizer="quantized_bits(6, 0, keep_negative=False)",
                kernel_quantizer="ste_sign",
                use_bias=False,
                name="d0",
            ),
            keras.layers.BatchNormalization(name="bn0"),
            QuantDense(8, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="d1"),
            keras.layers.BatchNormalization(name="bn1"),
            QuantActivation("quantized_bits(5, 2)", name="out"),
        ]
    )
    rng = np.random.default_rng(0)
    randomize_bn(model, rng, beta_scale=0.5)
    graph = freeze(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        project = export(graph, tmp_path_factory.mktemp("v") / "prj", board=PYNQ)
    project.compile()
    x = rng.random((200, 10)).astype(np.float32)
    return model, graph, project, x


def tampered(graph, node_name):
    """A copy of ``graph`` whose node ``node_name`` has its first channel's levels flipped."""
    g = copy.deepcopy(graph)
    levels = g[node_name].params["levels"]
    levels[0] = levels[0][::-1].copy()
    return g


def test_all_three_agree(setup):
    model, graph, project, x = setup
    report = verify(model, graph, x, project=project)
    assert (report.samples, report.keras_vs_emulator, report.emulator_vs_csim) == (200, 0, 0)
    assert report.ok and report.first_mismatches == []
    assert np.array_equal(report.outputs["keras"], report.outputs["csim"])


def test_keras_mismatch_is_counted_and_located(setup):
    model, graph, _, x = setup
    bad = tampered(graph, "d1_input")
    report = verify(model, bad, x)
    expected = np.any(report.outputs["keras"] != report.outputs["emulator"], axis=1).sum()
    assert report.keras_vs_emulator == expected > 0 and not report.ok
    first = report.first_mismatches[0]
    assert first.between == "keras/emulator" and first.layer == "d1_input" and "d1" in first.source
    assert first.expected != first.got


def test_csim_mismatch_is_located_by_tracing(setup):
    _, graph, project, x = setup
    bad = tampered(graph, "d1_input")  # the emulator now disagrees with the exported project
    report = verify(None, bad, x, project=project)
    assert report.keras_vs_emulator is None and report.emulator_vs_csim > 0
    first = report.first_mismatches[0]
    assert first.between == "emulator/csim" and first.layer == "d1_input"
    assert "keras" not in report.outputs
