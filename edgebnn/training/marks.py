"""What an edgebnn layer marks on its weights: the quantizer it applies to each and its role
(kernel or bias). The optimizers (Bop trains binary kernels) and ``summary`` read the marks
without importing the layers."""


def quantizer_of(variable):
    """The quantizer an edgebnn layer applies to ``variable`` (None when it stays float)."""
    return getattr(variable, "_edgebnn_quantizer", None)


def role_of(variable):
    """``"kernel"`` or ``"bias"`` for weights of edgebnn layers, else None."""
    return getattr(variable, "_edgebnn_role", None)
