"""passes.branches (and passes.wire, chain.layer_chain): functional models with Add and
Concatenate freeze exactly; a real-valued tensor that branches or reaches a merge is refused in
one sentence; chains keep their stream."""

import keras
import numpy as np
import pytest
from bn import adversarial_bn, batch_norms
from freeze_models import IN_Q, quantize, run, step

from edgebnn.emulate import emulate
from edgebnn.freeze import FreezeError, freeze, plan, trace
from edgebnn.freeze.items import Read, Wrote
from edgebnn.freeze.passes import branches, wire
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense

SHAPE = (5, 5, 2)


def conv(filters, name, kernel=3, iq=None, **kw):
    kw.setdefault("use_bias", False)
    return QuantConv2D(filters, kernel, padding="same", input_quantizer=iq, kernel_quantizer="ste_sign", name=name, **kw)


def stem(x):
    """conv -> BatchNormalization -> QuantActivation(ste_sign): a quantized tensor of 3 channels."""
    h = conv(3, "c0", iq=IN_Q)(x)
    h = keras.layers.BatchNormalization(name="bn0")(h)
    return QuantActivation("ste_sign", name="q0")(h)


def bireal():
    """Two Bi-Real blocks (the quantized shortcut added to the block's quantized output), the
    second merge requantized by BatchNormalization + a 3-bit quantizer, then Flatten and Dense."""
    x = keras.Input(SHAPE)
    q0 = stem(x)
    h = conv(3, "c1")(q0)
    h = keras.layers.BatchNormalization(name="bn1")(h)
    q1 = QuantActivation("ste_sign", name="q1")(h)
    a1 = keras.layers.Add(name="add1")([q0, q1])
    h = conv(3, "c2", iq="ste_sign")(a1)
    h = keras.layers.BatchNormalization(name="bn2")(h)
    q2 = QuantActivation("quantized_bits(3, 1)", name="q2")(h)
    a2 = keras.layers.Add(name="add2")([q2, keras.layers.Dropout(0.5, name="drop")(a1)])
    h = keras.layers.BatchNormalization(name="bn3")(a2)
    h = QuantActivation("quantized_bits(4, 2)", name="q3")(h)
    h = keras.layers.Flatten(name="flat")(h)
    return keras.Model(x, QuantDense(3, kernel_quantizer="ste_sign", use_bias=False, name="d")(h))


def concat_of_accumulators():
    """A fan-out after the quantizer into a 1x1 and a 3x3 convolution whose accumulators are
    concatenated with the quantized tensor itself, and an Add of two accumulators ending the model."""
    x = keras.Input(SHAPE)
    q0 = stem(x)
    a = conv(2, "ca", kernel=1, bias_quantizer="quantized_bits(4, 2)", use_bias=True)(q0)
    b = conv(2, "cb", kernel=3)(q0)
    cat = keras.layers.Concatenate(name="cat")([a, q0, b])
    h = keras.layers.BatchNormalization(name="bn1")(cat)
    h = QuantActivation("quantized_relu(3, 1)", name="q1")(h)
    s1 = conv(2, "s1", kernel=1)(h)
    s2 = conv(2, "s2", kernel=3)(h)
    return keras.Model(x, keras.layers.Add(name="sum")([s1, s2]))


def moved_pool():
    """A MaxPooling2D between a BatchNormalization and its quantizer (moved after it), whose
    quantized output two layers read: the branches read the pool."""
    x = keras.Input(SHAPE)
    h = keras.layers.BatchNormalization(name="bn0")(conv(3, "c0", iq=IN_Q)(x))
    h = keras.layers.MaxPooling2D((2, 2), name="pool")(h)
    q0 = QuantActivation("ste_sign", name="q0")(h)
    q1 = QuantActivation("ste_sign", name="q1")(keras.layers.BatchNormalization(name="bn1")(conv(3, "c1")(q0)))
    return keras.Model(x, keras.layers.Add(name="add")([q0, q1]))


def adversarial(model, rng, x):
    for layer in batch_norms(model):
        probe = keras.Model(model.inputs, layer.input)
        acc = np.asarray(probe.predict(x, verbose=0), dtype=np.float32).reshape(-1, layer.gamma.shape[0])
        layer.set_weights(adversarial_bn(layer.gamma.shape[0], rng, acc[:, 0]))
    return model


