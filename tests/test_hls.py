"""export: hls4ml C-simulation equals the emulator bit for bit; project folders are all-or-nothing."""

import os
import re
import sys
import warnings

import numpy as np
import pytest
from graphs import PYNQ, assert_csim_equals_emulator, binary_mlp, calibrated_mlp, edge_inputs, export_quietly

from edgebnn.backends import hls4ml as hls
from edgebnn.backends.hls4ml.model import hls_names
from edgebnn.backends.hls4ml.ops import LOWERINGS
from edgebnn.backends.hls4ml.ops.threshold import THRESHOLD_CLASS
from edgebnn.backends.hls4ml.threshold_layer import THRESHOLD_HEADER, register
from edgebnn.backends.target import Target, TargetError
from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, Node, dense_node, input_node, threshold_node


def odd_types_graph(seed=0):
    """Types with more integer bits than bits (step 4) and with negative integer bits."""
    rng = np.random.default_rng(seed)
    inp = input_node("x", (5,), FixedType.from_string("ufixed<4,6,RND,SAT>"))
    thresholds = np.sort(rng.integers(0, 16, size=(5, 3)), axis=1)
    levels = np.sort(rng.integers(-4, 4, size=(5, 4)), axis=1)
    q = threshold_node("q", inp, thresholds, levels, FixedType.from_string("fixed<3,-1>"))
    d = dense_node(
        "d",
        q,
        rng.integers(-3, 4, size=(5, 3)),
        FixedType.from_string("fixed<3,5>"),
        rng.integers(-8, 8, size=3),
        FixedType.from_string("fixed<4,-2>"),
    )
    return Graph("odd_types", [inp, q, d])


# --------------------------------------------------------------- exported and compiled once per graph
# (the conftest fixture `compiled` gives (name, graph, project) for each)
CASES = {
    # binary_mlp's random thresholds make its outputs nearly constant; the others vary
    "binary": (lambda: binary_mlp(), {}),
    "binary_levels": (lambda: binary_mlp(out_levels="fixed<6,3,RND_CONV,SAT>"), {}),
    # a BNN: +-1 weights (hls4ml's ternary product), +-1 activations, 8-bit unsigned input
    "bnn": (
        lambda: calibrated_mlp(
            seed=2,
            input_type="ufixed<8,0,RND_CONV,SAT>",
            weight_type="int<2>",
            weight_codes=(-1, 1),
            act_type="int<2>",
            act_thresholds=1,
            act_levels=(-1, 1),
        ),
        {},
    ),
    # multi-bit weights with bias, 2-bit activations, a threshold right on the input's codes
    "calibrated": (lambda: calibrated_mlp(input_levels="ufixed<3,1>"), {}),
    # wrap-around input, int<2> weights including -2, Vivado backend, Resource strategy with
    # a reuse factor above n_in (a multiple of it), one below and one equal to it
    "resource": (
        lambda: calibrated_mlp(
            seed=1, input_type="fixed<6,1,TRN,WRAP>", weight_type="int<2>", act_type="int<2>", act_thresholds=1, out_levels=None
        ),
        {"backend": "Vivado", "strategy": "Resource", "reuse_factor": {"dense0": 32, "dense1": 3, "dense2": 8}},
    ),
    "odd_types": (odd_types_graph, {}),
}


def test_csim_equals_emulator(compiled):
    name, graph, project = compiled
    x = edge_inputs(graph)
    assert_csim_equals_emulator(project, graph, x)
    if not name.startswith("binary"):  # the outputs really vary, so equality means something
        assert len(np.unique(emulate(graph, x), axis=0)) > 20


THRESHOLD_FIRST = [name for name, (build, _) in CASES.items() if build().nodes[1].op == "threshold"]


@pytest.mark.parametrize("compiled", THRESHOLD_FIRST, indirect=True)
def test_inputs_on_thresholds(compiled):
    """Samples whose first-layer values sit exactly on thresholds, and one step below them."""
    name, graph, project = compiled
    first = graph.nodes[1]
    assert first.op == "threshold"
    t = graph.input.type
    codes = first.params["thresholds"]  # (C, K) on the input's grid
    x = np.concatenate([t.from_codes(codes.T), t.from_codes(codes.T - 1)])
    assert_csim_equals_emulator(project, graph, x)


def test_single_sample_and_empty_batch(compiled):
    _, graph, project = compiled
    x = edge_inputs(graph, n=4)[:1]
    assert project.predict(x).shape == (1, *graph.output.shape)
    assert_csim_equals_emulator(project, graph, x)
    assert project.predict(x[:0]).shape == (0, *graph.output.shape)


