"""edgebnn.fixed against the real ap_fixed headers that ship inside hls4ml, compiled with g++.

A C++ harness (tests/cpp) is generated for a table of types, compiled once (kept in the
temporary folder, keyed by a hash of everything that goes into it), and fed values in binary:
doubles (``ap_fixed<...> t(double)``, as every input and weight enters hls4ml's C-simulation)
and raw codes of another type (``D t = s``, the cast between layers). Each result is compared
code for code with ``FixedType.codes`` / ``cast_codes``, and its ``to_double()`` bit for bit
with ``quantize`` / ``from_codes``. Zero mismatches allowed; the counts are printed.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import shutil
import subprocess
import tempfile
import time
import zlib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from edgebnn.fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType, cast_asserts

pytestmark = pytest.mark.csim  # every test compiles against ap_fixed.h with g++

CPP_DIR = Path(__file__).parent / "cpp"
# -O0: the harness spends its time compiling ~1500 template instantiations, not running
# (measured on 2 cores: -O1 doubles the compile time; -fno-exceptions and a larger GC
# threshold cut another third). NDEBUG: ap_private asserts on reading a bit beyond the source's
# MSB, which ap_fixed's cast does (and then discards) when it drops more bits than the source
# has; hls4ml compiles its C-simulation without NDEBUG, so there such a cast aborts.
CXXFLAGS = [
    "-O0",
    "-std=c++17",
    "-w",
    "-DNDEBUG",
    "-fno-exceptions",
    "-fno-asynchronous-unwind-tables",
    "--param",
    "ggc-min-expand=400",
    "--param",
    "ggc-min-heapsize=1048576",
]

# (target shape, source type of its casts, N of its WRAP-with-saturation-bits variant).
# Width 1, negative integer bits, integer bits beyond the width, signed and unsigned, widths
# up to 64 on both sides, casts that shift right (rounding), left, and change signedness.
SHAPES = [
    ("fixed<1,1>", "fixed<6,3>", 1),
    ("ufixed<1,0>", "fixed<5,2>", 1),
    ("fixed<1,-3>", "ufixed<8,-1>", 1),
    ("fixed<2,2>", "fixed<8,4>", 2),
    ("ufixed<3,-2>", "fixed<10,-1>", 2),
    ("fixed<5,8>", "fixed<64,-8>", 2),  # drops 75 bits: beyond int64 shifts
    ("ufixed<6,10>", "fixed<6,-4>", 1),  # drops 14 bits of 6: aborts hls4ml C-sim unless TRN
    ("fixed<8,3>", "fixed<16,6>", 1),
    ("ufixed<8,0>", "fixed<18,8>", 3),
    ("fixed<8,8>", "ufixed<12,4>", 8),
    ("fixed<12,4>", "fixed<7,5>", 2),
    ("fixed<16,6>", "fixed<32,10>", 4),
    ("ufixed<16,16>", "fixed<24,20>", 16),
    ("fixed<32,16>", "fixed<64,30>", 5),
    ("fixed<48,20>", "ufixed<60,30>", 47),
    ("fixed<53,1>", "fixed<64,4>", 3),
    ("ufixed<54,60>", "fixed<20,50>", 1),
    ("fixed<64,64>", "ufixed<64,70>", 1),
    ("ufixed<64,32>", "fixed<64,40>", 63),
    ("fixed<64,-10>", "fixed<12,2>", 64),  # 64 more fraction bits: every nonzero code overflows
]
# beyond 64 bits (Python-int codes, the slow exact path): fewer modes and values
WIDE_SHAPES = [
    ("fixed<80,20>", "fixed<96,30>", 3),
]
N_RANDOM_DOUBLE = 1200  # random doubles per double case, on top of the edge cases
N_RANDOM_CAST = 500
N_RANDOM_TYPES = 32  # seeded random (target, source) pairs of the second test
RANDOM_SEED = 20240611


def _modes(shape: FixedType, n: int, roundings=ROUNDING_MODES) -> list[FixedType]:
    overflows = [(o, 0) for o in OVERFLOW_MODES] + [("WRAP", n)]
    return [shape.replace(rounding=r, overflow=o, sat_bits=b) for r in roundings for o, b in overflows]


def _fixed_cases() -> list[tuple[FixedType, FixedType]]:
    cases = []
    for tgt, src, n in SHAPES:
        for t in _modes(FixedType.from_string(tgt), n):
            cases.append((t, FixedType.from_string(src)))
    for tgt, src, n in WIDE_SHAPES:
        shape = FixedType.from_string(tgt)
        for t in _modes(shape, n, ("TRN", "RND_CONV", "RND_ZERO")):
            cases.append((t, FixedType.from_string(src)))
    return cases


def _random_type(rng) -> FixedType:
    w = int(rng.choice([int(rng.integers(1, 17)), int(rng.integers(1, 65))]))
    i = int(rng.integers(-w // 2 - 6, w + 12))
    rounding = str(rng.choice(ROUNDING_MODES))
    overflow = str(rng.choice(OVERFLOW_MODES + ("WRAP",)))  # WRAP twice: once with N below
    n = int(rng.integers(1, w + 1)) if overflow == "WRAP" and rng.random() < 0.5 else 0
    return FixedType(w, i, bool(rng.integers(2)), rounding, overflow, n)


def _random_cases() -> list[tuple[FixedType, FixedType]]:
    rng = np.random.default_rng(RANDOM_SEED)
    return [
        (_random_type(rng), _random_type(rng).replace(rounding="TRN", overflow="WRAP", sat_bits=0)) for _ in range(N_RANDOM_TYPES)
    ]


FIXED_CASES = _fixed_cases()
RANDOM_CASES = _random_cases()


# ------------------------------------------------------------------------------ harness
class Harness:
    """The compiled harness: case id 2k converts doubles to ``cases[k][0]``, id 2k+1 casts
    ``cases[k][1]`` to it.

    The build is keyed by a hash of its sources, flags, compiler and headers and kept in the
    temporary folder (``$EDGEBNN_APFIXED_CACHE``, or the system one; ``off`` disables the
    reuse), so only the first session pays for the compilation.
    """

    def __init__(self, cases, work_dir: Path, ap_types: Path):
        self.index, entries = {}, []
        for t, s in cases:
            if (t, s) not in self.index:
                self.index[(t, s)] = len(entries) // 2
                shape = f"{t.width}, {t.integer}, {str(t.signed).lower()}"
                entries.append(f"&edgebnn_from_double<{t.cpp()}, {shape}>")
                entries.append(f"&edgebnn_from_fixed<{s.cpp()}, {t.cpp()}, {shape}>")
        self.instantiations = len(entries)
        self.jobs = max(1, min(os.cpu_count() or 1, 8))
        self.units = 2 * self.jobs  # balances the load; each unit re-parses the headers (~0.5 s)
        sources = {}
        for u in range(self.units):
            body = ",\n".join(entries[u :: self.units]) or "0"
            sources[f"cases_{u}.cpp"] = (
                f'#include "apfixed_harness.h"\nextern const edgebnn_case_fn edgebnn_cases_{u}[] = {{\n{body}\n}};\n'
            )
        decls = "".join(f"extern const edgebnn_case_fn edgebnn_cases_{u}[];\n" for u in range(self.units))
        tables = ", ".join(f"edgebnn_cases_{u}" for u in range(self.units))
        sources["dispatch.cpp"] = (
            '#include "apfixed_harness.h"\n'
            + decls
            + f"static const edgebnn_case_fn* const tables[] = {{{tables}}};\n"
            + "edgebnn_case_fn edgebnn_case(long id) {\n"
            + f"  if (id < 0 || id >= {len(entries)}) return 0;\n"
            + f"  return tables[id % {self.units}][id / {self.units}];\n}}\n"
        )
        self.work_dir = work_dir
        key = self._key(sources, ap_types)
        cache = os.environ.get("EDGEBNN_APFIXED_CACHE", tempfile.gettempdir())
        final = None if cache == "off" else Path(cache) / f"edgebnn-apfixed-{key}"
        if final is not None and (final / "apfixed").exists():
            self.exe = final / "apfixed"
            self.compile_seconds = float((final / "compile_seconds").read_text())
            self.cached = True
            return
        build = work_dir / "build"
        build.mkdir()
        self.compile_seconds = self._compile(sources, build, ap_types)
        (build / "compile_seconds").write_text(f"{self.compile_seconds:.3f}")
        self.exe, self.cached = build / "apfixed", False
        if final is not None:  # publish whole or not at all
            staging = None
            try:
                staging = Path(tempfile.mkdtemp(prefix=".edgebnn-apfixed-", dir=final.parent))
                for name in ("apfixed", "compile_seconds"):
                    shutil.copy2(build / name, staging / name)
                os.rename(staging, final)
            except OSError:  # another session published it first, or no writable cache
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _key(sources, ap_types: Path) -> str:
        h = hashlib.sha256()
        version = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout
        for part in [version, " ".join(CXXFLAGS), *sorted(sources.items())]:
            h.update(repr(part).encode())
        for path in sorted(CPP_DIR.glob("*")) + sorted(ap_types.rglob("*.h")):
            h.update(path.name.encode() + path.read_bytes())
        return h.hexdigest()[:20]

    def _compile(self, sources, build: Path, ap_types: Path) -> float:
        paths = []
        for name, text in sources.items():
            (build / name).write_text(text)
            paths.append(build / name)
        paths.append(CPP_DIR / "apfixed_main.cpp")
        include = ["-I", str(ap_types), "-I", str(CPP_DIR)]
        start = time.perf_counter()
        objects, running = [], []
        for src in paths:
            obj = build / (src.stem + ".o")
            objects.append(obj)
            if len(running) >= self.jobs:
                _wait(running.pop(0))
            running.append(
                subprocess.Popen(
                    ["g++", *CXXFLAGS, *include, "-c", str(src), "-o", str(obj)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        for proc in running:
            _wait(proc)
        _wait(
            subprocess.Popen(
                ["g++", *map(str, objects), "-o", str(build / "apfixed")],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
        return time.perf_counter() - start

    def describe(self) -> str:
        how = "reused from the cache, compiled there in" if self.cached else "compiled in"
        return (
            f"{self.instantiations} instantiations in {self.units} units with g++ {CXXFLAGS[0]}, "
            f"{how} {self.compile_seconds:.1f} s on {self.jobs} cores"
        )

    def run(self, jobs, tag: str):
        """jobs: (case id, (n, 2) uint64 words); returns the (n, 3) output words of each."""
        inp, out = self.work_dir / f"{tag}.in", self.work_dir / f"{tag}.out"
        with open(inp, "wb") as f:
            for case_id, words in jobs:
                f.write(np.array([case_id, len(words)], dtype=np.int64).tobytes())
                f.write(np.ascontiguousarray(words, dtype=np.uint64).tobytes())
        proc = subprocess.run([str(self.exe), str(inp), str(out)], capture_output=True, text=True)
        assert proc.returncode == 0, f"harness failed ({proc.returncode}): {proc.stderr[-2000:]}"
        flat = np.fromfile(out, dtype=np.uint64)
        results, pos = [], 0
        for _, words in jobs:
            results.append(flat[pos : pos + 3 * len(words)].reshape(-1, 3))
            pos += 3 * len(words)
        assert pos == flat.size, "harness output has the wrong length"
        return results


def _wait(proc):
    output, _ = proc.communicate()
    assert proc.returncode == 0, f"g++ failed:\n{output[-4000:]}"


def _ap_types_dir() -> Path:
    import hls4ml

    return Path(hls4ml.__file__).parent / "templates" / "vivado" / "ap_types"


@pytest.fixture(scope="session")
def ap_types():
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: cannot compile the ap_fixed harness")
    path = _ap_types_dir()
    if not (path / "ap_fixed.h").exists():
        pytest.skip(f"hls4ml ships no ap_fixed.h at {path}")
    return path


@pytest.fixture(scope="session")
def harness(tmp_path_factory, ap_types):
    return Harness(FIXED_CASES + RANDOM_CASES, tmp_path_factory.mktemp("apfixed"), ap_types)


# ------------------------------------------------------------------------------- values
_SPECIALS = [
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    -2.2250738585072014e-308,
    1e-300,
    -1e-300,
    1e300,
    -1e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    2.0**63,
    -(2.0**63),
    2.0**64,
    -(2.0**64),
    2.0**64 - 2048,
    -(2.0**64 - 2048),
    2.0**64 + 4096,
    2.0**53 + 2,
    -(2.0**53 + 2),
    2.0**62 + 2048,
    1.0,
    -1.0,
    0.5,
    -0.5,
    0.49999999999999994,
    -0.49999999999999994,
    3.0,
    -3.0,
]


def _edge_codes(t: FixedType) -> set[int]:
    lo, hi, w = t.min_code, t.max_code, t.width
    codes = {
        lo,
        hi,
        lo - 1,
        hi + 1,
        lo + 1,
        hi - 1,
        0,
        1,
        -1,
        2,
        -2,
        lo // 2,
        hi // 2 + 1,
        lo - (1 << w),
        hi + (1 << w),
        1 << w,
        -(1 << w),
        (1 << w) + 1,
        3 << (w - 1),
        -(3 << (w - 1)),
    }
    if t.sat_bits:
        k = w - t.sat_bits
        codes |= {1 << k, (1 << k) - 1, hi - (1 << k), lo + (1 << k)}
    return codes


def _double_inputs(t: FixedType, rng, n_random: int) -> np.ndarray:
    vals = list(_SPECIALS)
    lsb = Fraction(2) ** t.lsb_exp
    for c in _edge_codes(t):
        for d in (0, Fraction(1, 2), Fraction(-1, 2), Fraction(1, 4), Fraction(-1, 4), Fraction(3, 4), Fraction(-3, 4)):
            try:
                v = float((c + d) * lsb)
            except OverflowError:
                continue
            vals.append(v)
            if d.denominator == 2:  # one ulp either side of a tie
                vals += [math.nextafter(v, math.inf), math.nextafter(v, -math.inf)]
    for k in (t.integer - 1, t.integer, t.integer + 1, t.lsb_exp - 1, t.lsb_exp):
        if -1074 <= k <= 1023:
            vals += [math.ldexp(1.0, k), -math.ldexp(1.0, k)]
    vals = np.array([v for v in vals if math.isfinite(v)], dtype=np.float64)
    n = n_random // 4
    scale = min(max(t.lsb_exp, -1000), 1000)
    lo, hi = float(t.min_code), float(t.max_code)
    span = max(hi - lo, 1.0)
    uniform = np.ldexp(rng.uniform(lo - 0.25 * span - 2, hi + 0.25 * span + 2, n), scale)
    if t.width <= 50:  # exact ties: random codes plus a half, a quarter or nothing
        codes = rng.integers(t.min_code - 4, t.max_code + 5, n).astype(np.float64)
    else:
        codes = np.floor(rng.uniform(lo * 1.1 - 4, hi * 1.1 + 4, n) * 2.0**-20) * 2.0**20
    ties = np.ldexp(codes + rng.choice([0.5, -0.5, 0.25, 0.0], n), scale)
    logmag = np.ldexp(rng.choice([-1.0, 1.0], n), rng.integers(t.lsb_exp - 6, t.integer + 10, n).clip(-1074, 1023))
    logmag *= rng.uniform(1.0, 2.0, n)
    bits = rng.integers(0, 2**64, n_random - 3 * n, dtype=np.uint64).view(np.float64)
    out = np.concatenate([vals, uniform, ties, logmag, bits])
    return out[np.isfinite(out)], len(vals)


def _source_codes(s: FixedType, t: FixedType, rnd: random.Random, n_random: int) -> list[int]:
    """Codes of ``s`` around everything that matters for a cast to ``t``: its edges, exact
    ties of the rounding and one step either side, the edges of ``t`` seen from ``s``, then
    random codes over the whole range and over the window where ``t``'s range lies."""
    lo, hi = s.min_code, s.max_code
    codes = {lo, hi, lo + 1, hi - 1, 0, 1, -1, 2, -2}
    k = t.lsb_exp - s.lsb_exp  # > 0: the cast drops k bits and rounds
    targets = _edge_codes(t) | {rnd.randint(-1000, 1000) for _ in range(8)}
    for m in targets:
        if k > 0:
            for off in (0, 1, (1 << k) - 1, 1 << (k - 1), (1 << (k - 1)) + 1, (1 << (k - 1)) - 1):
                codes.add((m << k) + off)
        else:
            codes.update((m >> -k) + off for off in (-1, 0, 1))
    codes = sorted(c for c in codes if lo <= c <= hi)
    n_edge = len(codes)
    n_full = n_random // 2
    codes += [rnd.randint(lo, hi) for _ in range(n_full)]
    lo_t, hi_t = t.min_code - 3 - (1 << t.width), t.max_code + 3 + (1 << t.width)
    lo_w = max(lo, lo_t << k if k > 0 else lo_t >> -k)
    hi_w = min(hi, hi_t << k if k > 0 else -((-hi_t) >> -k))
    if lo_w <= hi_w:
        codes += [rnd.randint(lo_w, hi_w) for _ in range(n_random - n_full)]
    return codes, n_edge


