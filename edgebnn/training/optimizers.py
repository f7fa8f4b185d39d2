"""Optimizers for binarized networks: larq's Bop, and a wrapper that routes variables.

Bop trains binary weights directly (no latent real weights); the other variables (BatchNorm,
float biases, multi-bit kernels) still need an ordinary optimizer. ``CaseOptimizer`` sends each
variable to the first optimizer whose predicate claims it, the rest to ``default``::

    optimizer = CaseOptimizer((is_binary_kernel, Bop()), default=keras.optimizers.Adam(0.01))
    model.compile(optimizer=optimizer, ...)

Predicates that should survive a ``.keras`` save must be registered Keras serializables
(``is_binary_kernel`` is).
"""

from __future__ import annotations

import keras
from keras import ops

from .marks import quantizer_of, role_of


def _hardware_kind(quantizer):
    if quantizer is None:
        return None
    try:
        return quantizer.hardware().kind
    except NotImplementedError:
        return None


@keras.saving.register_keras_serializable(package="edgebnn")
def is_binary_kernel(variable) -> bool:
    """True for the kernels (dense, conv, depthwise, pointwise) of edgebnn layers whose
    quantizer's ``hardware().kind`` is ``"binary"``: the weights Bop should train."""
    return role_of(variable) == "kernel" and _hardware_kind(quantizer_of(variable)) == "binary"


@keras.saving.register_keras_serializable(package="edgebnn")
class Bop(keras.optimizers.Optimizer):
    r"""Binary optimizer (Bop, Helwegen et al. 2019, as in larq) for ±1 weights.

    For each weight :math:`w` with gradient :math:`g` it keeps an exponential moving average
    :math:`m \leftarrow (1 - \gamma)\, m + \gamma\, g` and flips the weight when the average
    has pushed against its sign for long enough:

    .. math:: w \leftarrow -\mathrm{sign}(w) \text{ if } w \cdot m > \tau \text{ else } \mathrm{sign}(w)

    with ``sign(0) = +1`` (so the first step also binarizes a real-valued initial kernel).
    At :math:`w \cdot m = \tau` exactly the weight keeps its sign.

    ``gamma`` is the adaptivity rate (larq default 1e-4) and plays the role of a learning rate:
    it may be a ``keras.optimizers.schedules`` schedule and is what Keras' learning-rate
    callbacks change. ``threshold`` :math:`\tau` defaults to larq's 1e-8. Use it only on binary
    variables (see :class:`CaseOptimizer`).
    """

    def __init__(self, threshold: float = 1e-8, gamma=1e-4, name: str = "bop", **kwargs):
        kwargs.pop("learning_rate", None)  # gamma is the learning rate
        super().__init__(learning_rate=gamma, name=name, **kwargs)
        self.threshold = float(threshold)

    @property
    def gamma(self):
        return self.learning_rate

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._grad_averages = [self.add_variable_from_reference(v, "grad_average") for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        gamma = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        m = self._grad_averages[self._get_variable_index(variable)]
        self.assign(m, ops.add(ops.multiply(ops.subtract(1.0, gamma), m), ops.multiply(gamma, gradient)))
        w = ops.convert_to_tensor(variable)
        s = ops.where(ops.less(w, 0.0), -ops.ones_like(w), ops.ones_like(w))
        flip = ops.greater(ops.multiply(w, m), ops.cast(self.threshold, variable.dtype))
        self.assign(variable, ops.where(flip, -s, s))

    def get_config(self):
        config = super().get_config()
        config["gamma"] = config.pop("learning_rate")
        config["threshold"] = self.threshold
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("gamma"), dict):
            config["gamma"] = keras.saving.deserialize_keras_object(config["gamma"], custom_objects=custom_objects)
        return cls(**config)


