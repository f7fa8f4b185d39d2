import os
import tempfile

import keras
import numpy as np
import pytest

import edgebnn  # noqa: F401
from edgebnn.constraints import WeightClip
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense


def small_bnn():
    return keras.Sequential(
        [
            keras.Input((12,)),
            QuantDense(
                8,
                input_quantizer="quantized_bits(6, 0, keep_negative=False)",
                kernel_quantizer="ste_sign",
                kernel_constraint=WeightClip(0.8),
                use_bias=False,
            ),
            keras.layers.BatchNormalization(),
            QuantDense(4, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(6, 2)"),
        ]
    )


@pytest.mark.train
def test_keras_file_round_trip_predicts_identically(tmp_path):
    model = small_bnn()
    rng = np.random.default_rng(0)
    x = rng.random((64, 12)).astype(np.float32)
    y = rng.integers(0, 4, 64)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=2, verbose=0)
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)  # safe_mode on, no custom_objects
    np.testing.assert_array_equal(model.predict(x, verbose=0), loaded.predict(x, verbose=0))
    assert loaded.layers[0].input_quantizer == model.layers[0].input_quantizer
    assert loaded.layers[0].kernel_constraint.clip_value == 0.8


def test_weight_clip_and_quantized_kernel():
    layer = QuantDense(3, kernel_quantizer="ste_sign", kernel_constraint=WeightClip(0.5))
    layer.build((None, 2))
    layer.kernel.assign(np.array([[0.7, -0.2, 0.0], [-3.0, 0.1, -0.0]], dtype=np.float32))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer.quantized_kernel()), [[1, -1, 1], [-1, 1, 1]])
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(layer.kernel_constraint(layer.kernel)),
        np.array([[0.5, -0.2, 0.0], [-0.5, 0.1, 0.0]], dtype=np.float32),
    )


def test_dense_bias_quantizer():
    layer = QuantDense(2, input_quantizer="ste_sign", kernel_quantizer="ste_sign", bias_quantizer="quantized_bits(4, 1)")
    layer.build((None, 3))
    layer.kernel.assign(np.array([[0.3, -0.1], [-0.2, 0.0], [0.5, 0.5]], dtype=np.float32))
    layer.bias.assign(np.array([0.3, -1.1], dtype=np.float32))  # grid step 0.25: 0.25 (half to even), -1.0
    x = np.array([[0.2, 0.4, -0.7], [-1.0, 0.0, 2.0]], dtype=np.float32)
    want = np.where(x < 0, -1.0, 1.0) @ np.array([[1, -1], [-1, 1], [1, 1]]) + np.array([0.25, -1.0])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(x)), want)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer.quantized_bias()), [0.25, -1.0])
    assert QuantDense.from_config(layer.get_config()).bias_quantizer == layer.bias_quantizer


