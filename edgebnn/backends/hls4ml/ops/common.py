"""What several ops' hls4ml lowerings share: precision strings, weight and bias values, the
exact-accumulator refusal, and the post-flow checks of types, weights and reuse factors.

Imports no hls4ml: the post-flow checks read the hls4ml layer and backend they are given.
"""

from __future__ import annotations

import numpy as np

from ....errors import EdgebnnError
from ....fixed import FixedType
from ....graph import Node


def precision(t: FixedType) -> str:
    """hls4ml precision string with every mode spelled out (always a fixed type: hls4ml
    special-cases ``ap_uint<1>`` data and ``ap_int<2>`` weights)."""
    u = "" if t.signed else "u"
    return f"{u}fixed<{t.width},{t.integer},{t.rounding},{t.overflow},{t.sat_bits}>"


def weight_precision(t: FixedType, codes: np.ndarray) -> str:
    """The weights' precision string: ``int<2>`` for ternary codes of an int<2> type, else :func:`precision`."""
    # int<2> weights make hls4ml pick its 'weight_ternary' product (0, -x or x), which is cheap
    # and exact for codes -1, 0, +1 only (it maps -2 to +x); any other weight uses a plain product.
    if t.signed and t.width == 2 and t.integer == 2 and np.isin(codes, (-1, 0, 1)).all():
        return "int<2>"
    return precision(t)


def weighted_precisions(node: Node) -> dict[str, str]:
    """Precisions of a layer with weights (dense, conv2d): the weights' and bias's exact types,
    and the node's (exact) type as both accumulator and result, so nothing rounds."""
    p = {
        "weight": weight_precision(node.fixed_attr("weight_type"), node.params["weight"]),
        "accum": precision(node.type),
        "result": precision(node.type),
    }
    if "bias" in node.params:
        p["bias"] = precision(node.fixed_attr("bias_type"))
    return p


def weight_values(node: Node) -> np.ndarray:
    """The node's weights as values (code * lsb) in its weight type."""
    return node.fixed_attr("weight_type").from_codes(node.params["weight"])


def bias_values(node: Node) -> np.ndarray | None:
    """The node's bias as values in its bias type, or None without a bias."""
    if "bias" not in node.params:
        return None
    return node.fixed_attr("bias_type").from_codes(node.params["bias"])


def check_accumulator(node: Node, src: Node, where: str) -> None:
    """Refuse a node (dense, conv2d) whose type is not an exact accumulator of its products and bias."""
    acc = node.type
    wt = node.fixed_attr("weight_type")
    grid = src.type.lsb_exp + wt.lsb_exp
    if "bias" in node.params:
        grid = min(grid, node.fixed_attr("bias_type").lsb_exp)
    if acc.overflow != "WRAP" or acc.sat_bits or acc.lsb_exp > grid:
        raise EdgebnnError(
            f"{where}: its type {acc} is not an exact accumulator (needs WRAP overflow and a step of at most "
            f"2**{grid}); rebuild the node with edgebnn.graph.{node.op}_node"
        )


def expect_precision(backend, layer, what: str, precision_, text: str) -> None:
    """Raise unless hls4ml's ``precision_`` of ``layer``'s ``what`` type is the precision string ``text``."""
    want_p = backend.convert_precision_string(text)
    # transform_types wraps precisions in backend subclasses, hence isinstance
    ok = isinstance(precision_, type(want_p)) and precision_ == want_p
    if not ok:
        raise RuntimeError(
            f"hls4ml changed the {what} type of layer {layer.name!r} to {precision_} "
            f"(expected {text}); please report this to edgebnn"
        )


def same_reuse_factor(node: Node, backend, strategy: str, reuse_factor: int) -> int:
    """The reuse factor a layer is configured with: the export's, unchanged."""
    return reuse_factor


def own_config_names(name: str, last: bool) -> list[str]:
    """The names the node's configuration is given under: its layer name only."""
    return [name]


def own_hls_layer(hls_class):
    """A ``hls_layers`` function for an op that stays one hls4ml layer of class ``hls_class(node)``."""

    def hls_layers(node: Node, src: Node | None, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
        """The node's one hls4ml layer after the flows: (its name, its class, the node)."""
        return [(name, hls_class(node), node)]

    return hls_layers


def verify_weighted(layer, node: Node, prec: dict[str, str], backend, reuse_factor: int) -> list[str]:
    """Post-flow check of a layer with weights (dense, conv2d): accumulator, weight and bias
    types and values, and a valid reuse factor; returns the message for a changed reuse factor."""
    expect_precision(backend, layer, "accumulator", layer.get_attr("accum_t").precision, prec["accum"])
    wvar = layer.get_weights("weight")
    expect_precision(backend, layer, "weight", wvar.type.precision, prec["weight"])
    w = weight_values(node)
    data = wvar.data
    if layer.get_attr("_weights_transposed", False):  # Resource strategy: (n_out, ...) first
        data = np.moveaxis(data, 0, -1)
    if not np.array_equal(data, w):
        raise RuntimeError(f"hls4ml changed the weights of layer {layer.name!r}; please report this to edgebnn")
    bvar = layer.get_weights("bias")
    if "bias" in node.params:
        expect_precision(backend, layer, "bias", bvar.type.precision, prec["bias"])
        b = bias_values(node)
    else:
        b = np.zeros(node.shape[-1])
    if not np.array_equal(bvar.data, b):
        raise RuntimeError(f"hls4ml changed the bias of layer {layer.name!r}; please report this to edgebnn")
    rf = layer.get_attr("reuse_factor")
    valid = backend.get_valid_reuse_factors(*backend.get_layer_mult_size(layer))
    if layer.get_attr("strategy", "").lower() == "resource" and rf not in valid:
        # its C++ would fail an assertion, which aborts the process running the C-simulation
        raise RuntimeError(
            f"hls4ml left layer {layer.name!r} with the invalid reuse factor {rf}; "
            f"use one of {', '.join(map(str, valid))}, and please report this to edgebnn"
        )
    if rf != reuse_factor:
        return [
            f"hls4ml changed the reuse factor of layer {node.name!r} from {reuse_factor} to {rf}; "
            f"valid reuse factors there are {', '.join(map(str, valid))}"
        ]
    return []


def check_packing(layer) -> None:
    """Post-flow check of an elementwise layer in io_stream: one packet out per packet in."""
    # hls4ml's activations (and our threshold) need both the same
    packing = [(t.n_elem, t.n_pack, t.unpack) for t in (layer.get_input_variable().type, layer.get_output_variable().type)]
    if packing[0] != packing[1]:
        raise RuntimeError(
            f"hls4ml streams layer {layer.name!r} in packets of {packing[0][0]} values and "
            f"writes packets of {packing[1][0]}; please report this to edgebnn"
        )
