"""BatchNormalization parameters that put freeze's thresholds on the hardest cases."""

import numpy as np


def adversarial_bn(units, rng, acc_values):
    """(gamma, beta, mean, var) as float32: means exactly on accumulator values (outputs exactly 0
    there), gamma of both signs and zero, betas that cancel mean * inv in float32, random ones."""
    mean = rng.choice(acc_values, units)
    var = rng.choice([1.0, 0.3, 2.0**-6, 7.0], units)
    gamma = rng.choice([1.0, -1.0, 0.0, -0.0, 0.37, -2.5, 1e-3], units)
    inv = (1.0 / np.sqrt(var.astype(np.float32) + np.float32(1e-3))).astype(np.float32) * gamma.astype(np.float32)
    beta = rng.choice([0.0, -0.0, 1e-7, -1e-7], units)
    shift = rng.choice(acc_values, units).astype(np.float32)
    beta = np.where(rng.random(units) < 0.4, (shift * inv).astype(np.float32), beta)  # ties after rounding
    beta = np.where(rng.random(units) < 0.2, rng.normal(size=units), beta)
    return [np.asarray(v, dtype=np.float32) for v in (gamma, beta, mean, var)]


def batch_norms(model):
    """The BatchNormalization layers of ``model``, in order."""
    import keras

    return [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]


def randomize_bn(model, rng, beta_scale=1.0, mean_scale=1.0):
    """Give every BatchNormalization of ``model`` random statistics, as after training."""
    for layer in batch_norms(model):
        c = layer.gamma.shape[0]
        layer.set_weights(
            [rng.normal(size=c), rng.normal(size=c) * beta_scale, rng.normal(size=c) * mean_scale, rng.random(c) + 0.5]
        )


def set_adversarial_bn(model, rng, acc_values):
    """Give every BatchNormalization of ``model`` :func:`adversarial_bn` statistics;
    ``acc_values(layer)`` are the accumulator values that reach that layer."""
    for layer in batch_norms(model):
        layer.set_weights(adversarial_bn(layer.gamma.shape[0], rng, acc_values(layer)))


def adversarial_on_inputs(model, x, seed, plain=None):
    """Every BatchNormalization of ``model`` adversarial (:func:`adversarial_bn`, channel by
    channel) on the values the inputs ``x`` reach there; the one named ``plain`` gets the inputs'
    own statistics instead, so the outputs vary."""
    import keras

    rng = np.random.default_rng(seed)
    for layer in batch_norms(model):
        probe = keras.Model(model.inputs, layer.input)
        seen = np.asarray(probe.predict(x, verbose=0), np.float64).reshape(-1, layer.gamma.shape[0])
        if layer.name == plain:
            weights = [np.ones(seen.shape[1]), np.zeros(seen.shape[1]), seen.mean(0), seen.var(0) + 0.1]
        else:
            weights = np.concatenate([adversarial_bn(1, rng, np.unique(seen[:, c])) for c in range(seen.shape[1])], axis=1)
        layer.set_weights([np.asarray(w, np.float32) for w in weights])
