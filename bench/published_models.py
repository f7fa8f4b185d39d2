"""Published example models of larq, QKeras and hls4ml, rebuilt with edgebnn's layers as their
authors wrote them, trained through the public API on the embedded digits, then frozen, exported
in io_parallel and io_stream, C-simulated and verified (Keras = emulator = C-simulation, exact).

Each model keeps its authors' structure, layer order, quantizers, constraints, initializers,
regularizers, BatchNormalization arguments, padding and pooling, and their input scaling mapped
onto the digits (larq's ``x / 127.5 - 1`` is ``x / 8 - 1`` on the digits' 0..16; QKeras's and
hls4ml's ``x / 255`` is ``x / 16``); only the image size (the 8x8 digits upsampled to 28x28 or
32x32) and the channel counts are smaller, so that a model trains and C-simulates in a minute.
What a user would do is what this does: ``freeze(model)``; when freeze asks for the input's type
(a float first layer), ``freeze(model, input_type=propose_input_type(x_train))``. Every model
must end ``ok`` (0 mismatches in every leg and io type) or ``refused`` with one sentence.

    python bench/published_models.py                   # all, into runs/published
    python bench/published_models.py larq_intro_mnist --epochs 1 --no-csim
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import traceback
import warnings

import numpy as np

IO_TYPES = ("io_parallel", "io_stream")
MODELS: dict[str, dict] = {}


def published(source: str, data: str, size: int = 8):
    """Register a model builder: ``source`` says where it was published, ``data`` the input
    scaling (``"unit"`` x/16 in [0, 1], ``"pm1"`` x/8 - 1 in [-1, 1], ``"standard"`` per-feature
    standardized and put on the proposed type's grid), ``size`` the image side (8: flat 64)."""

    def register(build):
        MODELS[build.__name__] = dict(build=build, source=source, data=data, size=size)
        return build

    return register


# --------------------------------------------------------------------------------------- larq
@published("larq docs, 'Introduction to BNNs with Larq' (MNIST)", "pm1", 28)
def larq_intro_mnist(shape):
    import keras

    from edgebnn.layers import QuantConv2D, QuantDense

    kwargs = dict(input_quantizer="ste_sign", kernel_quantizer="ste_sign", kernel_constraint="weight_clip")
    bn = keras.layers.BatchNormalization
    return keras.Sequential(
        [
            keras.Input(shape),
            # the first layer binarizes its weights, not its (float) input
            QuantConv2D(8, (3, 3), kernel_quantizer="ste_sign", kernel_constraint="weight_clip", use_bias=False),
            keras.layers.MaxPooling2D((2, 2)),
            bn(scale=False),
            QuantConv2D(16, (3, 3), use_bias=False, **kwargs),
            keras.layers.MaxPooling2D((2, 2)),
            bn(scale=False),
            QuantConv2D(16, (3, 3), use_bias=False, **kwargs),
            bn(scale=False),
            keras.layers.Flatten(),
            QuantDense(32, use_bias=False, **kwargs),
            bn(scale=False),
            QuantDense(10, use_bias=False, **kwargs),
            bn(scale=False),
            keras.layers.Activation("softmax"),
        ]
    )


@published("larq examples, BinaryNet on CIFAR-10", "pm1", 32)
def larq_binarynet_cifar10(shape):
    import keras

    from edgebnn.layers import QuantConv2D, QuantDense

    kwargs = dict(input_quantizer="ste_sign", kernel_quantizer="ste_sign", kernel_constraint="weight_clip", use_bias=False)

    def bn():
        return keras.layers.BatchNormalization(momentum=0.999, scale=False)

    def pool():
        return keras.layers.MaxPool2D(pool_size=(2, 2), strides=(2, 2))

    return keras.Sequential(
        [
            keras.Input(shape),
            QuantConv2D(8, 3, kernel_quantizer="ste_sign", kernel_constraint="weight_clip", use_bias=False),
            bn(),
            QuantConv2D(8, 3, padding="same", **kwargs),
            pool(),
            bn(),
            QuantConv2D(16, 3, padding="same", **kwargs),
            bn(),
            QuantConv2D(16, 3, padding="same", **kwargs),
            pool(),
            bn(),
            QuantConv2D(16, 3, padding="same", **kwargs),
            bn(),
            QuantConv2D(16, 3, padding="same", **kwargs),
            pool(),
            bn(),
            keras.layers.Flatten(),
            QuantDense(64, **kwargs),
            bn(),
            QuantDense(64, **kwargs),
            bn(),
            QuantDense(10, **kwargs),
            bn(),
            keras.layers.Activation("softmax"),
        ]
    )


@published("larq zoo, BinaryAlexNet", "pm1", 32)
def larq_zoo_binary_alexnet(shape):
    import keras

    from edgebnn.layers import QuantConv2D, QuantDense

    def conv_block(x, filters, kernel_size, strides=1, pool=False, first_layer=False):
        x = QuantConv2D(
            filters,
            kernel_size,
            strides=strides,
            padding="same",
            input_quantizer=None if first_layer else "ste_sign",
            kernel_quantizer="ste_sign",
            kernel_constraint="weight_clip",
            use_bias=False,
        )(x)
        if pool:
            x = keras.layers.MaxPool2D(pool_size=3, strides=2)(x)
        return keras.layers.BatchNormalization(scale=False, momentum=0.9)(x)

    def dense_block(x, units):
        x = QuantDense(
            units, input_quantizer="ste_sign", kernel_quantizer="ste_sign", kernel_constraint="weight_clip", use_bias=False
        )(x)
        return keras.layers.BatchNormalization(scale=False, momentum=0.9)(x)

    inputs = keras.Input(shape)
    x = conv_block(inputs, 8, 5, strides=2, pool=True, first_layer=True)
    x = conv_block(x, 16, 3, pool=True)
    x = conv_block(x, 16, 3)
    x = conv_block(x, 16, 3)
    x = conv_block(x, 16, 3, pool=True)
    x = keras.layers.Flatten()(x)
    x = dense_block(x, 64)
    x = dense_block(x, 64)
    x = dense_block(x, 10)
    return keras.Model(inputs, keras.layers.Activation("softmax")(x))


@published("larq zoo, XNOR-Net (float stem and head, xnor weight scales)", "pm1", 32)
def larq_zoo_xnornet(shape):
    import keras

    from edgebnn.layers import QuantConv2D, QuantDense

    quant = dict(
        kernel_quantizer="xnor_sign",
        input_quantizer="ste_sign",
        kernel_constraint="weight_clip",
        use_bias=False,
        kernel_regularizer=keras.regularizers.l2(5e-7),
    )

    def bn():
        return keras.layers.BatchNormalization(momentum=0.9, scale=False, epsilon=1e-4)

    inputs = keras.Input(shape)
    x = keras.layers.Conv2D(8, (5, 5), strides=(2, 2), padding="same", use_bias=False)(inputs)
    x = bn()(x)
    x = keras.layers.Activation("relu")(x)
    x = keras.layers.MaxPool2D(pool_size=(3, 3), strides=(2, 2))(x)
    x = bn()(x)
    x = QuantConv2D(16, (3, 3), padding="same", **quant)(x)
    x = keras.layers.MaxPool2D(pool_size=(3, 3), strides=(2, 2))(x)
    x = bn()(x)
    x = QuantConv2D(16, (3, 3), padding="same", **quant)(x)
    x = bn()(x)
    x = keras.layers.Flatten()(x)
    x = QuantDense(64, **quant)(x)
    x = bn()(x)
    x = keras.layers.Dense(10, use_bias=False)(x)
    return keras.Model(inputs, keras.layers.Activation("softmax")(x))


@published("larq zoo, Bi-Real-Net (float stem, float 1x1 shortcuts, float head)", "pm1", 32)
def larq_zoo_birealnet(shape):
    import keras

    from edgebnn.layers import QuantConv2D

    def residual_block(x, filters):
        downsample = x.shape[-1] != filters
        if downsample:
            residual = keras.layers.AvgPool2D(pool_size=2, strides=2)(x)
            residual = keras.layers.Conv2D(filters, kernel_size=1, use_bias=False, kernel_initializer="glorot_normal")(residual)
            residual = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(residual)
        else:
            residual = x
        x = QuantConv2D(
            filters,
            kernel_size=3,
            strides=2 if downsample else 1,
            padding="same",
            input_quantizer="approx_sign",
            kernel_quantizer="magnitude_aware_sign",
            kernel_initializer="glorot_normal",
            kernel_constraint="weight_clip",
            use_bias=False,
        )(x)
        x = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(x)
        return keras.layers.add([x, residual])

    inputs = keras.Input(shape)
    x = keras.layers.Conv2D(8, kernel_size=7, strides=2, padding="same", kernel_initializer="he_normal", use_bias=False)(inputs)
    x = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(x)
    x = keras.layers.MaxPool2D(3, strides=2, padding="same")(x)
    for filters in (8, 8, 16, 16):
        x = residual_block(x, filters)
    x = keras.layers.GlobalAvgPool2D()(x)
    x = keras.layers.Dense(10, kernel_initializer="glorot_normal")(x)
    return keras.Model(inputs, keras.layers.Activation("softmax")(x))


@published("larq zoo, DoReFa-Net (float stem and head, 2-bit activations, 1-bit weights)", "pm1", 32)
def larq_zoo_dorefanet(shape):
    import keras

    from edgebnn.layers import QuantConv2D, QuantDense
    from edgebnn.quantizers import DoReFa

    quant = dict(
        input_quantizer=DoReFa(k_bit=2, mode="activations"),
        kernel_quantizer=DoReFa(k_bit=1, mode="weights"),
        use_bias=False,
    )

    def conv_block(x, filters, kernel_size, strides=1, pool=False, pool_padding="same"):
        x = QuantConv2D(filters, kernel_size=kernel_size, strides=strides, padding="same", **quant)(x)
        x = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-4)(x)
        if pool:
            x = keras.layers.MaxPool2D(pool_size=3, strides=2, padding=pool_padding)(x)
        return x

    inputs = keras.Input(shape)
    x = keras.layers.Conv2D(8, kernel_size=5, strides=2, use_bias=False)(inputs)
    x = conv_block(x, 16, 3, pool=True)
    x = conv_block(x, 16, 3, pool=True, pool_padding="valid")
    x = conv_block(x, 16, 3)
    x = keras.layers.Flatten()(x)
    x = QuantDense(64, **quant)(x)
    x = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-4)(x)
    x = keras.layers.Dense(10)(x)
    return keras.Model(inputs, keras.layers.Activation("softmax")(x))


