"""The RTL backend on a binary MLP (the digits BNN's shape, scaled down) and on every fixed-point
conversion: the Verilator simulation equals the emulator bit for bit, node by node, under
back-pressure, at the cycles its folding promises; the folding's refusals; the build cache."""

import json

import numpy as np
import pytest
from graphs import binary_mlp, edge_inputs

from edgebnn.backends import rtl
from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError
from edgebnn.fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType
from edgebnn.graph import Graph, cast_node, concatenate_node, input_node

pytestmark = pytest.mark.rtl

FOLD = {"dense0": (3, 4), "dense1": (2, 3), "dense2": (4, 8)}


@pytest.fixture(scope="module")
def mlp():
    return binary_mlp(out_levels="fixed<4,2>")


@pytest.fixture(scope="module")
def mlp_project(mlp, tmp_path_factory):
    project = rtl.export(mlp, tmp_path_factory.mktemp("rtl") / "mlp", folding=FOLD)
    return project.compile()


def test_predict_equals_the_emulator(mlp, mlp_project):
    x = edge_inputs(mlp, n=400)
    got = mlp_project.predict(x)
    want = emulate(mlp, x)
    assert got.dtype == np.float64 and got.shape == want.shape
    assert np.array_equal(got, want)


def test_trace_equals_every_node_of_the_emulator(mlp, mlp_project):
    x = edge_inputs(mlp, n=120, seed=3)
    got = mlp_project.trace(x)
    want = emulate(mlp, x, return_all=True)
    assert set(got) == set(want)
    for name in want:
        assert np.array_equal(got[name], want[name]), name


def test_back_pressure_changes_nothing(mlp, mlp_project):
    x = edge_inputs(mlp, n=80, seed=5)
    codes = mlp_project._codes(x)
    plain, _ = mlp_project.run_codes(codes)
    stalled, _ = mlp_project.run_codes(codes, stall_seed=12345)
    assert np.array_equal(plain, stalled)
    assert np.array_equal(mlp.output.type.from_codes(stalled), emulate(mlp, x))


def test_the_slowest_unit_sets_the_measured_rate(mlp_project):
    # dense0: 16/4 x 12/3 = 16 cycles per sample; dense1: 12/3 x 8/2 = 16; dense2: 8/8 x 4/4 = 1
    cps, latency = mlp_project.measure(24)
    assert cps == 16
    # an MVAU takes its input beat at the beat's last fold (the beat waits in the upstream's
    # register while it is read), so the latency from that handshake spans dense1 and dense2
    assert 16 + 1 <= latency <= 16 + 16 + 1 + 16


def test_compile_again_builds_nothing(mlp_project):
    again = rtl.RTLProject(mlp_project.path).compile()
    assert again.built is False


