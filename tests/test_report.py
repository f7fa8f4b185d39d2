"""report.json / report.html of a run folder, and the charts of edgebnn.plots."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
import yaml

from edgebnn import plots, report
from edgebnn.errors import EdgebnnError
from edgebnn.outputs import MARKER

CHROMIUM = "/usr/bin/chromium"
SECTION_IDS = ("training", "layers", "verification", "resources", "accuracy")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from run_folder import make_run

    folder = tmp_path_factory.mktemp("report") / "run"
    info = make_run(folder)
    html_path, json_path = report.write(folder)
    info.update(folder=folder, html=html_path, json=json_path, data=json.loads(json_path.read_text()))
    return info


def _partial(tmp_path, name="partial"):
    folder = tmp_path / "partial"
    folder.mkdir()
    (folder / MARKER).write_text("written by edgebnn\n")
    (folder / "config.yaml").write_text(yaml.safe_dump({"name": name, "board": "pynq-z2"}), encoding="utf-8")
    return folder


# ------------------------------------------------------------------------------------ report.json
@pytest.mark.train
def test_report_json_holds_every_section_with_the_run_numbers(run):
    data, graph, rep, y = run["data"], run["graph"], run["report"], run["y_test"]
    assert data == report.build(run["folder"])
    assert data["format"] == "edgebnn-report" and data["run"]["name"] == "report_digits" and data["run"]["board"] == "pynq-z2"
    sections = data["sections"]
    assert {k: s["status"] for k, s in sections.items()} == dict.fromkeys(SECTION_IDS, "ok")

    # training: the Keras History's curves
    tr = sections["training"]
    assert tr["epochs"] == 4 and tr["history"]["loss"] == run["history"]["loss"]
    assert tr["final"]["accuracy"] == run["history"]["accuracy"][-1] and tr["final"]["val_loss"] is None

    # layers: one row per graph node, parameters and MACs recounted from the arrays
    rows = {r["node"]: r for r in sections["layers"]["rows"]}
    assert list(rows) == [n.name for n in graph.nodes]
    dense = [n for n in graph.nodes if n.op == "dense"]
    assert len(dense) == 2
    for n in dense:
        n_in, n_out = n.params["weight"].shape
        r = rows[n.name]
        bias = n.params["bias"].size if "bias" in n.params else 0
        assert r["macs"] == n_in * n_out and r["parameters"] == n.params["weight"].size + bias
        assert r["weight_type"] == n.attrs["weight_type"] and r["weight_values"] == "binary"
        assert r["activation_type"] == str(n.type) and r["activation_bits"] == n.type.width
        assert r["output_shape"] == [n_out]
    for n in graph.nodes:
        if n.op == "threshold":
            assert rows[n.name]["parameters"] == n.params["thresholds"].size and rows[n.name]["macs"] == 0
    assert sections["layers"]["totals"]["macs"] == 64 * 24 + 24 * 10

    # verification: the emulator leg only
    ver = sections["verification"]
    assert ver["samples"] == len(y) == 360
    assert ver["mismatches"] == {"keras_vs_emulator": rep.keras_vs_emulator, "emulator_vs_csim": None}
    assert rep.keras_vs_emulator == 0 and ver["first_mismatches"] == []

    # accuracy and the confusion matrix, from the predictions
    acc = sections["accuracy"]
    pred = np.argmax(rep.outputs["emulator"], axis=1)
    assert acc["emulator"] == float(np.mean(pred == y))
    assert acc["keras"] == float(np.mean(np.argmax(rep.outputs["keras"], axis=1) == y))
    assert acc["csim"] is None and acc["deployed"] == "emulator"
    matrix = np.array(acc["confusion_matrix"])
    assert matrix.shape == (10, 10) and matrix.sum() == len(y)
    assert np.array_equal(matrix.sum(axis=1), np.bincount(y, minlength=10))
    assert np.trace(matrix) == int(np.sum(pred == y))
    assert matrix[3, 5] == int(np.sum((y == 3) & (pred == 5)))

    # resources: the run's board per node, and every board
    res = sections["resources"]
    main = run["estimates"]["pynq-z2"]
    assert res["board"] == "pynq-z2" and res["run_board"]["totals"] == main.totals and res["run_board"]["fits"] == main.fits
    assert [r["name"] for r in res["run_board"]["rows"]] == [r.name for r in main.rows]
    assert [r["lut"] for r in res["run_board"]["rows"]] == [r.lut for r in main.rows]
    assert {b["board"]: b["fits"] for b in res["boards"]} == {k: e.fits for k, e in run["estimates"].items()}
    assert len(res["boards"]) == len(run["estimates"]) > 1

    # the chart draws Estimate objects as it draws their dicts (edgebnn estimate --plot passes objects)
    objects = list(run["estimates"].values())
    assert plots.utilization(objects) == plots.utilization([e.to_dict() for e in objects])

    v = data["verdict"]
    assert v["verified"] is True and v["legs"] == ["keras_vs_emulator"] and v["fits"] == main.fits
    assert v["text"].startswith("VERIFIED bit for bit")


def _strip(data) -> dict[str, dict[str, tuple[str, str | None]]]:
    """report.json's key numbers as row name -> label -> (value, state)."""
    return {row["name"]: {i["label"]: (i["value"], i["state"]) for i in row["items"]} for row in data["key_numbers"]}