def _as_code_array(codes, t: FixedType) -> np.ndarray:
    if t.code_dtype == np.dtype(object):
        return np.array(codes, dtype=object)
    return np.array(codes, dtype=t.code_dtype)


def _encode(codes: np.ndarray, t: FixedType) -> np.ndarray:
    words = np.zeros((len(codes), 2), dtype=np.uint64)
    if t.width <= 64:
        words[:, 0] = np.asarray(codes).astype(np.uint64) & np.uint64((1 << t.width) - 1)
    else:
        bits = [int(c) & ((1 << t.width) - 1) for c in codes]
        words[:, 0] = [b & (2**64 - 1) for b in bits]
        words[:, 1] = [b >> 64 for b in bits]
    return words


def _decode(out: np.ndarray, t: FixedType) -> np.ndarray:
    w = t.width
    if w > 64:
        res = []
        for lo, hi in zip(out[:, 0].tolist(), out[:, 1].tolist()):
            b = (lo | hi << 64) & ((1 << w) - 1)
            res.append(b - (1 << w) if t.signed and b >> (w - 1) else b)
        return np.array(res, dtype=object)
    bits = out[:, 0] & np.uint64((1 << w) - 1) if w < 64 else out[:, 0].copy()
    if t.signed:
        return (bits << np.uint64(64 - w)).view(np.int64) >> (64 - w)
    return bits if w == 64 else bits.view(np.int64)


