"""bench/validate_estimates.py runs on any CSV with the reference columns and ends with the
one median line."""

import csv
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "validate_estimates.py"
REFERENCE = ROOT / "bench" / "reference" / "hls4ml_synthesis_results.csv"
LINE = re.compile(r"^median abs error: LUT \d+(\.\d+)?% FF \d+(\.\d+)?% DSP \d+(\.\d+)?% latency \d+(\.\d+)?%$")


def test_three_row_subset_prints_rows_and_the_median_line(tmp_path):
    with open(REFERENCE, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = {r["id"]: r for r in reader}
        fields = reader.fieldnames
    subset = tmp_path / "subset.csv"
    with open(subset, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for rid in ("6", "95", "2", "17"):  # two MLPs (one with post-synthesis numbers), two CNNs
            w.writerow(rows[rid])
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(subset)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    lines = out.strip().splitlines()
    assert LINE.match(lines[-1]), lines[-1]
    assert sum(1 for line in lines if line.startswith("median abs error:")) == 1
    assert "3 rows estimated" in out and "1 rows not covered" in out
    assert re.search(r"^\s*17 dnnsi_cnn4x4_u280\s+per-layer strategies", out, re.M)
    # the CNN is rebuilt and compared with its reports (10,250 cycles, 19,550 LUT)
    assert re.search(r"^\s*2 dnnsi_mnistcnn_rf16_z7\s+latency\s+\d+\s+10250\s", out, re.M)
    assert re.search(r"^\s*2 dnnsi_mnistcnn_rf16_z7\s+LUT\s+\d+\s+19550\s", out, re.M)
    assert re.search(r"^\s*6 dnnsi_mlp_pr75_rf1\s+DSP\s+\d+\s+162\s", out, re.M)
    assert re.search(r"^\s*95 hls4ml_testreport_dense16x5\s+latency\s+\d+\s+10\s", out, re.M)
    assert "random" in out and "zero weights" in out
    assert re.search(r"^\s*6 dnnsi_mlp_pr75_rf1\s+BRAM18\s+3\s+3\s", out, re.M)  # the softmax tables
    assert "per source repository" in out and "pominiq/DNNonSilicon (2 rows; Vivado HLS 2020.1)" in out


def test_parsing_helpers():
    sys.path.insert(0, str(SCRIPT.parent))
    import validate_estimates as v

    assert v.parse_architecture("Dense(4->128) -> relu -> Dense(128->3) -> softmax") == [
        ("dense", 4, 128),
        ("relu", 128, 128),
        ("dense", 128, 3),
        ("softmax", 3, 3),
    ]
    assert v.parse_types("ap_fixed<16,6>;ap_ufixed<8,0,AP_RND_CONV,AP_SAT>") == [(True, 16, 6), (False, 8, 0)]
    assert v.parse_architecture(
        "Conv2D(in=28x28x1,k=3x3,f=4,s=1,out=26x26) -> relu -> MaxPool2D(4x4,in=26x26x4) -> Dense(144->10)"
    ) == [
        ("conv2d", (28, 28, 1), (26, 26, 4), {"k": (3, 3), "s": 1}),
        ("relu", (26, 26, 4), (26, 26, 4)),
        ("maxpool2d", (26, 26, 4), (6, 6, 4), {"pool": (4, 4)}),
        ("flatten", (6, 6, 4), (144,)),
        ("dense", 144, 10),
    ]
    # the tutorial's spelling: shapes follow from the input, Flatten's size is checked
    tut = v.parse_architecture("Input(8x8x3) -> Conv2D(3x3,f=2)+ReLU -> MaxPool2x2 -> Flatten(18) -> Dense(4) -> Softmax")
    assert [s[0] for s in tut] == ["conv2d", "relu", "maxpool2d", "flatten", "dense", "softmax"]
    assert tut[2][2] == (3, 3, 2) and tut[4] == ("dense", 18, 4)
    with pytest.raises(v.NotCovered, match="Flatten"):
        v.parse_architecture("Input(8x8x3) -> Conv2D(3x3,f=2) -> Flatten(20) -> Dense(4)")
    with pytest.raises(v.NotCovered, match="in=30x30x3"):  # a size the chain does not give
        v.parse_architecture("Input(32x32x3) -> Conv2D(in=30x30x3,k=3x3,f=3,s=1,out=28x28)")
    # hls4ml's ZeroPad before a convolution: a pad step where the chain's shape grows, none at the start
    padded = v.parse_architecture(
        "ZeroPad -> Conv2D(in=32x32x3,k=3x3,f=8,s=4,out=8x8) -> ZeroPad -> Conv2D(in=10x10x8,k=3x3,f=4,s=1,out=8x8)"
    )
    assert [s[0] for s in padded] == ["conv2d", "pad2d", "conv2d"]
    assert padded[1] == ("pad2d", (8, 8, 8), (10, 10, 8), {"pad": ((1, 1), (1, 1))})
    uneven = v.parse_architecture("Input(5x5x2) -> ZeroPad -> Conv2D(in=8x8x2,k=3x3,f=1,s=1,out=6x6)")
    assert uneven[0][3] == {"pad": ((1, 2), (1, 2))}  # the larger half below and right, as Keras's same padding
    with pytest.raises(v.NotCovered, match="in=10x10x4"):  # no ZeroPad: the sizes must agree
        v.parse_architecture("Conv2D(in=10x10x3,k=3x3,f=4,s=1,out=8x8) -> Conv2D(in=10x10x4,k=3x3,f=4,s=1,out=8x8)")
    with pytest.raises(v.NotCovered, match="ZeroPad"):  # a pad cannot shrink or add channels
        v.parse_architecture("Conv2D(in=10x10x3,k=3x3,f=4,s=1,out=8x8) -> ZeroPad -> Conv2D(in=10x10x5,k=3x3,f=4,s=1,out=8x8)")
    dw = v.parse_architecture("DWConv2D(in=8x8x3,k=3x3,f=3,s=1,out=6x6) -> PWConv2D(in=6x6x3,k=1x1,f=5,s=1,out=6x6)")
    assert [s[0] for s in dw] == ["dwconv2d", "conv2d"] and [v.n_weights_of(s) for s in dw] == [27, 15]
    one_d = v.parse_architecture(
        "Conv1D(in=128x9,k=3,f=16,s=1,pad=same,out=128) -> relu -> GlobalMaxPool1D(in=128x16) -> Dense(16->6)"
    )
    assert [s[0] for s in one_d] == ["conv1d", "relu", "gmaxpool1d", "dense"]
    assert one_d[0][2] == (128, 16) and v.n_weights_of(one_d[0]) == 3 * 9 * 16 and v.family(one_d) == "conv"
    assert v.parse_architecture("Conv1D(in=130x9,k=3,f=16,s=1,out=128)")[0][2] == (128, 16)  # valid padding
    with pytest.raises(v.NotCovered, match="GlobalMaxPool1D"):
        v.parse_architecture("Conv1D(in=128x9,k=3,f=16,s=1,pad=same,out=128) -> GlobalMaxPool1D(in=128x8)")
    assert v.parse_architecture("Dense(64->1) -> sigmoid")[-1] == ("sigmoid", 1, 1)  # left out when it ends the chain
    pooled = v.parse_architecture("Conv1D(in=200x1,k=3,f=16,s=2,pad=valid,out=99) -> relu -> MaxPool1D(2,in=99x16)")
    assert pooled[-1] == ("maxpool1d", (99, 16), (49, 16), {"pool": 2})
    with pytest.raises(v.NotCovered, match="MaxPool1D"):
        v.parse_architecture("Conv1D(in=200x1,k=3,f=16,s=2,pad=valid,out=99) -> MaxPool1D(2,in=98x16)")
    with pytest.raises(v.NotCovered, match="recurrent"):
        v.parse_architecture("LSTM(16) -> Dense(16->2)")
    conv = {"steps": tut, "weight": (True, 8, 1), "zeros": 5}
    assert [a.shape for a in v.draw_weights(conv)] == [(3, 3, 3, 2), (18, 4)]
    design = {"steps": [("dense", 4, 8), ("relu", 8, 8), ("dense", 8, 2)], "weight": (True, 8, 1), "zeros": 10}
    w = v.draw_weights(design)
    assert [a.shape for a in w] == [(4, 8), (8, 2)]
    assert sum(int((a == 0).sum()) for a in w) == 10
    assert all(a.min() >= -128 and a.max() <= 127 for a in w)
    assert v.board_for_part("xc7z020-clg400-1").dsp == 220
    assert v.board_for_part("xc7z007s-clg225-2").name == "cora-z7-07s"
    # a relu's output type: the unsigned one, else a saturating signed one (QKeras quantized
    # activations), else the data type
    rows = {r["id"]: r for r in csv.DictReader(REFERENCE.read_text().splitlines())}
    assert [v.design_of(rows[i])["relu"] for i in ("26", "144", "1")] == [(False, 6, 0), (True, 7, 1), (True, 16, 6)]
    # the low-voltage -2L grade of a 7-series part is the same silicon; a plain T part is not a TL one
    assert v.board_for_part("xc7a200tl-ffg1156-2L").part == v.board_for_part("xc7a200t-sbg484-1").part
    assert v.board_for_part("xcku15p-ffve1517-1-i").dsp == 1968
    assert v.board_for_part("xc7vx690t-ffg1761-2").name == "vc709"


def test_issue_34_bounds_count_latency_within_10_percent_or_2_cycles():
    sys.path.insert(0, str(ROOT / "bench"))
    import validate_estimates as v

    def result(lat, true_lat, ii, true_ii, dsp_err):
        return {"est": {"latency": lat, "II": ii}, "hls": {"latency": true_lat, "II": true_ii}, "err_c": {"DSP": dsp_err}}

    # 2 cycles off 10 is inside (the 2-cycle floor), 3 off 10 is not; 9 off 100 is inside, 11 off 100 is not
    assert v.cycles_tight(12, 10) and not v.cycles_tight(13, 10)
    assert v.cycles_tight(109, 100) and not v.cycles_tight(111, 100)
    assert v.cycles_ok(13, 10) and v.cycles_ok(111, 100)  # the looser 20%-or-3 bound takes both
    rs = [result(12, 10, 1, 1, 0.0), result(111, 100, 5, 4, None), result(50, None, 70, 100, 30.0)]
    # a row without a latency figure counts as missed; the DSP median is over rows with a csynth figure
    assert v.tight_summary(rs) == "3 rows: latency within 10% or 2 cycles 1/3, II 2/3; DSP vs csynth 15.0% (2 rows)"