@pytest.mark.train
def test_key_numbers_are_the_run_numbers(run):
    data, main = run["data"], run["estimates"]["pynq-z2"]
    acc = data["sections"]["accuracy"]
    strip = _strip(data)
    assert list(strip) == ["accuracy", "bit for bit", "estimate on pynq-z2", "timing", "build"]
    assert strip["accuracy"] == {
        "deployed (emulator)": (f"{100 * acc['emulator']:.2f}%", None),
        "Keras": (f"{100 * acc['keras']:.2f}%", None),
    }
    assert strip["bit for bit"] == {
        "Keras = emulator": ("0 of 360 differ", "ok"),
        "emulator = C-simulation": ("not run yet", None),
    }
    res = strip["estimate on pynq-z2"]
    for key, label in (("lut", "LUT"), ("ff", "FF"), ("dsp", "DSP"), ("bram18", "BRAM18")):
        assert res[label] == (f"{main.utilization[key]:.1f}%", "ok")
    assert "URAM" not in res  # the board has none and the design needs none
    assert res["limit"] == ("80% of pynq-z2", None)
    assert strip["timing"] == {
        "latency": (f"{main.latency_cycles:,} cycles = {main.latency_ns:g} ns", None),
        "II": (f"{main.ii} cycle{'' if main.ii == 1 else 's'}", None),
        "clock": ("10 ns (100 MHz)", None),
    }
    assert strip["build"] == {
        "strategy": ("Latency", None),
        "reuse factor": ("1", None),
        "io type": ("io_parallel", None),
        "finished": ("2026-01-01 00:00 UTC", None),  # run.json's last finished stage
    }
    page = run["html"].read_text(encoding="utf-8")
    keys = page[page.index('id="key-numbers"') : page.index('id="verdict"')]
    assert page.index('class="badges"') < page.index('id="key-numbers"') < page.index('<section id="training">')
    for row in strip.values():
        for label, (value, _) in row.items():
            assert f'<span class="k">{label}</span> <span class="v">{value}</span>' in keys


@pytest.mark.train
def test_the_layer_counts_say_why_they_differ_from_edgebnn_summary(run):
    """±1 weights count 1 bit each, as `edgebnn summary` counts them; the stored 2-bit type is
    given beside it, and the parameter count says that BatchNorm was folded."""
    import keras

    from edgebnn.summary import summary

    layers = run["data"]["sections"]["layers"]
    model = keras.saving.load_model(run["folder"] / "model.keras", safe_mode=True)
    s = summary(model)
    weights = sum(n.params["weight"].size for n in run["graph"].nodes if "weight" in n.params)
    assert layers["totals"]["weights"] == weights == s.params[1]  # every kernel is ±1: summary's 1-bit parameters
    assert layers["totals"]["weight_bits"] == s.params[1]
    assert layers["totals"]["weight_storage_bits"] == 2 * weights  # fixed<2,2> codes
    assert all(r["weight_bits"] == 1 for r in layers["rows"] if r["weight_values"] == "binary")
    # Keras counts each BatchNormalization's four values per channel; the graph, the thresholds made of them
    assert s.param_count == weights + 4 * (24 + 10)
    assert f"of which {4 * (24 + 10)} BatchNormalization (4 per channel), folded into integer thresholds by freeze" in s.table()
    thresholds = sum(n.params["thresholds"].size for n in run["graph"].nodes if n.op == "threshold")
    assert layers["totals"]["parameters"] == weights + thresholds != s.param_count
    page = run["html"].read_text(encoding="utf-8")
    assert f"{weights:,} weights in {weights:,} bits" in page and f"{2 * weights:,} bits" in page
    assert f"{weights + thresholds:,} weight codes, thresholds and scales" in page
    assert "folds each BatchNormalization's four values per channel" in page