def _doubles_comparable(t: FixedType) -> bool:
    """to_double() is meaningful while every value of t is a normal double."""
    return t.lsb_exp > -1000 and t.integer < 1000


class Tally:
    def __init__(self):
        self.values = {"double": 0, "cast": 0}
        self.doubles_checked = 0
        self.bad_codes = 0
        self.bad_doubles = 0
        self.mismatches = []

    def check(self, kind, t, s, inputs, got, expected):
        self.values[kind] += len(expected)
        bad = (
            np.nonzero(np.asarray(got != expected))[0]
            if got.dtype != object
            else np.array([i for i, (a, b) in enumerate(zip(got, expected)) if int(a) != int(b)], dtype=int)
        )
        self.bad_codes += len(bad)
        for i in bad[:3]:
            self.mismatches.append(f"{kind} {s} -> {t.cpp()}: input {inputs[i]!r}: ap_fixed {got[i]}, edgebnn {expected[i]}")

    def check_doubles(self, kind, t, s, inputs, out, values):
        self.doubles_checked += len(values)
        mine = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
        bad = np.nonzero(out[:, 2] != mine)[0]
        self.bad_doubles += len(bad)
        for i in bad[:3]:
            theirs = out[i : i + 1, 2].view(np.float64)[0]
            self.mismatches.append(
                f"{kind} to_double {s} -> {t.cpp()}: input {inputs[i]!r}: ap_fixed {theirs!r}, edgebnn {values[i]!r}"
            )


