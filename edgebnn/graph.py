"""The deployment graph: the single source of truth for every exported number.

``freeze`` builds it from a trained Keras model; ``emulate``, ``export`` and ``estimate`` read
only this. It holds integer codes and fixed-point types, never floats that need rounding, and
saves to one ``.npz`` file that loads with NumPy alone (no TensorFlow, no pickle).

Nodes (each produces one tensor; ``shape`` excludes the batch axis, channels last):

``input``
    The raw float input, quantized onto ``type`` (its rounding and overflow modes apply).
``dense``
    ``y = x @ weight + bias`` with ``params['weight']`` int codes (n_in, n_out) on
    ``attrs['weight_type']`` and optional ``params['bias']`` codes on ``attrs['bias_type']``.
    ``type`` is the accumulator type, wide enough that nothing rounds or overflows.
``conv2d``
    Keras ``Conv2D`` arithmetic (cross-correlation, channels last) on an (H, W, C) input:
    ``params['weight']`` int codes (kh, kw, C, F) on ``attrs['weight_type']``, optional bias as
    for dense, ``attrs['strides']`` [sh, sw], ``attrs['padding']`` [[top, bottom], [left,
    right]] explicit amounts, ``attrs['pad_code']`` the padding value as a code of the input's
    type (0: zero padding; larq's ``pad_values`` otherwise). ``type`` is the exact accumulator.
``maxpool2d``
    Keras ``MaxPooling2D`` with "valid" padding on an (H, W, C) input: ``attrs['pool']``
    [ph, pw] and ``attrs['strides']`` [sh, sw]; the type and per-channel bounds are the input's
    (a maximum of values on one grid is on that grid).
``flatten``
    (H, W, C) -> (H*W*C,) in row-major order, as Keras ``Flatten``; bounds per feature.
``threshold``
    Requantization of an accumulator into a few levels, per channel ``c``:
    ``y = levels[c, n]`` where ``n`` counts the ``thresholds[c, k] <= x``.  Thresholds are
    codes on the input's type (ascending per channel), levels codes on ``type``.
``cast``
    A fixed-point conversion ``y = type(relu(x))`` (``attrs['relu']``) or ``y = type(x)``,
    with ``type``'s rounding and overflow modes: requantization onto a fixed grid where the
    levels are too many for thresholds.

Every node also carries ``params['lo']`` / ``params['hi']``: per-channel bounds of its output
values from interval analysis over the actual integer weights.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from typing import Any

import numpy as np

from .errors import EdgebnnError
from .fixed import FixedType

FORMAT = "edgebnn-graph"
FORMAT_VERSION = 2  # 2: a SHA-256 checksum and each array's dtype and shape
OPS = ("input", "dense", "conv2d", "maxpool2d", "flatten", "threshold", "cast")


class GraphError(EdgebnnError):
    """A deployment graph that is malformed or cannot be loaded."""


@dataclasses.dataclass
class Node:
    name: str
    op: str
    inputs: list[str]
    shape: tuple[int, ...]
    type: FixedType
    params: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)
    source: str = ""  # the Keras layer(s) this node was frozen from

    @property
    def lo(self) -> np.ndarray:
        return self.params["lo"]

    @property
    def hi(self) -> np.ndarray:
        return self.params["hi"]

    def fixed_attr(self, key: str) -> FixedType | None:
        value = self.attrs.get(key)
        return None if value is None else FixedType.from_string(value)


@dataclasses.dataclass
class Graph:
    name: str
    nodes: list[Node]
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.validate()

    # ---------------------------------------------------------------- access
    def __getitem__(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def input(self) -> Node:
        return self.nodes[0]

    @property
    def output(self) -> Node:
        return self.nodes[-1]

    def compute_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.op != "input"]

    # ------------------------------------------------------------ validation
    def validate(self) -> None:
        if not self.nodes or self.nodes[0].op != "input":
            raise GraphError(f"graph {self.name!r} must start with an input node")
        seen: dict[str, Node] = {}
        for node in self.nodes:
            where = f"graph node {node.name!r} ({node.op})"
            if node.op not in OPS:
                raise GraphError(f"{where}: unknown op; this edgebnn knows {', '.join(OPS)}")
            if node.name in seen:
                raise GraphError(f"{where}: duplicate node name")
            for inp in node.inputs:
                if inp not in seen:
                    raise GraphError(f"{where}: input {inp!r} is not an earlier node")
            expected_inputs = 0 if node.op == "input" else 1
            if len(node.inputs) != expected_inputs:
                raise GraphError(f"{where}: takes {expected_inputs} input(s), has {len(node.inputs)}")
            for key in ("lo", "hi"):
                if key not in node.params:
                    raise GraphError(f"{where}: missing bounds params[{key!r}]")
            if not (node.type.contains(node.lo) and node.type.contains(node.hi)):
                raise GraphError(f"{where}: bounds do not fit its type {node.type}")
            if node.op == "dense":
                self._check_dense(node, seen[node.inputs[0]], where)
            elif node.op == "conv2d":
                self._check_conv2d(node, seen[node.inputs[0]], where)
            elif node.op == "maxpool2d":
                src = seen[node.inputs[0]]
                (ph, pw), (sh, sw) = node.attrs["pool"], node.attrs["strides"]
                want = ((src.shape[0] - ph) // sh + 1, (src.shape[1] - pw) // sw + 1, src.shape[2]) \
                    if len(src.shape) == 3 else None
                if node.shape != want or node.type != src.type:
                    raise GraphError(f"{where}: pools an (H, W, C) input into {want} and keeps its type {src.type}")
            elif node.op == "flatten":
                src = seen[node.inputs[0]]
                if node.shape != (int(np.prod(src.shape)),) or node.lo.shape != node.shape:
                    raise GraphError(f"{where}: flattens {src.shape} into ({int(np.prod(src.shape))},) with "
                                     "per-feature bounds")
            elif node.op == "threshold":
                self._check_threshold(node, seen[node.inputs[0]], where)
            elif node.op == "cast" and (node.shape != seen[node.inputs[0]].shape
                                        or not isinstance(node.attrs.get("relu"), bool)):
                raise GraphError(f"{where}: a cast keeps its input's shape and needs attrs['relu'] true or false")
            seen[node.name] = node

    @staticmethod
    def _check_dense(node: Node, src: Node, where: str) -> None:
        w = node.params.get("weight")
        if w is None or w.ndim != 2 or w.shape[0] != src.shape[-1] or w.shape[1] != node.shape[-1]:
            raise GraphError(f"{where}: weight must have shape ({src.shape[-1]}, {node.shape[-1]})")
        wt = node.fixed_attr("weight_type")
        if wt is None or not (w.min(initial=0) >= wt.min_code and w.max(initial=0) <= wt.max_code):
            raise GraphError(f"{where}: weight codes do not fit weight_type {wt}")
        if "bias" in node.params:
            bt = node.fixed_attr("bias_type")
            b = node.params["bias"]
            if bt is None or b.shape != (node.shape[-1],):
                raise GraphError(f"{where}: bias needs shape ({node.shape[-1]},) and a bias_type")

    @staticmethod
    def _check_conv2d(node: Node, src: Node, where: str) -> None:
        w = node.params.get("weight")
        if len(src.shape) != 3 or w is None or w.ndim != 4 or w.shape[2] != src.shape[-1] \
                or w.shape[3] != node.shape[-1]:
            raise GraphError(f"{where}: needs an (H, W, C) input and weight (kh, kw, C, F) with C={src.shape[-1]}")
        (pt, pb), (pl, pr) = node.attrs["padding"]
        sh, sw = node.attrs["strides"]
        ho = (src.shape[0] + pt + pb - w.shape[0]) // sh + 1
        wo = (src.shape[1] + pl + pr - w.shape[1]) // sw + 1
        if node.shape != (ho, wo, w.shape[3]):
            raise GraphError(f"{where}: output shape must be {(ho, wo, w.shape[3])} for these padding and strides")
        pad = int(node.attrs["pad_code"])
        if not src.type.min_code <= pad <= src.type.max_code:
            raise GraphError(f"{where}: pad_code {pad} is not a code of the input type {src.type}")
        Graph._check_dense(
            dataclasses.replace(node, shape=(node.shape[-1],), params={**node.params, "weight": w.reshape(-1, w.shape[3])}),
            dataclasses.replace(src, shape=(w.shape[0] * w.shape[1] * w.shape[2],)), where)

    @staticmethod
    def _check_threshold(node: Node, src: Node, where: str) -> None:
        t, lv = node.params.get("thresholds"), node.params.get("levels")
        c = node.shape[-1]
        if t is None or lv is None or t.ndim != 2 or t.shape[0] != c or lv.shape != (c, t.shape[1] + 1):
            raise GraphError(f"{where}: thresholds must be (C, K) and levels (C, K+1) with C={c}")
        if src.shape != node.shape:
            raise GraphError(f"{where}: output shape must equal its input's shape {src.shape}")
        if lv.min() < node.type.min_code or lv.max() > node.type.max_code:
            raise GraphError(f"{where}: levels do not fit its type {node.type}")
        if np.any(np.diff(t, axis=1) < 0):
            raise GraphError(f"{where}: thresholds must ascend per channel")
        if t.size and (t.min() < src.type.min_code or t.max() > src.type.max_code):
            raise GraphError(f"{where}: thresholds do not fit the input type {src.type}")

    # -------------------------------------------------------------- save/load
    def save(self, path: str | os.PathLike) -> None:
        """Write the graph to one ``.npz`` file, atomically."""
        arrays: dict[str, np.ndarray] = {}
        header_nodes = []
        for i, node in enumerate(self.nodes):
            keys = []
            for key, value in node.params.items():
                arrays[f"n{i}/{key}"] = np.asarray(value)
                keys.append(key)
            header_nodes.append(
                {
                    "name": node.name,
                    "op": node.op,
                    "inputs": list(node.inputs),
                    "shape": list(node.shape),
                    "type": str(node.type),
                    "attrs": node.attrs,
                    "source": node.source,
                    # what load must find: each array's dtype and shape
                    "params": {k: {"dtype": arrays[f"n{i}/{k}"].dtype.str, "shape": list(arrays[f"n{i}/{k}"].shape)}
                               for k in keys},
                }
            )
        header = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "name": self.name,
            "meta": self.meta,
            "nodes": header_nodes,
        }
        header_bytes = json.dumps(header).encode()
        arrays["__checksum__"] = np.frombuffer(_graph_checksum(header_bytes, arrays).encode(), dtype=np.uint8)
        arrays["__header__"] = np.frombuffer(header_bytes, dtype=np.uint8)
        path = os.fspath(path)
        tmp = f"{path}.tmp-{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **arrays)
            os.replace(tmp, path)
        except OSError as err:
            raise GraphError(f"cannot write graph file {path!r}: {err.strerror or err}; "
                             "choose a path you can write to (and check the free space)") from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Graph:
        """Read a graph written by :meth:`save` (NumPy only, no pickle).

        Anything else (a missing, empty, truncated, edited or foreign file) raises one
        :class:`GraphError` line: the file's checksum, the dtype and shape of every array and
        the graph's structure are checked before it is used.
        """
        where = f"graph file {os.fspath(path)!r}"
        again = "freeze the model again (edgebnn run writes graph.npz)"
        arrays = _read_graph_arrays(path, where, again)
        header_bytes = arrays.pop("__header__").tobytes()
        checksum = arrays.pop("__checksum__", None)
        try:
            header = json.loads(header_bytes.decode("utf-8"))
        except ValueError:
            raise GraphError(f"{where} is corrupt (its header is not readable); {again}") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise GraphError(f"{where} is not an edgebnn graph; pass the graph.npz that edgebnn wrote")
        if header.get("version") != FORMAT_VERSION:
            raise GraphError(f"{where} has format version {header.get('version')!r}, this edgebnn reads version "
                             f"{FORMAT_VERSION} (with a checksum); {again}")
        if checksum is None or checksum.dtype != np.uint8 \
                or checksum.tobytes() != _graph_checksum(header_bytes, arrays).encode():
            raise GraphError(f"{where} is corrupt or was edited (checksum mismatch); {again}")
        try:
            nodes = []
            for i, h in enumerate(header["nodes"]):
                params = {}
                for key, spec in h["params"].items():
                    value = arrays.pop(f"n{i}/{key}")
                    if value.dtype.kind not in "iufb" or value.dtype.str != spec["dtype"] \
                            or list(value.shape) != list(spec["shape"]):
                        raise GraphError(f"node {h['name']!r}: array {key!r} is {value.dtype.str} {value.shape}, "
                                         f"the header promises {spec['dtype']} {tuple(spec['shape'])}")
                    params[key] = value
                nodes.append(
                    Node(
                        name=h["name"],
                        op=h["op"],
                        inputs=list(h["inputs"]),
                        shape=tuple(int(d) for d in h["shape"]),
                        type=FixedType.from_string(h["type"]),
                        params=params,
                        attrs=dict(h["attrs"]),
                        source=h.get("source", ""),
                    )
                )
            if arrays:
                raise GraphError(f"holds arrays its header does not list ({', '.join(sorted(arrays))})")
            return cls(header["name"], nodes, header.get("meta", {}))
        except GraphError as err:
            raise GraphError(f"{where}: {err}; {again}") from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            detail = " ".join(f"{type(err).__name__}: {err}".split())
            raise GraphError(f"{where} is malformed ({detail}); {again}") from None

    def summary(self) -> str:
        lines = [f"graph {self.name}: {len(self.nodes)} nodes"]
        for n in self.nodes:
            extra = ""
            if n.op == "dense":
                extra = f" weight {n.attrs['weight_type']}"
            elif n.op == "threshold":
                extra = f" {n.params['thresholds'].shape[1]} threshold(s)/channel"
            lines.append(f"  {n.name:<20} {n.op:<10} {n.shape!s:<10} {n.type}{extra}")
        return "\n".join(lines)


# --------------------------------------------------------------- save/load helpers
def _graph_checksum(header: bytes, arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 (hex) of a saved graph's contents: its header and every array's name, dtype,
    shape and bytes. ``arrays`` must not hold ``__header__`` or ``__checksum__``."""
    import hashlib

    h = hashlib.sha256(b"edgebnn-graph\0")
    h.update(len(header).to_bytes(8, "little") + header)
    for key in sorted(k for k in arrays if k not in ("__header__", "__checksum__")):
        value = np.ascontiguousarray(arrays[key])
        h.update(f"\0{key}\0{value.dtype.str}\0{value.shape}\0".encode())
        h.update(value.tobytes())
    return h.hexdigest()


