"""Per-node folding of the MVAU units: PE output channels computed in parallel, SIMD inputs per
cycle, so a unit takes (inputs / SIMD) x (outputs / PE) cycles per input beat.

A folding is a mapping from node names (dense, conv2d, conv1d, depthwise_conv2d) to
``(pe, simd)``, ``[pe, simd]`` or ``{"pe": pe, "simd": simd}``; nodes left out get the default.
PE must divide the node's output channels and SIMD its inputs per output (kh*kw*C for a
convolution), each at least 1.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import EdgebnnError
from .ops import LOWERINGS

# the default folding keeps each unit under this many products computed per cycle
DEFAULT_PRODUCTS = 4096


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def default_fold(outputs: int, inputs: int, budget: int = DEFAULT_PRODUCTS) -> tuple[int, int]:
    """All of a unit in parallel when its products fit ``budget``; else the largest SIMD (a
    divisor of ``inputs``) and then PE (of ``outputs``) whose product does."""
    simd = max(d for d in divisors(inputs) if d <= budget)
    pe = max(d for d in divisors(outputs) if d * simd <= budget)
    return pe, simd


def _pair(value, where: str) -> tuple[int, int]:
    if isinstance(value, Mapping):
        if set(value) != {"pe", "simd"}:
            raise EdgebnnError(f"{where} must give exactly 'pe' and 'simd', got {sorted(value)}")
        value = (value["pe"], value["simd"])
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise EdgebnnError(f"{where} must be (pe, simd), got {value!r}")
    pe, simd = value
    for label, v in (("pe", pe), ("simd", simd)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise EdgebnnError(f"{where} {label} must be a whole number of at least 1, got {v!r}")
    return int(pe), int(simd)


def resolve(graph, folding: Mapping | None) -> dict[str, tuple[int, int]]:
    """Every folded node's (PE, SIMD): ``folding``'s entries, checked, and the default for the rest.
    A name that is no folded node, or a PE / SIMD that does not divide, is refused in one sentence."""
    folding = dict(folding or {})
    if not isinstance(folding, dict):
        raise EdgebnnError(f"folding must map node names to (pe, simd), got {type(folding).__name__}")
    names = {n.name: n for n in graph.nodes}
    out: dict[str, tuple[int, int]] = {}
    for name in folding:
        node = names.get(name)
        if node is None or not LOWERINGS[node.op].FOLDED:
            folded = [n.name for n in graph.nodes if n.op in LOWERINGS and LOWERINGS[n.op].FOLDED]
            raise EdgebnnError(
                f"folding names {name!r}, which is no folded node of the graph; fold one of {', '.join(folded) or 'none'}"
            )
    for node in graph.nodes:
        module = LOWERINGS.get(node.op)
        if module is None or not module.FOLDED:
            continue
        outputs, inputs = module.fold_sizes(node, graph.sources(node))
        if node.name not in folding:
            out[node.name] = default_fold(outputs, inputs)
            continue
        where = f"the folding of node {node.name!r} ({node.op})"
        pe, simd = _pair(folding[node.name], where)
        if outputs % pe:
            raise EdgebnnError(f"{where}: pe {pe} does not divide its {outputs} output channels; use one of {divisors(outputs)}")
        if inputs % simd:
            raise EdgebnnError(
                f"{where}: simd {simd} does not divide its {inputs} inputs per output; use one of {divisors(inputs)}"
            )
        out[node.name] = (pe, simd)
    return out