def test_generated_types_are_the_graph_types(compiled):
    """defines.h holds exactly the graph's types; nothing was left at hls4ml's fixed<16,6>."""
    _, graph, project = compiled
    with open(os.path.join(project.path, "firmware", "defines.h")) as fh:
        typedefs = dict((name, cpp) for cpp, name in re.findall(r"typedef\s+(.+?)\s+(\w+);", fh.read()))
    types = {name: FixedType.from_string(cpp) for name, cpp in typedefs.items()}
    names = hls_names(graph)
    assert types["input_t"] == graph.input.type
    assert types["result_t"] == graph.output.type
    for node in graph.compute_nodes():
        n = names[node.name]
        if node.op == "dense":
            assert types[f"{n}_accum_t"] == node.type
            assert types[f"{n}_weight_t"] == node.fixed_attr("weight_type")
            if "bias" in node.params:
                assert types[f"{n}_bias_t"] == node.fixed_attr("bias_type")
        else:
            assert types[f"{n}_thresholds_t"] == graph[node.inputs[0]].type
            assert types[f"{n}_levels_t"] == node.type
    assert not any(t == FixedType(16, 6) for t in types.values())


def test_generated_products(compiled):
    """hls4ml's 'weight_ternary' product (0, -x, x) only for weights coded -1, 0, +1: it would
    turn a -2 weight of an int<2> type into +x (measured: every sample wrong)."""
    _, graph, project = compiled
    with open(os.path.join(project.path, "firmware", "parameters.h")) as fh:
        products = re.findall(r"product::(\w+)<", fh.read())
    dense = [n for n in graph.nodes if n.op == "dense"]
    want = [
        "weight_ternary"
        if np.isin(n.params["weight"], (-1, 0, 1)).all() and n.fixed_attr("weight_type") == FixedType(2, 2)
        else "mult"
        for n in dense
    ]
    assert products == want


def test_project_folder(compiled):
    name, graph, project = compiled
    path = project.path
    assert os.path.isfile(os.path.join(path, "build_prj.tcl"))
    assert os.path.isdir(os.path.join(path, "firmware"))
    assert os.path.isfile(os.path.join(path, "firmware", "nnet_utils", THRESHOLD_HEADER))
    with open(os.path.join(path, "project.tcl")) as fh:
        assert 'set part "xc7z020clg400-1"' in fh.read()
    with open(os.path.join(path, "hls4ml_config.yml")) as fh:
        config = fh.read()
    assert "Part: xc7z020clg400-1" in config and "ClockPeriod: 10" in config
    assert f"OutputDir: {path}" in config
    # no file refers to the temporary folder it was written in, and none is left beside it
    for root, _, files in os.walk(path):
        for f in files:
            if not f.endswith(".so"):
                with open(os.path.join(root, f), "rb") as fh:
                    assert b".partial-" not in fh.read(), f
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]


def test_reuse_factors_are_built_as_given(compiled):
    name, graph, project = compiled
    assert project.warnings == []
    rf = {layer.name: layer.get_attr("reuse_factor") for layer in project.model.get_layers() if layer.class_name == "Dense"}
    assert rf == project.target.reuse_factors(graph)


def test_predict_checks_its_input(compiled):
    _, graph, project = compiled
    with pytest.raises(EdgebnnError, match="shape"):
        project.predict(np.zeros((2, graph.input.shape[-1] + 1)))
    with pytest.raises(EdgebnnError, match="NaN"):
        project.predict(np.full((1, *graph.input.shape), np.nan))


# --------------------------------------------------------------- folders (no compile)
@pytest.fixture
def small():
    return binary_mlp(sizes=(4, 3, 2), seed=3)