def test_the_project_names_units_after_nodes(mlp, mlp_project):
    meta = json.loads((mlp_project.path / "project.json").read_text())
    assert meta["folding"] == {k: list(v) for k, v in FOLD.items()}
    assert [p.name for p in mlp_project.sources][-1] == f"{mlp_project.top}.v"
    top = (mlp_project.path / "hdl" / f"{mlp_project.top}.v").read_text()
    for node in mlp.compute_nodes():
        assert f"u_{node.name} (" in top
    # each threshold is the only reader of its dense node: the dense node's unit computes it (an
    # MVTU), and the threshold's own unit passes its codes through
    assert meta["fused"] == {"dense0": "sign0", "dense1": "sign1", "dense2": "levels2"}
    sign0 = (mlp_project.path / "hdl" / "sign0.v").read_text()
    assert "built into the unit of dense0" in sign0 and "assign out_data = in0_data;" in sign0
    dense0 = (mlp_project.path / "hdl" / "dense0.v").read_text()
    assert "PE 3 x SIMD 4" in dense0 and "add/subtract" in dense0  # 8-bit inputs, binary weights
    dense1 = (mlp_project.path / "hdl" / "dense1.v").read_text()
    assert "XNOR + popcount" in dense1 and "fused with sign1" in dense1
    mem = (mlp_project.path / "hdl" / "dense0_weights.mem").read_text().split()
    assert len(mem) == (16 // 4) * (12 // 3)


@pytest.mark.parametrize(
    "input_type, out_levels, folding",
    [
        # signed 8-bit inputs: the top bit plane counts -128 (Verilator sums by bit planes)
        ("fixed<8,3,RND_CONV,SAT>", None, {"dense0": (3, 4), "dense1": (2, 3), "dense2": (4, 8)}),
        ("fixed<8,3,RND_CONV,SAT>", "fixed<4,2>", {"dense0": (12, 16), "dense1": (8, 12), "dense2": (4, 8)}),
        ("ufixed<5,2,RND_CONV,WRAP>", None, {"dense0": (1, 2), "dense1": (8, 12), "dense2": (1, 8)}),
    ],
)
def test_binary_weights_on_multibit_inputs_equal_the_emulator(tmp_path, input_type, out_levels, folding):
    graph = binary_mlp(input_type=input_type, out_levels=out_levels, seed=4)
    project = rtl.export(graph, tmp_path / "p", folding=folding)
    assert "add/subtract" in (project.path / "hdl" / "dense0.v").read_text()
    x = edge_inputs(graph, n=400, seed=6)
    x[0] = graph.input.type.min  # every input the most negative code (all of the top plane)
    x[1] = graph.input.type.max
    assert np.array_equal(project.predict(x), emulate(graph, x))


# ------------------------------------------------------------------ every fixed-point conversion
def cast_graph() -> Graph:
    """One cast of a wide input to a narrower type per rounding x overflow mode (and WRAP with
    saturation bits, and a relu), joined: every conversion of edgebnn.fixed in one design."""
    src_t = FixedType(9, 4, True)
    inp = input_node("x", (1,), src_t)
    casts = []
    types = [FixedType(5, 2, True, r, o) for r in ROUNDING_MODES for o in OVERFLOW_MODES]
    types += [FixedType(4, 1, False, "RND_CONV", o) for o in OVERFLOW_MODES]
    types += [FixedType(5, 2, True, "RND", "WRAP", 2), FixedType(5, 2, False, "TRN", "WRAP", 1), FixedType(12, 6, True)]
    # steps coarser than the input's whole range (the shift exceeds its width)
    types += [FixedType(3, 8, True, "RND_CONV", "SAT"), FixedType(4, 9, True, "RND_INF", "WRAP"), FixedType(2, 9, False, "RND")]
    for i, t in enumerate(types):
        casts.append(cast_node(f"cast{i}", inp, t, relu=i % 5 == 4))
    return Graph("casts", [inp, *casts, concatenate_node("joined", casts)])


@pytest.fixture(scope="module")
def casts(tmp_path_factory):
    graph = cast_graph()
    return graph, rtl.export(graph, tmp_path_factory.mktemp("rtl") / "casts").compile()


def test_every_cast_mode_equals_the_emulator_on_every_code(casts):
    graph, project = casts
    t = graph.input.type
    x = (np.arange(t.min_code, t.max_code + 1) * t.lsb)[:, None]
    got = project.trace(x)
    want = emulate(graph, x, return_all=True)
    for node in graph.nodes:
        assert np.array_equal(got[node.name], want[node.name]), f"{node.name}: {node.type}"


# ---------------------------------------------------------------------------------- refusals
def test_folding_refusals_name_the_node(mlp, tmp_path):
    with pytest.raises(
        EdgebnnError, match=r"'dense0'.*pe 5 does not divide its 12 output channels; use one of \[1, 2, 3, 4, 6, 12\]"
    ):
        rtl.export(mlp, tmp_path / "a", folding={"dense0": (5, 4)})
    with pytest.raises(EdgebnnError, match=r"'dense0'.*simd 3 does not divide its 16 inputs"):
        rtl.export(mlp, tmp_path / "a", folding={"dense0": {"pe": 1, "simd": 3}})
    with pytest.raises(EdgebnnError, match=r"'sign0', which is no folded node.*dense0, dense1, dense2"):
        rtl.export(mlp, tmp_path / "a", folding={"sign0": (1, 1)})
    with pytest.raises(EdgebnnError, match=r"pe must be a whole number of at least 1, got 0"):
        rtl.export(mlp, tmp_path / "a", folding={"dense1": (0, 1)})
    assert not (tmp_path / "a").exists()


def test_the_default_folding_keeps_small_units_parallel(mlp):
    folds = rtl.resolve_folding(mlp, {"dense1": [2, 6]})
    assert folds == {"dense0": (12, 16), "dense1": (2, 6), "dense2": (4, 8)}
    from edgebnn.backends.rtl.folding import default_fold

    assert default_fold(128, 64) == (64, 64)  # 64 x 128 products fold to 4096 per cycle


def test_an_existing_folder_is_refused(mlp, tmp_path):
    (tmp_path / "p").mkdir()
    with pytest.raises(EdgebnnError, match="exists"):
        rtl.export(mlp, tmp_path / "p")


def test_importing_the_backend_imports_no_keras():
    import subprocess
    import sys

    code = (
        "import sys, edgebnn.backends.rtl as r; r.export; r.RTLProject; "
        "print(any(m in sys.modules for m in ('keras', 'tensorflow', 'hls4ml')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_verify_runs_the_rtl_leg_and_names_the_first_node_that_differs(mlp, mlp_project):
    import dataclasses

    from edgebnn.verify import verify

    x = edge_inputs(mlp, n=40, seed=9)
    same = verify(None, mlp, x, rtl=mlp_project)
    assert same.ok and same.emulator_vs_rtl == 0 and same.to_dict()["emulator_vs_rtl"] == 0
    assert "emulator vs rtl: 0 mismatching" in same.describe()
    # the emulator of a graph whose sign1 flips channel 0 against the design built from mlp
    nodes = []
    for node in mlp.nodes:
        if node.name == "sign1":
            levels = node.params["levels"].copy()
            levels[0] = levels[0][::-1]
            node = dataclasses.replace(node, params={**node.params, "levels": levels})
        nodes.append(node)
    other = Graph(mlp.name, nodes)
    report = verify(None, other, x, rtl=mlp_project)
    assert not report.ok and report.emulator_vs_rtl > 0
    first = report.first_mismatches[0]
    assert (first.between, first.layer) == ("emulator/rtl", "sign1")
    assert verify(None, mlp, x).to_dict().get("emulator_vs_rtl", "absent") == "absent"  # no leg, no key


def test_types_wider_than_the_simulation_exchanges_are_refused(tmp_path):
    inp = input_node("x", (2,), FixedType(8, 4))
    wide = cast_node("wide", inp, FixedType(70, 40), relu=False)
    with pytest.raises(EdgebnnError, match=r"graph node 'wide' \(cast\) has the 70-bit type .* at most 63 bits"):
        rtl.export(Graph("wide", [inp, wide]), tmp_path / "p")
    assert not (tmp_path / "p").exists()


def test_a_folder_that_is_no_project_is_refused(tmp_path):
    with pytest.raises(EdgebnnError, match="is not an edgebnn RTL project"):
        rtl.RTLProject(tmp_path)