# ------------------------------------------------------------------------------------- QKeras
@published("QKeras examples/example_qdense.py", "unit")
def qkeras_example_qdense(shape):
    import keras

    from edgebnn.layers import QActivation, QDense

    x = x_in = keras.Input(shape, name="input")
    x = QDense(100, kernel_quantizer="quantized_bits(4,0,1)", bias_quantizer="quantized_bits(4,0,1)", name="dense0")(x)
    x = QActivation("quantized_relu(2)", name="act0")(x)
    x = QDense(10, kernel_quantizer="quantized_bits(4,0,1)", bias_quantizer="quantized_bits(4,0,1)", name="dense2")(x)
    x = keras.layers.Activation("softmax", name="softmax")(x)
    return keras.Model(inputs=[x_in], outputs=[x])


@published("QKeras examples/example_mnist.py (power-of-two activations and weights)", "unit", 28)
def qkeras_example_mnist(shape):
    import keras

    from edgebnn.layers import QActivation, QConv2D, QDense

    x = x_in = keras.Input(shape, name="input")
    x = QActivation("quantized_relu_po2(4,4)", name="acti")(x)
    x = QConv2D(
        8, (2, 2), strides=(2, 2), kernel_quantizer="quantized_po2(4,1)", bias_quantizer="quantized_po2(4,4)", name="conv2d_0_m"
    )(x)
    x = QActivation("quantized_relu_po2(4,4)", name="act0_m")(x)
    x = QConv2D(
        16, (3, 3), strides=(2, 2), kernel_quantizer="quantized_po2(4,1)", bias_quantizer="quantized_po2(4,4)", name="conv2d_1_m"
    )(x)
    x = QActivation("quantized_relu(6,2)", name="act1_m")(x)
    x = QConv2D(
        16,
        (2, 2),
        strides=(2, 2),
        kernel_quantizer="quantized_bits(6,2,1)",
        bias_quantizer="quantized_bits(4,0,1)",
        name="conv2d_2_m",
    )(x)
    x = QActivation("quantized_relu(6,2)", name="act2_m")(x)
    x = keras.layers.Flatten()(x)
    x = QDense(10, kernel_quantizer="quantized_bits(4,0,1)", bias_quantizer="quantized_bits(4,0,1)", name="dense")(x)
    x = keras.layers.Activation("softmax", name="softmax")(x)
    return keras.Model(inputs=[x_in], outputs=[x])


