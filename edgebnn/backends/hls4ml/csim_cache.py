"""Compile once: the C-simulation library of a project is built by g++ only when no library built
from the same content exists.

The library's content key is a SHA-256 over everything the build reads: the files under
``firmware/`` (sources, headers, ``ap_types``; the weights are headers there, compiled in), the
``<project>_bridge.cpp`` that wraps the top function, hls4ml's ``build_lib.sh`` with its
``LIB_STAMP`` line blanked (the stamp only names the library file; the script finds its own
folder at run time, and the ``WEIGHTS_DIR`` path it defines is read only by hls4ml's
``load_weights_from_txt``, which a project exported with ``WriteWeightsTxt`` off never calls),
:data:`CSIM_CFLAGS` and the output of ``g++ --version``. Neither the stamp nor the folder enters
the key, so the same export in another folder has the same key (unless a source calls one of
those loaders: then the folder is part of the key).

Two caches, both checked by the SHA-256 of the library file itself, so a partial or corrupt
library is never loaded (it is built again instead):

- **in the project folder** (always): after a build, ``firmware/<project>-<stamp>.so.key``
  records the content key and the library's SHA-256; a later ``compile()`` of the unchanged
  folder loads the library without running g++.
- **shared** (opt-in): when the environment variable ``EDGEBNN_CSIM_CACHE`` names a folder,
  every library built is also stored there as ``<key>.so`` with its SHA-256 in
  ``<key>.sha256``, and a project with the same content in any folder gets a copy of it instead
  of a build. Entries are written to a temporary name and renamed into place (the ``.so`` before
  its ``.sha256``); nothing there is ever deleted, so remove the folder to empty the cache.
  Without the variable nothing is written outside the project folder. With it, the cache also
  holds precompiled headers (``pch-<key>/``, :func:`precompiled_headers`): the C++ and
  ``ap_types`` headers every unit of a library parses first, parsed once per compiler, flags
  and ``ap_types`` instead of once per unit.

Imports neither hls4ml, TensorFlow nor Keras.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

from ...errors import EdgebnnError

# g++ flags of the C-simulation library: -O1 compiles ~40% faster than hls4ml's -O3 (24 s vs 41 s
# for the digits BNN on 2 cores) and the simulation runs as fast; C++14, the standard Vitis HLS
# compiles a design in, where hls4ml 1.3.0's build_lib.sh takes C++23 when g++ has it (for half
# and bfloat16 types, which no edgebnn project uses, and no header of a project tests the standard
# beyond C++11): g++ 12 parses C++23's standard headers a second longer per unit, about 40% of a
# small project's build. No flag changes a result (ap_fixed is integer arithmetic, and no flag
# here allows float contraction or reassociation)
CSIM_CFLAGS = "-O1 -fPIC -std=c++14"

CACHE_ENV = "EDGEBNN_CSIM_CACHE"
KEY_SUFFIX = ".key"  # beside the library: firmware/<project>-<stamp>.so.key
_FORMAT = b"edgebnn C-simulation library 1"  # changes when the key's recipe does


def library_path(folder, project_name: str, stamp: str) -> pathlib.Path:
    """Where hls4ml's ``build_lib.sh`` writes the library of the project in ``folder``."""
    return pathlib.Path(folder) / "firmware" / f"{project_name}-{stamp}.so"


@functools.lru_cache(maxsize=8)
def _compiler_version(gxx: str, mtime_ns: int) -> bytes:
    done = subprocess.run([gxx, "--version"], capture_output=True, check=False)
    return done.stdout + done.stderr + f"exit {done.returncode}".encode()


def compiler_identity() -> bytes:
    """``g++ --version`` of the g++ on PATH (asked once per compiler binary and process)."""
    gxx = shutil.which("g++")
    if gxx is None:
        return b"no g++"
    real = os.path.realpath(gxx)
    return _compiler_version(real, os.stat(real).st_mtime_ns)


