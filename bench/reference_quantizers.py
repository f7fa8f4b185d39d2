"""Side-by-side check of edgebnn's quantizers against the real larq and QKeras.

larq and QKeras run only on Keras 2 (TensorFlow <= 2.15), edgebnn on Keras 3, so the check
runs in two environments and meets in an ``.npz`` file:

``--dump OUT.npz`` (reference environment: imports larq, qkeras and TensorFlow, never edgebnn)
    evaluates every case below on its fixed inputs (zeros, -0.0, the exact ties of each
    grid, clip bounds and thresholds exactly and one float32 ulp either side, random values,
    weight-shaped tensors for per-channel scales) and stores, per case, the input ``x``, a
    fixed random cotangent ``g``, the reference forward ``fwd`` and the gradient
    ``grad = d sum(q(x) * g) / dx`` (``tf.GradientTape``). For QKeras it also stores ``own``:
    QKeras's quantized value itself (from ``use_ste=False``, or ``scale * k`` for
    binary/ternary), because QKeras returns ``x + stop_gradient(q - x)``, which float32 may
    round off the grid.

``--compare REF.npz`` (edgebnn environment: imports edgebnn, never larq/qkeras) evaluates the
    matching ``edgebnn.quantizers.get(...)`` quantizer with the same arguments on the same
    inputs and prints one row per case: forward mismatches against the reference forward
    and against QKeras's own q (exact equality), QKeras's own rounding artifacts
    (``fwd != own``), gradient mismatches (exact) and, for transcendental gradients
    (swish_sign, real tanh, DoReFa weights), the max absolute difference. Exit status 1 when
    a forward differs from the reference's own q or a gradient differs beyond its tolerance
    (0 for all but the transcendental cases), unless the case is listed as a documented
    deliberate difference.

Reproduce (reference environment outside the repo; pyparsing is a QKeras dependency its
wheel does not declare)::

    python3 -m venv /work/venv_ref
    /work/venv_ref/bin/pip install "tensorflow==2.15.*" "larq==0.13.3" "qkeras==0.9.0" pyparsing
    /work/venv_ref/bin/python bench/reference_quantizers.py --dump /tmp/ref.npz
    /work/venv/bin/python bench/reference_quantizers.py --compare /tmp/ref.npz

(larq 0.14.0 gives the same numbers: install ``larq==0.14.0`` in a second venv to check.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

f32 = np.float32
SEED = 20240531

# --------------------------------------------------------------------------- inputs


def _around(points):
    """Each point, one float32 ulp either side, and the negatives of all of them."""
    out = []
    for p in points:
        p = f32(p)
        out += [p, np.nextafter(p, f32(np.inf)), np.nextafter(p, f32(-np.inf))]
    out = np.array(out, dtype=f32)
    return np.concatenate([out, -out])


def _vector(points, scale, rng):
    base = np.array([0.0, -0.0, 1e-8, -1e-8, 1e-7, -1e-7, 1e3, -1e3, 1e6, -1e6], dtype=f32)
    rand = np.concatenate([rng.standard_normal(96) * scale, rng.uniform(-2 * scale, 2 * scale, 64)]).astype(f32)
    return np.concatenate([base, _around(points), rand]).astype(f32)


def _weights(shape, rng, scale=0.5):
    w = (rng.standard_normal(shape) * scale).astype(f32)
    flat = w.reshape(-1)
    flat[::7] = 0.0  # exact zeros (sign(0))
    flat[3] = -0.0
    return w


def _grid_ties(step, lo_code, hi_code, extra=3, limit=600):
    """Codes and half-way ties of a uniform grid (with a margin beyond its ends)."""
    codes = np.arange(lo_code - extra, hi_code + extra + 1, dtype=np.float64)
    if codes.size > limit:
        idx = np.unique(np.linspace(0, codes.size - 1, limit).astype(int))
        codes = codes[idx]
    return list(codes * step) + list((codes + 0.5) * step)


def _po2_points(lo, hi):
    return [2.0**e for e in range(lo - 1, hi + 2)] + [2.0 ** (e + 0.5) for e in range(lo - 1, hi + 1)] + [1e-7]


# --------------------------------------------------------------------------- cases
# Each case: name, lib ("larq"/"qkeras"), ref (class name, kwargs), edge (edgebnn spec dict
# for quantizers.get; None: same name and kwargs), input (("vec", points, scale) or
# ("w", shape)), trans (gradient tolerance: 0 exact, else max abs diff allowed).

CASES: list[dict] = []


def case(name, lib, ref, kwargs=None, edge=None, inp=("vec", [1.0], 1.0), tol=0.0):
    kwargs = dict(kwargs or {})
    CASES.append({"name": name, "lib": lib, "ref": ref, "kwargs": kwargs, "edge": edge, "input": inp, "tol": tol})


LARQ_ALIAS = {
    "SteSign": "ste_sign",
    "ApproxSign": "approx_sign",
    "SwishSign": "swish_sign",
    "MagnitudeAwareSign": "magnitude_aware_sign",
    "SteHeaviside": "ste_heaviside",
    "SteTern": "ste_tern",
    "DoReFa": "dorefa_quantizer",
    "NoOp": "noop",
}

W1, W2, W4 = ("w", (24,)), ("w", (24, 4)), ("w", (3, 3, 6, 4))

# larq
case("ste_sign", "larq", "SteSign", inp=("vec", [1.0, 0.5], 1.0))
case("ste_sign_clip0.5", "larq", "SteSign", {"clip_value": 0.5}, inp=("vec", [1.0, 0.5], 1.0))
case("ste_sign_clipNone", "larq", "SteSign", {"clip_value": None}, inp=("vec", [1.0, 0.5], 1.0))
case("approx_sign", "larq", "ApproxSign", inp=("vec", [1.0, 0.5, 0.25], 1.0))
case("swish_sign_b5", "larq", "SwishSign", {"beta": 5.0}, inp=("vec", [1.0, 0.5], 1.0), tol=1e-5)
case("swish_sign_b2", "larq", "SwishSign", {"beta": 2.0}, inp=("vec", [1.0, 0.5], 1.0), tol=1e-5)
for tag, shape in (("1d", W1), ("2d", W2), ("4d", W4)):
    case(f"magnitude_aware_sign_{tag}", "larq", "MagnitudeAwareSign", inp=shape)
case("ste_heaviside", "larq", "SteHeaviside", inp=("vec", [1.0, 0.5], 1.0))
case("ste_heaviside_clip0.5", "larq", "SteHeaviside", {"clip_value": 0.5}, inp=("vec", [1.0, 0.5], 1.0))
case("ste_tern_t0.05", "larq", "SteTern", inp=("vec", [0.05, 1.0], 0.3))
case("ste_tern_t0.3_clip0.5", "larq", "SteTern", {"threshold_value": 0.3, "clip_value": 0.5}, inp=("vec", [0.3, 0.5, 1.0], 1.0))
case("ste_tern_t0", "larq", "SteTern", {"threshold_value": 0.0}, inp=("vec", [1.0], 1.0))
case("ste_tern_twn_vec", "larq", "SteTern", {"ternary_weight_networks": True}, inp=("vec", [1.0], 1.0))
case("ste_tern_twn_2d", "larq", "SteTern", {"ternary_weight_networks": True}, inp=W2)
case("ste_tern_twn_4d", "larq", "SteTern", {"ternary_weight_networks": True, "clip_value": 0.5}, inp=W4)
for k in (1, 2, 4):
    n = 2**k - 1
    pts = [0.0, 1.0] + [(c + 0.5) / n for c in range(n)] + [c / n for c in range(n + 1)]
    case(f"dorefa_act_k{k}", "larq", "DoReFa", {"k_bit": k, "mode": "activations"}, inp=("vec", pts, 1.0))
    case(f"dorefa_w_k{k}_2d", "larq", "DoReFa", {"k_bit": k, "mode": "weights"}, inp=W2, tol=1e-6)
    case(f"dorefa_w_k{k}_vec", "larq", "DoReFa", {"k_bit": k, "mode": "weights"}, inp=("vec", [1.0], 1.0), tol=1e-6)
case("noop", "larq", "NoOp", {"precision": 1})

# QKeras quantized_bits


def _qb_points(bits, integer, keep_negative=True, symmetric=False):
    step = 2.0 ** (integer - bits + keep_negative)
    ub = bits - keep_negative
    hi = 2**ub - 1
    lo = (-(2**ub) + symmetric) if keep_negative else 0
    return _grid_ties(step, lo, hi), max(1.0, 2.0**integer)


for bits, integer, kw in [
    (4, 0, {}),
    (4, 2, {}),
    (8, 3, {}),
    (4, 0, {"symmetric": 1}),
    (6, 2, {"symmetric": 1}),
    (4, 0, {"keep_negative": False}),
    (6, 2, {"keep_negative": False}),
    (1, 0, {}),
    (1, 2, {}),
    (2, 0, {}),
    (2, 1, {"keep_negative": False}),
    (4, 0, {"alpha": 1.0}),
    (4, 1, {"alpha": 0.5}),
    (4, 0, {"symmetric": 1, "alpha": 2.0}),
]:
    pts, sc = _qb_points(bits, integer, kw.get("keep_negative", True), bool(kw.get("symmetric", 0)))
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    case(
        f"qbits_{bits}_{integer}" + (f"_{tag}" if tag else ""),
        "qkeras",
        "quantized_bits",
        {"bits": bits, "integer": integer, **kw},
        inp=("vec", pts, sc),
    )
for alpha in ("auto", "auto_po2"):
    for bits, integer in ((4, 0), (8, 0), (4, 2), (2, 0)):
        for tag, shape in (("1d", W1), ("2d", W2), ("4d", W4)):
            case(
                f"qbits_{bits}_{integer}_{alpha}_{tag}",
                "qkeras",
                "quantized_bits",
                {"bits": bits, "integer": integer, "alpha": alpha},
                inp=shape,
            )
    case(
        f"qbits_4_0_{alpha}_scaleaxis0_2d",
        "qkeras",
        "quantized_bits",
        {"bits": 4, "integer": 0, "alpha": alpha, "scale_axis": 0},
        inp=W2,
    )
    case(
        f"qbits_4_0_{alpha}_symmetric_2d",
        "qkeras",
        "quantized_bits",
        {"bits": 4, "integer": 0, "alpha": alpha, "symmetric": 1},
        inp=W2,
    )

# quantized_relu
for bits, integer, kw in [
    (4, 0, {}),
    (4, 2, {}),
    (8, 0, {}),
    (4, 0, {"use_sigmoid": 1}),
    (6, 1, {"use_sigmoid": 1}),
    (4, 1, {"negative_slope": 0.25}),
    (6, 0, {"negative_slope": 0.5}),
    (6, 1, {"use_sigmoid": 1, "negative_slope": 0.5}),
    (4, 1, {"relu_upper_bound": 1.0, "is_quantized_clip": False}),
    (4, 0, {"is_quantized_clip": False}),
    (4, 1, {"relu_upper_bound": 1.5, "is_quantized_clip": False, "negative_slope": 0.5}),
    (4, 1, {"relu_upper_bound": 1.0}),
]:
    b = bits - (kw.get("negative_slope", 0) != 0)
    m, m_i = 2.0**b, 2.0**integer
    pts = _grid_ties(m_i / m, -int(m), int(m) - 1)
    if kw.get("use_sigmoid"):
        pts += [m_i * (2 * (c + 0.5) / m - 1) for c in range(-int(m), int(m))]
        pts += [m_i * (2 * (c + 0.5) / m - 1) / kw.get("negative_slope", 1) for c in range(-int(m), int(m))]
    if kw.get("relu_upper_bound"):
        pts += [kw["relu_upper_bound"]]
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    case(
        f"qrelu_{bits}_{integer}" + (f"_{tag}" if tag else ""),
        "qkeras",
        "quantized_relu",
        {"bits": bits, "integer": integer, **kw},
        inp=("vec", pts, 2 * m_i),
    )

# quantized_tanh
for bits, kw, tol in [
    (4, {}, 0.0),
    (8, {}, 0.0),
    (2, {}, 0.0),
    (4, {"use_real_tanh": True}, 1e-6),
    (8, {"use_real_tanh": True}, 1e-6),
    (4, {"symmetric": True}, 0.0),
]:
    m = 2.0 ** (bits - 1)
    pts = [(c + 0.5) / m for c in range(-int(m) - 1, int(m) + 1)] + [c / m for c in range(-int(m), int(m) + 1)]
    if kw.get("use_real_tanh"):
        pts += list(np.arctanh(np.clip(pts, -0.999999, 0.999999)))
    pts += [1.0, 2.0, -1.0, -2.0]
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    case(
        f"qtanh_{bits}" + (f"_{tag}" if tag else ""),
        "qkeras",
        "quantized_tanh",
        {"bits": bits, **kw},
        inp=("vec", pts, 1.5),
        tol=tol,
    )

# binary / ternary
for kw in ({}, {"use_01": True}, {"alpha": 0.5}, {"use_01": True, "alpha": 2.0}):
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    case("binary" + (f"_{tag}" if tag else ""), "qkeras", "binary", kw, inp=("vec", [1.0, 2.0], 1.0), tol=1e-6)
for alpha in ("auto", "auto_po2"):
    for use01 in (False, True):
        for tag, shape in (("1d", W1), ("2d", W2), ("4d", W4)):
            kw = {"alpha": alpha, **({"use_01": True} if use01 else {})}
            case(f"binary_{alpha}{'_01' if use01 else ''}_{tag}", "qkeras", "binary", kw, inp=shape)
for kw in ({}, {"threshold": 0.5}, {"alpha": 0.5}, {"alpha": 0.5, "threshold": 0.2}):
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    t = kw.get("threshold", 0.33)
    case("ternary" + (f"_{tag}" if tag else ""), "qkeras", "ternary", kw, inp=("vec", [t, 1.0], 1.0), tol=1e-6)
for alpha in ("auto", "auto_po2"):
    for tag, shape in (("1d", W1), ("2d", W2), ("4d", W4)):
        case(f"ternary_{alpha}_{tag}", "qkeras", "ternary", {"alpha": alpha}, inp=shape)
    case(f"ternary_{alpha}_unrolls2_2d", "qkeras", "ternary", {"alpha": alpha, "number_of_unrolls": 2}, inp=W2)

# power of two


def _po2_range(bits, max_value, relu):
    sign_bit = 1 if max_value is None or max_value > 1 else 0
    eff = bits - sign_bit - (0 if relu else 1)
    return -(2**eff), 2**eff - 1


for bits, kw in [
    (4, {}),
    (8, {}),
    (3, {}),
    (4, {"max_value": 1.0}),
    (5, {"max_value": 4.0}),
    (4, {"max_value": 0.5}),
    (4, {"quadratic_approximation": True}),
    (4, {"log2_rounding": "floor"}),
]:
    lo, hi = _po2_range(bits, kw.get("max_value"), relu=False)
    pts = _po2_points(max(lo, -40), min(hi, 40)) + ([kw["max_value"]] if "max_value" in kw else [])
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    case(f"po2_{bits}" + (f"_{tag}" if tag else ""), "qkeras", "quantized_po2", {"bits": bits, **kw}, inp=("vec", pts, 4.0))
for bits, kw in [
    (4, {}),
    (3, {}),
    (6, {"max_value": 2.0}),
    (4, {"max_value": 1.0}),
    (4, {"negative_slope": 0.5}),
    (4, {"negative_slope": 0.25, "max_value": 4.0}),
    (4, {"quadratic_approximation": True}),
]:
    lo, hi = _po2_range(bits, kw.get("max_value"), relu=True)
    pts = _po2_points(max(lo, -40), min(hi, 40)) + ([kw["max_value"]] if "max_value" in kw else [])
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    case(
        f"relu_po2_{bits}" + (f"_{tag}" if tag else ""),
        "qkeras",
        "quantized_relu_po2",
        {"bits": bits, **kw},
        inp=("vec", pts, 4.0),
    )

# Documented deliberate differences: case name -> why (edgebnn refuses the option, or the
# numbers differ on purpose). Empty: every case above agrees. edgebnn's refusals (e.g.
# quantized_bits(alpha="auto", keep_negative=False), which QKeras silently ignores) and its
# normalized negative scale_axis are not among the cases; its exact-q forward is the
# fwd!=q column.
DELIBERATE: dict[str, str] = {}


def inputs_for(c, rng):
    kind = c["input"][0]
    if kind == "vec":
        return _vector(c["input"][1], c["input"][2], rng)
    return _weights(c["input"][1], rng)


def edge_spec(c):
    if c["edge"] is not None:
        return c["edge"]
    name = LARQ_ALIAS[c["ref"]] if c["lib"] == "larq" else c["ref"]
    return {"class": name, **c["kwargs"]}


# --------------------------------------------------------------------------- dump (reference)


def forward_and_gradient(fn, x, g):
    """``fn(x)`` and the gradient of ``sum(fn(x) * g)`` with respect to ``x``, as float32, in
    whichever TensorFlow this environment has (2.15 for the reference, 2.21 for edgebnn)."""
    import tensorflow as tf

    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
        loss = tf.reduce_sum(y * g)
    grad = tape.gradient(loss, xt)
    return np.asarray(y, f32), (np.zeros_like(x) if grad is None else np.asarray(grad, f32))


def dump(path):
    import larq as lq
    import qkeras
    import tensorflow as tf
    from qkeras import quantizers as qq

    rng = np.random.default_rng(SEED)
    out = {
        "__meta__": np.array(
            json.dumps({"tensorflow": tf.__version__, "larq": lq.__version__, "qkeras": getattr(qkeras, "__version__", "?")})
        )
    }

    run = forward_and_gradient

    for c in CASES:
        x = inputs_for(c, rng)
        g = rng.standard_normal(x.shape).astype(f32)
        if c["lib"] == "larq":
            q = getattr(lq.quantizers, c["ref"])(**c["kwargs"])
            own_fn = None
        else:
            cls = getattr(qq, c["ref"])
            q = cls(**c["kwargs"])
            own_fn = None
            if c["ref"] in ("quantized_bits", "quantized_relu", "quantized_po2", "quantized_relu_po2"):
                own_q = cls(**c["kwargs"], use_ste=False)
                own_fn = lambda v, own_q=own_q: own_q(v)
        try:
            fwd, grad = run(q, x, g)
        except Exception as err:  # noqa: BLE001
            print(f"{c['name']}: reference raised {type(err).__name__}: {err}")
            out[c["name"] + "/error"] = np.array(f"{type(err).__name__}: {err}")
            continue
        if own_fn is not None:
            own = own_fn(tf.constant(x)).numpy().astype(f32)
        elif c["ref"] in ("binary", "ternary"):
            # QKeras returns x + stop_gradient(-x + scale * k): rebuild scale * k in float32
            scale = q.scale
            scale = tf.constant(scale, tf.float32) if not tf.is_tensor(scale) else scale
            k = tf.round(tf.math.divide_no_nan(tf.constant(fwd), scale))  # scale 0: q is 0 anyway
            own = (scale * k).numpy().astype(f32)
        else:
            own = fwd
        if c["kwargs"].get("use_real_tanh"):
            out[f"{c['name']}/tanh"] = tf.tanh(tf.constant(x)).numpy().astype(f32)
        out.update(
            {
                f"{c['name']}/x": x,
                f"{c['name']}/g": g,
                f"{c['name']}/fwd": fwd,
                f"{c['name']}/grad": grad,
                f"{c['name']}/own": np.broadcast_to(own, x.shape).astype(f32),
            }
        )
    np.savez(path, **out)
    print(f"wrote {len(CASES)} cases to {path} ({json.loads(str(out['__meta__']))})")


# --------------------------------------------------------------------------- compare (edgebnn)


def _neq(a, b):
    """Exact inequality (NaN equals NaN), plus signed-zero differences counted apart."""
    a, b = np.asarray(a, f32), np.asarray(b, f32)
    ne = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    sz = (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))
    return int(ne.sum()), int(sz.sum())


def compare(path, verbose=False):
    import tensorflow as tf

    from edgebnn import quantizers as qz

    ref = np.load(path)
    meta = json.loads(str(ref["__meta__"]))
    print(f"reference: {meta}")
    header = (
        f"{'case':42s} {'n':>5s} {'fwd!=ref':>8s} {'fwd!=q':>7s} {'ref art':>7s} {'+-0':>4s} "
        f"{'grad!=':>6s} {'max|dg|':>9s} {'tanh!=':>6s}  status"
    )
    print(header)
    print("-" * len(header))
    bad = []
    for c in CASES:
        name = c["name"]
        if name + "/error" in ref:
            print(f"{name:42s} reference raised: {ref[name + '/error']}")
            continue
        if name + "/x" not in ref:
            print(f"{name:42s} (not in {path})")
            continue
        x, g = ref[name + "/x"], ref[name + "/g"]
        fwd_r, grad_r, own_r = ref[name + "/fwd"], ref[name + "/grad"], ref[name + "/own"]
        spec = edge_spec(c)
        try:
            q = qz.get(dict(spec))
        except (ValueError, TypeError) as err:
            status = "REFUSED (deliberate)" if name in DELIBERATE else "REFUSED"
            print(f"{name:42s} {x.size:5d} edgebnn refuses: {err}  [{status}]")
            if name not in DELIBERATE:
                bad.append(name)
            continue
        y, grad = forward_and_gradient(q, x, g)
        # TF 2.15 and TF 2.21 compute tanh to slightly different ulps; where they differ, an
        # input placed on a rounding tie may round to the neighbouring code: not edgebnn's doing
        tanh_ne = np.zeros(x.shape, bool)
        if name + "/tanh" in ref:
            tanh_ne = np.asarray(tf.tanh(tf.constant(x)), f32) != ref[name + "/tanh"]
        n_tanh = int(tanh_ne.sum())
        same = ~(tanh_ne & (y != own_r))  # forward: left out only where the tanh ulp moved the code
        same_g = ~tanh_ne  # gradient: also the clip window may move with the unclipped code
        y_all, grad_all = y, grad
        n_ref, _ = _neq(y, fwd_r)
        n_own, sz = _neq(y[same], own_r[same])
        n_art, _ = _neq(fwd_r, own_r)
        n_grad, _ = _neq(grad[same_g], grad_r[same_g])
        finite = np.isfinite(grad) & np.isfinite(grad_r) & same_g
        dg = float(np.max(np.abs(grad[finite] - grad_r[finite]), initial=0.0))
        ok = n_own == 0 and (n_grad == 0 or (c["tol"] > 0 and dg <= c["tol"]))
        status = "ok" if ok else ("DELIBERATE: " + DELIBERATE[name] if name in DELIBERATE else "MISMATCH")
        if ok and n_art:
            status = "ok (QKeras fwd off its own q)"
        if not ok and name not in DELIBERATE:
            bad.append(name)
        print(f"{name:42s} {x.size:5d} {n_ref:8d} {n_own:7d} {n_art:7d} {sz:4d} {n_grad:6d} {dg:9.2e} {n_tanh:6d}  {status}")
        if (verbose or not ok) and (n_own or n_grad):
            y, grad = y_all, grad_all
            idx = np.flatnonzero(same & same_g & ~((y == own_r) & ((grad == grad_r) | (np.abs(grad - grad_r) <= c["tol"]))))[:8]
            for i in idx:
                print(
                    f"    x={x.flat[i]!r:>14} edgebnn q={y.flat[i]!r} ref q={own_r.flat[i]!r} (fwd {fwd_r.flat[i]!r})"
                    f"  grad {grad.flat[i]!r} vs {grad_r.flat[i]!r}"
                )
    print()
    print("columns: fwd!=ref edgebnn forward vs the reference forward (exact); fwd!=q vs QKeras's own q;")
    print("ref art: QKeras's x + stop_gradient(q - x) != its own q (float32 rounding, a QKeras artifact);")
    print("+-0: signed-zero differences (counted equal); grad!= exact gradient mismatches; max|dg| max abs diff;")
    print("tanh!=: elements where TF 2.21's tanh differs from TF 2.15's by an ulp; those whose code moved")
    print("(an input on a rounding tie rounds to the neighbouring code) are left out of fwd!=q, and all of them")
    print("out of grad!= and max|dg| (the clip window may move with the unclipped code)")
    if bad:
        print(f"\n{len(bad)} case(s) differ: {', '.join(bad)}")
        return 1
    print(f"\nall {len(CASES)} cases agree")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--dump", metavar="OUT.npz", help="run the real larq/QKeras (Keras 2 env) and save")
    g.add_argument("--compare", metavar="REF.npz", help="run edgebnn (Keras 3 env) against a dump")
    p.add_argument("-v", "--verbose", action="store_true", help="print mismatching elements of every case")
    a = p.parse_args(argv)
    if a.dump:
        dump(a.dump)
        return 0
    return compare(a.compare, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