@published("QKeras examples/example_mnist_b2t.py (binary and ternary)", "unit", 28)
def qkeras_example_mnist_b2t(shape):
    import keras

    from edgebnn.layers import QActivation, QConv2D, QDense

    x = x_in = keras.Input(shape, name="input")
    x = QConv2D(8, (3, 3), strides=(2, 2), kernel_quantizer="binary", bias_quantizer="quantized_bits(4,0,1)", name="conv2d_0_m")(
        x
    )
    x = keras.layers.BatchNormalization(name="bn0")(x)
    x = QActivation("ternary", name="act0_m")(x)
    x = QConv2D(
        16, (3, 3), strides=(2, 2), kernel_quantizer="ternary", bias_quantizer="quantized_bits(4,0,1)", name="conv2d_1_m"
    )(x)
    x = keras.layers.BatchNormalization(name="bn1")(x)
    x = QActivation("binary", name="act1_m")(x)
    x = keras.layers.Flatten()(x)
    x = QDense(10, kernel_quantizer="ternary", bias_quantizer="quantized_bits(4,0,1)", name="dense")(x)
    x = keras.layers.Activation("softmax", name="softmax")(x)
    return keras.Model(inputs=[x_in], outputs=[x])


@published("QKeras folded batchnorm (QConv2DBatchnorm, QDenseBatchnorm)", "unit", 28)
def qkeras_folded_batchnorm(shape):
    import keras

    from edgebnn.layers import QActivation, QConv2DBatchnorm, QDenseBatchnorm

    x = x_in = keras.Input(shape, name="input")
    x = QConv2DBatchnorm(
        filters=8,
        kernel_size=(3, 3),
        strides=(2, 2),
        kernel_quantizer="quantized_bits(4,0,1)",
        bias_quantizer="quantized_bits(8,3,1)",
        name="foldconv2d",
    )(x)
    x = QActivation("quantized_relu(4,0)", name="act0")(x)
    x = keras.layers.Flatten()(x)
    x = QDenseBatchnorm(10, kernel_quantizer="quantized_bits(4,0,1)", bias_quantizer="quantized_bits(8,3,1)", name="folddense")(x)
    x = keras.layers.Activation("softmax", name="softmax")(x)
    return keras.Model(inputs=[x_in], outputs=[x])