def test_csim_library_is_built_at_o1(small, tmp_path):
    """hls4ml's build script compiles at -O3 and in C++23 where g++ has it; the export sets -O1 (as
    fast a simulation, a much faster build) and C++14 (Vitis HLS's standard, parsed faster) and
    changes nothing else in it."""
    from edgebnn.backends.hls4ml.exporter import CSIM_CFLAGS

    project = export_quietly(small, tmp_path / "prj", board=PYNQ)
    script = (tmp_path / "prj" / "build_lib.sh").read_text()
    assert re.findall(r"^CFLAGS=.*$", script, flags=re.M) == [f'CFLAGS="{CSIM_CFLAGS}"'] and "-O1" in CSIM_CFLAGS
    import pathlib

    import hls4ml

    from edgebnn.backends.hls4ml.csim_cache import _COMPILE_LINES, _SPLIT_LINES
    from edgebnn.backends.hls4ml.exporter import _STANDARD_BLOCK

    original = (pathlib.Path(hls4ml.__file__).parent / "templates" / "vivado" / "build_lib.sh").read_text()
    # besides the flags, the only change is the weights compiled apart from the network (csim_cache.split_weights)
    assert original.count(_COMPILE_LINES) == 1 and script.count(_SPLIT_LINES) == 1
    original = original.replace(_COMPILE_LINES, _SPLIT_LINES)
    # and the C++ standard in the flags, in place of the script's choice of C++23 or C++11
    assert "-std=c++14" in CSIM_CFLAGS and "-std=c++23" in original and "-std=" not in script.replace(CSIM_CFLAGS, "")
    original = _STANDARD_BLOCK.sub("", original)
    differ = [(a, b) for a, b in zip(original.splitlines(), script.splitlines()) if a != b]
    assert [a for a, _ in differ if not a.startswith(("PROJECT=", "LIB_STAMP="))] == ['CFLAGS="-O3 -fPIC"'], differ
    assert project.path == str(tmp_path / "prj")


def test_existing_folder_is_refused_without_force(small, tmp_path):
    out = tmp_path / "prj"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"prj.*--force"):
        hls.export(small, out)
    assert os.listdir(out) == ["keep.txt"]
    hls.export(small, out, force=True)
    assert not (out / "keep.txt").exists() and (out / "build_prj.tcl").is_file()
    assert sorted(os.listdir(tmp_path)) == ["prj"]


@pytest.mark.parametrize("error", [RuntimeError("disk full"), KeyboardInterrupt()])
@pytest.mark.parametrize("existing", [False, True])
def test_failed_export_leaves_nothing(small, tmp_path, monkeypatch, error, existing):
    from hls4ml.model.graph import ModelGraph

    out = tmp_path / "prj"
    if existing:
        out.mkdir()
        (out / "keep.txt").write_text("mine")

    def broken_write(self):
        os.makedirs(os.path.join(self.config.get_output_dir(), "firmware"), exist_ok=True)
        raise error

    monkeypatch.setattr(ModelGraph, "write", broken_write)
    with pytest.raises(type(error)):
        hls.export(small, out, force=existing)
    assert sorted(os.listdir(tmp_path)) == (["prj"] if existing else [])
    if existing:
        assert os.listdir(out) == ["keep.txt"]


@pytest.mark.parametrize(
    "options, says",
    [
        (
            {"strategy": "resource", "reuse_factor": 5},
            "reuse factor 5 of node 'dense0' (dense, 4 x 3 weights) is not one hls4ml's Resource strategy builds as "
            "given; use one of 1, 2, 4, 12 there, or the Latency strategy",
        ),
        (
            {"strategy": "Resource", "reuse_factor": {"dense1": 2}, "backend": "Vivado", "io_type": "io_stream"},
            "reuse factor 2 of node 'dense1' (dense, 3 x 2 weights) is not one hls4ml's Resource strategy builds as "
            "given; use one of 1, 3, 6 there",
        ),
    ],
)
def test_reuse_factor_hls4ml_would_snap_is_refused_before_writing(small, tmp_path, options, says):
    with pytest.raises(TargetError) as err:
        hls.export(small, tmp_path / "p", **options)
    assert str(err.value).startswith(says) and "\n" not in str(err.value)
    assert os.listdir(tmp_path) == []


