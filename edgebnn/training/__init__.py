"""The training side: what a Keras user trains with.

- ``quantizers``: larq's and QKeras's quantizers by their names, each with its hardware form;
- ``layers``: QuantDense, QuantConv*, QuantActivation and QKeras's Q* names, ``load_model``;
- ``constraints`` and ``optimizers`` (WeightClip; Bop and CaseOptimizer);
- ``loop``: the training loop behind ``edgebnn train`` (checkpoints, resume bit for bit);
- ``distribute`` (several replicas or workers) and ``data`` (the data sets a run reads).

Each keeps its old path too (``edgebnn.layers``, ``edgebnn.train``, ...; see ``edgebnn``).
Importing this package imports none of them, and no Keras.
"""
