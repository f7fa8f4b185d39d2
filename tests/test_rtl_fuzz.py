"""The fuzzer's RTL leg: random models exported as RTL with a random folding and simulated with
Verilator agree with the emulator; the random foldings are valid ones."""

import numpy as np
import pytest
from graphs import OP_GRAPHS

from edgebnn import fuzz
from edgebnn.backends.rtl import resolve_folding


@pytest.mark.parametrize("name", OP_GRAPHS)
def test_random_foldings_are_valid(name):
    graph = OP_GRAPHS[name]()
    for seed in range(5):
        folding = fuzz.random_folding(np.random.default_rng(seed), graph)
        assert resolve_folding(graph, folding) == {k: tuple(v) for k, v in folding.items()}
        assert all(pe * simd <= 4096 for pe, simd in folding.values())


@pytest.mark.rtl
@pytest.mark.slow
def test_fuzzed_models_simulate_exactly_as_rtl():
    summary = fuzz.run(models=4, csim=0, seed=700, rtl=2)
    simulated = [o for o in summary.outcomes if o.csim == fuzz.RTL]
    assert not summary.failures, "\n".join(o.line() for o in summary.failures)
    assert len(simulated) == 2 and all(o.status in ("ok", "warned") for o in simulated), [o.line() for o in simulated]
    assert all("folding" in o.target for o in simulated)
    assert "RTL-simulated 2: " in summary.line()