def test_any_reuse_factor_builds_under_latency(small, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        project = hls.export(small, tmp_path / "p", reuse_factor={"dense0": 5, "dense1": 7})
    rf = {layer.name: layer.get_attr("reuse_factor") for layer in project.model.get_layers() if layer.class_name == "Dense"}
    assert rf == {"dense0": 5, "dense1": 7}


@pytest.mark.csim
def test_reuse_factor_per_node(tmp_path):
    """A Target with one reuse factor per dense node configures each layer with its own (the
    others get 1) and the C-simulation stays exact: the Vivado backend in io_stream, the
    Resource strategy."""
    graph = calibrated_mlp()
    target = Target(
        board=PYNQ, backend="Vivado", io_type="io_stream", strategy="Resource", reuse_factor={"dense0": 4, "dense2": 2}
    )
    project = export_quietly(graph, tmp_path / "p", target=target)
    assert project.target is target
    rf = {layer.name: layer.get_attr("reuse_factor") for layer in project.model.get_layers() if layer.class_name == "Dense"}
    assert rf == {"dense0": 4, "dense1": 1, "dense2": 2}
    assert_csim_equals_emulator(project, graph, edge_inputs(graph, n=120))


def test_board_and_overrides(small, tmp_path):
    p = hls.export(small, tmp_path / "a", board=PYNQ, part="xcu250-figd2104-2L-e", clock_period=4)
    with open(os.path.join(p.path, "project.tcl")) as fh:
        text = fh.read()
    assert 'set part "xcu250-figd2104-2L-e"' in text and "set clock_period 4" in text

    class Board:  # an edgebnn.boards.Board-like object with attributes
        name, part, clock_period_ns = "b", "xc7a35tcpg236-1", 8

    p = hls.export(small, tmp_path / "b", board=Board())
    with open(os.path.join(p.path, "project.tcl")) as fh:
        text = fh.read()
    assert 'set part "xc7a35tcpg236-1"' in text and "set clock_period 8" in text


def test_registration_is_idempotent(small, tmp_path):
    from hls4ml.model.layers import layer_map

    register(hls.BACKENDS)
    register(hls.BACKENDS)
    assert layer_map[THRESHOLD_CLASS].__name__ == THRESHOLD_CLASS
    hls.export(small, tmp_path / "again")


def test_export_without_tensorflow(tmp_path):
    """Export works in a process where TensorFlow and Keras cannot be imported."""
    import subprocess

    code = (
        "import sys\n"
        "sys.modules['tensorflow'] = sys.modules['keras'] = None  # importing them now fails\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from graphs import binary_mlp\n"
        "from edgebnn.backends.hls4ml import export\n"
        f"print(export(binary_mlp(), {str(tmp_path / 'p')!r}).path)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__))
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "p" / "build_prj.tcl").is_file()


# --------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"io_type": "io_serial"}, "io_type 'io_serial' is not supported; use one of io_parallel, io_stream"),
        ({"backend": "Quartus"}, "backend 'Quartus' is not supported; use one of Vitis, Vivado"),
        ({"strategy": "distributed_arithmetic"}, "strategy.*use one of Latency, Resource"),
        ({"reuse_factor": 0}, "reuse factor must be an integer >= 1"),
        ({"reuse_factor": {"nowhere": 2}}, "reuse factor given for 'nowhere', which is not a dense node of graph"),
        ({"project_name": "my-project"}, "C identifier"),
        ({"clock_period": -1}, "clock_period must be a positive number"),
        ({"target": "Vitis"}, "target must be an edgebnn.backends.target.Target, got str"),
        ({"target": Target(), "io_type": "io_stream"}, r"give either target or its options \(io_type\), not both"),
    ],
)
def test_unsupported_options(small, tmp_path, kwargs, match):
    with pytest.raises(EdgebnnError, match=match):
        hls.export(small, tmp_path / "p", **kwargs)
    assert os.listdir(tmp_path) == []


def test_unsupported_nodes(small, tmp_path):
    graph = binary_mlp(sizes=(4, 3, 2), seed=3)
    graph.nodes[1].op = "pool2d"
    with pytest.raises(
        EdgebnnError,
        match=rf"'dense0' \(pool2d\).*supports {re.escape(', '.join(LOWERINGS))} nodes",
    ):
        hls.export(graph, tmp_path / "p")

    image = input_node("image", (2, 2, 3), FixedType.from_string("ufixed<4,0>"))
    acc = FixedType(5, 5)
    per_position = Node(
        "d",
        "dense",
        ["image"],
        (2, 2, 2),
        acc,
        {"weight": np.ones((3, 2), dtype=np.int64), "lo": np.zeros(2), "hi": np.full(2, 3.0)},
        {"weight_type": "int<2>"},
    )
    with pytest.raises(EdgebnnError, match="'d'.*flat inputs"):
        hls.export(Graph("g", [image, per_position]), tmp_path / "p")

    saturating = binary_mlp(sizes=(4, 3, 2), seed=3)
    saturating.nodes[1].type = saturating.nodes[1].type.replace(overflow="SAT")
    with pytest.raises(EdgebnnError, match="'dense0'.*not an exact accumulator"):
        hls.export(saturating, tmp_path / "p")
    assert os.listdir(tmp_path) == []


@pytest.mark.csim
def test_constant_threshold_layer(tmp_path):
    """A threshold layer without thresholds (every channel constant) exports exactly."""
    t = FixedType.from_string("ufixed<4,0,RND,SAT>")
    inp = input_node("x", (3,), t)
    const = threshold_node("const", inp, np.zeros((3, 1)), np.array([[1, 1], [-2, -2], [0, 0]]), FixedType(3, 3))
    const.params.update(thresholds=np.zeros((3, 0), dtype=np.int64), levels=np.array([[1], [-2], [0]]))
    graph = Graph.__new__(Graph)  # Graph.validate cannot check an empty threshold table yet
    graph.name, graph.nodes, graph.meta = "const", [inp, const], {}
    project = export_quietly(graph, tmp_path / "p")
    x = edge_inputs(graph, n=20)
    assert_csim_equals_emulator(project, graph, x)
    assert np.array_equal(project.predict(x[:2]), [[1, -2, 0]] * 2)


