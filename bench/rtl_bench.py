"""The README demo's digits BNN and the zoo's binary CNN through both backends side by side: the
hls4ml estimate (Resource strategy, at every reuse factor hls4ml builds for the layers) beside
the RTL design at several foldings (Yosys's counts, cycles per sample measured in the Verilator
simulation, nextpnr's Fmax on the iCE40), and the emulator = RTL simulation check on the test set.

    python bench/rtl_bench.py [--work /tmp/edgebnn-rtl-bench] [--models digits_bnn,binary_cnn]
        [--folding full --folding 8x16 --folding auto:pynq-z2 --folding auto:icebreaker]
        [--flows xilinx,ice40] [--no-synth] [--synth-max-lut 20000] [--timeout 3600]
        [--epochs 5] [--repeat 3] [--json results.json]

Each model is trained once (``--epochs``, a few suffice for hardware numbers) and frozen into
``WORK/<model>/run``; each folding is exported to ``WORK/<model>/rtl-<folding>``, and a project
already there with the same graph and folding is reused with its simulation library and its
finished syntheses (``synth/<flow>/record.json``), so the long runs happen once. A folding is
``full`` (every weighted node unfolded), ``example`` (the folding of
``examples/<model>_rtl.yaml``), ``PExSIMD`` for every weighted node (each clipped to a
divisor of the node's sizes), ``auto:BOARD[:LIMIT]`` (the RTL fit's folding for the board, LIMIT
its share of each resource, default 0.6), or a JSON mapping node -> [pe, simd].

Per folding: mismatches of the RTL simulation against the emulator on every test sample, cycles
per sample and latency (measured in the simulation), the simulation's samples/s on one core
(``--repeat`` timed runs of the test set repeated to 20,000 samples, or to about 20 million
cycles for a folded design; min and median of the wall
rate, and the rate per CPU-second of this process, which a shared machine's load does not
lower), the Yosys counts on the xc7z020 (PYNQ-Z2; not placed, so the rate is given at the
board's 100 MHz clock) and on the iCE40 UP5K (iCEBreaker; placed, Fmax from nextpnr), and LUT x
cycles per sample. ``--no-synth`` skips the syntheses; ``--synth-max-lut`` skips those whose
modelled xc7 LUT count is above it (Yosys takes tens of minutes on a digits BNN); a design
the cost model puts above 3x the iCE40's logic cells is not synthesized for it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import re
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGS = {"digits_bnn": ROOT / "examples" / "digits_bnn.yaml", "binary_cnn": ROOT / "examples" / "zoo" / "binary_cnn.yaml"}
BOARDS = {"xilinx": "pynq-z2", "ice40": "icebreaker"}
HLS_BOARD = "pynq-z2"
SIM_SAMPLES = 20_000
SIM_CYCLES = 20_000_000  # a folded design's rate is timed on fewer samples: about this many cycles
# a design the cost model puts above this many times the device's LUTs is not synthesized for
# it (the model is approximate, so designs near the size are tried)
ICE40_SKIP = 3
_T0 = time.perf_counter()


def step(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f} s] {msg}", flush=True)


# ---------------------------------------------------------------------- the models
def trained_graph(name: str, work: pathlib.Path, epochs: int):
    """(graph, config, test inputs) of model ``name``: trained and frozen into WORK/name/run the
    first time, read from there afterwards."""
    import yaml

    from edgebnn.data import load_dataset
    from edgebnn.graph import Graph

    config = yaml.safe_load(CONFIGS[name].read_text())
    run = work / name / "run"
    if not (run / "graph.npz").is_file():
        from edgebnn.stages import freeze_stage, train_stage

        config.setdefault("train", {})["epochs"] = epochs
        (work / name).mkdir(parents=True, exist_ok=True)
        copy = work / name / f"{name}.yaml"
        copy.write_text(yaml.safe_dump(config, sort_keys=False))
        step(f"{name}: training {epochs} epochs into {run}")
        train_stage(copy, run, force=run.exists(), log=lambda m: None)
        step(f"{name}: freezing")
        freeze_stage(run, log=lambda m: None)
    else:
        step(f"{name}: the trained graph in {run}")
    _, _, x_test, _ = load_dataset(**config["data"])
    graph = Graph.load(run / "graph.npz")
    return graph, config, x_test.reshape(-1, *graph.input.shape)


# ---------------------------------------------------------------------- the hls4ml estimate
def hls_rows(graph, config) -> list[dict]:
    """The hls4ml estimate on the PYNQ-Z2, Resource strategy, the config's io type, at every
    reuse factor R that export accepts for some weighted node: each node at the largest reuse
    factor it accepts up to R (hls4ml builds no other as given), each distinct design once."""
    from edgebnn.backends.hls4ml.reuse import allowed, matrices
    from edgebnn.estimate import estimate

    io_type = config.get("export", {}).get("io_type", "io_parallel")
    valid = {name: allowed(op, n_in, n_out, "Resource", io_type) for name, (op, n_in, n_out) in matrices(graph).items()}
    rows, seen = [], set()
    for rf in sorted(set().union(*valid.values())):
        per_node = {name: max((v for v in values if v <= rf), default=1) for name, values in valid.items()}
        key = tuple(sorted(per_node.items()))
        if key in seen:
            continue
        seen.add(key)
        est = estimate(graph, board=HLS_BOARD, strategy="Resource", reuse_factor=per_node, io_type=io_type)
        t = est.totals
        rows.append(
            {
                "reuse_factor": rf,
                "per_node": per_node,
                "io_type": io_type,
                "lut": t["lut"],
                "ff": t["ff"],
                "dsp": t["dsp"],
                "bram18": t["bram18"],
                "cycles_per_sample": est.ii,
                "latency_cycles": est.latency_cycles,
                "lut_x_cycles": t["lut"] * est.ii,
                "lut_pct": round(est.utilization["lut"], 1),
                "samples_per_s": 1e9 / (est.ii * est.clock_period_ns),
            }
        )
    return rows


# ---------------------------------------------------------------------- the RTL design
def folding_of(graph, spec: str) -> dict[str, tuple[int, int]]:
    from edgebnn.backends.rtl import resolve_folding
    from edgebnn.backends.rtl.folding import divisors
    from edgebnn.backends.rtl.ops import LOWERINGS

    if spec == "example":
        import yaml

        path = ROOT / "examples" / f"{graph.name}_rtl.yaml"
        if not path.is_file():
            raise SystemExit(f"rtl_bench: folding 'example' needs {path}, which does not exist; give another folding")
        spec = json.dumps(yaml.safe_load(path.read_text())["export"]["folding"])
    if spec.startswith("{"):
        return resolve_folding(graph, {k: tuple(v) for k, v in json.loads(spec).items()})
    if spec.startswith("auto:"):
        from edgebnn.backends.rtl.fit import fit

        _, board, *limit = spec.split(":")
        found = fit(graph, board, limit=float(limit[0]) if limit else 0.6)
        step(f"  fit: {found}")
        return dict(found.folding)
    out = {}
    for node in graph.compute_nodes():
        module = LOWERINGS[node.op]
        if not module.FOLDED:
            continue
        outputs, inputs = module.fold_sizes(node, graph.sources(node))
        if spec == "full":
            out[node.name] = (outputs, inputs)
            continue
        try:
            pe, simd = (int(v) for v in spec.lower().split("x"))
        except ValueError:
            raise SystemExit(
                f"rtl_bench: folding '{spec}' is none of full, PExSIMD, auto:BOARD[:LIMIT] or a JSON mapping; give one of those"
            ) from None
        out[node.name] = (max(d for d in divisors(outputs) if d <= pe), max(d for d in divisors(inputs) if d <= simd))
    return out


def tag_of(spec: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in spec)[:60]


def project_for(graph, folding: dict, where: pathlib.Path):
    """The RTL project of ``graph`` at ``folding`` in ``where``: reused when one of the same
    graph and folding is there (its simulation library and syntheses with it), else exported."""
    from edgebnn.backends.rtl import RTLProject, export

    if (where / "graph.npz").is_file():
        try:
            old = RTLProject(where)
            same_graph = (where / "graph.npz").read_bytes() == graph_bytes(graph, where.parent)
            if same_graph and old.folding == {k: tuple(v) for k, v in folding.items()}:
                return old, True
        except Exception:  # noqa: BLE001 - anything unreadable is exported again
            pass
    return export(graph, where, folding=folding, force=where.exists()), False


def graph_bytes(graph, scratch: pathlib.Path) -> bytes:
    tmp = scratch / ".graph-compare.npz"
    graph.save(tmp)
    try:
        return tmp.read_bytes()
    finally:
        tmp.unlink()


def simulate(project, graph, x, repeat: int) -> dict:
    from edgebnn.emulate import emulate

    want = emulate(graph, x)
    got = project.predict(x)
    mismatches = int(sum(not np.array_equal(g, w) for g, w in zip(got, want)))
    cps, latency = project.cycles_per_sample, project.latency_cycles
    codes = project._codes(x)
    want_samples = min(SIM_SAMPLES, SIM_CYCLES // max(int(cps or 1), 1))
    big = np.concatenate([codes] * max(1, math.ceil(want_samples / len(codes))))
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        project.run_codes(big)
        wall.append(len(big) / (time.perf_counter() - t))
        cpu.append(len(big) / max(time.process_time() - c, 1e-9))
    return {
        "samples": len(x),
        "mismatches": mismatches,
        "cycles_per_sample": cps,
        "latency_cycles": latency,
        "sim_samples": len(big),
        "sim_samples_per_s_min": min(wall),
        "sim_samples_per_s_median": statistics.median(wall),
        "sim_samples_per_cpu_s_median": statistics.median(cpu),
    }


def synth_flow(project, graph, folding, flow: str, args) -> dict | None:
    """The synthesis record of ``flow`` (a finished one reused), or None with the reason printed."""
    from edgebnn.backends.rtl.cost import design_cost
    from edgebnn.backends.rtl.fit import on_board
    from edgebnn.backends.rtl.synth import read_record, synthesize
    from edgebnn.boards import load_board

    board = load_board(BOARDS[flow])
    model = design_cost(graph, folding)[0]
    if args.synth_max_lut is not None and model.lut > args.synth_max_lut:
        step(f"  {flow}: skipped, the model says {model.lut:,} LUT (over --synth-max-lut {args.synth_max_lut:,})")
        return {"skipped": f"model {model.lut} LUT over --synth-max-lut"}
    if flow != "xilinx":
        lut4 = on_board(model, flow, []).lut
        if lut4 > ICE40_SKIP * board.lut:
            step(f"  {flow}: skipped, the model says {lut4:,} LUT4, over {ICE40_SKIP}x the {board.name}'s {board.lut:,}")
            return {"skipped": f"model {lut4} LUT4 over the device's {board.lut}"}
    rec = read_record(project, flow)
    if rec is not None:
        step(f"  {flow}: the finished synthesis in {project.path}/synth/{flow} ({rec.seconds:g} s when it ran)")
    else:
        step(f"  {flow}: synthesizing for {board.name} ({board.part}); the model says {model.lut:,} xc7 LUT")
        try:
            rec = synthesize(project, board, timeout=args.timeout, log=lambda line, **how: None)
        except Exception as e:  # noqa: BLE001 - a failed or timed-out run is a result to report
            step(f"  {flow}: failed: {e}")
            return {"failed": str(e).splitlines()[0][:300]}
    out = rec.to_dict()
    out["model_lut"] = model.lut if flow == "xilinx" else on_board(model, flow, []).lut
    step(f"  {flow}: {rec} ({rec.seconds:g} s)")
    return out


# ---------------------------------------------------------------------- the table
def _n(v, fmt="{:,}"):
    return "-" if v is None else fmt.format(v)


def print_tables(results: dict) -> None:
    for name, r in results.items():
        print(f"\n== {name}: hls4ml estimate on {HLS_BOARD} (Resource, {r['hls'][0]['io_type']})")
        print(
            f"{'RF':>5} {'LUT':>9} {'FF':>8} {'DSP':>4} {'BRAM18':>6} {'cyc/smp':>8} {'LUTxcyc':>12} {'LUT%':>6} "
            f"{'smp/s@100MHz':>13}"
        )
        for h in r["hls"]:
            print(
                f"{h['reuse_factor']:>5} {h['lut']:>9,} {h['ff']:>8,} {h['dsp']:>4} {h['bram18']:>6} {h['cycles_per_sample']:>8} "
                f"{h['lut_x_cycles']:>12,} {h['lut_pct']:>6.1f} {h['samples_per_s']:>13,.0f}"
            )
        print(f"\n== {name}: RTL designs (xc7z020 counts from Yosys synth_xilinx; iCE40 UP5K from synth_ice40 + nextpnr)")
        print(
            f"{'folding':<22} {'mism':>6} {'cyc/smp':>7} {'lat':>5} {'sim smp/s':>10} {'xc7 LUT':>8} {'FF':>7} {'BRAM':>4} "
            f"{'LUT%':>5} {'LUTxcyc':>10} {'worst hls/rtl':>13} {'ice40 LC':>9} {'Fmax':>6} {'smp/s@Fmax':>11}"
        )
        for spec, d in r["rtl"].items():
            x, ice = d.get("xilinx") or {}, d.get("ice40") or {}
            lut = x.get("lut")
            cps = d["cycles_per_sample"]
            lxc = None if lut is None else lut * cps
            worst = None if lxc is None else min(h["lut_x_cycles"] for h in r["hls"]) / lxc
            lc = ice.get("logic_cells")
            fmax = ice.get("fmax_mhz")
            print(
                f"{spec[:22]:<22} {d['mismatches']:>3}/{d['samples']:<3}{cps:>6g} {d['latency_cycles']:>5} "
                f"{d['sim_samples_per_cpu_s_median']:>10,.0f} {_n(lut):>8} {_n(x.get('ff')):>7} {_n(x.get('bram')):>4} "
                f"{_n(None if lut is None else 100 * lut / 53200, '{:.1f}'):>5} {_n(lxc):>10} {_n(worst, '{:.1f}x'):>13} "
                f"{_n(None if lc is None else lc[0]):>9} {_n(fmax, '{:.1f}'):>6} "
                f"{_n(None if fmax is None else fmax * 1e6 / cps, '{:,.0f}'):>11}"
            )
        print("  sim smp/s: the Verilator simulation's samples per CPU-second (median); 'worst hls/rtl': the hls4ml")
        print("  estimate's smallest LUT x cycles per sample over its reuse factors divided by this design's")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default="/tmp/edgebnn-rtl-bench", help="folder for the trained graphs and projects")
    p.add_argument("--models", default="digits_bnn,binary_cnn", help=f"of {', '.join(CONFIGS)}")
    p.add_argument(
        "--folding",
        action="append",
        help="a folding to build (repeatable; default full, 8x16, auto:pynq-z2, auto:icebreaker)",
    )
    p.add_argument("--flows", default="xilinx,ice40", help="synthesis flows (default xilinx,ice40)")
    p.add_argument("--no-synth", action="store_true", help="skip every synthesis")
    p.add_argument("--synth-max-lut", type=int, help="skip syntheses of designs the cost model puts above this many xc7 LUT")
    p.add_argument("--timeout", type=float, default=3600, help="wall seconds per tool run (default 3600)")
    p.add_argument("--epochs", type=int, default=5, help="training epochs the first time (default 5)")
    p.add_argument("--repeat", type=int, default=3, help="timed simulation runs per design (default 3)")
    p.add_argument("--json", help="write the results to this JSON file")
    args = p.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in CONFIGS]
    if unknown:
        p.error(f"no model {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    flows = [f for f in args.flows.split(",") if f]
    if any(f not in BOARDS for f in flows):
        p.error(f"--flows takes {', '.join(BOARDS)}")
    specs = args.folding or ["full", "8x16", "auto:pynq-z2", "auto:icebreaker"]
    bad = [f for f in specs if not re.fullmatch(r"full|example|\d+x\d+|auto:[\w.-]+(:[\d.]+)?|\{.*\}", f)]
    if bad:
        p.error(f"folding {', '.join(map(repr, bad))} is none of full, example, PExSIMD, auto:BOARD[:LIMIT] or a JSON mapping")
    if args.epochs < 1 or args.repeat < 1:
        p.error("--epochs and --repeat must be at least 1")
    if args.json and not pathlib.Path(args.json).resolve().parent.is_dir():
        p.error(f"--json: the folder of {args.json} does not exist")
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    results = {}
    for name in models:
        graph, config, x = trained_graph(name, work, args.epochs)
        step(f"{name}: hls4ml estimate at every reuse factor")
        r = results[name] = {"nodes": [n.name for n in graph.compute_nodes()], "hls": hls_rows(graph, config), "rtl": {}}
        step(f"{name}: {len(r['hls'])} reuse factors estimated ({', '.join(str(h['reuse_factor']) for h in r['hls'])})")
        for spec in specs:
            folding = folding_of(graph, spec)
            step(f"{name} {spec}: folding " + ", ".join(f"{k} {pe}x{simd}" for k, (pe, simd) in folding.items()))
            project, reused = project_for(graph, folding, work / name / f"rtl-{tag_of(spec)}")
            t = time.perf_counter()
            project.compile()
            built = "built" if project.built else "cached"
            step(f"{name} {spec}: {'reused' if reused else 'exported'}; simulation {built} ({time.perf_counter() - t:.0f} s)")
            d = {"folding": {k: list(v) for k, v in folding.items()}, **simulate(project, graph, x, args.repeat)}
            step(
                f"{name} {spec}: {d['mismatches']} of {d['samples']} test samples differ from the emulator; "
                f"{d['cycles_per_sample']:g} cycles per sample, latency {d['latency_cycles']}; simulation "
                f"{d['sim_samples_per_s_median']:,.0f} samples/s wall, {d['sim_samples_per_cpu_s_median']:,.0f} per CPU-s"
            )
            for flow in [] if args.no_synth else flows:
                d[flow] = synth_flow(project, graph, folding, flow, args)
            r["rtl"][spec] = d
            if args.json:  # after every design, so a long run stopped half-way keeps what it measured
                write_json(args.json, results)
    print_tables(results)
    if args.json:
        write_json(args.json, results)
        step(f"wrote {args.json}")
    return 0


def write_json(path: str, results: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "results": results}, f, indent=1, default=str)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
