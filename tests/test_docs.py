"""The documentation site builds: `mkdocs build --strict` of mkdocs.yml and docs/ succeeds (no
warning: broken links and anchors, pages left out of the nav and docstrings griffe cannot parse
all fail it), every page of the nav becomes an HTML page, and the API reference holds the
docstrings of the pipeline's functions as the source states them."""

import ast
import html
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (API page, documented object, source file, name of the function or class in it)
API_OBJECTS = [
    ("api-freeze.md", "edgebnn.freeze.freeze", "edgebnn/freeze/__init__.py", "freeze"),
    ("api-freeze.md", "edgebnn.verify.verify", "edgebnn/verify.py", "verify"),
    ("api-freeze.md", "edgebnn.emulate.emulate", "edgebnn/emulate.py", "emulate"),
    ("api-backends.md", "edgebnn.estimate.estimate", "edgebnn/estimate/__init__.py", "estimate"),
    ("api-backends.md", "edgebnn.backends.hls4ml.exporter.export", "edgebnn/backends/hls4ml/exporter.py", "export"),
    ("api-backends.md", "edgebnn.backends.target.Target", "edgebnn/backends/target.py", "Target"),
    (
        "api-quantizers.md",
        "edgebnn.training.quantizers.qkeras.QuantizedBits",
        "edgebnn/training/quantizers/qkeras.py",
        "QuantizedBits",
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def nav_pages(nav) -> list[str]:
    """The Markdown files of mkdocs.yml's nav, in order (entries are 'file.md' or {title: entry or [entries]})."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return [page for entry in nav for page in nav_pages(entry)]


def html_of(site: pathlib.Path, page: str) -> pathlib.Path:
    """Where mkdocs writes a page (directory URLs: docs/x.md -> x/index.html)."""
    stem = page.removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


def text_of(markup: str) -> str:
    """The words of an HTML page or a docstring line, whitespace collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", markup))).strip()


def summary_line(path: str, name: str) -> str:
    """The first line of the docstring of the top-level function or class ``name`` in ``path``,
    as the rendered page shows it (reStructuredText's double backquotes become code)."""
    tree = ast.parse((ROOT / path).read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name)
    return text_of(ast.get_docstring(node).splitlines()[0].replace("`", ""))


def test_every_page_of_the_nav_is_built_and_every_doc_is_in_the_nav(site):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = nav_pages(config["nav"])
    assert len(pages) == len(set(pages))
    assert sorted(pages) == sorted(p.name for p in (ROOT / config["docs_dir"]).glob("*.md"))
    for page in pages:
        assert html_of(site, page).is_file(), page
        title = (ROOT / config["docs_dir"] / page).read_text().splitlines()[0].removeprefix("# ")
        h1 = re.search(r"<h1[^>]*>(.*?)</h1>", html_of(site, page).read_text(), flags=re.S)
        assert h1 and text_of(h1.group(1)).startswith(text_of(title)), page  # the page's own content, not a shell


@pytest.mark.parametrize("page, object_id, path, name", API_OBJECTS, ids=[o[1] for o in API_OBJECTS])
def test_api_reference_renders_the_docstrings(site, page, object_id, path, name):
    rendered = html_of(site, page).read_text()
    assert f'id="{object_id}"' in rendered, f"{object_id} has no entry on {page}"
    assert summary_line(path, name) in text_of(rendered)


def test_the_configuration_reference_shows_every_key_of_every_section(site):
    """Each key of the run configuration's schema has its own entry (griffe-pydantic's fields),
    with the description the schema declares."""
    from edgebnn.config import RunConfig

    rendered = html_of(site, "api-config.md").read_text(encoding="utf-8")
    for section, field in RunConfig.model_fields.items():
        model = field.annotation
        if not (isinstance(model, type) and hasattr(model, "model_fields")):
            continue
        for key, spec in model.model_fields.items():
            assert f'id="edgebnn.run.config.{model.__name__}.{key}"' in rendered, f"{section}.{key}"
            assert spec.description and html.escape(spec.description, quote=False) in rendered, f"{section}.{key}"


def _pages(site: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in site.rglob("*.html") if "search" not in p.parts)


def test_the_site_loads_nothing_from_the_network(site):
    """Offline, the site looks as it does online: no script, style sheet or font from elsewhere
    (the theme's highlight.js came from a CDN); links to other sites are only links."""
    for page in _pages(site):
        markup = page.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", markup):
            assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", tag), (page, tag)
        assert "highlight.js" not in markup and "hljs" not in markup, page


def test_code_is_highlighted_at_build_time(site):
    index = html_of(site, "index.md").read_text(encoding="utf-8")
    assert '<div class="highlight">' in index
    assert '<span class="kn">import</span>' in index and '<span class="s2">"ste_sign"</span>' in index
    css = (site / "css" / "pygments.css").read_text(encoding="utf-8")
    assert ".highlight .kn" in css
    assert 'href="css/pygments.css"' in index


def _test_names() -> set[str]:
    """The names of the test functions under tests/."""
    names = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    return names


def test_headings_hold_no_test_names_and_tables_no_escaped_bars(site):
    """Test names in headings overflowed the sidebar (a name, or a pattern such as test_force_*)."""
    tests = _test_names()
    assert len(tests) > 100
    for page in _pages(site):
        markup = page.read_text(encoding="utf-8")
        for heading in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", markup, flags=re.S):
            for word in re.findall(r"\btest_\w*\*?", text_of(heading)):
                stem = word.rstrip("*")
                assert not any(t == stem or (word.endswith("*") and t.startswith(stem)) for t in tests), (page, word)
        assert "\\|" not in text_of(markup), page  # a Markdown escape that reached the page


def test_the_home_page_shows_the_first_run_output_whole():
    """The sample output of `edgebnn run` is as the command prints it, its estimate table too."""
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    block = text[text.index("```\nedgebnn run digits_bnn:") :].split("```")[1]
    lines = block.strip("\n").splitlines()
    assert not any(line.strip() in ("...", "…") for line in lines)
    for row in ("node ", "total ", "pynq-z2 ", "% of board ", "fits under 80% of every resource"):
        assert any(line.strip().startswith(row) for line in lines), row
