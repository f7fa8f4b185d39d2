"""Backends: how a deployment graph becomes a project for one hardware flow.

A backend is a subpackage named after its flow (``hls4ml``, ``rtl``) that reads only the graph. Per graph
op it holds two files named after the op: ``ops/<op>.py``, the lowering (what the op becomes in
the flow, what the flow cannot reproduce exactly and is refused, and the check of what the flow
made of it), and ``cost/<op>.py``, the op's resource and latency model for the estimator. Each
``__init__`` of ``ops`` and ``cost`` holds the table from op name to module; dispatch is one
lookup there. Nothing in a backend imports TensorFlow or Keras.
"""
