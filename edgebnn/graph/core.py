"""The :class:`Graph`: its structural checks, summary and ``.npz`` file (save, load, checksum).

What each op needs and does lives in ``graph/ops/``; :meth:`Graph.validate` checks what every
node shares and then calls the op's own ``validate``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from typing import Any

import numpy as np

from ..errors import OutputError
from ..fixed import FixedType
from ..outputs import write_file
from .node import GraphError, Node, Nodes
from .ops import BOUNDS, REGISTRY, spec

FORMAT = "edgebnn-graph"
FORMAT_VERSION = 2  # 2: a SHA-256 checksum and each array's dtype and shape


@dataclasses.dataclass
class Graph(Nodes):
    """A deployment graph: ``nodes`` in execution order (the input first, each node after its
    inputs; a node may read several and be read by several, the last is the output), validated
    on construction; ``meta`` holds what freeze records beside the nodes."""

    name: str
    nodes: list[Node]
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.validate()

    # ---------------------------------------------------------------- access (and Nodes')
    def compute_nodes(self) -> list[Node]:
        """Every node but the input, in execution order."""
        return [n for n in self.nodes if n.op != "input"]

    # ------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise :class:`GraphError` (one line naming the node) unless the graph is well formed:
        an input node first, unique names, inputs that are earlier nodes and as many as the op
        takes, bounds within each node's type, the params and attrs its op requires, the op's own
        checks, and one output (every node but the last is read by a later one)."""
        if not self.nodes or self.nodes[0].op != "input":
            raise GraphError(f"graph {self.name!r} must start with an input node")
        seen: dict[str, Node] = {}
        for node in self.nodes:
            where = f"graph node {node.name!r} ({node.op})"
            op = spec(node.op, where)
            if node.name in seen:
                raise GraphError(f"{where}: duplicate node name")
            for inp in node.inputs:
                if inp not in seen:
                    raise GraphError(f"{where}: input {inp!r} is not an earlier node")
            if len(node.inputs) < op.n_inputs if op.variadic else len(node.inputs) != op.n_inputs:
                more = " or more" if op.variadic else ""
                raise GraphError(f"{where}: takes {op.n_inputs}{more} input(s), has {len(node.inputs)}")
            for key in BOUNDS:
                if key not in node.params:
                    raise GraphError(f"{where}: missing bounds params[{key!r}]")
            if not (node.type.contains(node.lo) and node.type.contains(node.hi)):
                raise GraphError(f"{where}: bounds do not fit its type {node.type}")
            for kind, have, need in (("params", node.params, op.params), ("attrs", node.attrs, op.attrs)):
                for key, meaning in need.items():
                    if key not in have:
                        raise GraphError(f"{where}: missing {kind}[{key!r}] ({meaning})")
            op.validate(node, [seen[inp] for inp in node.inputs], where)
            seen[node.name] = node
        read = {inp for node in self.nodes for inp in node.inputs}
        for node in self.nodes[:-1]:
            if node.name not in read:
                raise GraphError(
                    f"graph node {node.name!r} ({node.op}) is read by no node; a graph has one output, its last node"
                )

    def check_bounds(self) -> None:
        """Raise :class:`GraphError` (one line naming the node) unless every node's stored
        bounds are those its op's builder derives from the node's weights and the bounds of its
        inputs (``OpSpec.rebuild``). The emulator's fast paths and the exported types rely on
        them, so a file whose bounds were edited by hand or by another tool is refused rather
        than emulated wrong; the derivation is cheap next to an emulation."""
        for node in self.nodes:
            rebuild = REGISTRY[node.op].rebuild
            if rebuild is None:
                continue
            try:
                derived = rebuild(node, self.sources(node), self)
            except (KeyError, TypeError, ValueError, IndexError) as err:
                detail = " ".join(f"{type(err).__name__}: {err}".split())
                raise GraphError(f"node {node.name!r} ({node.op}): its bounds cannot be derived ({detail})") from None
            for key in BOUNDS:
                stored, want = np.asarray(node.params[key]), np.asarray(derived.params[key], dtype=np.float64)
                if stored.shape != want.shape or not np.array_equal(stored.astype(np.float64), want):
                    bad = _first_difference(stored, want)
                    raise GraphError(
                        f"node {node.name!r} ({node.op}): stored bounds params[{key!r}] {bad} differ from those its "
                        "weights and inputs give"
                    )

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
                    "params": {
                        k: {"dtype": arrays[f"n{i}/{k}"].dtype.str, "shape": list(arrays[f"n{i}/{k}"].shape)} for k in keys
                    },
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
        try:
            write_file(path, lambda fh: np.savez_compressed(fh, **arrays), mode="wb", what="graph file")
        except OutputError as err:
            raise GraphError(str(err)) from None

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
            raise GraphError(
                f"{where} has format version {header.get('version')!r}, this edgebnn reads version "
                f"{FORMAT_VERSION} (with a checksum); {again}"
            )
        if checksum is None or checksum.dtype != np.uint8 or checksum.tobytes() != _graph_checksum(header_bytes, arrays).encode():
            raise GraphError(f"{where} is corrupt or was edited (checksum mismatch); {again}")
        try:
            nodes = []
            for i, h in enumerate(header["nodes"]):
                params = {}
                for key, spec in h["params"].items():
                    value = arrays.pop(f"n{i}/{key}")
                    if (
                        value.dtype.kind not in "iufb"
                        or value.dtype.str != spec["dtype"]
                        or list(value.shape) != list(spec["shape"])
                    ):
                        raise GraphError(
                            f"node {h['name']!r}: array {key!r} is {value.dtype.str} {value.shape}, "
                            f"the header promises {spec['dtype']} {tuple(spec['shape'])}"
                        )
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
            graph = cls(header["name"], nodes, header.get("meta", {}))
            graph.check_bounds()
            return graph
        except GraphError as err:
            raise GraphError(f"{where}: {err}; {again}") from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            detail = " ".join(f"{type(err).__name__}: {err}".split())
            raise GraphError(f"{where} is malformed ({detail}); {again}") from None

    def summary(self) -> str:
        """One line per node: name, op, shape, type and what its op adds (weight type, thresholds);
        a node that does not read just the node before it names its inputs (``<- a, b``)."""
        lines = [f"graph {self.name}: {len(self.nodes)} nodes"]
        previous = None
        for n in self.nodes:
            describe = REGISTRY[n.op].describe
            extra = describe(n) if describe else ""
            if previous is not None and n.inputs != [previous.name]:
                extra += f" <- {', '.join(n.inputs)}"
            lines.append(f"  {n.name:<20} {n.op:<10} {n.shape!s:<10} {n.type}{extra}")
            previous = n
        return "\n".join(lines)


