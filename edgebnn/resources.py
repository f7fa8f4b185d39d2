"""Where the shipped data folders are, installed or in a source checkout."""

from __future__ import annotations

import importlib.resources
import pathlib


def _package_dir(package: str, repo_folder: str) -> pathlib.Path:
    try:
        path = pathlib.Path(str(importlib.resources.files(package)))
        if path.is_dir():
            return path
    except (ModuleNotFoundError, TypeError):
        pass
    return pathlib.Path(__file__).resolve().parent.parent / repo_folder


def boards_dir() -> pathlib.Path:
    return _package_dir("edgebnn._boards", "boards")


def templates_dir() -> pathlib.Path:
    return _package_dir("edgebnn._hls_templates", "hls_templates")


def examples_dir() -> pathlib.Path:
    """The example configurations (examples/*.yaml and examples/zoo/*.yaml)."""
    return _package_dir("edgebnn._examples", "examples")
