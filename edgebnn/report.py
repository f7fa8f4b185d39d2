"""A run's report: ``report.json`` (the data) and ``report.html`` (one self-contained page).

:func:`build` reads what a run folder holds (``config.yaml``, ``run.json``, ``history.json``,
``graph.npz``, ``verify.json``, ``estimate.json``, ``summary.json``); a stage that has not run
yet, or whose file cannot be read, leaves its section with a ``status`` and a ``note`` saying
which command makes it. :func:`write` writes both files, each completely or not at all. The page
needs no network and no JavaScript: the charts (:mod:`edgebnn.plots`) are inline SVG, the style
is inline, every string read from a file is escaped.

report.json, field by field:

- ``format``: ``"edgebnn-report"``; ``version``: 1.
- ``run``: ``name`` (config.yaml's ``name``, else summary.json's, else the folder's name),
  ``board`` (config.yaml's ``board``, else estimate.json's), ``versions`` (run.json's tool
  versions, ``{}`` when absent), ``stages`` (stage -> ``{"finished", "seconds"}`` from run.json).
- ``verdict``: ``verified`` (true when every leg that ran agrees bit for bit and no stream data
  was left over, false on any mismatch, null before verify), ``legs`` (the legs compared:
  ``"keras_vs_emulator"`` and, after csim, ``"emulator_vs_csim"``), ``fits`` (the run's board:
  true, false, or null before estimate), ``board``, ``text`` (one line, as in the page's header).
- ``sections``: ``training``, ``layers``, ``verification``, ``resources``, ``accuracy``; each has
  ``status`` (``"ok"``, ``"not run yet"`` or ``"unreadable"``) and, unless ``"ok"``, ``note``
  (one sentence naming the command that makes it, or why the file cannot be read). When ``"ok"``:

  - ``training``: ``epochs`` (count), ``best_epoch`` (int or null), ``stopped_early`` (bool),
    ``final`` (the last epoch's ``loss``, ``accuracy``, ``val_loss``, ``val_accuracy``,
    ``learning_rate``; null where not recorded), ``history`` (history.json's curves as lists).
  - ``layers``: ``rows``, one per graph node in execution order: ``node``, ``op``, ``inputs``
    (node names), ``source`` (the Keras layers it was frozen from), ``output_shape`` (no batch
    axis), ``activation_type`` (the output's fixed-point type), ``activation_bits`` (its width),
    ``weight_type`` and ``weight_bits`` (its width; null for a node without weights),
    ``weight_values`` (``"binary"``: codes only -1 and +1, ``"ternary"``: -1, 0, +1, else ``"fixed"``), ``parameters`` (stored
    values the hardware holds: weight and bias codes, thresholds, affine scale and offset),
    ``macs`` (multiply-accumulates per sample of a node with weights: output positions times
    weight count; 0 for the others); ``totals``: ``parameters``, ``macs`` and ``weight_bits``
    (the memory of all weight codes, in bits).
  - ``verification``: ``samples``, ``mismatches`` (``keras_vs_emulator``: int,
    ``emulator_vs_csim``: int or null before csim), ``first_mismatches`` (each ``between``,
    ``sample``, ``layer``, ``source``, ``expected``, ``got``), ``stream_leftovers`` (strings),
    ``keras_caveats`` (each ``node`` and ``reason``).
  - ``resources``: ``board`` (the run's board), ``utilization_limit`` (a fraction), ``run_board``
    (that board's ``totals``, ``available``, ``utilization_percent`` (null where the board has
    none of a used resource), ``fits``, ``latency_cycles``, ``latency_ns``, ``ii``, ``strategy``,
    ``io_type``, ``reuse_factor``, ``warnings`` and ``rows``: per node ``name``, ``op``, ``lut``,
    ``ff``, ``dsp``, ``bram18``, ``uram``, ``latency``, ``ii``), ``boards`` (every board estimated:
    ``board``, ``part``, ``totals``, ``available``, ``utilization_percent``, ``fits``,
    ``latency_cycles``).
  - ``accuracy``: ``keras``, ``emulator``, ``csim`` (fractions; ``csim`` null before csim),
    ``deployed`` (``"csim"`` or ``"emulator"``: whose predictions the matrix counts),
    ``classes``, ``confusion_matrix`` (rows: true label, columns: deployed prediction),
    ``samples`` (the matrix's sum).
"""

from __future__ import annotations

