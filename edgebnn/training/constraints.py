"""Weight constraints used while training binarized layers."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="edgebnn")
class WeightClip(keras.constraints.Constraint):
    """Clip latent weights to ``[-clip_value, clip_value]`` (larq's ``weight_clip``) so that
    the straight-through estimator of a sign keeps passing gradients to them."""

    def __init__(self, clip_value: float = 1.0):
        self.clip_value = float(clip_value)

    def __call__(self, w):
        return ops.clip(w, -self.clip_value, self.clip_value)

    def get_config(self):
        return {"clip_value": self.clip_value}


def get(identifier):
    """A constraint from an instance, ``"weight_clip"`` or ``"weight_clip(0.5)"``."""
    if identifier is None or isinstance(identifier, keras.constraints.Constraint):
        return identifier
    from .quantizers import _parse_call

    usage = f"constraint {identifier!r}: write 'weight_clip' or 'weight_clip(0.5)' (one number)"
    try:
        name, args, kwargs = _parse_call(identifier)
    except ValueError:
        if str(identifier).strip().startswith("weight_clip"):
            raise ValueError(usage) from None
        name = None
    if name != "weight_clip":
        raise ValueError(f"unknown constraint {identifier!r}; edgebnn has 'weight_clip' and 'weight_clip(clip_value)'")
    try:
        return WeightClip(*args, **kwargs)
    except (TypeError, ValueError):
        raise ValueError(usage) from None
