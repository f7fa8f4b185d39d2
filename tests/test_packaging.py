"""The installed package is the source tree: every subpackage is listed in pyproject.toml (a
non-editable install, as CI makes, leaves out any that is not)."""

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_subpackage_is_installed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "edgebnn").rglob("__init__.py")}
    assert found - listed == set(), f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"
    assert {"edgebnn._boards", "edgebnn._hls_templates"} <= listed


def test_tests_share_helpers_through_conftest_and_helper_modules_only():
    """A test module imports no other test module (shared fixtures live in conftest.py, shared
    helpers in tests/graphs.py and tests/bn.py)."""
    import re

    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("*.py")
        if re.search(r"^\s*(from|import) test_\w+", p.read_text(), flags=re.M)
    ]
    assert offenders == []


def test_ci_runs_the_test_command_of_the_readme():
    """.ci/run installs and runs the suite exactly as README.md tells a contributor to."""
    import re

    readme = (ROOT / "README.md").read_text()
    command = re.search(r"^Tests:\n\n```bash\n(.*)\n```", readme, flags=re.M).group(1)
    install, run = command.split(" && .venv/bin/python -m pytest ")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install in ci
    assert ci[-1] == f".venv/bin/python -m pytest {run}"
    assert "pytest-xdist" in (ROOT / "pyproject.toml").read_text() or "-n " not in run


def test_the_example_configurations_ship_inside_the_package():
    """`edgebnn init --example NAME` works after a non-editable `pip install .`: every example
    configuration is package data of edgebnn._examples, which the command reads."""
    from edgebnn.config import starter_config
    from edgebnn.resources import examples_dir

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert tool["package-dir"]["edgebnn._examples"] == "examples" and "edgebnn._examples" in tool["packages"]
    examples = ROOT / "examples"
    shipped = {p for pattern in tool["package-data"]["edgebnn._examples"] for p in examples.glob(pattern)}
    assert shipped == set(examples.rglob("*.yaml")) and len(shipped) >= 12
    assert examples_dir().resolve() == examples.resolve()
    for path in sorted(shipped):
        assert starter_config(path.stem).startswith(f"# edgebnn run configuration, from examples/{path.relative_to(examples)}")
