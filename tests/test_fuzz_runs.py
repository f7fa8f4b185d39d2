"""The fuzzer's longer runs, in a module of their own so that the two test workers share the
fuzzing (tests/test_fuzz.py holds the rest): random models C-simulated in both io types, and
the seeds a long run found."""

import warnings

import pytest

from edgebnn import fuzz


@pytest.mark.slow
def test_fuzzed_models_c_simulate_exactly_in_both_io_types():
    summary = fuzz.run(models=8, csim=4, seed=500)
    simulated = [o for o in summary.outcomes if o.csim]
    assert not summary.failures, "\n".join(o.line() for o in summary.failures)
    assert sorted({o.csim for o in simulated if o.status == "ok"}) == ["io_parallel", "io_stream"]


@pytest.mark.parametrize(
    "seed, recorded, machine",
    [
        # under jit_compile XLA computes a BatchNormalization whose mean an average pool hits
        # exactly as one fused multiply-add: its rounding residue (-4e-7, not 0) flips the sign
        # after it at batch size 1; freeze records that
        (1255, ["xla_fma"], ()),
        (1349, ["xla_fma", "xla_fma"], ()),  # the same after a 1-D global average; eager Keras differs at a second node
        # a Reshape((9,)) between an accumulator and its BatchNormalization (a replay crash); whether
        # XLA's own vectorized BatchNormalization there is already the fused multiply-add depends on
        # the processor XLA compiles for (measured: an AVX-512 FP16 Xeon rounds the product, so 147
        # accumulator values on the mean flip and freeze records xla_fma too; the long run's did not)
        (1384, [], ("xla_fma",)),
        (1438, [], ()),  # a float bias under XLA before a BatchNormalization head: one number now
        # without XLA, TensorFlow's CPU kernel computes a BatchNormalization as a fused multiply-add
        # in a tensor's vectorized body and rounded in its last partial vector: an accumulator value
        # on the mean flips the quantizer after it at batch size 1 only
        (40145, ["layout"], ()),
    ],
)
def test_seeds_of_a_long_run(seed, recorded, machine):
    """Freeze records the XLA and batch-layout caveats from the model's own arithmetic (the models
    built as the run found them, before the side-stream forms); whether
    this machine's TensorFlow build then takes the fused path and Keras's output actually moves
    is the build's choice, so the check is either ok or warned with a recorded
    caveat, never a mismatch or a crash. ``machine`` are the caveats whose recording depends on the
    processor (besides ``recorded``, which are always recorded)."""
    import keras

    from edgebnn.freeze import freeze

    keras.backend.clear_session()
    with fuzz.xla_allowed(), fuzz.without_side_forms():  # the models as the long run found them
        case = fuzz.random_model(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = freeze(case.model, strip_softmax=case.strip_softmax, input_type=case.input_type)
        kinds = [c["kind"] for c in graph.meta.get("keras_caveats", [])]
        assert [k for k in kinds if k not in machine] == recorded
        out = fuzz.check(case)
    assert out.status in ("ok", "warned"), out.line()
    assert out.status == "ok" or out.message.split("recorded: ")[-1] in kinds, out.line()