def _prove(harness, cases, tag, capsys, n_double=N_RANDOM_DOUBLE, n_cast=N_RANDOM_CAST):
    rng = np.random.default_rng([RANDOM_SEED, zlib.crc32(tag.encode())])
    rnd = random.Random(RANDOM_SEED + zlib.crc32(tag.encode()))
    jobs, meta, edges = [], [], 0
    for t, s in cases:
        case = harness.index[(t, s)]
        nd = n_double if t.width <= 64 else 150
        nc = n_cast if t.width <= 64 else 100
        x, n_edge = _double_inputs(t, rng, nd)
        edges += n_edge
        words = np.zeros((len(x), 2), dtype=np.uint64)
        words[:, 0] = x.view(np.uint64)
        jobs.append((2 * case, words))
        meta.append(("double", t, s, x))
        codes, n_edge = _source_codes(s, t, rnd, nc)
        codes = _as_code_array(codes, s)
        edges += n_edge
        jobs.append((2 * case + 1, _encode(codes, s)))
        meta.append(("cast", t, s, codes))
    start = time.perf_counter()
    outs = harness.run(jobs, tag)
    run_seconds = time.perf_counter() - start
    tally = Tally()
    for (kind, t, s, inputs), out in zip(meta, outs):
        got = _decode(out, t)
        if kind == "double":
            tally.check(kind, t, "double", inputs, got, t.codes(inputs))
            if _doubles_comparable(t):
                tally.check_doubles(kind, t, "double", inputs, out, t.quantize(inputs))
        else:
            expected = t.cast_codes(inputs, s.lsb_exp)
            tally.check(kind, t, s, inputs, got, expected)
            if _doubles_comparable(t):
                tally.check_doubles(kind, t, s, inputs, out, t.from_codes(expected) + 0.0)
                if s.width <= 53 and _doubles_comparable(s):  # the same values as doubles
                    tally.check_doubles("cast-as-double", t, s, inputs, out, t.quantize(s.from_codes(inputs)))
    n_shapes = len({(t.width, t.integer, t.signed) for t, _ in cases})
    n_assert = sum(cast_asserts(s, t) for t, s in cases)
    summary = (
        f"ap_fixed proof [{tag}]: {len(cases)} (type, mode) cases over {n_shapes} shapes "
        f"({n_assert} of their casts abort hls4ml's C-simulation, compiled without NDEBUG); "
        f"{tally.values['double']:,} double->fixed and {tally.values['cast']:,} fixed->fixed "
        f"conversions compared code for code ({edges:,} edge cases, the rest random), "
        f"{tally.doubles_checked:,} to_double() bit patterns; "
        f"{tally.bad_codes} code and {tally.bad_doubles} to_double mismatches. Harness: "
        f"{harness.describe()}; ran in {run_seconds:.1f} s."
    )
    with capsys.disabled():
        print("\n" + summary)
    assert not tally.mismatches, summary + "\n" + "\n".join(tally.mismatches[:30])
    return tally, edges