def edge_x(rng, n=256):
    """Inputs of IN_Q's grid (steps of 1/16 in [0, 1)), on ties, between steps and out of range."""
    codes = rng.integers(-3, 20, size=(n, *SHAPE))
    x = codes / 16 + rng.choice([0.0, 0.5 / 16, 0.3 / 16], size=(n, *SHAPE))
    return x.astype(np.float32)


@pytest.mark.parametrize("build", [bireal, concat_of_accumulators, moved_pool])
def test_branching_models_freeze_exactly_as_keras_computes_them(build):
    rng = np.random.default_rng(0)
    x = edge_x(rng)
    model = adversarial(build(), rng, x)
    graph = freeze(model)
    for batch in (1, 32):
        assert np.array_equal(model.predict(x, batch_size=batch, verbose=0), emulate(graph, x))
    keras_nodes, emu = trace(model, x[:16]), emulate(graph, x[:16], return_all=True)
    assert set(keras_nodes) == {n.name for n in graph.nodes}
    for name, values in keras_nodes.items():
        assert np.array_equal(values, emu[name]), name
    assert graph.meta["keras_float32_exact"]


def test_the_graph_reads_what_the_model_reads():
    graph = freeze(bireal())
    assert graph["add1"].inputs == ["q0", "q1"]
    assert graph["c2_input"].inputs == ["add1"]
    assert graph["add2"].inputs == ["q2", "add1"]  # through the Dropout
    assert graph["q3"].op == "threshold" and graph["q3"].inputs == ["add2"]  # a merge's float ops + quantizer
    assert graph["add1"].type.lsb_exp == 0 and graph["add2"].type.lsb_exp == graph["q2"].type.lsb_exp
    assert "add1                 add        (5, 5, 3)  int<3> <- q0, q1" in graph.summary()
    graph = freeze(concat_of_accumulators())
    assert graph["cat"].inputs == ["ca", "q0", "cb"] and graph["cat"].shape == (5, 5, 7)
    assert graph.output.name == "sum" and graph.output.inputs == ["s1", "s2"]
    graph = freeze(moved_pool())
    assert [(n.name, n.inputs) for n in graph.nodes[1:4]] == [("c0", ["input"]), ("q0", ["c0"]), ("pool", ["q0"])]
    assert graph["c1"].inputs == ["pool"] and graph["add"].inputs == ["pool", "q1"]


def test_chains_keep_their_stream_and_plan():
    x = keras.Input(SHAPE)
    h = QuantActivation("ste_sign", name="q")(conv(2, "c", iq=IN_Q)(x))
    functional = keras.Model(x, h)
    sequential = keras.Sequential([keras.Input(SHAPE), conv(2, "c", iq=IN_Q), QuantActivation("ste_sign", name="q")])
    for model in (functional, sequential):
        assert [(s.name, s.inputs) for s in plan(model)] == [("input", []), ("c", ["input"]), ("q", ["c"])]


def real_fan_out():
    x = keras.Input(SHAPE)
    h = keras.layers.BatchNormalization(name="bn")(conv(3, "c", iq=IN_Q)(x))
    return keras.Model(x, keras.layers.Add(name="add")([h, QuantActivation("ste_sign", name="q")(h)]))


def real_merge():
    x = keras.Input(SHAPE)
    q0 = stem(x)
    h = keras.layers.BatchNormalization(name="bn")(conv(3, "c")(q0))
    return keras.Model(x, keras.layers.Add(name="add")([h, q0]))


def real_merge_later():
    """The real-valued branch ends before the other branch starts (the merge comes later)."""
    x = keras.Input(SHAPE)
    q0 = stem(x)
    h = keras.layers.BatchNormalization(name="bn")(conv(3, "c")(q0))
    other = QuantActivation("ste_sign", name="q")(conv(3, "c2")(q0))
    return keras.Model(x, keras.layers.Add(name="add")([h, other]))


def two_inputs():
    a, b = keras.Input(SHAPE), keras.Input(SHAPE)
    return keras.Model([a, b], keras.layers.Add()([conv(2, "ca", iq=IN_Q)(a), conv(2, "cb", iq=IN_Q)(b)]))


def input_fan_out():
    x = keras.Input(SHAPE)
    return keras.Model(x, keras.layers.Add()([conv(2, "ca", iq=IN_Q)(x), conv(2, "cb", iq=IN_Q)(x)]))


