"""The deployment graph: the single source of truth for every exported number.

``freeze`` builds it from a trained Keras model; ``emulate``, ``export`` and ``estimate`` read
only this. It holds integer codes and fixed-point types, never floats that need rounding, and
saves to one ``.npz`` file that loads with NumPy alone (no TensorFlow, no pickle).

Each node produces one tensor: ``shape`` excludes the batch axis (channels last), the values are
integer codes on the node's ``type`` (a :class:`~edgebnn.fixed.FixedType`), ``params`` holds
arrays of integer codes and ``attrs`` JSON-able settings (fixed-point types as their strings).
Every node also carries ``params['lo']`` / ``params['hi']``: per-channel bounds of its output
values from interval analysis over the actual integer weights.

The ops live one per module in ``graph/ops/`` (the table ``OPS``): each declares its params and attrs, validates a
node, executes it exactly on codes and builds it (``dense_node`` ...). ``graph/core.py`` holds the
:class:`Graph`, its checks and its file: a compressed ``.npz`` whose ``__header__`` (JSON: format,
version, name, meta and per node its op, inputs, shape, type, attrs and each array's dtype and
shape) and ``__checksum__`` (SHA-256 over header and arrays) sit beside the arrays ``n<i>/<key>``.
"""

# private names other modules and tests import from here: freeze (_on_grid), test_hostile (_graph_checksum)
from ..fixed import on_grid as _on_grid  # noqa: F401
from .core import FORMAT, FORMAT_VERSION, Graph, _graph_checksum, _read_graph_arrays  # noqa: F401
from .node import GraphError, Node
from .ops import OPS, REGISTRY, OpSpec, spec
from .ops.add import add_node
from .ops.affine import affine_node
from .ops.avgpool1d import avgpool1d_node
from .ops.avgpool2d import avgpool2d_node
from .ops.cast import cast_node
from .ops.concatenate import concatenate_node
from .ops.conv1d import conv1d_node
from .ops.conv2d import conv2d_node
from .ops.dense import dense_node
from .ops.depthwise_conv2d import depthwise_conv2d_node
from .ops.flatten import flatten_node
from .ops.input import input_node
from .ops.maxpool1d import maxpool1d_node
from .ops.maxpool2d import maxpool2d_node
from .ops.pad2d import pad2d_node
from .ops.reshape import reshape_node
from .ops.sumpool1d import sumpool1d_node
from .ops.sumpool2d import sumpool2d_node
from .ops.threshold import threshold_node
from .ops.zeropad1d import zeropad1d_node

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "OPS",
    "REGISTRY",
    "Graph",
    "GraphError",
    "Node",
    "OpSpec",
    "add_node",
    "affine_node",
    "avgpool1d_node",
    "avgpool2d_node",
    "cast_node",
    "concatenate_node",
    "conv1d_node",
    "conv2d_node",
    "dense_node",
    "depthwise_conv2d_node",
    "flatten_node",
    "input_node",
    "maxpool1d_node",
    "maxpool2d_node",
    "pad2d_node",
    "reshape_node",
    "spec",
    "sumpool1d_node",
    "sumpool2d_node",
    "threshold_node",
    "zeropad1d_node",
]