# ------------------------------------------------------------------------------------- hls4ml
@published("hls4ml tutorial part 4, quantization (QKeras jet-tagging MLP)", "standard")
def hls4ml_tutorial_part4(shape):
    import keras

    from edgebnn.layers import QActivation, QDense

    q6 = dict(
        kernel_quantizer="quantized_bits(6,0,alpha=1)",
        bias_quantizer="quantized_bits(6,0,alpha=1)",
        kernel_initializer="lecun_uniform",
        kernel_regularizer=keras.regularizers.l1(0.0001),
    )
    return keras.Sequential(
        [
            keras.Input(shape),
            QDense(64, name="fc1", **q6),
            QActivation(activation="quantized_relu(6)", name="relu1"),
            QDense(32, name="fc2", **q6),
            QActivation(activation="quantized_relu(6)", name="relu2"),
            QDense(32, name="fc3", **q6),
            QActivation(activation="quantized_relu(6)", name="relu3"),
            QDense(10, name="output", **q6),
            keras.layers.Activation(activation="softmax", name="softmax"),
        ]
    )


@published("hls4ml tutorial part 6, CNNs (QConv2DBatchnorm, float output Dense)", "unit", 32)
def hls4ml_tutorial_part6(shape):
    import keras

    from edgebnn.layers import QActivation, QConv2DBatchnorm, QDense

    q6 = "quantized_bits(6,0,alpha=1)"
    x = x_in = keras.Input(shape)
    for i, f in enumerate([8, 8, 12]):
        x = QConv2DBatchnorm(
            int(f),
            kernel_size=(3, 3),
            strides=(1, 1),
            kernel_quantizer=q6,
            bias_quantizer=q6,
            kernel_initializer="lecun_uniform",
            kernel_regularizer=keras.regularizers.l1(0.0001),
            use_bias=True,
            name=f"fused_convbn_{i}",
        )(x)
        x = QActivation("quantized_relu(6)", name=f"conv_act_{i}")(x)
        x = keras.layers.MaxPooling2D(pool_size=(2, 2), name=f"pool_{i}")(x)
    x = keras.layers.Flatten()(x)
    for i, n in enumerate([42, 64]):
        x = QDense(
            n,
            kernel_quantizer=q6,
            kernel_initializer="lecun_uniform",
            kernel_regularizer=keras.regularizers.l1(0.0001),
            name=f"dense_{i}",
            use_bias=False,
        )(x)
        x = keras.layers.BatchNormalization(name=f"bn_dense_{i}")(x)
        x = QActivation("quantized_relu(6)", name=f"dense_act_{i}")(x)
    x = keras.layers.Dense(10, name="output_dense")(x)
    x_out = keras.layers.Activation("softmax", name="output_softmax")(x)
    return keras.Model(inputs=[x_in], outputs=[x_out])