def _is_product(rel: str) -> bool:
    """Files in firmware/ that a build or this cache writes, not reads."""
    name = rel.rsplit("/", 1)[-1]
    return name.endswith((".so", ".so" + KEY_SUFFIX)) or name.startswith(".edgebnn-tmp-")


def content_key(folder, project_name: str) -> str:
    """The content key (hex SHA-256) of the C-simulation library of the project in ``folder``."""
    folder = pathlib.Path(folder)
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        label_bytes = label.encode()
        digest.update(len(label_bytes).to_bytes(8, "little") + label_bytes + len(data).to_bytes(8, "little") + data)

    add("format", _FORMAT)
    add("cflags", CSIM_CFLAGS.encode())
    add("compiler", compiler_identity())
    script = (folder / "build_lib.sh").read_bytes()
    add("build_lib.sh", re.sub(rb"(?m)^LIB_STAMP=.*$", b"LIB_STAMP=", script))
    add("bridge", (folder / f"{project_name}_bridge.cpp").read_bytes())
    firmware = folder / "firmware"
    files = []
    for root, dirs, names in os.walk(firmware):
        dirs.sort()
        for name in names:
            rel = pathlib.Path(root, name).relative_to(firmware).as_posix()
            if not _is_product(rel):
                files.append(rel)
    for rel in sorted(files):
        data = (firmware / rel).read_bytes()
        add(f"firmware/{rel}", data)
        if rel != "nnet_utils/nnet_helpers.h" and _READS_WEIGHT_FILES.search(data):
            # weights read at run time from the WEIGHTS_DIR path compiled in: the folder is content too
            add("folder", str(folder.absolute()).encode())
    return digest.hexdigest()


