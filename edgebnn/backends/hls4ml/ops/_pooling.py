"""What the pooling ops' hls4ml lowerings share: the ``Pooling2D`` and ``Pooling1D`` layer entries (valid padding,
no pad amounts) and the post-flow check.

A 1-D pool whose window is its whole input and whose result only flattens read (a
``GlobalMaxPooling1D`` / ``GlobalAveragePooling1D`` without ``keepdims``, as freeze writes it) is
hls4ml's ``GlobalPooling1D`` (:func:`global1d`; ``model.hls_chain`` marks it with the attr
``GLOBAL``), whose io_stream form keeps one running maximum or sum per channel instead of a
window of every position; it computes the same numbers (the maximum in the node's type; the sum
in the exact accumulator and a division by ``2**k`` that keeps its fraction bits, as
``Pooling1D`` does). With ``keepdims`` a pool that other layers read stays a ``Pooling1D`` over
the whole length: ``GlobalPooling1D``'s result has no length axis (hls4ml ignores keepdims), and
a concatenate reading it would join arrays of another rank than the graph's; one that is the
design's output is a ``GlobalPooling1D`` (its (1, C) result holds the same C values).

Strides other than the pool size (overlapping or gapped windows): a 2-D pool is edgebnn's
``EdgebnnPool2D`` (``pool_layer``: hls4ml's own io_stream ``Pooling2D`` asserts strides equal to
the pool, although its line-buffer window handles any); a 1-D pool stays hls4ml's ``Pooling1D``,
whose line-buffer implementation (the one configured; the post-flow check sees it) takes any
stride."""

from __future__ import annotations

from ....graph import Node
from .common import expect_precision

POOL_CLASS = "EdgebnnPool2D"


def pool2d_class(node: Node) -> str:
    """hls4ml's class of a 2-D pool node's layer: ``Pooling2D``, or ``EdgebnnPool2D`` for strides other than the pool."""
    return POOL_CLASS if node.attrs["pool"] != node.attrs["strides"] else "Pooling2D"


def pooling_layer(node: Node, src: Node, pool_op: str) -> dict:
    """The layer-list fields (besides name and inputs) of a 2-D pool node pooling with ``pool_op``
    (Max, Average): a ``Pooling2D`` of class MaxPooling2D / AveragePooling2D (its Keras converters'
    names, from which hls4ml takes the pool op), or an ``EdgebnnPool2D`` given the op (strides other
    than the pool); shapes, pool size and strides, valid padding."""
    (ph, pw), (sh, sw) = node.attrs["pool"], node.attrs["strides"]
    own = pool2d_class(node) == POOL_CLASS
    return dict(
        class_name=POOL_CLASS if own else f"{pool_op}Pooling2D",
        **({"pool_op": pool_op} if own else {}),
        data_format="channels_last",
        in_height=int(src.shape[0]),
        in_width=int(src.shape[1]),
        n_filt=int(src.shape[2]),
        n_chan=int(src.shape[2]),
        out_height=int(node.shape[0]),
        out_width=int(node.shape[1]),
        pool_height=int(ph),
        pool_width=int(pw),
        stride_height=int(sh),
        stride_width=int(sw),
        padding="valid",
        pad_top=0,
        pad_bottom=0,
        pad_left=0,
        pad_right=0,
        count_pad=False,
    )


def verify_pooling(layer, backend, accum: str, pool_op: str) -> list[str]:
    """Post-flow check of a pooling layer: its accumulator type is ``accum``, it still pools with
    ``pool_op`` (Max or Average), and with the line buffer (the implementation whose io_stream
    windows take any stride)."""
    expect_precision(backend, layer, "accumulator", layer.get_attr("accum_t").precision, accum)
    if layer.get_attr("pool_op") != pool_op:
        raise RuntimeError(
            f"hls4ml made layer {layer.name!r} pool with {layer.get_attr('pool_op')}; please report this to edgebnn"
        )
    if str(layer.get_attr("implementation", "linebuffer")).lower() != "linebuffer":
        raise RuntimeError(
            f"hls4ml configured layer {layer.name!r} with the {layer.get_attr('implementation')} implementation, not the "
            "line buffer; please report this to edgebnn"
        )
    return []


GLOBAL = "hls4ml_global"  # the attr model.hls_chain gives a 1-D pool exported as GlobalPooling1D


def global1d(node: Node, src: Node, readers) -> bool:
    """A 1-D pool node (maxpool1d, avgpool1d) whose window is its whole input ``src`` and whose
    ``readers`` (the nodes that read it; none for the output) are all flattens: hls4ml's
    ``GlobalPooling1D``, whose result is the flat vector."""
    return (
        node.op in ("maxpool1d", "avgpool1d")
        and int(node.attrs["pool"][0]) == int(src.shape[0])
        and all(r.op == "flatten" for r in readers)
    )


def is_global1d(node: Node) -> bool:
    """The chain node is exported as hls4ml's ``GlobalPooling1D`` (``model.hls_chain`` marked it, :func:`global1d`)."""
    return bool(node.attrs.get(GLOBAL))


def pool1d_class(node: Node) -> str:
    """hls4ml's class of a 1-D pool node's layer: ``GlobalPooling1D`` where marked, else ``Pooling1D``."""
    return "GlobalPooling1D" if is_global1d(node) else "Pooling1D"


def pool1d_layer(node: Node, src: Node, pool_op: str) -> dict:
    """The layer-list fields (besides name and inputs) of a 1-D pool node pooling with ``pool_op``
    (Max, Average): a ``GlobalPooling1D`` (class ``Global{pool_op}Pooling1D``) where marked,
    else a ``Pooling1D`` (:func:`pooling1d_layer`)."""
    if is_global1d(node):
        return dict(
            class_name=f"Global{pool_op}Pooling1D",
            data_format="channels_last",
            n_in=int(src.shape[0]),
            n_filt=int(src.shape[1]),
        )
    return pooling1d_layer(node, src, f"{pool_op}Pooling1D")


def pooling1d_layer(node: Node, src: Node, class_name: str) -> dict:
    """The layer-list fields (besides name and inputs) of a ``Pooling1D`` of class ``class_name``
    (MaxPooling1D or AveragePooling1D): shapes, pool size and stride, valid padding."""
    return dict(
        class_name=class_name,
        data_format="channels_last",
        n_in=int(src.shape[0]),
        n_out=int(node.shape[0]),
        n_filt=int(src.shape[1]),
        pool_width=int(node.attrs["pool"][0]),
        stride_width=int(node.attrs["strides"][0]),
        padding="valid",
        pad_left=0,
        pad_right=0,
        count_pad=False,
    )