# --------------------------------------------------------------- paths, the compiled library, g++
@pytest.mark.parametrize(
    "name, what",
    [('a"b', "a double quote"), ("a\\b", "a backslash"), ("a\\x9b", "a backslash"), ("a\nb", "the control character '\\n'")],
)
def test_output_path_hls4ml_cannot_build_is_refused(small, tmp_path, name, what):
    """hls4ml's build_lib.sh puts the folder in a C string literal: a backslash made the
    C-simulation look for its weights elsewhere and call exit(1) inside Python."""
    with pytest.raises(EdgebnnError, match=f"HLS project folder .*a.*b.* contains {re.escape(what)}, .*without it"):
        hls.export(small, tmp_path / name)
    assert os.listdir(tmp_path) == []
    with pytest.raises(EdgebnnError, match="backslash"):
        hls.check_output_path(tmp_path / "x\\y")
    assert hls.check_output_path(tmp_path / "a b") == tmp_path / "a b"


@pytest.mark.csim
def test_compiled_library_needs_nothing_from_its_folder(tmp_path):
    """The library is built and loaded in the final folder (export writes into a staging folder
    first), holds its weights (none are read at the first call from a path built into it), and a
    second export with force into the same folder does not disturb the first project's library."""
    first, second = (calibrated_mlp(sizes=(6, 5, 3), seed=s, out_levels=None) for s in (5, 6))
    path = tmp_path / "my project's $folder é"  # spaces, quotes, '$' and non-ASCII work
    p1 = export_quietly(first, path, board=PYNQ).compile()
    lib = p1.model._top_function_lib._name
    assert lib.startswith(str(path / "firmware") + os.sep) and os.path.isfile(lib)
    with open(lib, "rb") as fh:
        assert b".partial-" not in fh.read()
    x = edge_inputs(first, n=40)
    os.rename(path, tmp_path / "moved")  # first call after the folder went away
    assert_csim_equals_emulator(p1, first, x)
    os.rename(tmp_path / "moved", path)

    p2 = export_quietly(second, path, board=PYNQ, force=True).compile()
    assert_csim_equals_emulator(p2, second, x)
    assert_csim_equals_emulator(p1, first, x)
    assert not np.array_equal(emulate(first, x), emulate(second, x))
    with pytest.raises(EdgebnnError, match=r"no longer holds the project this object exported.*export the graph again"):
        p1.compile()  # the folder holds the second project now
    assert sorted(os.listdir(tmp_path)) == [path.name]


def test_compile_without_gxx(small, tmp_path, monkeypatch):
    hls.check_compiler()  # g++ is here
    project = hls.export(small, tmp_path / "p")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for call in (hls.check_compiler, project.compile, lambda: project.predict(np.zeros((1, 4)))):
        with pytest.raises(EdgebnnError, match=r"^g\+\+ was not found on PATH; install it .* to build the C-simulation"):
            call()


@pytest.mark.csim
def test_a_cast_to_the_type_it_already_has_is_removed_by_hls4ml_and_the_project_stays_exact(tmp_path):
    # a QuantActivation repeated as the next layer's input_quantizer freezes to such a cast
    from graphs import PYNQ, assert_csim_equals_emulator, edge_inputs, export_quietly

    from edgebnn.fixed import FixedType
    from edgebnn.graph import Graph, cast_node, dense_node, input_node

    rng = np.random.default_rng(5)
    wt, q = FixedType.from_string("fixed<3,3>"), FixedType.from_string("fixed<4,2,RND,SAT>")
    inp = input_node("in", (5,), FixedType.from_string("fixed<6,3,RND_CONV,SAT>"))
    d0 = dense_node("d0", inp, rng.integers(-3, 4, (5, 4)), wt)
    c0 = cast_node("c0", d0, q, relu=False)
    c1 = cast_node("c1", c0, q, relu=False)  # the identity
    d1 = dense_node("d1", c1, rng.integers(-3, 4, (4, 3)), wt)
    graph = Graph("identity_cast", [inp, d0, c0, c1, d1])
    project = export_quietly(graph, tmp_path / "p", board=PYNQ, io_type="io_parallel")
    assert [layer.name for layer in project.model.get_layers()] == ["in_layer", "d0", "c0", "d1"]
    assert_csim_equals_emulator(project, graph, edge_inputs(graph, n=100))