def test_load_model_needs_no_earlier_import_of_the_layers(tmp_path):
    """edgebnn.load_model registers edgebnn's objects itself: a fresh interpreter that imported
    only the package root loads a saved model (plain keras.saving.load_model could not)."""
    import subprocess
    import sys

    model = small_bnn()
    model.save(tmp_path / "m.keras")
    code = (
        "import edgebnn, keras\n"
        f"m = edgebnn.load_model({str(tmp_path / 'm.keras')!r})\n"
        "print(type(m.layers[0]).__name__, m.layers[0].kernel_quantizer)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == f"QuantDense {model.layers[0].kernel_quantizer}"


@pytest.mark.parametrize("imports", ["import edgebnn\nimport keras", "import keras\nimport edgebnn"])
def test_keras_load_model_after_import_edgebnn(tmp_path, imports):
    """A Keras user's habit: ``import edgebnn`` (before or after Keras) and then Keras's own
    ``keras.models.load_model`` (safe mode, no custom_objects) loads an edgebnn model, as larq's
    layers load after ``import larq``; ``import edgebnn`` alone still imports no Keras."""
    import subprocess
    import sys

    model = small_bnn()
    x = np.random.default_rng(0).normal(size=(20, 12)).astype("float32")
    model.save(tmp_path / "m.keras")
    np.save(tmp_path / "want.npy", model.predict(x, verbose=0))
    np.save(tmp_path / "x.npy", x)
    code = (
        "import sys\nimport numpy as np\n"
        f"{imports}\n"
        "first = sys.argv[1].splitlines()[0]\n"
        "assert first != 'import edgebnn' or 'edgebnn.layers' in sys.modules\n"
        f"m = keras.models.load_model({str(tmp_path / 'm.keras')!r})\n"
        f"got = m.predict(np.load({str(tmp_path / 'x.npy')!r}), verbose=0)\n"
        f"same = np.array_equal(got, np.load({str(tmp_path / 'want.npy')!r}))\n"
        "print(type(m.layers[0]).__name__, same)"
    )
    out = subprocess.run([sys.executable, "-c", code, imports], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "QuantDense True"
    light = subprocess.run(
        [sys.executable, "-c", "import sys, edgebnn\nprint('keras' in sys.modules, 'tensorflow' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert light.stdout.strip() == "False False", light.stderr[-2000:]


def test_larqs_constraint_names_work_in_python():
    """``kernel_constraint="weight_clip"`` (and ``"weight_clip(0.5)"``, on any ``*_constraint``)
    is edgebnn's WeightClip, saved and loaded; Keras's own names stay Keras's; a bad one is one sentence."""
    import keras

    from edgebnn.constraints import WeightClip
    from edgebnn.layers import QuantDense, QuantSeparableConv2D, load_model

    model = keras.Sequential(
        [
            keras.Input((4, 4, 2)),
            QuantSeparableConv2D(3, 3, depthwise_constraint="weight_clip(0.5)", pointwise_constraint="weight_clip"),
            keras.layers.Flatten(),
            QuantDense(2, kernel_constraint="weight_clip", bias_constraint="non_neg"),
        ]
    )
    sep, dense = model.layers[0], model.layers[2]
    assert isinstance(sep.depthwise_constraint, WeightClip) and sep.depthwise_constraint.clip_value == 0.5
    assert isinstance(sep.pointwise_constraint, WeightClip) and dense.kernel_constraint.clip_value == 1.0
    assert isinstance(dense.bias_constraint, keras.constraints.NonNeg)
    path = os.path.join(tempfile.mkdtemp(), "m.keras")
    model.save(path)
    assert load_model(path).layers[0].depthwise_constraint.clip_value == 0.5
    for bad in ("weight_clip(x)", "weight_clip(1, 2)"):
        with pytest.raises(ValueError, match=r"^constraint 'weight_clip\(.*\)': write 'weight_clip' or 'weight_clip\(0.5\)'"):
            QuantDense(2, kernel_constraint=bad)


def _float_bias_layers():
    """A QuantDense and QuantConv2Ds whose outputs are one pixel (a 1x1 kernel, a kernel the
    size of the input), each with a float bias off every grid."""
    rng = np.random.default_rng(3)
    made = [
        ((11,), QuantDense(10, input_quantizer="quantized_bits(4, 2)", kernel_quantizer="ste_sign")),
        ((1, 1, 11), QuantConv2D(10, 1, input_quantizer="quantized_bits(4, 2)", kernel_quantizer="ste_sign")),
        ((3, 3, 5), QuantConv2D(10, 3, input_quantizer="quantized_bits(4, 2)", kernel_quantizer="ste_sign")),
    ]
    for shape, layer in made:
        model = keras.Sequential([keras.Input(shape), layer])
        layer.bias.assign((rng.normal(size=10) * 0.37 + 1 / 3).astype("float32"))
        yield model, layer, (rng.integers(-8, 8, size=(300, *shape)) / 2).astype("float32")  # on the input grid


@pytest.mark.parametrize("jit", [False, True])
def test_float_bias_is_added_to_the_exact_sum_at_every_batch_size(jit, xla_allowed):
    """XLA on the CPU fuses a matrix-vector product with the add after it and starts the sum at
    the bias (predict at batch size 1), which rounded every partial sum: the layer gave another
    float32 result than at batch size 32. Now every path gives the exact sum plus the bias,
    rounded once."""
    for model, layer, x in _float_bias_layers():
        model.compile(jit_compile=jit)
        assert model.jit_compile == jit
        kernel = keras.ops.convert_to_numpy(layer.quantized_kernel()).astype(np.float64)
        exact = np.tensordot(x.astype(np.float64), kernel, axes=len(kernel.shape) - 1)  # exact: halves
        want = (exact.astype(np.float32) + keras.ops.convert_to_numpy(layer.bias)).reshape(len(x), *model.output_shape[1:])
        assert np.array_equal(np.asarray(model(x)), want)
        for batch in (1, 2, 7, 32):
            assert np.array_equal(model.predict(x, batch_size=batch, verbose=0), want), (type(layer).__name__, batch)


@pytest.mark.parametrize("jit", [False, True])
def test_add_bias_has_the_gradient_of_a_plain_add(jit):
    """The float64 detour changes the value only where XLA would have folded the bias; the
    gradients are the plain add's, bit for bit (the batch sum of the bias gradient included)."""
    import tensorflow as tf

    from edgebnn.layers import add_bias

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(64, 33)).astype("float32"), rng.normal(size=(64, 17)).astype("float32")
    w, b = rng.normal(size=(33, 17)).astype("float32"), rng.normal(size=17).astype("float32")

    def run(add):
        kernel, bias = tf.Variable(w), tf.Variable(b)

        @tf.function(jit_compile=jit)
        def step():
            with tf.GradientTape() as tape:
                out = add(tf.matmul(x, kernel), bias)
                loss = tf.reduce_sum(out * y)
            return [out, *tape.gradient(loss, [kernel, bias])]

        return [t.numpy() for t in step()]

    for got, want in zip(run(add_bias), run(keras.ops.add), strict=True):
        assert np.array_equal(got, want)
