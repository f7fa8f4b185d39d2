"""examples/digits_xnor_channels.py at a few epochs: the four versions train, and both chosen-channel
XNOR CNNs (power-of-two and float32 scales) are bit for bit in io_parallel and io_stream (the
example exits 0 only then)."""

import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")


@pytest.mark.train
@pytest.mark.csim
def test_the_chosen_channel_cnn_is_bit_for_bit(tmp_path, capsys):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import digits_xnor_channels as example
    finally:
        sys.path.pop(0)
    assert example.main(["--epochs", "2", "--filters", "8", "8", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in example.middle_quantizers():
        assert any(line.startswith(name) and "%" in line for line in out.splitlines()), out
    for name, folder in (("chosen", "chosen"), ("chosen mean|W|", "chosen-mean")):
        for io_type in ("io_parallel", "io_stream"):
            line = f"{name:<15} {io_type:<12} 360 samples, keras vs emulator: 0 mismatching, emulator vs csim: 0 mismatching"
            assert line in out, out
            assert (tmp_path / folder / io_type).is_dir()
    graph = example.freeze_middle(example.build(example.xnor_chosen((8, 8)), (8, 8)))
    assert graph.op == "conv2d" and graph.fixed_attr("weight_type").width > 2  # the chosen slices' shifts widen the codes