@pytest.mark.slow
def test_fixed_matches_ap_fixed_on_type_table(harness, capsys):
    """24 type shapes x 7 rounding x 5 overflow modes (WRAP with saturation bits included) and
    2 types beyond 64 bits, from doubles and from another type."""
    tally, edges = _prove(harness, FIXED_CASES, "table", capsys)
    assert tally.values["double"] + tally.values["cast"] - edges >= 1_000_000  # random ones
    assert len({(t.width, t.integer, t.signed) for t, _ in FIXED_CASES}) >= 20


@pytest.mark.slow
def test_fixed_matches_ap_fixed_on_random_types(harness, capsys):
    """Seeded random types, modes, saturation bits and cast sources."""
    _prove(harness, RANDOM_CASES, "random", capsys, n_double=2000, n_cast=1000)


@pytest.mark.slow
def test_nonfinite_as_ap_fixed_reads_them(harness):
    """With allow_nonfinite, NaN and infinities give what ap_fixed makes of them."""
    payload_nan = np.array([0x7FF4000000000001], dtype=np.uint64).view(np.float64)[0]
    x = np.array([np.inf, -np.inf, np.nan, -np.nan, payload_nan, 1.0, -2.5])
    picked = [t for t, _ in FIXED_CASES if t.width <= 64][::7]
    jobs = []
    for t in picked:
        words = np.zeros((len(x), 2), dtype=np.uint64)
        words[:, 0] = x.view(np.uint64)
        jobs.append((2 * harness.index[(t, dict(FIXED_CASES)[t])], words))
    outs = harness.run(jobs, "nonfinite")
    for t, out in zip(picked, outs):
        got = _decode(out, t)
        mine = t.codes(x, allow_nonfinite=True)
        assert np.array_equal(got, mine), f"{t.cpp()}: ap_fixed {got.tolist()}, edgebnn {mine.tolist()}"