def shared():
    x = keras.Input(SHAPE)
    q0 = stem(x)
    c = conv(3, "shared")
    return keras.Model(x, keras.layers.Add()([c(q0), c(c(q0))]))


def width_concat():
    x = keras.Input(SHAPE)
    q0 = stem(x)
    return keras.Model(x, keras.layers.Concatenate(axis=2, name="cat")([q0, q0]))


def scaled_merge():
    """A DoReFa QuantActivation (codes times 1/3) read by an Add through a Dropout."""
    x = keras.Input(SHAPE)
    q0 = stem(x)
    h = keras.layers.BatchNormalization(name="bn")(conv(3, "c")(q0))
    d = keras.layers.Dropout(0.5, name="drop")(QuantActivation("dorefa(k_bit=2)", name="qd")(h))
    return keras.Model(x, keras.layers.Add(name="add")([d, conv(3, "c2", iq="ste_sign")(q0)]))


def scaled_fan_out():
    x = keras.Input(SHAPE)
    h = keras.layers.BatchNormalization(name="bn")(conv(3, "c", iq=IN_Q)(x))
    qd = QuantActivation("dorefa(k_bit=2)", name="qd")(h)
    return keras.Model(x, keras.layers.Add(name="add")([conv(2, "ca")(qd), conv(2, "cb")(qd)]))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            scaled_merge,
            "layer 'qd' (QuantActivation): its quantizer dorefa multiplies its codes by a scale, and its outputs "
            "through 'drop' reach 'add' away from its chain, where freeze cannot apply that scale; use a quantizer "
            "without a scale there (e.g. quantized_bits or quantized_relu)",
        ),
        (
            scaled_fan_out,
            "layer 'qd' (QuantActivation): its quantizer dorefa multiplies its codes by a scale, and its outputs "
            "reach 'ca', 'cb' away from its chain, where freeze cannot apply that scale; use a quantizer without a scale "
            "there (e.g. quantized_bits or quantized_relu), or make it the input_quantizer of each layer that reads it",
        ),
        (
            real_fan_out,
            "layer 'bn' (BatchNormalization): its real-valued outputs branch to 'q', 'add' before any quantizer; "
            "quantize before the branch (e.g. a QuantActivation after 'bn'), as a tensor must be on a grid where it branches",
        ),
        (
            real_merge,
            "layer 'bn' (BatchNormalization): its real-valued outputs reach the merge 'add', which must read tensors on a "
            "grid; quantize before the merge (e.g. a QuantActivation after 'bn') or merge the accumulators before the "
            "float ops",
        ),
        (
            real_merge_later,
            "layer 'bn' (BatchNormalization): its real-valued outputs reach the merge 'add', which must read tensors on a "
            "grid; quantize before the merge (e.g. a QuantActivation after 'bn') or merge the accumulators before the "
            "float ops",
        ),
        (
            two_inputs,
            "has 2 inputs and 1 outputs; freeze supports models with one input and one output",
        ),
        (
            input_fan_out,
            "the model's input is read by 'ca', 'cb'; freeze needs one first layer whose input_quantizer quantizes it "
            "(quantize before the branch, e.g. with a QuantActivation)",
        ),
        (
            shared,
            "layer 'shared' (QuantConv2D) is called 3 times; freeze supports layers called once (give each call its own layer)",
        ),
        (
            width_concat,
            "layer 'cat' (Concatenate) joins its inputs along axis 2; only the channel axis (axis=-1) can be frozen",
        ),
    ],
)
def test_what_stays_unsupported_is_refused_in_one_sentence(build, message):
    with pytest.raises(FreezeError) as err:
        freeze(build())
    assert str(err.value).endswith(message), str(err.value)


def test_the_markers_give_the_reading_step_its_sources():
    a, b, m = (keras.layers.Layer(name=n) for n in ("a", "b", "m"))
    items = [
        step("conv2d", "a"),
        Wrote(a, [m]),
        Read(b, [a]),
        quantize(name="b"),
        Wrote(b, [m]),
        Read(m, [a, b]),
        step("add", "m"),
    ]
    out, planning = run(branches.run, items)
    assert [i.name for i in out] == ["a", "b", "m"]
    assert planning.reads == {"b": ["a"], "m": ["a", "b"]}
    wired, _ = run(wire.run, [step("input"), step("conv2d", "a"), step("requant", "b"), step("add", "m")], reads=planning.reads)
    assert [s.inputs for s in wired] == [[], ["input"], ["a"], ["a", "b"]]