@published("hls4ml test/pytest/test_binary_cnn.py (QKeras binary CNN)", "unit", 28)
def hls4ml_test_binary_cnn(shape):
    import keras

    from edgebnn.layers import QActivation, QBatchNormalization, QConv2D, QDense

    l2 = keras.regularizers.l2(0.0001)
    x_in = keras.Input(shape)
    x = QConv2D(
        4,
        (3, 3),
        kernel_quantizer="binary",
        name="conv2d_1",
        kernel_regularizer=l2,
        use_bias=True,
        bias_quantizer="quantized_bits(5,2)",
    )(x_in)
    x = QBatchNormalization()(x)
    x = QActivation("binary", name="act1")(x)
    x = QConv2D(8, (3, 3), kernel_quantizer="binary", name="conv2d_2", kernel_regularizer=l2, use_bias=False)(x)
    x = QBatchNormalization()(x)
    x = QActivation("binary", name="act2")(x)
    x = keras.layers.MaxPooling2D(pool_size=(2, 2))(x)
    x = QConv2D(8, (3, 3), kernel_quantizer="binary", name="conv2d_3", kernel_regularizer=l2, use_bias=False)(x)
    x = QBatchNormalization()(x)
    x = QActivation("binary", name="act3")(x)
    x = keras.layers.MaxPooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Flatten()(x)
    x = QDense(10, kernel_quantizer="binary", name="q_dense_6", use_bias=False)(x)
    x = QBatchNormalization()(x)
    x = QActivation("binary_tanh", name="act4")(x)
    x = QDense(10, kernel_quantizer="binary", activation="linear", name="q_dense_7", use_bias=False)(x)
    return keras.Model(inputs=x_in, outputs=x)


# ------------------------------------------------------------------------------------ running
def digits(kind: str, size: int):
    """(x_train, y_train, x_test, y_test) of the embedded digits scaled as ``kind`` says, as
    ``size`` x ``size`` x 1 images (nearest-neighbour upsampling, zero border) or flat 64."""
    from edgebnn import propose_input_type
    from edgebnn.data import load_dataset

    x_tr, y_tr, x_te, y_te = load_dataset("digits", shape=[8, 8, 1])  # pixels / 16, in [0, 1]

    def shaped(x):
        if size == 8:
            return x.reshape(len(x), -1)
        k = size // 8
        up = np.kron(x[..., 0], np.ones((k, k), dtype=x.dtype))
        pad = (size - 8 * k) // 2
        return np.pad(up, ((0, 0), (pad, size - 8 * k - pad), (pad, size - 8 * k - pad)))[..., None]

    x_tr, x_te = shaped(x_tr), shaped(x_te)
    if kind == "pm1":
        x_tr, x_te = 2 * x_tr - 1, 2 * x_te - 1
    elif kind == "standard":
        mean, std = x_tr.mean(axis=0), x_tr.std(axis=0) + 1e-6
        x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
        t = propose_input_type(x_tr, max_width=10)
        x_tr, x_te = t.quantize(x_tr), t.quantize(x_te)
    return x_tr.astype(np.float32), y_tr, x_te.astype(np.float32), y_te


def _one_sentence(err: BaseException) -> str:
    return " ".join(str(err).split())


def _freeze_calibrated(model, x_tr, result: dict):
    """``freeze(model, data=x_tr)``, as a user would: freeze chooses from the data what the model
    leaves in float (the input's type, float layers' quantizers, an output quantizer) and says
    so in one FreezeWarning line each, kept in the result's notes."""
    import edgebnn

    graph = edgebnn.freeze(model, data=x_tr)
    cal = graph.meta.get("calibration")
    if cal:
        result["calibrated"] = dict(cal["bits"])  # float layers' widths, and tensors' ({"output": bits})
        result["accuracy_change"] = cal["accuracy_twin"] - cal["accuracy_float"]
    return graph