ASSERT_PAIRS = [  # (source, target): around the boundary src.fractional - dst.fractional == src.width
    ("fixed<4,-6>", "fixed<8,8,RND>"),  # drops 10 bits of 4: asserts
    ("fixed<4,-6>", "fixed<8,8,TRN>"),  # TRN never reads the bit
    ("fixed<4,-6>", "fixed<8,8,TRN_ZERO>"),  # signed source: reads it
    ("ufixed<4,-6>", "fixed<8,8,TRN_ZERO>"),  # unsigned source: TRN_ZERO is TRN
    ("fixed<4,-6>", "fixed<8,2,RND_CONV,SAT>"),  # drops 4 of 4 bits: fine
    ("fixed<4,-6>", "fixed<8,3,RND_CONV,SAT>"),  # drops 5 of 4 bits: asserts
    ("ufixed<70,-2>", "ufixed<8,8,RND_INF>"),  # multi-word source, drops 72 of 70 bits: asserts
    ("ufixed<70,0>", "ufixed<8,8,RND_INF>"),  # 70 of 70 bits: fine
]


def test_cast_asserts_predicts_the_csim_abort(ap_types, tmp_path):
    """cast_asserts(src, dst) is True exactly when ``dst = src`` aborts a program compiled
    like hls4ml's C-simulation (no NDEBUG)."""
    pairs = [(FixedType.from_string(a), FixedType.from_string(b)) for a, b in ASSERT_PAIRS]
    body = "".join(
        f"  if (k == {i}) {{ {s.cpp()} s; s.setBits(1); {t.cpp()} t = s; return (int)t.to_double(); }}\n"
        for i, (s, t) in enumerate(pairs)
    )
    src = tmp_path / "asserts.cpp"
    src.write_text(
        "#include <ap_fixed.h>\n#include <cstdlib>\n"
        f"int main(int argc, char** argv) {{\n  int k = std::atoi(argv[1]);\n{body}  return 0;\n}}\n"
    )
    exe = tmp_path / "asserts"
    subprocess.run(["g++", "-O0", "-w", "-std=c++17", "-I", str(ap_types), str(src), "-o", str(exe)], check=True)
    for i, (s, t) in enumerate(pairs):
        rc = subprocess.run([str(exe), str(i)], capture_output=True).returncode
        assert (rc != 0) == cast_asserts(s, t), f"{t.cpp()} = {s.cpp()}: exit code {rc}"