def _read_graph_arrays(path, where: str, again: str) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file at ``path``, never unpickling and never passing on
    NumPy's own messages (which advise loading with pickle)."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except IsADirectoryError:
        raise GraphError(f"{where} is a folder; pass a graph.npz file (the command line also takes a run "
                         "folder)") from None
    except OSError as err:
        raise GraphError(f"cannot read {where}: {err.strerror or err}; check the path") from None
    if not blob:
        raise GraphError(f"{where} is empty; {again}")
    if not blob.startswith(b"PK"):
        raise GraphError(f"{where} is not an edgebnn graph (not a NumPy .npz archive); pass the graph.npz "
                         "that edgebnn wrote")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception:  # noqa: BLE001 - zipfile, zlib and format errors of a damaged archive
        raise GraphError(f"{where} is truncated or corrupt (it cannot be unpacked); {again}") from None
    if "__header__" not in arrays:
        raise GraphError(f"{where} is not an edgebnn graph (it has no header); pass the graph.npz that "
                         "edgebnn wrote")
    return arrays


# ---------------------------------------------------------------------- builders
# freeze and the tests build nodes through these, so bounds and accumulator types are
# derived in one place.


def input_node(name: str, shape, type_: FixedType, source: str = "") -> Node:
    c = shape[-1]
    return Node(name, "input", [], tuple(shape), type_,
                {"lo": np.full(c, type_.min), "hi": np.full(c, type_.max)}, {}, source)


