"""Fixed-point requantization (relu or linear, then a fixed grid) exports as a cast, exactly."""

import warnings

import keras
import numpy as np
import pytest
from graphs import PYNQ

import edgebnn  # noqa: F401
from edgebnn.backends.hls4ml import export
from edgebnn.fixed import FixedType
from edgebnn.freeze import FreezeWarning, freeze
from edgebnn.layers import QuantActivation, QuantDense
from edgebnn.verify import verify


def mlp(bits):
    return keras.Sequential(
        [
            keras.Input((8,)),
            QuantDense(
                12,
                input_quantizer=f"quantized_bits({bits}, 2)",
                kernel_quantizer=f"quantized_bits({bits}, 0)",
                use_bias=False,
                activation="relu",
            ),
            QuantActivation(f"quantized_bits({bits}, 3)"),
            QuantDense(5, kernel_quantizer=f"quantized_bits({bits}, 0)", use_bias=False),
            QuantActivation(f"quantized_bits({bits}, 1, keep_negative=False, rounding='TRN', overflow='WRAP')"),
        ]
    )


def inputs(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)) * 3
    x[: n // 4] = np.round(x[: n // 4] * 64) / 64 + 1 / 128  # exact ties on the input grid
    return x.astype(np.float32)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = mlp(6)
    graph = freeze(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        project = export(graph, tmp_path_factory.mktemp("cast") / "prj", board=PYNQ)
    project.compile()
    return model, graph, project


@pytest.mark.csim
def test_graph_uses_casts_not_thresholds(exported):
    _, graph, _ = exported
    assert [n.op for n in graph.nodes] == ["input", "dense", "cast", "dense", "cast"]
    assert graph.nodes[2].attrs["relu"] is True and graph.nodes[4].attrs["relu"] is False
    assert str(graph.nodes[4].type) == "ufixed<6,1>"  # TRN, WRAP: the quantizer's own modes
    assert graph.meta["keras_float32_exact"] is True


@pytest.mark.csim
def test_keras_emulator_csim_identical(exported):
    model, graph, project = exported
    report = verify(model, graph, inputs(), project=project)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    out = report.outputs["csim"]
    assert len(np.unique(out)) > 10 and np.any(out == 0)  # the outputs vary, relu and wrap are exercised


def test_wide_accumulators_warn_and_flag(tmp_path):
    model = mlp(16)
    with pytest.warns(FreezeWarning, match="more than 24 significant bits"):
        graph = freeze(model)
    assert graph.meta["keras_float32_exact"] is False
    assert graph.nodes[1].type.width > 24


def test_cast_that_would_abort_the_csim_is_refused(tmp_path):
    from edgebnn.errors import EdgebnnError
    from edgebnn.fixed import FixedType
    from edgebnn.graph import Graph, cast_node, input_node

    src = input_node("x", (3,), FixedType.from_string("fixed<4,-6>"))
    graph = Graph("g", [src, cast_node("c", src, FixedType.from_string("fixed<8,8,RND>"), relu=False)])
    with pytest.raises(EdgebnnError, match="'c' \\(cast\\).*drops more bits"):
        export(graph, tmp_path / "p", board=PYNQ)
    assert not (tmp_path / "p").exists()


def test_wrapping_cast_bounds_cover_the_type():
    from edgebnn.fixed import FixedType
    from edgebnn.graph import cast_node, input_node

    src = input_node("x", (2,), FixedType.from_string("fixed<8,4>"))  # [-8, 7.9375]
    wrap = cast_node("c", src, FixedType.from_string("fixed<4,2>"), relu=False)
    sat = cast_node("s", src, FixedType.from_string("fixed<4,2,TRN,SAT>"), relu=True)
    assert wrap.lo.tolist() == [-2.0, -2.0] and wrap.hi.tolist() == [1.75, 1.75]
    assert sat.lo.tolist() == [0.0, 0.0] and sat.hi.tolist() == [1.75, 1.75]


@pytest.mark.csim
def test_quantized_bias_is_exact_in_the_dense_node(tmp_path):
    model = keras.Sequential(
        [
            keras.Input((8,)),
            QuantDense(
                6,
                input_quantizer="quantized_bits(6, 2)",
                kernel_quantizer="quantized_bits(4, 0)",
                bias_quantizer="quantized_bits(5, 1)",
                activation="relu",
            ),
            QuantActivation("quantized_bits(6, 3)"),
        ]
    )
    model.layers[0].bias.assign(np.linspace(-1.7, 1.3, 6).astype(np.float32))
    graph = freeze(model)
    dense = graph.nodes[1]
    assert [n.op for n in graph.nodes] == ["input", "dense", "cast"] and "bias" in dense.params
    assert dense.fixed_attr("bias_type") == FixedType.from_string("fixed<5,2,RND_CONV,SAT>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        project = export(graph, tmp_path / "prj", board=PYNQ)
    report = verify(model, graph, inputs(), project=project)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