TYPE_RULE_PAIRS = [
    ("fixed<8,3>", "fixed<4,1>"),
    ("ufixed<8,0>", "fixed<2,2>"),
    ("fixed<4,1>", "ufixed<8,0>"),
    ("ufixed<4,4>", "ufixed<4,2>"),
    ("fixed<6,-2>", "fixed<5,9>"),
    ("ufixed<1,0>", "fixed<1,1>"),
    ("fixed<16,6>", "ufixed<16,16>"),
    ("ufixed<3,-3>", "ufixed<7,10>"),
]


def test_result_types_are_ap_fixed_operator_types(ap_types, tmp_path):
    """mul_type / add_type / sub_type give the types of ap_fixed's ``*``, ``+``, ``-``."""
    from edgebnn.fixed import add_type, mul_type, sub_type

    pairs = [(FixedType.from_string(a), FixedType.from_string(b)) for a, b in TYPE_RULE_PAIRS]
    body = "".join(f"  show<decltype({a.cpp()}() {op} {b.cpp()}())>();\n" for a, b in pairs for op in "*+-")
    src = tmp_path / "rtypes.cpp"
    src.write_text(
        "#include <ap_fixed.h>\n#include <cstdio>\n"
        "template <class T> void show() { T r; r.setBits(~0ULL);\n"
        '  std::printf("%d %d %d\\n", T::width, T::iwidth, r.to_double() < 0 ? 1 : 0); }\n'
        f"int main() {{\n{body}  return 0;\n}}\n"
    )
    exe = tmp_path / "rtypes"
    subprocess.run(["g++", "-O0", "-w", "-std=c++17", "-I", str(ap_types), str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    got = iter(lines)
    for a, b in pairs:
        for rule in (mul_type, add_type, sub_type):
            w, i, s = map(int, next(got).split())
            assert rule(a, b) == FixedType(w, i, bool(s)), f"{rule.__name__}({a}, {b}): ap_fixed gives {w},{i},{s}"