def dense_node(name: str, src: Node, weight, weight_type: FixedType, bias=None,
               bias_type: FixedType | None = None, source: str = "") -> Node:
    """A dense node whose accumulator type is the narrowest exact one for these weights."""
    from .fixed import dot_interval

    weight = np.asarray(weight, dtype=np.int64)
    w_vals = weight_type.from_codes(weight)
    lo, hi = dot_interval(src.lo, src.hi, w_vals)  # over the last axis, like keras Dense
    lsb_exp = src.type.lsb_exp + weight_type.lsb_exp
    params = {"weight": weight}
    attrs: dict[str, Any] = {"weight_type": str(weight_type)}
    if bias is not None:
        bias = np.asarray(bias, dtype=np.int64)
        b_vals = bias_type.from_codes(bias)
        lo, hi = lo + b_vals, hi + b_vals
        lsb_exp = min(lsb_exp, bias_type.lsb_exp)
        params["bias"] = bias
        attrs["bias_type"] = str(bias_type)
    acc_type = FixedType.for_range(float(lo.min()), float(hi.max()), lsb_exp)
    params.update(lo=lo, hi=hi)
    return Node(name, "dense", [src.name], src.shape[:-1] + (weight.shape[1],), acc_type, params, attrs, source)


def conv2d_node(name: str, src: Node, weight, weight_type: FixedType, strides=(1, 1),
                padding=((0, 0), (0, 0)), pad_code: int = 0, bias=None, bias_type: FixedType | None = None,
                source: str = "") -> Node:
    """A conv2d node (see the module docstring) with the narrowest exact accumulator type."""
    weight = np.asarray(weight, dtype=np.int64)
    kh, kw, c, f = weight.shape
    (pt, pb), (pl, pr) = padding
    sh, sw = strides
    lo, hi = src.lo, src.hi
    if pt or pb or pl or pr:  # the padding value enters some windows
        pad_value = float(src.type.from_codes(pad_code))
        lo, hi = np.minimum(lo, pad_value), np.maximum(hi, pad_value)
    window = input_node("window", (kh * kw * c,), src.type)
    window.params.update(lo=np.tile(lo, kh * kw), hi=np.tile(hi, kh * kw))
    flat = dense_node(name, window, weight.reshape(-1, f), weight_type, bias, bias_type, source)
    ho = (src.shape[0] + pt + pb - kh) // sh + 1
    wo = (src.shape[1] + pl + pr - kw) // sw + 1
    flat.params["weight"] = weight
    flat.attrs.update(strides=[int(sh), int(sw)], padding=[[int(pt), int(pb)], [int(pl), int(pr)]],
                      pad_code=int(pad_code))
    return Node(name, "conv2d", [src.name], (ho, wo, f), flat.type, flat.params, flat.attrs, source)