# --------------------------------------------------------------- save/load helpers
def _first_difference(stored: np.ndarray, want: np.ndarray) -> str:
    """Where two bound arrays first differ, for a one-line message."""
    if stored.shape != want.shape:
        return f"have shape {stored.shape}, not {want.shape}"
    i = int(np.flatnonzero(stored.astype(np.float64).ravel() != want.ravel())[0])
    return f"at channel {i} are {stored.ravel()[i]!r}, not {want.ravel()[i]!r},"


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
        raise GraphError(f"{where} is a folder; pass a graph.npz file (the command line also takes a run folder)") from None
    except OSError as err:
        raise GraphError(f"cannot read {where}: {err.strerror or err}; check the path") from None
    if not blob:
        raise GraphError(f"{where} is empty; {again}")
    if not blob.startswith(b"PK"):
        raise GraphError(f"{where} is not an edgebnn graph (not a NumPy .npz archive); pass the graph.npz that edgebnn wrote")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception:  # noqa: BLE001 - zipfile, zlib and format errors of a damaged archive
        raise GraphError(f"{where} is truncated or corrupt (it cannot be unpacked); {again}") from None
    if "__header__" not in arrays:
        raise GraphError(f"{where} is not an edgebnn graph (it has no header); pass the graph.npz that edgebnn wrote")
    return arrays