@pytest.mark.train
def test_verification_notes_say_what_they_are_about(run):
    page = run["html"].read_text(encoding="utf-8")
    assert "No caveats on the Keras leg" in page
    assert "stream data" not in page.lower()  # an io_parallel design has no streams


def _tiny_board(path, **resources):
    board = {"name": "tiny", "part": "xc7a12tcsg325-1", "family": "artix-7", "lut": 400, "ff": 100000, "dsp": 10}
    board.update(dsp_type="DSP48E1", bram18=40, uram=0, clock_period_ns=10, source="a test board", **resources)
    path.write_text(yaml.safe_dump(board), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def nofit(run, tmp_path_factory):
    """The run folder of ``run`` estimated on a board with 400 LUTs, where it does not fit."""
    from run_folder import write_json

    from edgebnn.boards import load_board
    from edgebnn.estimate import estimate

    base = tmp_path_factory.mktemp("nofit")
    folder = base / "nofit"
    folder.mkdir()
    for name in (MARKER, "graph.npz", "verify.json", "history.json", "run.json", "summary.json"):
        shutil.copy(run["folder"] / name, folder / name)
    config = yaml.safe_load((run["folder"] / "config.yaml").read_text())
    board = load_board(_tiny_board(base / "tiny.yaml"))
    (folder / "config.yaml").write_text(yaml.safe_dump({**config, "board": "tiny"}), encoding="utf-8")
    est = estimate(run["graph"], board)
    assert not est.fits and est.utilization["lut"] > 80 and est.utilization["ff"] < 80
    write_json(folder / "estimate.json", {"board": "tiny", "estimates": {"tiny": est.to_dict()}})
    html_path, json_path = report.write(folder)
    return {"folder": folder, "board": board, "estimate": est, "html": html_path, "data": json.loads(json_path.read_text())}


@pytest.mark.train
def test_a_design_that_does_not_fit_is_red_and_names_the_next_step(nofit):
    folder, board, est = nofit["folder"], nofit["board"], nofit["estimate"]
    data = report.build(folder)
    v = data["verdict"]
    assert v["fits"] is False and v["next_step"] == f"edgebnn estimate {folder} --fit"
    assert f"`edgebnn estimate {folder} --fit`" in v["text"] and f"LUT {est.utilization['lut']:.0f}%" in v["text"]
    res = _strip(data)["estimate on tiny"]
    assert res["LUT"] == (f"{est.utilization['lut']:.1f}%", "bad") and res["FF"][1] == "ok"
    page = report.render(data)
    assert f'<p class="next">Next step: <code>edgebnn estimate {folder} --fit</code>' in page
    assert f"<code>edgebnn estimate {folder} --fit</code>" in page[page.index('id="verdict"') :]
    over = re.findall(r'<td data-label="([^"]+)" class="n over">([^<]+)</td>', page)
    assert over == [("LUT", f"{est.utilization['lut']:.1f}%")] * 2  # the per-node table's % row and the every-board table
    assert '<span class="key bad"><span class="k">LUT</span>' in page
    # the per-node bars show the total against the board's capacity where it is over, and only there
    for prefix in ("layers", "layers-narrow"):
        svg = page[page.index(f'class="plot plot-{prefix}"') :].split("</svg>")[0]
        assert f'id="{prefix}-capacity-line-lut"' in svg and f'id="{prefix}-total-bar-lut"' in svg
        assert "capacity-line-ff" not in svg and f" board {board.lut:,}</text>" in svg
    # the board has no UltraRAM and the design needs none: a dash, not 0.0%
    assert '<td class="n" data-label="URAM">–</td>' in page and "URAM" not in res


def test_a_further_verification_leg_joins_the_verdict_the_strip_and_the_table(tmp_path):
    folder = _partial(tmp_path)
    verify = {
        "samples": 10,
        "mismatches": {"keras_vs_emulator": 0, "emulator_vs_csim": 0, "emulator_vs_rtl": 2},
        "first_mismatches": [],
        "stream_leftovers": [],
        "keras_caveats": [],
        "accuracy": {"keras": 0.5, "emulator": 0.5, "csim": 0.5},
        "deployed": "csim",
        "classes": 2,
        "confusion_matrix": [[3, 2], [3, 2]],
    }
    (folder / "verify.json").write_text(json.dumps(verify), encoding="utf-8")
    data = report.build(folder)
    assert data["verdict"]["verified"] is False and data["verdict"]["legs"] == [
        "keras_vs_emulator",
        "emulator_vs_csim",
        "emulator_vs_rtl",
    ]
    assert _strip(data)["bit for bit"]["emulator = RTL simulation"] == ("2 of 10 differ", "bad")
    page = report.render(data)
    assert '<td data-label="leg">emulator vs RTL simulation</td>' in page
    # hardware measured by open tools, from summary.json: a row of its own, only the fields it has
    assert "synthesized" not in json.dumps(data["key_numbers"])
    rtl = {"flow": "ice40", "lut": 2879, "ff": 1200, "bram": 26, "utilization": {"lut": 0.545, "bram": 1.3}, "fmax_mhz": 41.2}
    (folder / "summary.json").write_text(json.dumps({"name": "partial", "rtl": rtl}), encoding="utf-8")
    assert _strip(report.build(folder))["synthesized (ice40)"] == {
        "LUT": ("2,879 (54.5%)", "ok"),
        "FF": ("1,200", None),
        "BRAM": ("26 (130.0%)", "bad"),
        "Fmax": ("41.2 MHz", None),
    }


def test_stream_leftovers_are_spoken_of_for_io_stream_designs_only(tmp_path):
    folder = _partial(tmp_path)
    config = {"name": "s", "board": "pynq-z2", "export": {"io_type": "io_stream", "strategy": "Latency", "reuse_factor": 1}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    verify = {
        "samples": 4,
        "mismatches": {"keras_vs_emulator": 0, "emulator_vs_csim": 0},
        "first_mismatches": [],
        "stream_leftovers": [],
        "keras_caveats": [],
        "accuracy": {"keras": 0.5, "emulator": 0.5, "csim": 0.5},
        "deployed": "csim",
        "classes": 2,
        "confusion_matrix": [[1, 1], [1, 1]],
    }
    (folder / "verify.json").write_text(json.dumps(verify), encoding="utf-8")
    page = report.render(report.build(folder))
    assert "No stream data was left over: every value the io_stream design wrote" in page
    config["export"]["io_type"] = "io_parallel"
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    page = report.render(report.build(folder))
    assert "stream data" not in page.lower()
    assert _strip(report.build(folder))["build"] == {
        "strategy": ("Latency", None),
        "reuse factor": ("1", None),
        "io type": ("io_parallel", None),
    }


@pytest.mark.train
def test_report_html_has_each_section_and_chart_and_no_external_reference(run):
    page = run["html"].read_text(encoding="utf-8")
    for key in SECTION_IDS:
        assert f'<section id="{key}">' in page
    for chart in ("training", "layers", "utilization", "confusion"):
        assert f'class="plot plot-{chart}"' in page
    assert "VERIFIED bit for bit" in page
    # the every-board table has each resource the per-node table has, URAM too (a dash where unused)
    boards = page[page.index("<th>board</th><th>part</th>") :].split("</table>")[0]
    assert re.findall(r"<th[^>]*>([^<]+)</th>", boards) == ["board", "part", "LUT", "FF", "DSP", "BRAM18", "URAM", "fits"]
    assert "share of the true label" in page  # the confusion matrix's colour scale
    _assert_self_contained(page)
    assert page == report.render(report.build(run["folder"]))  # the same folder, the same bytes
    # every id is unique once the charts are inlined
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def _assert_self_contained(page: str) -> None:
    assert "<script" not in page.lower()
    refs = re.findall(r"""(?:\bsrc|\bhref)\s*=\s*["']([^"']*)["']""", page)
    assert refs and all(r.startswith("#") for r in refs), [r for r in refs if not r.startswith("#")]
    assert not re.search(r"url\(\s*['\"]?(?!#)", page)
    assert "@import" not in page and "<link" not in page and "<iframe" not in page


def test_a_missing_stage_says_not_run_yet_and_names_escape(tmp_path):
    folder = _partial(tmp_path, name="<script>alert(1)</script>")
    data = report.build(folder)
    for key in SECTION_IDS:
        assert data["sections"][key]["status"] == "not run yet"
        assert data["sections"][key]["note"].startswith("not run yet: `edgebnn ")
    assert f"`edgebnn verify {folder}`" in data["sections"]["verification"]["note"]
    assert data["verdict"] == {
        "verified": None,
        "legs": [],
        "fits": None,
        "board": "pynq-z2",
        "next_step": None,
        "text": "not verified yet; not estimated yet on pynq-z2",
    }
    # the strip says what has not run yet rather than leave its rows out
    assert _strip(data) == {
        "accuracy": {"deployed": ("not run yet", None)},
        "bit for bit": {"verification": ("not run yet", None)},
        "resources": {"estimate": ("not run yet", None)},
    }
    html_path, json_path = report.write(folder)
    page = html_path.read_text(encoding="utf-8")
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("not run yet") >= 5
    assert json.loads(json_path.read_text())["run"]["name"] == "<script>alert(1)</script>"


def test_an_unreadable_file_is_said_in_its_section(tmp_path):
    folder = _partial(tmp_path)
    (folder / "verify.json").write_text("{ not json", encoding="utf-8")
    (folder / "graph.npz").write_bytes(b"PK garbage")
    data = report.build(folder)
    assert data["sections"]["verification"]["status"] == "unreadable"
    assert "verify.json cannot be read" in data["sections"]["verification"]["note"]
    assert data["sections"]["layers"]["status"] == "unreadable" and "graph file" in data["sections"]["layers"]["note"]
    assert data["sections"]["training"]["status"] == "not run yet"
    report.write(folder)


def test_a_folder_that_is_no_run_folder_is_refused(tmp_path):
    with pytest.raises(EdgebnnError, match="does not exist"):
        report.build(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(EdgebnnError, match=r"is not an edgebnn run folder .*\.edgebnn-output"):
        report.write(tmp_path / "plain")
    assert os.listdir(tmp_path / "plain") == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(EdgebnnError, match="is a file"):
        report.build(tmp_path / "file")


# ----------------------------------------------------------------------------------- in Chromium
def _chromium():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("EDGEBNN_REQUIRE_CHROMIUM"):
            pytest.fail(f"{CHROMIUM} is missing but EDGEBNN_REQUIRE_CHROMIUM is set; install chromium")
        pytest.skip(f"{CHROMIUM} is not installed; install chromium to render the report in a browser")
    return CHROMIUM


@pytest.fixture
def chromium():
    """Headless Chromium's path; requested before the run folder, so that a machine without it
    skips before training."""
    return _chromium()


def _render(page_path, tmp_path, *extra):
    profile = tmp_path / "chromium-profile"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        page_path.as_uri(),
    ]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    page_errors = [
        line for line in out.stderr.splitlines() if "CONSOLE" in line or "Failed to load resource" in line or "Uncaught" in line
    ]
    assert page_errors == []
    return out


# Run inside the page (a copy of it, in an iframe as wide as the window under test: headless
# Chromium's own window is never narrower than 500 px); it posts what it measured to the frame's
# parent, whose DOM --dump-dom prints.
LAYOUT_CHECK = """
(function () {
  var vw = document.documentElement.clientWidth, over = [], heights = [], figures = [];
  var boxes = document.querySelectorAll("header, nav, main, section, table, figure, .scroll, .keys, .mono, p");
  for (var i = 0; i < boxes.length; i++) {
    var el = boxes[i], r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    var name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + el.className : "");
    if (el.scrollWidth > el.clientWidth + 1) over.push(name + " scrolls " + el.scrollWidth + " > " + el.clientWidth);
    if (r.right > vw + 0.5 || r.left < -0.5) over.push(name + " spans " + Math.round(r.left) + ".." + Math.round(r.right));
  }
  var texts = document.querySelectorAll("figure svg text");
  for (var j = 0; j < texts.length; j++) {
    var t = texts[j].getBoundingClientRect();
    if (t.width > 0 && t.height > 0) heights.push(t.height);
  }
  var figs = document.querySelectorAll("figure");
  for (var k = 0; k < figs.length; k++) if (figs[k].getBoundingClientRect().width > 0) figures.push(figs[k].className);
  var keys = document.getElementById("key-numbers");
  parent.postMessage(JSON.stringify({
    viewport: vw, page: document.documentElement.scrollWidth, over: over, figures: figures,
    smallest_text: Math.min.apply(null, heights), keys: keys.innerText
  }), "*");
})();
"""


def _layout(html_path, tmp_path, width: int) -> dict:
    """What :data:`LAYOUT_CHECK` measures on the page ``html_path`` shown ``width`` px wide."""
    page = html_path.read_text(encoding="utf-8")
    probe = tmp_path / f"probe-{width}.html"
    probe.write_text(page.replace("</body>", f"<script>{LAYOUT_CHECK}</script></body>"), encoding="utf-8")
    frame = tmp_path / f"frame-{width}.html"
    frame.write_text(
        '<!DOCTYPE html><html><body style="margin:0"><pre id="layout">no message</pre><script>'
        'window.addEventListener("message", function (e) { document.getElementById("layout").textContent = e.data; });'
        f'</script><iframe src="{probe.name}" style="border:0;width:{width}px;height:3000px"></iframe></body></html>',
        encoding="utf-8",
    )
    out = _render(frame, tmp_path, "--dump-dom", f"--window-size={width + 100},1200", "--virtual-time-budget=10000")
    assert out.returncode == 0, out.stderr[-2000:]
    found = re.search(r'<pre id="layout">(.*?)</pre>', out.stdout, flags=re.S)
    assert found and found.group(1) != "no message", out.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.browser
@pytest.mark.train
@pytest.mark.parametrize("width", [1400, 420])
@pytest.mark.parametrize("which", ["run", "nofit"])
def test_report_reads_at_1400_and_420_px_in_headless_chromium(chromium, request, tmp_path, which, width):
    """Nothing is wider than the window, the charts' text is at least 9 px high (the wide charts
    scaled to a phone's width had 4 px), and the key numbers are under the verdict; for a design
    that fits and for one that does not."""
    run = request.getfixturevalue(which)
    layout = _layout(run["html"], tmp_path, width)
    assert layout["viewport"] <= width and layout["viewport"] >= width - 20  # less a scrollbar
    assert layout["over"] == [] and layout["page"] == layout["viewport"]
    assert layout["figures"] == ["wide" if width > 760 else "narrow"] * 4
    assert layout["smallest_text"] >= 9
    shown = " ".join(layout["keys"].split())
    for row in run["data"]["key_numbers"]:
        assert row["name"].upper() in shown
        for item in row["items"]:
            assert f"{item['label']} {item['value']}" in shown


@pytest.mark.browser
@pytest.mark.train
def test_report_renders_in_headless_chromium(chromium, run, tmp_path):
    out = _render(run["html"], tmp_path, "--dump-dom")
    assert out.returncode == 0, out.stderr[-2000:]
    dom = out.stdout
    for key in SECTION_IDS:
        assert f'id="{key}"' in dom
    for chart in ("training", "layers", "utilization", "confusion"):
        assert re.search(rf'<svg[^>]*class="plot plot-{chart}"', dom)
    assert "VERIFIED bit for bit" in dom
    png = tmp_path / "report.png"
    out = _render(run["html"], tmp_path, f"--screenshot={png}", "--window-size=1280,2400", "--hide-scrollbars")
    assert out.returncode == 0 and png.is_file(), out.stderr[-2000:]
    import matplotlib.image

    image = matplotlib.image.imread(png)
    assert image.shape[:2] == (2400, 1280)
    colors = np.unique((image[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colors) > 50 and float(image[..., :3].std()) > 0.05


@pytest.mark.browser
def test_partial_report_renders_the_escaped_name_as_text(chromium, tmp_path):
    folder = _partial(tmp_path, name="<script>document.title='x'</script>")
    html_path, _ = report.write(folder)
    out = _render(html_path, tmp_path, "--dump-dom")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "<script" not in out.stdout
    assert "&lt;script&gt;document.title='x'&lt;/script&gt;" in out.stdout
    assert out.stdout.count("not run yet") >= 5


# ----------------------------------------------------------------------------------------- plots
def _estimate(board, lut, ff, dsp, bram18, limit=0.8):
    util = {"lut": lut, "ff": ff, "dsp": dsp, "bram18": bram18, "uram": 0.0}
    return {
        "board": {"name": board},
        "utilization_percent": util,
        "utilization_limit": limit,
        "fits": all(v is not None and v <= 100 * limit for v in util.values()),
    }


ESTIMATES = [
    _estimate("pynq-z2", 412.3, 35.2, 0.0, 78.9),
    _estimate("zcu104", 78.5, 6.1, None, 81.0),
    _estimate("u250", 12.0, 1.2, 0.5, 3.3),
]


def test_utilization_chart_is_deterministic_with_a_legend_and_marked_overflow():
    svg = plots.utilization(ESTIMATES)
    assert svg == plots.utilization([dict(e) for e in ESTIMATES])
    assert svg.startswith("<svg") and "<!DOCTYPE" not in svg and "dc:date" not in svg.lower() and "<!--" not in svg
    assert 'id="legend_1"' in svg
    for name in ("LUT", "FF", "DSP", "BRAM18", "limit 80%"):
        assert f">{name}</text>" in svg
    assert len(re.findall(r'id="over-mark', svg)) == 2  # 412 % LUT and a DSP on a board without DSPs
    assert ">412%</text>" in svg and ">board has 0</text>" in svg
    other = plots.utilization(ESTIMATES[1:])
    assert other != svg and ">412%</text>" not in other


def test_utilization_bars_over_100_stop_at_the_axis_end():
    fig, ax = plots._utilization_figure(ESTIMATES)
    try:
        widths = sorted(round(p.get_width(), 6) for p in ax.patches)
        assert max(widths) == 100.0 and widths.count(100.0) == 2
        assert ax.get_xlim() == (0.0, 100.0)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_utilization_limit_line_crosses_no_label():
    # 78.5 % and 78.9 % put their labels across the 80 % limit
    fig, ax = plots._utilization_figure(ESTIMATES)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        texts = [t for t in ax.texts if (t.get_gid() or "").startswith("value-label-")]
        lines = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("limit-line-")]
        assert len(texts) == 12 and len(lines) >= 2
        x_line = ax.transData.transform((80.0, 0))[0]
        across = [t for t in texts if t.get_window_extent(renderer).x0 <= x_line <= t.get_window_extent(renderer).x1]
        assert len(across) >= 2  # the labels the line must avoid
        for line in lines:
            seg = line.get_window_extent(renderer)
            for t in texts:
                box = t.get_window_extent(renderer)
                assert not (box.x0 <= seg.x1 and seg.x0 <= box.x1 and box.y0 < seg.y1 and seg.y0 < box.y1), t.get_text()
        # the segments together still span most of the axes' height
        span = sum(ln.get_window_extent(renderer).height for ln in lines)
        assert span > 0.6 * ax.get_window_extent(renderer).height
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_training_curves_and_confusion_matrix_are_deterministic():
    history = {
        "epoch": [1, 2, 3],
        "loss": [2.0, 1.0, 0.5],
        "accuracy": [0.3, 0.6, 0.8],
        "val_loss": [2.1, 1.2, 1.3],
        "val_accuracy": [0.25, 0.55, 0.5],
        "learning_rate": [0.01, 0.009, 0.0081],
        "best_epoch": 2,
    }
    svg = plots.training_curves(history)
    assert svg == plots.training_curves(dict(history))
    assert "best-epoch" in svg and ">validation</text>" in svg and ">learning rate</text>" in svg
    assert svg != plots.training_curves({**history, "best_epoch": 3})
    m = [[5, 1], [0, 7]]
    cm = plots.confusion_matrix(m)
    assert cm == plots.confusion_matrix(np.array(m)) and ">7</text>" in cm and ">5</text>" in cm
    assert "share of the true label" in cm  # the colour scale says what the shade means
    assert "<image" not in cm  # drawn as vectors
    # the scale is one gradient-filled shape: 256 cells left light seams between them in browsers
    assert cm.count("<linearGradient") == 1 and cm.count("url(#colour-scale-gradient)") == 1
    assert '<stop offset="0.00000" stop-color="#08306b"/>' in cm  # Blues' darkest at the top (share 1)


def _svg_width(svg: str) -> float:
    return float(re.search(r'<svg[^>]*\bwidth="([0-9.]+)pt"', svg).group(1))


def test_every_chart_has_a_narrow_drawing_with_the_same_labels():
    """For a phone, each chart is drawn at most 4.4 in wide (its text stays 8 to 10 pt once the
    page scales it to the screen); what it says is the same."""
    history = {"epoch": [1, 2], "loss": [1.0, 0.5], "accuracy": [0.5, 0.7], "learning_rate": [0.01, 0.009]}
    est = {
        "rows": [{"name": f"node_{i}", "lut": 10 * i, "ff": 5 * i, "dsp": i, "bram18": 0} for i in range(3)],
        "available": {"lut": 100, "ff": 200, "dsp": 10, "bram18": 4},
    }
    cases = [
        (plots.training_curves, history, (">loss</text>", ">accuracy</text>", ">learning rate</text>")),
        (plots.layer_resources, est, (">node_2</text>", ">LUT (total 30 of 100)</text>")),
        (plots.utilization, ESTIMATES, (">412%</text>", ">limit 80%</text>")),
        (plots.confusion_matrix, (5 * np.eye(10, dtype=int) + 1).tolist(), (">6</text>", "share of the true label")),
    ]
    for draw, data, texts in cases:
        wide, narrow = draw(data), draw(data, narrow=True)
        assert narrow == draw(data, narrow=True) and narrow != wide
        assert _svg_width(narrow) <= 4.4 * 72 < _svg_width(wide)
        for text in texts:
            assert text in wide and text in narrow, (draw.__name__, text)


def test_per_node_bars_mark_the_board_only_where_the_design_is_over_the_limit():
    rows = [{"name": f"node_{i}", "lut": 300, "ff": 10, "dsp": 0, "bram18": 1} for i in range(2)]
    est = {"rows": rows, "available": {"lut": 500, "ff": 200, "dsp": 10, "bram18": 4}, "utilization_limit": 0.8}
    svg = plots.layer_resources(est)
    assert 'id="capacity-line-lut"' in svg and 'id="total-bar-lut"' in svg and 'id="capacity-limit-lut"' in svg
    assert ">600</text>" in svg and "> board 500</text>" in svg  # the total, against the board's 500
    for key in ("ff", "dsp", "bram18"):
        assert f"capacity-line-{key}" not in svg and f"total-bar-{key}" not in svg
    fits = plots.layer_resources({**est, "available": {**est["available"], "lut": 5000}})
    assert "capacity-line" not in fits and "total-bar" not in fits


def test_layer_resources_labels_every_node():
    est = {
        "rows": [{"name": f"node_{i}", "lut": 10 * i, "ff": 5 * i, "dsp": i, "bram18": 0} for i in range(3)],
        "available": {"lut": 100, "ff": 200, "dsp": 10, "bram18": 4},
    }
    svg = plots.layer_resources(est)
    assert svg == plots.layer_resources(est)
    for i in range(3):
        assert f">node_{i}</text>" in svg
    assert ">LUT (total 30 of 100)</text>" in svg
    hostile = {**est, "rows": [{**est["rows"][0], "name": "<b>x</b> & $y$"}]}
    svg = plots.layer_resources(hostile)
    assert ">&lt;b&gt;x&lt;/b&gt; &amp; $y$</text>" in svg and "<b>" not in svg  # escaped, never mathtext


def test_a_mismatch_is_the_verdict_and_its_first_difference_is_shown(tmp_path):
    folder = _partial(tmp_path)
    verify = {
        "samples": 3,
        "mismatches": {"keras_vs_emulator": 0, "emulator_vs_csim": 2},
        "first_mismatches": [
            {"between": "emulator/csim", "sample": 1, "layer": "dense<1>", "source": "q", "expected": [1, 2], "got": [1, 3]}
        ],
        "stream_leftovers": ["layer2_out: 4 values left"],
        "keras_caveats": [{"node": "bn", "reason": "ties at 0.5"}],
        "accuracy": {"keras": 2 / 3, "emulator": 2 / 3, "csim": 1 / 3},
        "deployed": "csim",
        "classes": 2,
        "confusion_matrix": [[1, 1], [1, 0]],
    }
    (folder / "verify.json").write_text(json.dumps(verify), encoding="utf-8")
    history = {"epoch": [1, 2], "loss": [1.0, 0.5], "val_loss": [1.1, 0.9], "best_epoch": 2, "stopped_early": True}
    (folder / "history.json").write_text(json.dumps(history), encoding="utf-8")
    data = report.build(folder)
    assert data["verdict"]["verified"] is False and data["verdict"]["text"].startswith("MISMATCH")
    assert data["verdict"]["legs"] == ["keras_vs_emulator", "emulator_vs_csim"]
    assert data["sections"]["accuracy"]["csim"] == 1 / 3 and data["sections"]["accuracy"]["samples"] == 3
    tr = data["sections"]["training"]
    assert tr["best_epoch"] == 2 and tr["stopped_early"] is True and tr["final"]["val_loss"] == 0.9
    page = report.render(data)
    assert '<span class="badge bad">MISMATCH</span>' in page
    assert "<code>dense&lt;1&gt;</code>" in page and "[1, 3]" in page and "layer2_out: 4 values left" in page
    assert "ties at 0.5" in page and "stopped early" in page and "best-epoch" in page
