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
  versions, ``{}`` when absent), ``stages`` (stage -> ``{"finished", "seconds"}`` from run.json),
  ``date`` (when the last stage finished, ``"YYYY-MM-DD HH:MM UTC"``, null without run.json),
  ``export`` (``strategy``, ``reuse_factor``, ``io_type``, ``clock_period_ns``: the estimate's
  once estimate has run, else config.yaml's ``export``; null where neither says).
- ``verdict``: ``verified`` (true when every leg that ran agrees bit for bit and no stream data
  was left over, false on any mismatch, null before verify), ``legs`` (the legs compared:
  ``"keras_vs_emulator"`` and, after csim, ``"emulator_vs_csim"``), ``fits`` (the run's board:
  true, false, or null before estimate), ``board``, ``next_step`` (the command that finds a
  design that fits, when it does not fit; else null), ``text`` (one line, as in the page's header).
- ``key_numbers``: the strip under the verdict, rows of ``name`` and ``items`` (each ``label``,
  ``value`` as shown, ``state``: ``"ok"``, ``"bad"`` or null): the accuracy, each verification
  leg, each resource's share of the run's board, latency, II and clock, the build options, the
  run's date and, when summary.json has an ``rtl`` section, the hardware synthesized by open
  tools (see :func:`key_numbers`).
- ``sections``: ``training``, ``layers``, ``verification``, ``resources``, ``accuracy``; each has
  ``status`` (``"ok"``, ``"not run yet"`` or ``"unreadable"``) and, unless ``"ok"``, ``note``
  (one sentence naming the command that makes it, or why the file cannot be read). When ``"ok"``:

  - ``training``: ``epochs`` (count), ``best_epoch`` (int or null), ``stopped_early`` (bool),
    ``final`` (the last epoch's ``loss``, ``accuracy``, ``val_loss``, ``val_accuracy``,
    ``learning_rate``; null where not recorded), ``history`` (history.json's curves as lists).
  - ``layers``: ``rows``, one per graph node in execution order: ``node``, ``op``, ``inputs``
    (node names), ``source`` (the Keras layers it was frozen from), ``output_shape`` (no batch
    axis), ``activation_type`` (the output's fixed-point type), ``activation_bits`` (its width),
    ``weight_type`` (the type the weights are stored in) and ``weight_bits`` (bits per weight
    as ``edgebnn summary`` counts them: 1 for ±1 codes, 2 for ternary ones, else the type's
    width; null for a node without weights),
    ``weight_values`` (``"binary"``: codes only -1 and +1, ``"ternary"``: -1, 0, +1, else ``"fixed"``), ``parameters`` (stored
    values the hardware holds: weight and bias codes, thresholds, affine scale and offset),
    ``macs`` (multiply-accumulates per sample of a node with weights: output positions times
    weight count; 0 for the others); ``totals``: ``parameters``, ``macs``, ``weights`` (the
    count of weight codes), ``weight_bits`` (their bits as counted per row) and
    ``weight_storage_bits`` (their bits in the stored types).
  - ``verification``: ``samples``, ``mismatches`` (leg -> mismatching samples: always
    ``keras_vs_emulator`` (int) and ``emulator_vs_csim`` (int, null before csim), then any
    further leg verify.json holds), ``first_mismatches`` (each ``between``,
    ``sample``, ``layer``, ``source``, ``expected``, ``got``), ``stream_leftovers`` (strings),
    ``keras_caveats`` (each ``node`` and ``reason``), ``io_type`` (the run's, or null).
  - ``resources``: ``board`` (the run's board), ``utilization_limit`` (a fraction), ``run_board``
    (that board's ``totals``, ``available``, ``utilization_percent`` (null where the board has
    none of a used resource), ``fits``, ``latency_cycles``, ``latency_ns``, ``ii``, ``strategy``,
    ``io_type``, ``reuse_factor``, ``clock_period_ns``, ``warnings`` and ``rows``: per node ``name``, ``op``, ``lut``,
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

from ..errors import EdgebnnError
from ..outputs import MARKER, write_file

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
RESOURCE_NAMES = {"lut": "LUT", "ff": "FF", "dsp": "DSP", "bram18": "BRAM18", "uram": "URAM"}
# the verification legs verify.json always has (null before the stage that makes the second path)
LEGS = {"keras_vs_emulator": ("Keras", "emulator"), "emulator_vs_csim": ("emulator", "C-simulation")}
PATH_NAMES = {"keras": "Keras", "emulator": "emulator", "csim": "C-simulation", "rtl": "RTL simulation"}


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
    export = _export_options(config, sections["resources"])
    if sections["verification"]["status"] == "ok":
        sections["verification"]["io_type"] = export["io_type"]
    info = {
        "name": name,
        "board": board,
        "versions": manifest.get("versions") if isinstance(manifest.get("versions"), dict) else {},
        "stages": {
            str(k): {"finished": v.get("finished"), "seconds": v.get("seconds")} for k, v in stages.items() if isinstance(v, dict)
        },
    }
    info["date"] = _run_date(info["stages"])
    info["export"] = export
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "run": info,
        "verdict": _verdict(sections, board, shown),
        "key_numbers": key_numbers(sections, info, summary),
        "sections": sections,
    }


def _export_options(config: dict, resources: dict) -> dict[str, Any]:
    """The run's build options: the estimate's (what its numbers are for) once estimate has run,
    else config.yaml's ``export`` (null where neither says)."""
    if resources["status"] == "ok":
        main = resources["run_board"]
        return {k: main.get(k) for k in ("strategy", "reuse_factor", "io_type", "clock_period_ns")}
    export = config.get("export") if isinstance(config.get("export"), dict) else {}
    return {k: export.get(k) for k in ("strategy", "reuse_factor", "io_type", "clock_period_ns")}


def _run_date(stages: dict[str, dict]) -> str | None:
    """When the run's last stage finished, as ``YYYY-MM-DD HH:MM UTC`` (run.json's ISO times)."""
    import datetime

    times = []
    for rec in stages.values():
        try:
            t = datetime.datetime.fromisoformat(str(rec.get("finished")))
        except ValueError:
            continue
        times.append(t if t.tzinfo else t.replace(tzinfo=datetime.UTC))
    if not times:
        return None
    return max(times).astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


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


def _unfinished_training(run: pathlib.Path) -> dict[str, Any] | None:
    """The run folder's training that stopped before its last epoch (see
    :meth:`edgebnn.runfolder.RunFolder.unfinished_training`), or None."""
    from .runfolder import RunFolder

    try:
        return RunFolder(run).unfinished_training()
    except EdgebnnError:
        return None


class _Unreadable(Exception):
    """A file of the run folder that exists but cannot be read (the section says so)."""


def _section(run: pathlib.Path, shown: str, key: str, make) -> dict[str, Any]:
    file = FILE_OF[key]
    stage = STAGE_OF[key]
    if not (run / file).exists():
        unfinished = _unfinished_training(run) if key == "training" else None
        if unfinished is not None:  # a training stopped part way: how far it got, and the command that goes on
            return {
                "status": "not run yet",
                "note": f"stopped after epoch {unfinished['epoch']} of {unfinished['epochs']}; its last checkpoint is kept: "
                f"resume with `{unfinished['resume']}`",
            }
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
        values = None if weight is None else _weight_values(weight)
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
                "weight_bits": None if wt is None else _value_bits(values, wt.width),
                "weight_values": values,
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


def _value_bits(values: str, width: int) -> int:
    """Bits of information per weight, counted as ``edgebnn summary`` counts them: 1 for ±1
    codes, 2 for ternary ones, else the stored type's width."""
    return {"binary": 1, "ternary": 2}.get(values, width)


def _layers(run: pathlib.Path) -> dict[str, Any]:
    from ..graph import Graph

    graph = Graph.load(run / "graph.npz")
    rows = layer_rows(graph)
    by_name = {r["node"]: r for r in rows}
    weighted = [n for n in graph.nodes if "weight" in n.params]
    return {
        "graph": graph.name,
        "rows": rows,
        "totals": {
            "parameters": sum(r["parameters"] for r in rows),
            "macs": sum(r["macs"] for r in rows),
            "weights": sum(int(n.params["weight"].size) for n in weighted),
            "weight_bits": sum(int(n.params["weight"].size) * by_name[n.name]["weight_bits"] for n in weighted),
            "weight_storage_bits": sum(int(n.params["weight"].size) * n.fixed_attr("weight_type").width for n in weighted),
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
    legs = {leg: mm.get(leg) for leg in LEGS}
    # a further simulation compared with the emulator is one more key of verify.json, shown as it comes
    legs.update({str(k): c for k, c in mm.items() if k not in legs})
    return {
        "samples": int(v["samples"]),
        "mismatches": legs,
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
            "clock_period_ns": main.get("clock_period_ns"),
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


def _verdict(sections: dict[str, dict[str, Any]], board: str | None, shown: str = "RUN") -> dict[str, Any]:
    ver, res = sections["verification"], sections["resources"]
    verified, legs = None, []
    if ver["status"] == "ok":
        mm = ver["mismatches"]
        legs = [k for k in mm if mm[k] is not None]
        verified = not any(mm[k] for k in legs) and not ver["stream_leftovers"]
    fits = res["run_board"]["fits"] if res["status"] == "ok" else None
    parts = []
    if verified is None:
        parts.append("not verified yet")
    elif verified:
        chain = ["Keras", "emulator"] + [leg_paths(k)[1] for k in legs if k != "keras_vs_emulator"]
        missing = "; C-simulation not run yet" if "emulator_vs_csim" not in legs else ""
        parts.append(f"VERIFIED bit for bit ({' = '.join(chain)}{missing})")
    else:
        parts.append("MISMATCH")
    where = board or "the board"
    next_step = None
    if fits is None:
        parts.append(f"not estimated yet on {where}")
    elif fits:
        parts.append(f"fits {where}")
    else:
        main = res["run_board"]
        over = [
            f"{RESOURCE_NAMES[k]} {main['utilization_percent'][k]:.0f}%"
            for k in RESOURCE_KEYS
            if _over(
                main["utilization_percent"].get(k), main["available"].get(k), main["totals"].get(k), res["utilization_limit"]
            )
        ]
        next_step = f"edgebnn estimate {shown} --fit"
        parts.append(
            f"does not fit {where} ({', '.join(over) or 'over the limit'} of the device, limit "
            f"{100 * res['utilization_limit']:g}%); next step: `{next_step}` finds the reuse factor that fits"
        )
    return {
        "verified": verified,
        "legs": legs,
        "fits": fits,
        "board": board,
        "next_step": next_step,
        "text": "; ".join(parts),
    }


def leg_paths(leg: str) -> tuple[str, str]:
    """The two paths a verification leg compares, as the page names them (``"a_vs_b"`` for a leg
    it does not know)."""
    if leg in LEGS:
        return LEGS[leg]
    a, _, b = leg.partition("_vs_")
    return PATH_NAMES.get(a, a), PATH_NAMES.get(b, b)


def _over(percent, available, used, limit) -> bool:
    """Whether one resource is over the utilization limit (a used resource the board lacks is)."""
    if not available:
        return bool(used)
    return percent is not None and percent > 100 * limit


# ------------------------------------------------------------------------------------ key numbers
def key_numbers(sections: dict[str, dict[str, Any]], run: dict[str, Any], summary: dict | None = None) -> list[dict[str, Any]]:
    """The strip of key numbers under the verdict: rows of ``{"name", "items"}``, each item
    ``{"label", "value", "state"}`` (``state``: ``"ok"``, ``"bad"`` or null). Each row comes from
    one function of :data:`KEY_ROWS`, called with the report's sections, its ``run`` and
    summary.json's content, which returns None when it has nothing to say; a new kind of result
    is one more function there, a new verification leg needs none."""
    rows = []
    for make in KEY_ROWS:
        row = make(sections, run, summary or {})
        if row is not None:
            rows.append(row)
    return rows


def _item(label: str, value: str, state: str | None = None) -> dict[str, Any]:
    return {"label": label, "value": value, "state": state}


def _key_accuracy(sections, run, summary):
    acc = sections["accuracy"]
    if acc["status"] != "ok":
        return {"name": "accuracy", "items": [_item("deployed", acc["status"])]}
    deployed = {"csim": "C-simulation", "emulator": "emulator"}.get(acc["deployed"], acc["deployed"])
    items = [_item(f"deployed ({deployed})", _pct_text(acc.get(acc["deployed"])))]
    items.append(_item("Keras", _pct_text(acc["keras"])))
    return {"name": "accuracy", "items": items}


def _key_legs(sections, run, summary):
    ver = sections["verification"]
    if ver["status"] != "ok":
        return {"name": "bit for bit", "items": [_item("verification", ver["status"])]}
    items = []
    for leg, count in ver["mismatches"].items():
        label = " = ".join(leg_paths(leg))
        if count is None:
            items.append(_item(label, "not run yet"))
        else:
            items.append(_item(label, f"{count:,} of {ver['samples']:,} differ", "bad" if count else "ok"))
    if ver["stream_leftovers"]:
        items.append(_item("stream data", f"{len(ver['stream_leftovers'])} left over", "bad"))
    return {"name": "bit for bit", "items": items}


def _key_resources(sections, run, summary):
    res = sections["resources"]
    if res["status"] != "ok":
        return {"name": "resources", "items": [_item("estimate", res["status"])]}
    main, limit = res["run_board"], res["utilization_limit"]
    items = []
    for k in RESOURCE_KEYS:
        available, used = main["available"].get(k), main["totals"].get(k)
        if k == "uram" and not available and not used:
            continue  # a board without UltraRAM, and a design that needs none
        over = _over(main["utilization_percent"].get(k), available, used, limit)
        items.append(
            _item(RESOURCE_NAMES[k], _util_text(main["utilization_percent"].get(k), available, used), "bad" if over else "ok")
        )
    items.append(_item("limit", f"{100 * limit:g}% of {res['board']}"))
    return {"name": f"estimate on {res['board']}", "items": items}


def _key_timing(sections, run, summary):
    res = sections["resources"]
    clock = run["export"].get("clock_period_ns")
    items = []
    if res["status"] == "ok":
        main = res["run_board"]
        items.append(_item("latency", f"{main['latency_cycles']:,} cycles = {_num(main['latency_ns'])} ns"))
        items.append(_item("II", f"{main['ii']:,} cycle{'' if main['ii'] == 1 else 's'}"))
    if isinstance(clock, (int, float)) and not isinstance(clock, bool) and clock > 0:
        items.append(_item("clock", f"{_num(clock)} ns ({_num(1000 / clock)} MHz)"))
    return {"name": "timing", "items": items} if items else None


def _key_build(sections, run, summary):
    export = run["export"]
    items = [
        _item(label, _plain(export.get(key)))
        for key, label in (("strategy", "strategy"), ("reuse_factor", "reuse factor"), ("io_type", "io type"))
        if export.get(key) is not None
    ]
    if run.get("date"):
        items.append(_item("finished", run["date"]))
    return {"name": "build", "items": items} if items else None


def _key_rtl(sections, run, summary):
    """The hardware measured by open tools (summary.json's ``rtl``: cell counts and their share
    of the board as fractions in ``utilization``, ``fmax_mhz``, ``cycles_per_sample``), when
    the run synthesized one; a field it lacks is left out."""
    rtl = summary.get("rtl")
    if not isinstance(rtl, dict):
        return None
    share = rtl.get("utilization") if isinstance(rtl.get("utilization"), dict) else {}
    items = []
    for key in ("lut", "ff", "carry", "dsp", "bram"):
        count, part = rtl.get(key), share.get(key)
        if not _is_number(count):
            continue
        if _is_number(part):
            items.append(_item(key.upper(), f"{count:,} ({100 * part:.1f}%)", "bad" if part > 1 else "ok"))
        else:
            items.append(_item(key.upper(), f"{count:,}"))
    if _is_number(rtl.get("fmax_mhz")):
        items.append(_item("Fmax", f"{rtl['fmax_mhz']:.1f} MHz"))
    if _is_number(rtl.get("cycles_per_sample")):
        items.append(_item("cycles per sample", f"{rtl['cycles_per_sample']:g}"))
    flow = rtl.get("flow")
    return {"name": f"synthesized ({flow})" if isinstance(flow, str) else "synthesized", "items": items} if items else None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


KEY_ROWS = [_key_accuracy, _key_legs, _key_resources, _key_timing, _key_build, _key_rtl]


def _pct_text(fraction) -> str:
    return "not run yet" if fraction is None else f"{100 * fraction:.2f}%"


def _util_text(percent, available, used) -> str:
    """A resource's share of the board: a dash where the board has none and none is needed."""
    if not available:
        return "board has 0" if used else "\u2013"
    return "\u2013" if percent is None else f"{percent:.1f}%"


def _num(value) -> str:
    return f"{value:g}" if isinstance(value, float) else f"{value:,}"


def _plain(value) -> str:
    if isinstance(value, dict):  # a reuse factor per layer
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


# ------------------------------------------------------------------------------------------- html
def _e(value) -> str:
    return html.escape(str(value), quote=True)


_CSS = """
:root { --ok: #1b7a3d; --bad: #b3261e; --muted: #666; --line: #ddd; --head: #f4f5f7; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #222;
       margin: 0; background: #fafafa; overflow-wrap: break-word; }
header { background: #1f2a37; color: #fff; padding: 18px 32px 14px; }
header h1 { margin: 0 0 8px; font-size: 22px; font-weight: 600; }
header .meta { color: #c9d1db; font-size: 13px; }
header .meta code { background: #35424f; color: #fff; }
.badges { margin: 10px 0 4px; display: flex; gap: 10px; flex-wrap: wrap; }
.badge { display: inline-block; padding: 5px 12px; border-radius: 4px; font-weight: 600; font-size: 14px; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); } .badge.none { background: #5b6673; }
.keys { margin: 12px 0 10px; display: grid; grid-template-columns: max-content 1fr; gap: 6px 14px; align-items: baseline; }
.keys .row-name { color: #c9d1db; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.keys .items { display: flex; flex-wrap: wrap; gap: 4px 8px; }
.key { background: #2b3846; border-radius: 4px; padding: 2px 8px; font-size: 13px; white-space: nowrap; }
.key .k { color: #c9d1db; }
.key .v { font-weight: 600; font-variant-numeric: tabular-nums; }
.key.ok .v { color: #8fe3a8; } .key.bad { background: var(--bad); } .key.bad .v, .key.bad .k { color: #fff; }
nav { background: #fff; border-bottom: 1px solid var(--line); padding: 8px 32px; position: sticky; top: 0; }
nav a { color: #1f4e8c; margin-right: 18px; text-decoration: none; font-weight: 500; display: inline-block; }
main { padding: 8px 32px 40px; max-width: 1320px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 20px 16px; margin: 18px 0; }
h2 { font-size: 18px; margin: 10px 0 10px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 9px; text-align: left; }
td.n, th { white-space: nowrap; }
th { background: var(--head); font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.over { color: var(--bad); font-weight: 600; background: #fbe9e7; }
tr.total td { font-weight: 600; border-top: 2px solid #bbb; }
.scroll { overflow-x: auto; }
.note { color: var(--muted); font-style: italic; }
.missing { color: var(--muted); background: var(--head); padding: 8px 12px; border-radius: 4px; }
.missing code { font-style: normal; }
.next { border-left: 4px solid var(--bad); background: #fbe9e7; padding: 8px 12px; border-radius: 4px; }
.good { color: var(--ok); font-weight: 600; } .badv { color: var(--bad); font-weight: 600; }
figure { margin: 8px 0; } figure svg { max-width: 100%; height: auto; }
figure.narrow { display: none; }
code { background: var(--head); padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
.mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; white-space: pre-wrap; word-break: break-all; }
/* a phone: each table row becomes a card of "header: value" lines, each chart its narrow drawing */
@media (max-width: 760px) {
  header { padding: 14px 12px 10px; } nav { padding: 6px 12px; } main { padding: 4px 8px 24px; }
  section { padding: 6px 10px 12px; margin: 12px 0; }
  .keys { grid-template-columns: 1fr; gap: 2px; } .keys .items { margin-bottom: 6px; }
  .key { white-space: normal; }
  figure.wide { display: none; } figure.narrow { display: block; }
  table, tbody, tr, td { display: block; width: 100%; }
  thead { display: none; }
  tr { border: 1px solid var(--line); border-radius: 4px; margin: 0 0 8px; padding: 2px 0; }
  tr.total td { border-top: none; }
  td, td.n { border-bottom: none; padding: 2px 8px; text-align: right; white-space: normal; }
  td::before { content: attr(data-label); float: left; margin-right: 10px; color: var(--muted); font-weight: 400;
               text-align: left; }
  td:first-child { text-align: left; font-weight: 600; background: var(--head); }
  td:first-child::before { content: none; }
  td:empty { display: none; }
}
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
        _key_strip(data["key_numbers"]),
        f'<div class="meta" id="verdict">{_code(verdict["text"])}</div>',
        f'<div class="meta">{_versions(run)}</div>',
        "</header>",
        "<nav>" + "".join(f'<a href="#{k}">{TITLES[k]}</a>' for k in SECTIONS) + "</nav>",
        "<main>",
    ]
    renderers = {
        "training": _html_training,
        "layers": _html_layers,
        "verification": _html_verification,
        "resources": lambda s: _html_resources(s, verdict),
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


def _key_strip(rows: list[dict[str, Any]]) -> str:
    """The key numbers (report.json's ``key_numbers``) as a grid: a row name, then its items."""
    out = ['<div class="keys" id="key-numbers">']
    for row in rows:
        out.append(f'<div class="row-name">{_e(row["name"])}</div><div class="items">')
        for item in row["items"]:
            state = f" {item['state']}" if item["state"] in ("ok", "bad") else ""
            label, value = _e(item["label"]), _e(item["value"])
            out.append(f'<span class="key{state}"><span class="k">{label}</span> <span class="v">{value}</span></span>')
        out.append("</div>")
    out.append("</div>")
    return "".join(out)


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


def _inline(svg: str, prefix: str, label: str, kind: str = "") -> str:
    """An SVG chart for inlining: its ids (and the references to them) prefixed, so that two
    charts' ids never collide, and labelled for screen readers."""
    ids = set(_SVG_ID.findall(svg))
    svg = _SVG_ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(
        r'(href="#|url\(#)([^")]+)', lambda m: m.group(1) + (f"{prefix}-{m.group(2)}" if m.group(2) in ids else m.group(2)), svg
    )
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{_e(label)}" class="plot plot-{prefix}" ', 1)
    return f'<figure class="{kind}">{svg}</figure>' if kind else f"<figure>{svg}</figure>"


def _chart(draw, data, prefix: str, label: str) -> str:
    """A chart drawn twice: for a wide window and, shown instead below 760 px, for a phone (the
    wide drawing scaled down that far has text about 3 px high)."""
    return _inline(draw(data), prefix, label, "wide") + _inline(draw(data, narrow=True), f"{prefix}-narrow", label, "narrow")


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return _e(value)


def _pct(value) -> str:
    return "&ndash;" if value is None else f"{100 * value:.2f}%"


def _cell(content: str, label: str, numeric: bool) -> str:
    """A table cell; ``data-label`` is its column's header, which the phone layout writes before
    the value."""
    label = _e(re.sub(r"<[^>]+>", "", label))
    if content.startswith("<td"):  # a cell that brings its own class
        return content.replace("<td", f'<td data-label="{label}"', 1)
    return f'<td class="n" data-label="{label}">{content}</td>' if numeric else f'<td data-label="{label}">{content}</td>'


def _table(head: list[str], rows: list[list[str]], numeric: set[int], total: list[str] | None = None, extra=()) -> str:
    """A table; ``total`` is a bold last row, ``extra`` rows follow it."""
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th class="n">{h}</th>' if i in numeric else f"<th>{h}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(_cell(c, head[i], i in numeric) for i, c in enumerate(row)) + "</tr>")
    if total is not None:
        out.append('<tr class="total">' + "".join(_cell(c, head[i], i in numeric) for i, c in enumerate(total)) + "</tr>")
    for row in extra:
        out.append("<tr>" + "".join(_cell(c, head[i], i in numeric) for i, c in enumerate(row)) + "</tr>")
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
        parts.append(
            _chart(plots.training_curves, {**s["history"], "best_epoch": s["best_epoch"]}, "training", "training curves")
        )
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
    bits = f"{t['weights']:,} weights in {t['weight_bits']:,} bits"
    if t["weight_storage_bits"] != t["weight_bits"]:
        # ±1 weights carry 1 bit each (as `edgebnn summary` counts them) but hls4ml stores each in a
        # signed 2-bit type; say both rather than let the two tools seem to disagree
        bits += (
            f" (±1 weights count 1 bit each, as <code>edgebnn summary</code> counts them; the HLS project stores them "
            f"in the weight types below, {t['weight_storage_bits']:,} bits)"
        )
    return (
        f"<p>Deployment graph <code>{_e(s['graph'])}</code>: {len(s['rows'])} nodes, {t['macs']:,} multiply-accumulates "
        f"per sample, {bits}.</p>"
        f"<p>Parameters are the values the hardware holds: {t['parameters']:,} weight codes, thresholds and scales. "
        "<code>edgebnn summary</code> counts the Keras model's parameters instead, so its count differs: freeze folds each "
        "BatchNormalization's four values per channel (gamma, beta, mean, variance) into thresholds, one per channel "
        "before a sign and up to 2<sup>bits</sup> &minus; 1 before a k-bit quantizer.</p>"
        + _table(head, rows, {5, 6, 7, 8}, total)
    )


def _html_verification(s) -> str:
    mm = s["mismatches"]
    rows = []
    for leg, count in mm.items():
        a, b = leg_paths(leg)
        if count is None:
            shown = '<span class="note">not run yet: <code>edgebnn csim</code> then <code>edgebnn verify</code></span>'
            if leg != "emulator_vs_csim":
                shown = '<span class="note">not run yet</span>'
        elif count == 0:
            shown = '<span class="good">0 (bit for bit)</span>'
        else:
            shown = f'<span class="badv">{count:,}</span>'
        rows.append([_e(f"{a} vs {b}"), _e(f"{s['samples']:,}"), shown])
    parts = [_table(["leg", "samples", "mismatching samples"], rows, {1, 2})]
    for m in s["first_mismatches"]:
        parts.append(
            f"<h3>First mismatch ({_e(m.get('between'))})</h3><p>sample {_e(m.get('sample'))}, node "
            f"<code>{_e(m.get('layer'))}</code> (from {_e(m.get('source'))})</p>"
            f'<p>expected:</p><div class="mono">{_e(m.get("expected"))}</div>'
            f'<p>got:</p><div class="mono">{_e(m.get("got"))}</div>'
        )
    if s["stream_leftovers"]:
        parts.append(
            "<h3>Stream data left over</h3><p>The C-simulation left data unread in these streams; on the FPGA it would "
            "stall the design or feed the next sample, so the design is wrong even where the outputs agree.</p><ul>"
            + "".join(f"<li>{_e(w)}</li>" for w in s["stream_leftovers"])
            + "</ul>"
        )
    elif s.get("io_type") == "io_stream" and mm.get("emulator_vs_csim") is not None:
        parts.append(
            '<p class="note">No stream data was left over: every value the io_stream design wrote into a stream was '
            "read by the next layer, so no stream stalls or carries data into the next sample.</p>"
        )
    if s["keras_caveats"]:
        parts.append(
            "<h3>Caveats</h3><ul>"
            + "".join(f"<li><code>{_e(c.get('node') or 'graph')}</code>: {_e(c.get('reason'))}</li>" for c in s["keras_caveats"])
            + "</ul>"
        )
    else:
        parts.append(
            '<p class="note">No caveats on the Keras leg: freeze found no layer where Keras\'s float32 arithmetic can '
            "differ from the exact integer result, so the Keras comparison holds for every input, not only these samples.</p>"
        )
    return "".join(parts)


def _html_resources(s, verdict) -> str:
    from . import plots

    main = s["run_board"]
    limit_f = s["utilization_limit"]
    names = [RESOURCE_NAMES[k] for k in RESOURCE_KEYS]
    head = ["node", "op", *names, "latency", "II"]
    rows = [
        [_e(r["name"]), _e(r["op"]), *(f"{r[k]:,}" for k in RESOURCE_KEYS), f"{r['latency']:,}", f"{r['ii']:,}"]
        for r in main["rows"]
    ]
    total = ["total", "", *(f"{main['totals'][k]:,}" for k in RESOURCE_KEYS), f"{main['latency_cycles']:,}", f"{main['ii']:,}"]
    avail = [_e(s["board"]), "available", *(f"{main['available'][k]:,}" for k in RESOURCE_KEYS), "", ""]
    util = ["% of board", "", *(_util_cell(main, k, limit_f) for k in RESOURCE_KEYS), "", ""]
    fits = '<span class="good">fits</span>' if main["fits"] else '<span class="badv">does not fit</span>'
    limit = f"{100 * limit_f:g}%"
    parts = [
        f"<h3>Per node on {_e(s['board'])}</h3>",
        f"<p>{_e(main.get('strategy'))}, {_e(main.get('io_type'))}, reuse factor {_e(_plain(main.get('reuse_factor')))}: "
        f"{fits} under {limit} of every resource; latency {main['latency_cycles']:,} cycles = {_fmt(main['latency_ns'])} ns, "
        f"II {main['ii']:,} cycle{'' if main['ii'] == 1 else 's'}.</p>",
    ]
    if verdict.get("next_step"):
        parts.append(
            f'<p class="next">Next step: <code>{_e(verdict["next_step"])}</code> finds the smallest reuse factor that fits '
            f"each board (with <code>--strategy Resource</code> the weights go to BRAM and the adders are shared); put the one "
            "for this board in config.yaml's <code>export</code> and run again.</p>"
        )
    parts.append(_table(head, rows, set(range(2, 9)), total, extra=[avail, util]))
    parts += [f'<p class="note">warning: {_e(w)}</p>' for w in main["warnings"]]
    layer_data = {"rows": main["rows"], "available": main["available"], "totals": main["totals"], "utilization_limit": limit_f}
    parts.append(_chart(plots.layer_resources, layer_data, "layers", "resources per node"))
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
    parts.append(_chart(plots.utilization, boards, "utilization", "utilization per board"))
    brow = [
        [
            _e(b["board"]),
            _e(b["part"] or ""),
            *(_util_cell(b, k, b["utilization_limit"]) for k in RESOURCE_KEYS),
            '<span class="good">yes</span>' if b["fits"] else '<span class="badv">no</span>',
        ]
        for b in s["boards"]
    ]
    parts.append(_table(["board", "part", *names, "fits"], brow, {2, 3, 4, 5, 6}))
    return "".join(parts)


def _util_cell(estimate: dict, key: str, limit: float) -> str:
    """A resource's share of a board as a table cell, red over the limit; a dash where the board
    has none of it and the design needs none (most boards have no UltraRAM)."""
    percent, available, used = (
        estimate["utilization_percent"].get(key),
        estimate["available"].get(key),
        estimate["totals"].get(key),
    )
    text = _e(_util_text(percent, available, used))
    if _over(percent, available, used, limit):
        return f'<td class="n over">{text}</td>'
    return text


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
        parts.append(_chart(plots.confusion_matrix, s["confusion_matrix"], "confusion", "confusion matrix"))
    return "".join(parts)