import html
import json
import math
import os
import pathlib
import re
from typing import Any

from .errors import EdgebnnError
from .outputs import MARKER, write_file

FORMAT = "edgebnn-report"
FORMAT_VERSION = 1
SECTIONS = ("training", "layers", "verification", "resources", "accuracy")
TITLES = {
    "training": "Training",
    "layers": "Layers",
    "verification": "Verification",
    "resources": "Resources",
    "accuracy": "Accuracy",
}
# the stage (command) that makes what each section reads
STAGE_OF = {"training": "train", "layers": "freeze", "verification": "verify", "resources": "estimate", "accuracy": "verify"}
FILE_OF = {
    "training": "history.json",
    "layers": "graph.npz",
    "verification": "verify.json",
    "resources": "estimate.json",
    "accuracy": "verify.json",
}
PARAM_KEYS = ("weight", "bias", "thresholds", "scale", "offset")
RESOURCE_KEYS = ("lut", "ff", "dsp", "bram18", "uram")


class ReportError(EdgebnnError):
    """A folder the report cannot be made from."""


# ------------------------------------------------------------------------------------------- build
def build(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The report of the run folder ``run_dir`` as plain JSON data (see the module docstring)."""
    run = _open(run_dir)
    shown = os.fspath(run_dir)
    config = _read_yaml(run / "config.yaml")
    manifest = _read_json_or_none(run / "run.json")
    summary = _read_json_or_none(run / "summary.json")
    config = config if isinstance(config, dict) else {}
    manifest = manifest if isinstance(manifest, dict) else {}
    summary = summary if isinstance(summary, dict) else {}

    sections: dict[str, dict[str, Any]] = {}
    sections["training"] = _section(run, shown, "training", _training)
    sections["layers"] = _section(run, shown, "layers", _layers)
    sections["verification"] = _section(run, shown, "verification", _verification)
    sections["resources"] = _section(run, shown, "resources", _resources)
    sections["accuracy"] = _section(run, shown, "accuracy", _accuracy)

    board = config.get("board") if isinstance(config.get("board"), str) else None
    if sections["resources"]["status"] == "ok":
        board = board or sections["resources"]["board"]
    name = config.get("name") if isinstance(config.get("name"), str) else None
    name = name or (summary.get("name") if isinstance(summary.get("name"), str) else None) or run.name
    stages = manifest.get("stages") if isinstance(manifest.get("stages"), dict) else {}
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "run": {
            "name": name,
            "board": board,
            "versions": manifest.get("versions") if isinstance(manifest.get("versions"), dict) else {},
            "stages": {
                str(k): {"finished": v.get("finished"), "seconds": v.get("seconds")}
                for k, v in stages.items()
                if isinstance(v, dict)
            },
        },
        "verdict": _verdict(sections, board),
        "sections": sections,
    }


def write(run_dir: str | os.PathLike) -> tuple[pathlib.Path, pathlib.Path]:
    """Write ``report.json`` and ``report.html`` into the run folder ``run_dir``, each completely
    or not at all; returns their paths ``(html_path, json_path)``."""
    data = build(run_dir)
    run = _open(run_dir)
    page = render(data)
    text = json.dumps(data, indent=2) + "\n"
    json_path, html_path = run / "report.json", run / "report.html"
    write_file(json_path, lambda fh: fh.write(text), what="report.json")
    write_file(html_path, lambda fh: fh.write(page), what="report.html")
    return html_path, json_path


def _open(run_dir) -> pathlib.Path:
    path = pathlib.Path(os.path.abspath(os.fspath(run_dir)))
    shown = os.fspath(run_dir)
    if not path.exists():
        raise ReportError(f"run folder {shown!r} does not exist; give the folder `edgebnn train` or `edgebnn run` made")
    if not path.is_dir():
        raise ReportError(f"{shown!r} is a file, not a run folder; give the folder `edgebnn train` or `edgebnn run` made")
    if not (path / MARKER).is_file() and not (path / "summary.json").is_file():
        raise ReportError(
            f"{shown!r} is not an edgebnn run folder (it has neither {MARKER} nor summary.json); give the folder "
            "`edgebnn train` or `edgebnn run` made"
        )
    return path


def _read_json(path: pathlib.Path):
    """The JSON content of ``path``, None when it is absent; a file that cannot be read raises
    :class:`_Unreadable`."""
    if not path.exists():
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh, parse_constant=lambda c: None)
    except (OSError, ValueError) as err:
        raise _Unreadable(f"{path.name} cannot be read ({' '.join(str(err).split())})") from None


def _read_json_or_none(path: pathlib.Path):
    """The JSON content of ``path``; None when it is absent or cannot be read (the header then
    shows less, the sections say what is missing)."""
    try:
        return _read_json(path)
    except _Unreadable:
        return None


def _read_yaml(path: pathlib.Path):
    import yaml

    if not path.exists():
        return None
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


class _Unreadable(Exception):
    """A file of the run folder that exists but cannot be read (the section says so)."""


def _section(run: pathlib.Path, shown: str, key: str, make) -> dict[str, Any]:
    file = FILE_OF[key]
    stage = STAGE_OF[key]
    if not (run / file).exists():
        return {"status": "not run yet", "note": f"not run yet: `edgebnn {stage} {shown}` makes {file}"}
    try:
        return {"status": "ok", **make(run)}
    except (_Unreadable, EdgebnnError, KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
        detail = " ".join(str(err).split()) or type(err).__name__
        if isinstance(err, (KeyError, TypeError, ValueError, IndexError, AttributeError)) and not isinstance(err, EdgebnnError):
            detail = f"{file} is malformed ({type(err).__name__}: {detail})"
        return {"status": "unreadable", "note": f"{detail}; run `edgebnn {stage} {shown}` again"}


# ---------------------------------------------------------------------------------------- sections
def _training(run: pathlib.Path) -> dict[str, Any]:
    history = _read_json(run / "history.json")
    if not isinstance(history, dict):
        raise ValueError("history.json must hold a mapping of curves")
    curves = {k: [_number(v) for v in vs] for k, vs in history.items() if isinstance(vs, list)}
    n = len(curves.get("epoch") or curves.get("loss") or [])
    curves.setdefault("epoch", list(range(1, n + 1)))

    def last(key):
        values = curves.get(key) or []
        return values[-1] if values else None

    best = history.get("best_epoch")
    return {
        "epochs": n,
        "best_epoch": int(best) if isinstance(best, (int, float)) and not isinstance(best, bool) else None,
        "stopped_early": bool(history.get("stopped_early", False)),
        "final": {k: last(k) for k in ("loss", "accuracy", "val_loss", "val_accuracy", "learning_rate")},
        "history": curves,
    }


def _number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if isinstance(v, float) and not math.isfinite(v) else v


def layer_rows(graph) -> list[dict[str, Any]]:
    """One row per node of a deployment graph (see ``layers`` in the module docstring)."""
    rows = []
    for node in graph.nodes:
        wt = node.fixed_attr("weight_type") if "weight" in node.params else None
        weight = node.params.get("weight")
        macs = math.prod(node.shape[:-1]) * int(weight.size) if weight is not None else 0
        rows.append(
            {
                "node": node.name,
                "op": node.op,
                "inputs": list(node.inputs),
                "source": node.source,
                "output_shape": list(node.shape),
                "activation_type": str(node.type),
                "activation_bits": node.type.width,
                "weight_type": None if wt is None else str(wt),
                "weight_bits": None if wt is None else wt.width,
                "weight_values": None if weight is None else _weight_values(weight),
                "parameters": sum(int(node.params[k].size) for k in PARAM_KEYS if k in node.params),
                "macs": macs,
            }
        )
    return rows


def _weight_values(codes) -> str:
    """What a node's weight codes are: ``"binary"`` (only -1 and +1), ``"ternary"`` (only -1, 0
    and +1) or ``"fixed"``."""
    import numpy as np

    present = set(np.unique(codes).tolist())
    if present <= {-1, 1}:
        return "binary"
    return "ternary" if present <= {-1, 0, 1} else "fixed"


def _layers(run: pathlib.Path) -> dict[str, Any]:
    from .graph import Graph

    graph = Graph.load(run / "graph.npz")
    rows = layer_rows(graph)
    weight_bits = sum(
        int(n.params["weight"].size) * n.fixed_attr("weight_type").width for n in graph.nodes if "weight" in n.params
    )
    return {
        "graph": graph.name,
        "rows": rows,
        "totals": {
            "parameters": sum(r["parameters"] for r in rows),
            "macs": sum(r["macs"] for r in rows),
            "weight_bits": weight_bits,
        },
    }


def _verify_json(run: pathlib.Path) -> dict[str, Any]:
    data = _read_json(run / "verify.json")
    if not isinstance(data, dict):
        raise ValueError("verify.json must hold a mapping")
    return data


def _verification(run: pathlib.Path) -> dict[str, Any]:
    v = _verify_json(run)
    mm = v["mismatches"]
    return {
        "samples": int(v["samples"]),
        "mismatches": {"keras_vs_emulator": mm.get("keras_vs_emulator"), "emulator_vs_csim": mm.get("emulator_vs_csim")},
        "first_mismatches": list(v.get("first_mismatches") or []),
        "stream_leftovers": [str(s) for s in v.get("stream_leftovers") or []],
        "keras_caveats": list(v.get("keras_caveats") or []),
    }


def _resources(run: pathlib.Path) -> dict[str, Any]:
    data = _read_json(run / "estimate.json")
    board = data["board"]
    estimates = data["estimates"]
    main = estimates[board]
    keep = ("totals", "available", "utilization_percent", "fits", "latency_cycles", "latency_ns", "ii")
    rows = [{k: r[k] for k in ("name", "op", *RESOURCE_KEYS, "latency", "ii")} for r in main["rows"]]
    return {
        "board": board,
        "utilization_limit": main["utilization_limit"],
        "run_board": {
            **{k: main[k] for k in keep},
            "strategy": main.get("strategy"),
            "io_type": main.get("io_type"),
            "reuse_factor": main.get("reuse_factor"),
            "warnings": list(main.get("warnings") or []),
            "rows": rows,
        },
        "boards": [
            {
                "board": name,
                "part": (e.get("board") or {}).get("part"),
                "totals": e["totals"],
                "available": e["available"],
                "utilization_percent": e["utilization_percent"],
                "utilization_limit": e["utilization_limit"],
                "fits": e["fits"],
                "latency_cycles": e["latency_cycles"],
            }
            for name, e in estimates.items()
        ],
    }


def _accuracy(run: pathlib.Path) -> dict[str, Any]:
    v = _verify_json(run)
    acc = v["accuracy"]
    matrix = [[int(c) for c in row] for row in v["confusion_matrix"]]
    deployed = v.get("deployed") or ("csim" if acc.get("csim") is not None else "emulator")
    return {
        "keras": acc.get("keras"),
        "emulator": acc.get("emulator"),
        "csim": acc.get("csim"),
        "deployed": deployed,
        "classes": int(v.get("classes", len(matrix))),
        "confusion_matrix": matrix,
        "samples": sum(map(sum, matrix)),
    }


def _verdict(sections: dict[str, dict[str, Any]], board: str | None) -> dict[str, Any]:
    ver, res = sections["verification"], sections["resources"]
    verified, legs = None, []
    if ver["status"] == "ok":
        mm = ver["mismatches"]
        legs = [k for k in ("keras_vs_emulator", "emulator_vs_csim") if mm.get(k) is not None]
        verified = not any(mm.get(k) for k in legs) and not ver["stream_leftovers"]
    fits = res["run_board"]["fits"] if res["status"] == "ok" else None
    parts = []
    if verified is None:
        parts.append("not verified yet")
    elif verified:
        shown = "Keras = emulator = C-simulation" if "emulator_vs_csim" in legs else "Keras = emulator; C-simulation not run yet"
        parts.append(f"VERIFIED bit for bit ({shown})")
    else:
        parts.append("MISMATCH")
    where = board or "the board"
    parts.append(f"not estimated yet on {where}" if fits is None else (f"fits {where}" if fits else f"does not fit {where}"))
    return {"verified": verified, "legs": legs, "fits": fits, "board": board, "text": "; ".join(parts)}


# ------------------------------------------------------------------------------------------- html
def _e(value) -> str:
    return html.escape(str(value), quote=True)


_CSS = """
:root { --ok: #1b7a3d; --bad: #b3261e; --muted: #666; --line: #ddd; --head: #f4f5f7; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #222;
       margin: 0; background: #fafafa; }
header { background: #1f2a37; color: #fff; padding: 18px 32px 14px; }
header h1 { margin: 0 0 8px; font-size: 22px; font-weight: 600; }
header .meta { color: #c9d1db; font-size: 13px; }
.badges { margin: 10px 0 4px; display: flex; gap: 10px; flex-wrap: wrap; }
.badge { display: inline-block; padding: 5px 12px; border-radius: 4px; font-weight: 600; font-size: 14px; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); } .badge.none { background: #5b6673; }
nav { background: #fff; border-bottom: 1px solid var(--line); padding: 8px 32px; position: sticky; top: 0; }
nav a { color: #1f4e8c; margin-right: 18px; text-decoration: none; font-weight: 500; }
main { padding: 8px 32px 40px; max-width: 1320px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 20px 16px; margin: 18px 0; }
h2 { font-size: 18px; margin: 10px 0 10px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 9px; text-align: left; }
td.n, th { white-space: nowrap; }
th { background: var(--head); font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: 600; border-top: 2px solid #bbb; }
.scroll { overflow-x: auto; }
.note { color: var(--muted); font-style: italic; }
.missing { color: var(--muted); background: var(--head); padding: 8px 12px; border-radius: 4px; }
.missing code { font-style: normal; }
.good { color: var(--ok); font-weight: 600; } .badv { color: var(--bad); font-weight: 600; }
figure { margin: 8px 0; } figure svg { max-width: 100%; height: auto; }
code { background: var(--head); padding: 1px 4px; border-radius: 3px; }
.mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; white-space: pre-wrap; word-break: break-all; }
"""


def render(data: dict[str, Any]) -> str:
    """The HTML page of a report built by :func:`build`."""
    run, verdict, sections = data["run"], data["verdict"], data["sections"]
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>edgebnn report: {_e(run['name'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header>",
        f"<h1>edgebnn report: {_e(run['name'])}</h1>",
        '<div class="badges">',
        _verify_badge(verdict),
        _fit_badge(verdict),
        "</div>",
        f'<div class="meta" id="verdict">{_e(verdict["text"])}</div>',
        f'<div class="meta">{_versions(run)}</div>',
        "</header>",
        "<nav>" + "".join(f'<a href="#{k}">{TITLES[k]}</a>' for k in SECTIONS) + "</nav>",
        "<main>",
    ]
    renderers = {
        "training": lambda s: _html_training(s),
        "layers": _html_layers,
        "verification": _html_verification,
        "resources": _html_resources,
        "accuracy": _html_accuracy,
    }
    for key in SECTIONS:
        s = sections[key]
        body.append(f'<section id="{key}"><h2>{TITLES[key]}</h2>')
        if s["status"] != "ok":
            body.append(f'<p class="missing">{_code(s["note"])}</p>')
        else:
            body.append(renderers[key](s))
        body.append("</section>")
    body += ["</main></body></html>", ""]
    return "\n".join(body)


def _code(text: str) -> str:
    """``text`` escaped, with its `backquoted` parts as <code>."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", _e(text))


def _verify_badge(verdict) -> str:
    if verdict["verified"] is None:
        return '<span class="badge none">not verified yet</span>'
    if verdict["verified"]:
        return '<span class="badge ok">VERIFIED bit for bit</span>'
    return '<span class="badge bad">MISMATCH</span>'


def _fit_badge(verdict) -> str:
    board = _e(verdict["board"] or "the board")
    if verdict["fits"] is None:
        return f'<span class="badge none">not estimated yet on {board}</span>'
    if verdict["fits"]:
        return f'<span class="badge ok">fits {board}</span>'
    return f'<span class="badge bad">does not fit {board}</span>'


def _versions(run) -> str:
    versions = run.get("versions") or {}
    shown = ", ".join(f"{_e(k)} {_e(v)}" for k, v in versions.items())
    board = f"board {_e(run['board'])}" if run.get("board") else "no board named"
    return board + (f" &middot; {shown}" if shown else "")


_SVG_ID = re.compile(r'\bid="([^"]+)"')


def _inline(svg: str, prefix: str, label: str) -> str:
    """An SVG chart for inlining: its ids (and the references to them) prefixed, so that two
    charts' ids never collide, and labelled for screen readers."""
    ids = set(_SVG_ID.findall(svg))
    svg = _SVG_ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(
        r'(href="#|url\(#)([^")]+)', lambda m: m.group(1) + (f"{prefix}-{m.group(2)}" if m.group(2) in ids else m.group(2)), svg
    )
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{_e(label)}" class="plot plot-{prefix}" ', 1)
    return f"<figure>{svg}</figure>"


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return _e(value)


def _pct(value) -> str:
    return "&ndash;" if value is None else f"{100 * value:.2f}%"


def _table(head: list[str], rows: list[list[str]], numeric: set[int], total: list[str] | None = None) -> str:
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th class="n">{h}</th>' if i in numeric else f"<th>{h}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append(
            "<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        )
    if total is not None:
        out.append(
            '<tr class="total">'
            + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(total))
            + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


def _html_training(s) -> str:
    from . import plots

    f = s["final"]
    parts = [
        f"<p>{s['epochs']} epoch{'' if s['epochs'] == 1 else 's'}; "
        + (f"best epoch {s['best_epoch']}" if s["best_epoch"] is not None else "no best epoch (no validation set)")
        + ("; stopped early" if s["stopped_early"] else "")
        + f". Last epoch: loss {_fmt(f['loss'])}, accuracy {_pct(f['accuracy'])}"
        + (
            f", validation loss {_fmt(f['val_loss'])}, validation accuracy {_pct(f['val_accuracy'])}"
            if f["val_loss"] is not None
            else ""
        )
        + (f", learning rate {_fmt(f['learning_rate'])}" if f["learning_rate"] is not None else "")
        + ".</p>"
    ]
    if s["epochs"]:
        svg = plots.training_curves({**s["history"], "best_epoch": s["best_epoch"]})
        parts.append(_inline(svg, "training", "training curves"))
    if not s["history"].get("learning_rate"):
        parts.append('<p class="note">The learning rate was not recorded.</p>')
    return "".join(parts)


def _html_layers(s) -> str:
    head = [
        "node",
        "op",
        "output shape",
        "weight type",
        "activation type",
        "weight bits",
        "activation bits",
        "parameters",
        "MACs",
    ]
    rows = [
        [
            _e(r["node"]) + (f' <span class="note">&larr; {_e(", ".join(r["inputs"]))}</span>' if len(r["inputs"]) > 1 else ""),
            _e(r["op"]),
            _e("(" + ", ".join(map(str, r["output_shape"])) + ")"),
            _fmt(r["weight_type"]),
            _e(r["activation_type"]),
            _fmt(r["weight_bits"]) + (f' <span class="note">({r["weight_values"]})</span>' if r["weight_values"] else ""),
            _e(r["activation_bits"]),
            f"{r['parameters']:,}",
            f"{r['macs']:,}",
        ]
        for r in s["rows"]
    ]
    t = s["totals"]
    total = ["total", "", "", "", "", "", "", f"{t['parameters']:,}", f"{t['macs']:,}"]
    return (
        f"<p>Deployment graph <code>{_e(s['graph'])}</code>: {len(s['rows'])} nodes, {t['parameters']:,} parameters "
        f"({t['weight_bits']:,} bits of weights), {t['macs']:,} multiply-accumulates per sample.</p>"
        + _table(head, rows, {5, 6, 7, 8}, total)
    )


def _html_verification(s) -> str:
    mm = s["mismatches"]
    legs = [("Keras vs emulator", mm["keras_vs_emulator"]), ("emulator vs C-simulation", mm["emulator_vs_csim"])]
    rows = []
    for name, count in legs:
        if count is None:
            shown = '<span class="note">not run yet: <code>edgebnn csim</code> then <code>edgebnn verify</code></span>'
        elif count == 0:
            shown = '<span class="good">0 (bit for bit)</span>'
        else:
            shown = f'<span class="badv">{count:,}</span>'
        rows.append([name, _e(f"{s['samples']:,}"), shown])
    parts = [_table(["leg", "samples", "mismatching samples"], rows, {1, 2})]
    for m in s["first_mismatches"]:
        parts.append(
            f"<h3>First mismatch ({_e(m.get('between'))})</h3><p>sample {_e(m.get('sample'))}, node "
            f"<code>{_e(m.get('layer'))}</code> (from {_e(m.get('source'))})</p>"
            f'<p>expected:</p><div class="mono">{_e(m.get("expected"))}</div>'
            f'<p>got:</p><div class="mono">{_e(m.get("got"))}</div>'
        )
    if s["stream_leftovers"]:
        parts.append("<h3>Stream data left over</h3><ul>" + "".join(f"<li>{_e(w)}</li>" for w in s["stream_leftovers"]) + "</ul>")
    else:
        parts.append('<p class="note">No stream data was left over.</p>')
    if s["keras_caveats"]:
        parts.append(
            "<h3>Caveats</h3><ul>"
            + "".join(f"<li><code>{_e(c.get('node') or 'graph')}</code>: {_e(c.get('reason'))}</li>" for c in s["keras_caveats"])
            + "</ul>"
        )
    else:
        parts.append('<p class="note">No caveats.</p>')
    return "".join(parts)


def _html_resources(s) -> str:
    from . import plots

    main = s["run_board"]
    names = ("LUT", "FF", "DSP", "BRAM18", "URAM")
    head = ["node", "op", *names, "latency", "II"]
    rows = [
        [_e(r["name"]), _e(r["op"]), *(f"{r[k]:,}" for k in RESOURCE_KEYS), f"{r['latency']:,}", f"{r['ii']:,}"]
        for r in main["rows"]
    ]
    total = ["total", "", *(f"{main['totals'][k]:,}" for k in RESOURCE_KEYS), f"{main['latency_cycles']:,}", f"{main['ii']:,}"]
    avail = [_e(s["board"]), "available", *(f"{main['available'][k]:,}" for k in RESOURCE_KEYS), "", ""]
    util = ["% of board", "", *(_upct(main["utilization_percent"].get(k)) for k in RESOURCE_KEYS), "", ""]
    fits = '<span class="good">fits</span>' if main["fits"] else '<span class="badv">does not fit</span>'
    limit = f"{100 * s['utilization_limit']:g}%"
    parts = [
        f"<h3>Per node on {_e(s['board'])}</h3>",
        f"<p>{_e(main.get('strategy'))}, {_e(main.get('io_type'))}, reuse factor {_e(json.dumps(main.get('reuse_factor')))}: "
        f"{fits} under {limit} of every resource; latency {main['latency_cycles']:,} cycles = {_fmt(main['latency_ns'])} ns, "
        f"II {main['ii']:,} cycle{'' if main['ii'] == 1 else 's'}.</p>",
        _table(head, rows, set(range(2, 9)), total).replace("</tbody>", _row(avail) + _row(util) + "</tbody>"),
    ]
    parts += [f'<p class="note">warning: {_e(w)}</p>' for w in main["warnings"]]
    parts.append(
        _inline(plots.layer_resources({"rows": main["rows"], "available": main["available"]}), "layers", "resources per node")
    )
    parts.append(f"<h3>Every board (limit {limit})</h3>")
    boards = [
        {
            "board": {"name": b["board"]},
            "utilization_percent": b["utilization_percent"],
            "utilization_limit": b["utilization_limit"],
            "fits": b["fits"],
        }
        for b in s["boards"]
    ]
    parts.append(_inline(plots.utilization(boards), "utilization", "utilization per board"))
    brow = [
        [
            _e(b["board"]),
            _e(b["part"] or ""),
            *(_upct(b["utilization_percent"].get(k)) for k in ("lut", "ff", "dsp", "bram18")),
            # most boards have no UltraRAM, and the designs use none there: a dash, not "board has 0"
            "—" if b["utilization_percent"].get("uram") is None else _upct(b["utilization_percent"]["uram"]),
            '<span class="good">yes</span>' if b["fits"] else '<span class="badv">no</span>',
        ]
        for b in s["boards"]
    ]
    parts.append(_table(["board", "part", "LUT", "FF", "DSP", "BRAM18", "URAM", "fits"], brow, {2, 3, 4, 5, 6}))
    return "".join(parts)


def _row(cells) -> str:
    return "<tr>" + "".join(f'<td class="n">{c}</td>' if 2 <= i <= 8 else f"<td>{c}</td>" for i, c in enumerate(cells)) + "</tr>"


def _upct(value) -> str:
    return "board has 0" if value is None else f"{value:.1f}%"


def _html_accuracy(s) -> str:
    from . import plots

    deployed = {"csim": "C-simulation", "emulator": "emulator"}.get(s["deployed"], s["deployed"])
    rows = [
        ["Keras (model.predict)", _pct(s["keras"])],
        ["emulator", _pct(s["emulator"])],
        [
            "C-simulation (deployed)",
            _pct(s["csim"]) if s["csim"] is not None else '<span class="note">not run yet: <code>edgebnn csim</code></span>',
        ],
    ]
    parts = [
        _table(["predictions of", "accuracy"], rows, {1}),
        f"<h3>Confusion matrix of the deployed predictions ({_e(deployed)}, {s['samples']:,} samples)</h3>",
    ]
    if s["confusion_matrix"]:
        parts.append(_inline(plots.confusion_matrix(s["confusion_matrix"]), "confusion", "confusion matrix"))
    return "".join(parts)