def maxpool2d_node(name: str, src: Node, pool=(2, 2), strides=None, source: str = "") -> Node:
    ph, pw = pool
    sh, sw = strides or pool
    shape = ((src.shape[0] - ph) // sh + 1, (src.shape[1] - pw) // sw + 1, src.shape[2])
    attrs = {"pool": [int(ph), int(pw)], "strides": [int(sh), int(sw)]}
    return Node(name, "maxpool2d", [src.name], shape, src.type, {"lo": src.lo.copy(), "hi": src.hi.copy()}, attrs, source)


def flatten_node(name: str, src: Node, source: str = "") -> Node:
    positions = int(np.prod(src.shape[:-1]))
    params = {"lo": np.tile(src.lo, positions), "hi": np.tile(src.hi, positions)}
    return Node(name, "flatten", [src.name], (int(np.prod(src.shape)),), src.type, params, {}, source)


def threshold_node(name: str, src: Node, thresholds, levels, out_type: FixedType, source: str = "") -> Node:
    thresholds = np.asarray(thresholds, dtype=np.int64)
    levels = np.asarray(levels, dtype=np.int64)
    vals = out_type.from_codes(levels)
    params = {"thresholds": thresholds, "levels": levels, "lo": vals.min(axis=1), "hi": vals.max(axis=1)}
    return Node(name, "threshold", [src.name], src.shape, out_type, params, {}, source)


def cast_node(name: str, src: Node, out_type: FixedType, relu: bool, source: str = "") -> Node:
    """Bounds per overflow mode: rounding is monotone, so without overflow the conversion of
    [lo, hi] is [q(lo), q(hi)]; SAT and SAT_SYM stay monotone; SAT_ZERO sends values past either
    end to 0 (so 0 joins the in-range part); WRAP makes the whole type possible."""
    lo, hi = src.lo, src.hi
    if relu:
        lo, hi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
    lo_g, hi_g = _on_grid(lo, out_type), _on_grid(hi, out_type)
    overflows = (lo_g < out_type.min) | (hi_g > out_type.max)
    lo_q, hi_q = out_type.quantize(lo), out_type.quantize(hi)
    if out_type.overflow == "WRAP":
        # wrapped bounds say nothing: the whole range of the type is possible
        lo_q = np.where(overflows, out_type.min, lo_q)
        hi_q = np.where(overflows, out_type.max, hi_q)
    elif out_type.overflow == "SAT_ZERO":
        sat = out_type.replace(overflow="SAT")
        lo_q = np.where(overflows, np.minimum(sat.quantize(lo), 0.0), lo_q)
        hi_q = np.where(overflows, np.maximum(sat.quantize(hi), 0.0), hi_q)
    params = {"lo": lo_q, "hi": hi_q}
    return Node(name, "cast", [src.name], src.shape, out_type, params, {"relu": bool(relu)}, source)


def _on_grid(values: np.ndarray, t: FixedType) -> np.ndarray:
    """``values`` rounded onto ``t``'s grid without any overflow handling."""
    # signed, so that values below an unsigned type's 0 stay below it (and are seen to overflow)
    return t.replace(width=t.width + 65, integer=t.integer + 65, signed=True, overflow="SAT").quantize(values)