# hls4ml's loaders of weights text files (WriteWeightsTxt), defined in nnet_helpers.h
_READS_WEIGHT_FILES = re.compile(rb"\bload_\w*weights_from_txt\b|\bWEIGHTS_DIR\b")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _chmod_less_umask(path, mode: int) -> None:
    """Give ``path`` the permissions ``mode`` less the umask (a temporary file's are 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, mode & ~umask)


def _write_atomically(path: pathlib.Path, data: bytes, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it and a rename, so that a
    reader sees the old file, the whole new one, or none (``mode`` less the umask)."""
    fd, tmp = tempfile.mkstemp(prefix=".edgebnn-tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        _chmod_less_umask(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def library_sha256(lib: pathlib.Path) -> str | None:
    """The SHA-256 of the library file, or None when it cannot be read."""
    try:
        return _sha256(lib.read_bytes())
    except OSError:
        return None


def local_hit(lib: pathlib.Path, key: str) -> str | None:
    """The library's SHA-256 if ``lib`` exists and was built (or copied) from content ``key``
    and is intact; None otherwise."""
    try:
        record = json.loads(lib.with_name(lib.name + KEY_SUFFIX).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    sha = library_sha256(lib)
    return sha if sha is not None and sha == record.get("library_sha256") else None


def record_local(lib: pathlib.Path, key: str, sha: str) -> None:
    """Record beside ``lib`` that it was built from content ``key`` and has SHA-256 ``sha``."""
    _write_atomically(lib.with_name(lib.name + KEY_SUFFIX), json.dumps({"key": key, "library_sha256": sha}).encode())


def shared_dir() -> pathlib.Path | None:
    """The shared cache folder named by ``EDGEBNN_CSIM_CACHE`` (created if missing), or None."""
    value = os.environ.get(CACHE_ENV, "")
    if not value:
        return None
    folder = pathlib.Path(value).expanduser().absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError("no permission to write there")
    except OSError as err:
        reason = err.strerror or str(err)
        raise EdgebnnError(
            f"{CACHE_ENV} names '{folder}', which cannot be used as the C-simulation build cache ({reason}); "
            "point it to a folder you can write or unset it"
        ) from None
    return folder


def fetch_shared(folder: pathlib.Path, key: str, lib: pathlib.Path) -> str | None:
    """Copy the shared cache's library for ``key`` to ``lib`` (atomically) if it is there and
    intact; its SHA-256, or None."""
    try:
        want = (folder / f"{key}.sha256").read_text().strip()
        data = (folder / f"{key}.so").read_bytes()
    except OSError:
        return None
    sha = _sha256(data)
    if sha != want:
        return None  # partial or corrupt: built again, and the entry replaced
    _write_atomically(lib, data, 0o777)  # as the linker writes it
    return sha


def store_shared(folder: pathlib.Path, key: str, lib: pathlib.Path, sha: str) -> None:
    """Put the library ``lib`` (SHA-256 ``sha``) into the shared cache under ``key``: the
    library first, then its checksum, each renamed into place."""
    data = lib.read_bytes()
    if _sha256(data) != sha:
        return  # changed under us: nothing trustworthy to store
    try:
        _write_atomically(folder / f"{key}.so", data, 0o777)
        _write_atomically(folder / f"{key}.sha256", (sha + "\n").encode())
    except OSError as err:
        raise EdgebnnError(
            f"could not store the C-simulation library in the build cache '{folder}' ({CACHE_ENV}): "
            f"{err.strerror or err}; free space there, point {CACHE_ENV} elsewhere or unset it"
        ) from None


# ------------------------------------------------------------- precompiled headers
PCH_ENV = "EDGEBNN_CSIM_PCH"  # the network's and the bridge's precompiled header (build_lib.sh reads it)
PCH_WEIGHTS_ENV = "EDGEBNN_CSIM_PCH_WEIGHTS"  # the weights unit's, compiled with its own flags
# the extra flags of the weights unit (_SPLIT_LINES): -fno-inline defines a macro the C++ headers
# test, so its units need a header precompiled with them
_WEIGHTS_FLAGS = ("-Og", "-fno-inline")
# what every unit of a library includes first, in some order (myproject.h, defines.h, the bridge)
_PCH_HEADER = b"""// edgebnn: the C++ and ap_types headers every unit of a C-simulation library parses
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <map>
#include <tuple>
#include "ap_fixed.h"
#include "ap_int.h"
#include "hls_stream.h"
"""
_PCH_FORMAT = b"edgebnn precompiled header 1"


def _precompiled(cache: pathlib.Path, ap_types: pathlib.Path, extra: tuple[str, ...]) -> pathlib.Path | None:
    """The header ``pch-<key>/edgebnn_csim.h`` in ``cache`` with its ``.gch`` beside it, built
    (once, renamed into place) for the flags :data:`CSIM_CFLAGS` plus ``extra`` and the headers
    in ``ap_types``; None where g++ cannot build it (the build then parses the headers)."""
    h = hashlib.sha256(_PCH_FORMAT + b"\0" + compiler_identity() + b"\0" + " ".join((CSIM_CFLAGS, *extra)).encode())
    h.update(_PCH_HEADER)
    for path in sorted(p for p in ap_types.rglob("*") if p.is_file()):
        h.update(path.relative_to(ap_types).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    folder = cache / f"pch-{h.hexdigest()[:32]}"
    header, gch = folder / "edgebnn_csim.h", folder / "edgebnn_csim.h.gch"
    if gch.is_file() and header.is_file():
        return header
    folder.mkdir(exist_ok=True)
    _write_atomically(header, _PCH_HEADER)
    fd, tmp = tempfile.mkstemp(prefix=".edgebnn-tmp-", suffix=".gch", dir=folder)
    os.close(fd)
    command = ["g++", *CSIM_CFLAGS.split(), *extra, f"-I{ap_types}", "-x", "c++-header", str(header), "-o", tmp]
    if subprocess.run(command, capture_output=True, check=False).returncode != 0:
        os.unlink(tmp)
        return None
    _chmod_less_umask(tmp, 0o666)
    os.replace(tmp, gch)
    return header


@contextlib.contextmanager
def precompiled_headers(cache: pathlib.Path | None, folder):
    """Within the block the environment names the shared cache's precompiled headers for the
    project in ``folder`` (:data:`PCH_ENV`, :data:`PCH_WEIGHTS_ENV`, which ``build_lib.sh``
    reads), built first where missing; without a shared cache, or a project without
    ``firmware/ap_types``, nothing changes. A library built with them is the library built
    without: the same sources, the declarations parsed once."""
    ap_types = pathlib.Path(folder) / "firmware" / "ap_types"
    if cache is None or not ap_types.is_dir():
        yield
        return
    headers = {PCH_ENV: _precompiled(cache, ap_types, ()), PCH_WEIGHTS_ENV: _precompiled(cache, ap_types, _WEIGHTS_FLAGS)}
    before = {name: os.environ.get(name) for name in headers}
    try:
        for name, header in headers.items():
            if header is not None:
                os.environ[name] = str(header)
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# ---------------------------------------------------------------- the build itself
# hls4ml's compile lines in build_lib.sh: the network, the bridge, the link
_COMPILE_LINES = (
    '${CC} ${CFLAGS} ${INCFLAGS} -D WEIGHTS_DIR="${WEIGHTS_DIR}" -c firmware/${PROJECT}.cpp -o ${PROJECT}.o\n'
    '${CC} ${CFLAGS} ${INCFLAGS} -D WEIGHTS_DIR="${WEIGHTS_DIR}" -c ${PROJECT}_bridge.cpp -o ${PROJECT}_bridge.o\n'
    "${CC} ${CFLAGS} ${INCFLAGS} -shared ${PROJECT}.o ${PROJECT}_bridge.o -o firmware/${PROJECT}-${LIB_STAMP}.so\n"
)
# the same library built from three units at once: the weights on their own, cheaply
_SPLIT_LINES = """\
# The weights are compiled on their own, without inlining and at -Og (their initialization runs
# once, at load; firmware/${PROJECT}_weights.cpp fills each array from a table of its header's
# values), the network sees them as extern, and the three units build in parallel. The same
# arrays, values and arithmetic.
# With EDGEBNN_CSIM_PCH and EDGEBNN_CSIM_PCH_WEIGHTS set (edgebnn's shared build cache sets them)
# each unit first includes a precompiled header of the C++ and ap_types headers it parses anyway:
# the same declarations, parsed once per cache. g++ parses the headers themselves where a
# precompiled one does not match the unit's flags.
PCH=()
WEIGHTS_PCH=()
if [ -n "${EDGEBNN_CSIM_PCH:-}" ]; then PCH=(-include "${EDGEBNN_CSIM_PCH}"); fi
if [ -n "${EDGEBNN_CSIM_PCH_WEIGHTS:-}" ]; then WEIGHTS_PCH=(-include "${EDGEBNN_CSIM_PCH_WEIGHTS}"); fi
${CC} ${CFLAGS} "${PCH[@]}" ${INCFLAGS} -include firmware/${PROJECT}_weights_extern.h -D WEIGHTS_DIR="${WEIGHTS_DIR}" \\
  -c firmware/${PROJECT}.cpp -o ${PROJECT}.o &
NETWORK=$!
${CC} ${CFLAGS} -Og -fno-inline "${WEIGHTS_PCH[@]}" ${INCFLAGS} -c firmware/${PROJECT}_weights.cpp -o ${PROJECT}_weights.o &
WEIGHTS=$!
${CC} ${CFLAGS} "${PCH[@]}" ${INCFLAGS} -D WEIGHTS_DIR="${WEIGHTS_DIR}" -c ${PROJECT}_bridge.cpp -o ${PROJECT}_bridge.o
wait ${NETWORK}
wait ${WEIGHTS}
${CC} ${CFLAGS} ${INCFLAGS} -shared ${PROJECT}.o ${PROJECT}_weights.o ${PROJECT}_bridge.o -o firmware/${PROJECT}-${LIB_STAMP}.so
"""
# a weight header as hls4ml's writer prints it (the C-simulation reads the initializer compiled in)
_WEIGHT_HEADER = re.compile(r"#ifndef (\w+)\n#define \1\n\s*(\w+) (\w+)\[(\d+)\] = \{([^{}]*)\};\s*#endif\s*$")
# the C++ type of a literal of the initializer: int (every literal an int of 32 bits or fewer) or double
_INT_LITERAL = re.compile(r"-?\d+")
_DOUBLE_LITERAL = re.compile(r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)")


def _literal_type(values: str) -> str | None:
    """``int`` or ``double`` when every literal of an initializer has that C++ type, else None."""
    items = [item.strip() for item in values.split(",")]
    if all(_INT_LITERAL.fullmatch(item) and abs(int(item)) < 2**31 for item in items):
        return "int"
    if all(_DOUBLE_LITERAL.fullmatch(item) for item in items):
        return "double"
    return None


def weight_headers(firmware) -> list[str]:
    """The weight headers ``firmware/parameters.h`` includes (``weights/<name>.h``), in its order."""
    parameters = (pathlib.Path(firmware) / "parameters.h").read_text()
    return re.findall(r'^#include "(weights/\w+\.h)"$', parameters, flags=re.M)


def split_weights(folder, project_name: str) -> bool:
    """Make the project's ``build_lib.sh`` compile the weights apart from the network (see
    ``_SPLIT_LINES``): write ``firmware/<project>_weights.cpp`` (every weight array of
    ``parameters.h``, defined once) and ``firmware/<project>_weights_extern.h`` (their extern
    declarations, and their include guards defined so that ``parameters.h`` skips the
    definitions). An array whose literals are all ints or all doubles is defined without an
    initializer and filled at load from its header read as a plain ``int``/``double`` table,
    each value through the constructor its literal calls in the header: the same values, and
    g++ compiles one loop instead of one constructor call per weight. The headers stay the one
    source (an edited weight is built again); an array in another form includes its header.
    False, and nothing changed, unless every weight header and the script are in the form
    hls4ml 1.3.0 writes."""
    folder = pathlib.Path(folder)
    firmware = folder / "firmware"
    script = (folder / "build_lib.sh").read_text()
    if script.count(_COMPILE_LINES) != 1:
        return False
    defines = (firmware / "defines.h").read_text()
    headers = weight_headers(firmware)
    extern = [f"// the weights of {project_name}, defined in {project_name}_weights.cpp", '#include "defines.h"']
    units = [
        f"// the weights of {project_name} for the C-simulation (edgebnn): each array of weights/*.h read",
        "// there as a plain int or double table, then filled at load by the constructor its literals call",
        '#include "defines.h"',
    ]
    loads = []
    for header in headers:
        found = _WEIGHT_HEADER.search((firmware / header).read_text())
        if found is None or not re.search(rf"^typedef .+ {re.escape(found[2])};$", defines, flags=re.M):
            return False
        guard, type_name, name, size, values = found.groups()
        extern += [f"#define {guard}", f"extern {type_name} {name}[{size}];"]
        literal = _literal_type(values)
        if literal is None:
            units.append(f'#include "{header}"')
            continue
        units += [
            f"namespace {{ namespace values {{  // {type_name} read as {literal} here",
            f"#define {type_name} {literal}",
            f'#include "{header}"',
            f"#undef {type_name}",
            "} }  // namespace values",
            f"{type_name} {name}[{size}];",
        ]
        loads.append(f"        for (unsigned i = 0; i < {size}; i++) {name}[i] = {type_name}(values::{name}[i]);")
    if not headers:
        return False
    if loads:
        units += ["namespace {", "struct load_weights {", "    load_weights() {", *loads, "    }", "} loaded;", "}  // namespace"]
    (firmware / f"{project_name}_weights_extern.h").write_text("\n".join(extern) + "\n")
    (firmware / f"{project_name}_weights.cpp").write_text("\n".join(units) + "\n")
    (folder / "build_lib.sh").write_text(script.replace(_COMPILE_LINES, _SPLIT_LINES))
    return True
