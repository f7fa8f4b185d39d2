"""What the pooling ops' hls4ml lowerings share: the ``Pooling2D`` and ``Pooling1D`` layer entries (valid padding,
no pad amounts), io_stream's refusal of strides other than the pool size, and the post-flow check."""

from __future__ import annotations

from ....errors import EdgebnnError
from ....graph import Node
from .common import expect_precision


def check_stream_windows(node: Node, io_type: str, where: str) -> None:
    """Refuse overlapping or gapped windows (strides other than the pool size) in io_stream."""
    if io_type == "io_stream" and node.attrs["pool"] != node.attrs["strides"]:
        raise EdgebnnError(
            f"{where} pools {node.attrs['pool']} windows with strides {node.attrs['strides']}, but hls4ml's "
            "io_stream pooling needs strides equal to the pool size; use io_parallel or strides=pool_size"
        )


def pooling_layer(node: Node, src: Node, class_name: str) -> dict:
    """The layer-list fields (besides name and inputs) of a ``Pooling2D`` of class ``class_name``
    (its Keras converters' name, from which hls4ml takes the pool op): shapes, pool size and
    strides, valid padding."""
    (ph, pw), (sh, sw) = node.attrs["pool"], node.attrs["strides"]
    return dict(
        class_name=class_name,
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
    """Post-flow check of a ``Pooling2D``: its accumulator type is ``accum`` and it still pools
    with ``pool_op`` (Max or Average)."""
    expect_precision(backend, layer, "accumulator", layer.get_attr("accum_t").precision, accum)
    if layer.get_attr("pool_op") != pool_op:
        raise RuntimeError(
            f"hls4ml made layer {layer.name!r} pool with {layer.get_attr('pool_op')}; please report this to edgebnn"
        )
    return []


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