def run_one(name: str, out: pathlib.Path, epochs: int, csim: bool) -> dict:
    import keras

    import edgebnn
    from edgebnn.errors import EdgebnnError

    spec = MODELS[name]
    x_tr, y_tr, x_te, y_te = digits(spec["data"], spec["size"])
    keras.utils.set_random_seed(0)
    result: dict = dict(model=name, source=spec["source"], outcome=None, notes=[])
    t0 = time.perf_counter()
    try:
        model = spec["build"](x_tr.shape[1:])
        softmax = model.layers[-1].get_config().get("activation") == "softmax"
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=not softmax),
            metrics=["accuracy"],
        )
        model.fit(x_tr, y_tr, epochs=epochs, batch_size=64, verbose=0)
        result["keras_accuracy"] = float(np.mean(np.argmax(model.predict(x_te, verbose=0), -1) == y_te))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph = _freeze_calibrated(model, x_tr, result)
        result["notes"] += [_one_sentence(w.message) for w in caught if "FreezeWarning" in type(w.message).__name__]
        result["deployed_accuracy"] = float(np.mean(np.argmax(edgebnn.emulate(graph, x_te), -1) == y_te))
        result["legs"] = {}
        for io_type in IO_TYPES if csim else ():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                project = edgebnn.export(graph, out / name / io_type, board="pynq-z2", io_type=io_type, force=True)
            project.compile()
            report = edgebnn.verify(model, graph, x_te, project=project)
            result["legs"][io_type] = [report.keras_vs_emulator, report.emulator_vs_csim]
        if not csim:
            report = edgebnn.verify(model, graph, x_te)
            result["legs"]["emulator"] = [report.keras_vs_emulator, None]
        bad = any(n for leg in result["legs"].values() for n in leg if n)
        result["outcome"] = "MISMATCH" if bad else "ok"
    except EdgebnnError as err:
        result["outcome"] = "refused"
        result["reason"] = _one_sentence(err)
    except Exception as err:  # noqa: BLE001 - a crash is a defect: record it with its traceback
        result["outcome"] = "CRASH"
        result["reason"] = f"{type(err).__name__}: {_one_sentence(err)}"
        result["traceback"] = traceback.format_exc()
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def table(results: list[dict]) -> str:
    rows = [
        "| model | published in | outcome | Keras | deployed | calibrated (bits), accuracy change "
        "| io_parallel K/E, E/C | io_stream K/E, E/C |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        legs = r.get("legs", {})

        def leg(io, legs=legs):
            return " / ".join("-" if n is None else str(n) for n in legs[io]) if io in legs else "-"

        acc = [f"{100 * r[k]:.1f}%" if k in r else "-" for k in ("keras_accuracy", "deployed_accuracy")]
        cal = r.get("calibrated")
        if cal:
            widths = "; ".join(
                f"{name}{' outputs' if bits.keys() == {'output'} else ''} ({'/'.join(str(b) for b in bits.values())})"
                for name, bits in cal.items()
            )
            cal = f"{widths}; {r['accuracy_change']:+.2f} points on the training data"
        rows.append(
            f"| {r['model']} | {r['source']} | {r['outcome']} | {acc[0]} | {acc[1]} | {cal or '-'} | "
            f"{leg('io_parallel')} | {leg('io_stream')} |"
        )
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"models to run (default all: {', '.join(MODELS)})")
    parser.add_argument("--out", default="runs/published", help="folder for the HLS projects and results.json")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs per model (default 3)")
    parser.add_argument("--no-csim", action="store_true", help="verify Keras = emulator only (no export, no C-simulation)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        print(f"published_models: no model {', '.join(unknown)}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.names or list(MODELS):
        r = run_one(name, out, args.epochs, not args.no_csim)
        results.append(r)
        print(f"{name}: {r['outcome']} ({r['seconds']} s){': ' + r['reason'] if 'reason' in r else ''}", flush=True)
        for note in r["notes"]:
            print(f"    note: {note}")
        (out / "results.json").write_text(json.dumps(results, indent=1))
    print()
    print(table(results))
    return 1 if any(r["outcome"] in ("MISMATCH", "CRASH") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