@keras.saving.register_keras_serializable(package="edgebnn")
class CaseOptimizer(keras.optimizers.Optimizer):
    """Applies different optimizers to different variables (larq's ``CaseOptimizer``).

    ``pairs`` are ``(predicate, optimizer)``; a variable goes to the first optimizer whose
    ``predicate(variable)`` is true (two claiming it is an error), otherwise to ``default``.
    The assignment is fixed when the optimizer is built. ``learning_rate`` reads and sets the
    default optimizer's, so learning-rate callbacks act on the float variables.
    """

    def __init__(self, *pairs, default=None, name: str = "case_optimizer"):
        super().__init__(learning_rate=0.0, name=name)
        checked = []
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"CaseOptimizer argument {i} must be a (predicate, optimizer) pair")
            predicate, optimizer = pair
            if not callable(predicate):
                raise TypeError(f"CaseOptimizer pair {i}: the predicate {predicate!r} is not callable")
            if not isinstance(optimizer, keras.optimizers.Optimizer):
                raise TypeError(f"CaseOptimizer pair {i}: {optimizer!r} is not a keras optimizer")
            checked.append((predicate, optimizer))
        if default is not None and not isinstance(default, keras.optimizers.Optimizer):
            raise TypeError(f"CaseOptimizer default {default!r} is not a keras optimizer")
        self.pairs = checked
        self.default = default

    @property
    def optimizers(self):
        return [opt for _, opt in self.pairs] + ([self.default] if self.default is not None else [])

    def _choose(self, variable) -> int:
        claimed = [i for i, (predicate, _) in enumerate(self.pairs) if predicate(variable)]
        if len(claimed) > 1:
            raise ValueError(f"variable {variable.path!r} is claimed by optimizers {claimed}; make the predicates disjoint")
        if claimed:
            return claimed[0]
        if self.default is None:
            raise ValueError(f"no optimizer claims variable {variable.path!r}; give CaseOptimizer a default optimizer")
        return len(self.pairs)

    def build(self, var_list):
        if self.built:
            return
        groups = [[] for _ in self.optimizers]
        self._route = {}
        for var in var_list:
            i = self._choose(var)
            self._route[self._var_key(var)] = i
            groups[i].append(var)
        for opt, group in zip(self.optimizers, groups):
            if group:
                opt.build(group)
        super().build(var_list)

    @property
    def variables(self):
        return self._variables[:] + [v for opt in self.optimizers for v in opt.variables]

    @property
    def learning_rate(self):
        if self.default is None:
            raise AttributeError("this CaseOptimizer has no default optimizer, hence no single learning rate")
        return self.default.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if self.default is None:
            raise AttributeError("this CaseOptimizer has no default optimizer; set the learning rate on each optimizer")
        self.default.learning_rate = value

    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if not self.built:
            self.build(trainable_variables)
        groups = [([], []) for _ in self.optimizers]
        for grad, var in zip(grads, trainable_variables):
            g, v = groups[self._route[self._var_key(var)]]
            g.append(grad)
            v.append(var)
        for opt, (g, v) in zip(self.optimizers, groups):
            if v:
                opt.apply(g, v)
        self._iterations.assign_add(1)

    def finalize_variable_values(self, var_list):
        groups = [[] for _ in self.optimizers]
        for var in var_list:
            groups[self._route[self._var_key(var)]].append(var)
        for opt, group in zip(self.optimizers, groups):
            if group:
                opt.finalize_variable_values(group)

    def get_config(self):
        ser = keras.saving.serialize_keras_object
        return {
            "name": self.name,
            "pairs": [[ser(p), ser(o)] for p, o in self.pairs],
            "default": None if self.default is None else ser(self.default),
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        de = lambda obj: keras.saving.deserialize_keras_object(obj, custom_objects=custom_objects)
        pairs = [(de(p), de(o)) for p, o in config["pairs"]]
        default = None if config.get("default") is None else de(config["default"])
        return cls(*pairs, default=default, name=config.get("name", "case_optimizer"))


def bop_optimizer(default, threshold: float = 1e-8, gamma=1e-4):
    """``CaseOptimizer((is_binary_kernel, Bop(threshold, gamma)), default=default)``."""
    return CaseOptimizer((is_binary_kernel, Bop(threshold=threshold, gamma=gamma)), default=default)
