"""One chunk of a C-simulation, in a process of its own (``HLSProject.predict`` on large batches).

``HLSProject.predict`` starts ``python -c`` with its own ``sys.path`` and calls :func:`main`;
the process imports only NumPy and ctypes (``import edgebnn`` and these packages import
nothing), so it starts in a fraction of a second, and it is a fresh interpreter, not a fork of
one that may hold TensorFlow's threads. Nothing is pickled.

Protocol: arguments ``library function in_size out_size``; the samples arrive on stdin as
float64 bytes (``n * in_size`` values, C order); stdout returns ``n * out_size`` float64 output
values followed by what the C++ code printed to its stdout (hls::stream warnings), which is
captured from file descriptor 1 as ``HLSProject.predict`` does in its own process.

The call is the one hls4ml's ``ModelGraph._predict`` makes for float64 inputs: the library's
``<project>_double(double *input, double *output)``, one sample at a time, each input a
contiguous float64 array of ``in_size`` values and each output a fresh zeroed one.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile

import numpy as np
import numpy.ctypeslib as npc


def top_function(library: str, function: str):
    """The library's float64 top function, typed as hls4ml's ``_get_top_function`` types it."""
    lib = ctypes.cdll.LoadLibrary(library)
    fn = getattr(lib, function)
    fn.restype = None
    fn.argtypes = [npc.ndpointer(ctypes.c_double, flags="C_CONTIGUOUS") for _ in range(2)]
    return fn


def simulate(fn, x: np.ndarray, out_size: int) -> np.ndarray:
    """``fn`` on each row of ``x`` (float64, shape (n, in_size)): the outputs, shape (n, out_size)."""
    y = np.empty((len(x), out_size), dtype=np.float64)
    for i in range(len(x)):
        out = np.zeros(out_size, dtype=np.float64)
        fn(np.ascontiguousarray(x[i]), out)
        y[i] = out
    return y


def main(argv=None) -> None:
    library, function, in_size, out_size = (argv or sys.argv[1:])[:4]
    in_size, out_size = int(in_size), int(out_size)
    x = np.frombuffer(sys.stdin.buffer.read(), dtype=np.float64).reshape(-1, in_size)
    fn = top_function(library, function)
    result = os.fdopen(os.dup(1), "wb")  # fd 1 itself takes what the C++ code prints
    with tempfile.TemporaryFile() as printed:
        os.dup2(printed.fileno(), 1)
        y = simulate(fn, x, out_size)
        ctypes.CDLL(None).fflush(None)
        printed.seek(0)
        text = printed.read()
    result.write(y.tobytes())
    result.write(text)
    result.close()
