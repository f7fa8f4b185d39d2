"""Data sets: digits unchanged, users' .npz and .csv files, splits, exact scaling, and one
sentence for every file or value that cannot make a data set."""

import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from edgebnn.data import Data, DataError, check_labels, check_on_grid, load_data, load_dataset
from edgebnn.fixed import FixedType

NPZ_HOW = "save the arrays with numpy.savez(path, x_train=..., y_train=...)"
CSV_HOW = "give comma-separated numbers, one sample per line"


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Work in the test's own folder, so that file names in messages are short."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def balanced(n_per_class: int, classes: int, shape=(6,), seed: int = 0):
    """uint8 features whose first value is the sample's index (to follow a sample through the
    splits) and labels 0..classes-1, ``n_per_class`` of each, shuffled."""
    rng = np.random.default_rng(seed)
    n = n_per_class * classes
    x = rng.integers(0, 256, (n, *shape), dtype=np.uint8).astype(np.int64)
    x.reshape(n, -1)[:, 0] = np.arange(n)
    y = rng.permutation(np.repeat(np.arange(classes), n_per_class))
    return x, y


def ids(x) -> set:
    return set(np.asarray(x).reshape(len(x), -1)[:, 0].astype(np.int64).tolist())


def write_csv(path, rows, header=None):
    lines = ([",".join(header)] if header else []) + [",".join(str(v) for v in r) for r in rows]
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def refused(**kwargs) -> str:
    with pytest.raises(DataError) as err:
        load_data(**kwargs)
    return str(err.value)


# ------------------------------------------------------------------------------ digits
def test_digits_default_is_sklearns_stratified_split_of_pixels_over_16():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x, y = (digits.data / 16.0).astype(np.float32), digits.target
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, stratify=y, random_state=0)
    got = load_dataset("digits")
    for a, b in zip(got, (x_tr, y_tr, x_te, y_te), strict=True):
        assert np.array_equal(a, b)
    assert [a.dtype for a in got] == [np.float32, np.int64, np.float32, np.int64]
    data = load_data()
    assert isinstance(data, Data) and data.x_val is None and data.y_val is None
    assert np.array_equal(data.x_train, x_tr) and np.array_equal(data.x_test, x_te)
    assert data.classes == 10
    assert data.source == "digits: 1437 training, 360 test samples, each (64,)"
    # another seed, another split of the same samples
    other = load_data(seed=1)
    assert not np.array_equal(other.x_test, x_te) and len(other.x_test) == len(x_te)


def test_digits_validation_comes_from_the_training_part_and_leaves_the_test_set_alone():
    plain = load_data(shape=[8, 8, 1])
    data = load_data(shape=[8, 8, 1], validation_fraction=0.25)
    assert np.array_equal(data.x_test, plain.x_test) and np.array_equal(data.y_test, plain.y_test)
    assert data.x_val.shape == (360, 8, 8, 1) and data.x_train.shape == (1077, 8, 8, 1)
    assert data.x_val.dtype == np.float32 and data.y_val.dtype == np.int64
    # train + validation is exactly the training part without validation (as multisets of rows)
    rows = lambda a: sorted(map(bytes, a.reshape(len(a), -1)))
    assert rows(np.concatenate([data.x_train, data.x_val])) == rows(plain.x_train)
    assert data.source == "digits: 1077 training, 360 validation, 360 test samples, each (8, 8, 1)"
    assert np.array_equal(load_data(validation_fraction=0.25).y_val, data.y_val)  # deterministic


def test_digits_messages_for_bad_fractions():
    assert refused(test_fraction=0.001) == (
        "test_fraction 0.001 splits the 1797 digits samples into 1795 for training and 2 for testing; a stratified "
        "split needs at least 10 (one per class) on each side, so use a fraction from 0.0056 to 0.9944"
    )
    assert refused(validation_fraction=0.001) == (
        "validation_fraction 0.001 splits the 1437 digits training samples into 1435 for training and 2 for "
        "validation; a stratified split needs at least 10 (one per class) on each side, so use a fraction from "
        "0.0070 to 0.9930"
    )
    assert refused(test_fraction=1.0) == "test_fraction must be a fraction between 0 and 1 (exclusive), got 1.0"
    assert refused(validation_fraction=1.0) == (
        "validation_fraction must be a fraction from 0 (no validation set) up to but excluding 1, got 1.0"
    )
    assert refused(validation_fraction=-0.1).startswith("validation_fraction must be a fraction from 0")
    assert refused(dataset="mnist") == "unknown dataset 'mnist'; available: digits, npz, csv"
    assert refused(path="d.npz") == "data.path and data.test_path name files, but dataset is 'digits'; set dataset to npz or csv"
    assert refused(shape=[9, 9]) == (
        "shape [9, 9] holds 81 values, but each digits sample has 64; give a shape whose product is 64 "
        "(e.g. [8, 8, 1] for images, [8, 8] for rows as sequences)"
    )
    assert refused(scale=0) == "scale must be a finite non-zero number (inputs are raw * scale + offset), got 0"
    assert refused(offset=float("nan")) == "offset must be a finite number (inputs are raw * scale + offset), got nan"


def test_load_dataset_takes_every_key_of_the_data_section(here):
    x, y = balanced(20, 3)
    np.savez("d.npz", x_train=x, y_train=y)
    keys = dict(dataset="npz", path="d.npz", test_path=None, label_column=-1, shape=[3, 2], scale=0.5, offset=1.0)
    keys.update(test_fraction=0.25, validation_fraction=0.2, seed=3)
    x_tr, y_tr, x_te, y_te = load_dataset(**keys)
    data = load_data(**keys)
    assert np.array_equal(x_tr, data.x_train) and np.array_equal(y_tr, data.y_train)
    assert np.array_equal(x_te, data.x_test) and np.array_equal(y_te, data.y_test)
    assert x_tr.shape == (36, 3, 2) and x_te.shape == (15, 3, 2) and data.x_val.shape == (9, 3, 2)


# ------------------------------------------------------------------------------ npz
@pytest.mark.parametrize("shape", [(6,), (5, 4), (5, 4, 3)])
def test_npz_split_is_stratified_deterministic_and_disjoint(here, shape):
    x, y = balanced(40, 5, shape)
    np.savez("d.npz", x_train=x, y_train=y)
    data = load_data(dataset="npz", path="d.npz", test_fraction=0.25, validation_fraction=0.2, seed=7)
    assert data.x_train.shape == (120, *shape) and data.x_val.shape == (30, *shape) and data.x_test.shape == (50, *shape)
    assert [a.dtype for a in (data.x_train, data.x_val, data.x_test)] == [np.float32] * 3
    assert [a.dtype for a in (data.y_train, data.y_val, data.y_test)] == [np.int64] * 3
    assert np.bincount(data.y_test).tolist() == [10] * 5  # stratified: a quarter of each class
    assert np.bincount(data.y_val).tolist() == [6] * 5  # a fifth of each class's 30 left for training
    tr, va, te = ids(data.x_train), ids(data.x_val), ids(data.x_test)
    assert not tr & va and not tr & te and not va & te and tr | va | te == set(range(200))
    for part, labels in ((data.x_train, data.y_train), (data.x_val, data.y_val), (data.x_test, data.y_test)):
        i = np.asarray(sorted(ids(part)))
        assert np.array_equal(np.asarray(part, np.int64), x[np.asarray(part).reshape(len(part), -1)[:, 0].astype(int)])
        assert sorted(labels.tolist()) == sorted(y[i].tolist())
    again = load_data(dataset="npz", path="d.npz", test_fraction=0.25, validation_fraction=0.2, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(vars_of(data), vars_of(again), strict=True))
    no_val = load_data(dataset="npz", path="d.npz", test_fraction=0.25, seed=7)
    assert no_val.x_val is None and np.array_equal(no_val.x_test, data.x_test) and np.array_equal(no_val.y_test, data.y_test)
    assert ids(no_val.x_train) == tr | va
    assert data.classes == 5
    assert data.source == f"d.npz: 120 training, 30 validation, 50 test samples, each {shape}"


def vars_of(data: Data):
    return [data.x_train, data.y_train, data.x_val, data.y_val, data.x_test, data.y_test]


def test_npz_with_its_own_test_and_validation_sets_keeps_them(here):
    x, y = balanced(10, 3, (4, 4))
    np.savez(
        "d.npz", x_train=x, y_train=y.astype(np.float64), x_test=x[:5], y_test=y[:5], x_val=x[5:9], y_val=y[5:9].reshape(4, 1)
    )
    data = load_data(dataset="npz", path="d.npz", shape=[4, 4, 1])
    assert np.array_equal(data.x_train, x.reshape(30, 4, 4, 1)) and np.array_equal(data.y_train, y)
    assert np.array_equal(data.x_test, x[:5].reshape(5, 4, 4, 1)) and np.array_equal(data.y_test, y[:5])
    assert np.array_equal(data.x_val, x[5:9].reshape(4, 4, 4, 1)) and np.array_equal(data.y_val, y[5:9])
    assert data.y_train.dtype == np.int64 and data.y_val.dtype == np.int64
    assert data.source == "d.npz: 30 training, 4 validation, 5 test samples, each (4, 4, 1)"
    assert refused(dataset="npz", path="d.npz", validation_fraction=0.1) == (
        "d.npz: the file holds a validation set (x_val, y_val), so validation_fraction must be 0, got 0.1; "
        "set it to 0 or remove x_val and y_val from the file"
    )


def test_classes_count_the_largest_label_over_all_splits(here):
    x, y = balanced(5, 2)
    np.savez("d.npz", x_train=x, y_train=y, x_test=x[:3], y_test=np.array([0, 1, 6]))
    assert load_data(dataset="npz", path="d.npz").classes == 7


# ------------------------------------------------------------------------------ scaling
def test_uint8_pixels_scaled_by_1_over_256_land_exactly_on_ufixed_8_0(here):
    x = np.arange(256, dtype=np.uint8).reshape(16, 16).repeat(4, axis=0)
    y = np.arange(64) % 4
    np.savez("img.npz", x_train=x.reshape(64, 4, 4), y_train=y)
    data = load_data(dataset="npz", path="img.npz", scale=1 / 256, test_fraction=0.25)
    allx = np.concatenate([data.x_train, data.x_test]).ravel()
    assert sorted(allx.tolist()) == sorted((x.ravel() / 256).tolist())
    t = FixedType.from_string("ufixed<8,0>")
    assert t.contains(allx)
    assert set(np.ldexp(allx, 8).astype(np.int64).tolist()) == set(range(256))
    check_on_grid([data.x_train, data.x_test], "ufixed<8,0>")
    # an offset centres them on a signed grid: (raw - 128) / 128 on fixed<8,1>
    signed = load_data(dataset="npz", path="img.npz", scale=1 / 128, offset=-1.0, test_fraction=0.25)
    s = np.concatenate([signed.x_train, signed.x_test]).ravel()
    assert FixedType.from_string("fixed<8,1>").contains(s)
    assert set(np.ldexp(s, 7).astype(np.int64).tolist()) == set(range(-128, 128))


def test_scaling_is_done_once_in_float64():
    # 1/3 in float32 times 3 is 1.0000000298..., not 1: the product must be taken in float64 and cast once
    data = load_data(scale=3.0, offset=-1.0)
    plain = load_data()
    expected = (plain.x_train.astype(np.float64) * 3.0 - 1.0).astype(np.float32)
    assert np.array_equal(data.x_train, expected) and data.x_train.dtype == np.float32


def test_identity_scaling_keeps_values_as_they_are(here):
    x = np.array([[-0.0, 0.1], [1.5, -2.0]] * 4, dtype=np.float64)
    np.savez("d.npz", x_train=x, y_train=np.array([0, 1] * 4), x_test=x[:2], y_test=np.array([0, 1]))
    data = load_data(dataset="npz", path="d.npz")
    assert np.array_equal(data.x_train, x.astype(np.float32)) and np.signbit(data.x_train[0, 0])


def test_scaling_beyond_float32_is_refused(here):
    np.savez("d.npz", x_train=np.full((10, 3), 7, dtype=np.uint8), y_train=np.arange(10) % 2)
    assert refused(dataset="npz", path="d.npz", scale=1e38) == (
        "d.npz: scale 1e+38 and offset 0 take 24 training values beyond float32's range (e.g. the raw value 7); "
        "use a smaller scale"
    )
    assert load_data(dataset="npz", path="d.npz", scale=1e37).x_train.max() == np.float32(7e37)
    np.savez("big.npz", x_train=np.full((10, 2), 1e39), y_train=np.arange(10) % 2)
    assert refused(dataset="npz", path="big.npz") == (
        "big.npz: 16 training values are beyond float32's range (e.g. 1e+39); scale them down with data.scale"
    )
    assert load_data(dataset="npz", path="big.npz", scale=1e-10).x_train.max() == np.float32(1e29)


# ------------------------------------------------------------------------------ csv
def test_csv_without_header_label_last(here):
    x, y = balanced(12, 3, (4,))
    write_csv("d.csv", np.column_stack([x, y]).tolist())
    data = load_data(dataset="csv", path="d.csv", test_fraction=0.25)
    assert data.x_train.shape == (27, 4) and data.x_test.shape == (9, 4) and data.x_train.dtype == np.float32
    assert np.bincount(data.y_test).tolist() == [3, 3, 3]
    for part, labels in ((data.x_train, data.y_train), (data.x_test, data.y_test)):
        i = np.asarray(part[:, 0], dtype=np.int64)
        assert np.array_equal(part, x[i].astype(np.float32)) and np.array_equal(labels, y[i])
    assert data.source == "d.csv: 27 training, 9 test samples, each (4,)"


def test_csv_header_label_by_name_quotes_spaces_and_bom(here):
    x, y = balanced(10, 2, (3,))
    lines = [f'"{a}", {b},{c},{float(label)},0' for (a, b, c), label in zip(x.tolist(), y.tolist(), strict=True)]
    text = "\ufeffid,f1,f2,label,zero\r\n" + "\r\n".join(lines) + "\r\n\r\n"
    pathlib.Path("d.csv").write_text(text, encoding="utf-8", newline="")
    data = load_data(dataset="csv", path="d.csv", label_column="label", shape=[2, 2])
    assert data.x_train.shape == (16, 2, 2) and data.x_test.shape == (4, 2, 2)
    i = np.asarray(data.x_train[:, 0, 0], dtype=np.int64)
    assert np.array_equal(data.x_train.reshape(16, 4), np.column_stack([x[i], np.zeros(16)]).astype(np.float32))
    assert np.array_equal(data.y_train, y[i])
    by_index = load_data(dataset="csv", path="d.csv", label_column=3, shape=[2, 2])
    assert np.array_equal(by_index.x_train, data.x_train) and np.array_equal(by_index.y_test, data.y_test)
    from_end = load_data(dataset="csv", path="d.csv", label_column=-2, shape=[2, 2])
    assert np.array_equal(from_end.x_test, data.x_test)


def test_csv_separate_test_file(here):
    x, y = balanced(8, 2, (2,))
    write_csv("train.csv", np.column_stack([y, x]).tolist(), header=["label", "a", "b"])
    write_csv("test.csv", np.column_stack([y[:5], x[:5]]).tolist(), header=["label", "a", "b"])
    data = load_data(dataset="csv", path="train.csv", test_path="test.csv", label_column=0, validation_fraction=0.25)
    assert data.x_test.shape == (5, 2) and np.array_equal(data.x_test, x[:5].astype(np.float32))
    assert np.array_equal(data.y_test, y[:5])
    assert len(data.x_train) == 12 and len(data.x_val) == 4 and ids(data.x_train) | ids(data.x_val) == set(range(16))
    assert data.source == "train.csv + test.csv: 12 training, 4 validation, 5 test samples, each (2,)"


# ------------------------------------------------------------------------------ refusals
def test_file_refusals(here):
    x, y = balanced(10, 2)
    np.savez("d.npz", x_train=x, y_train=y)
    os.mkdir("folder.npz")
    assert refused(dataset="npz") == "dataset 'npz' reads a file: give its path (data.path)"
    assert refused(dataset="npz", path="nope.npz") == (
        "nope.npz: no such file; check data.path (a relative path is read from the config file's folder)"
    )
    assert refused(dataset="npz", path="folder.npz") == "folder.npz: is a folder, not a file; give the .npz file itself"
    assert (
        refused(dataset="npz", path="d.csv")
        == "d.csv: dataset 'npz' reads .npz files, but its extension is '.csv'; set dataset to csv"
    )
    assert (
        refused(dataset="csv", path="d.txt")
        == "d.txt: dataset 'csv' reads .csv files, but its extension is '.txt'; give a .csv file"
    )
    assert refused(dataset="npz", path="d") == "d: dataset 'npz' reads .npz files, but it has no extension; give a .npz file"
    assert refused(dataset="npz", path="d.npz", test_path="t.csv") == (
        "t.csv: test_path is for csv files; an .npz file holds its test set as x_test and y_test"
    )


def test_damaged_and_foreign_npz_files_are_refused_without_unpickling(here):
    x, y = balanced(10, 2)
    np.savez("good.npz", x_train=x, y_train=y)
    good = pathlib.Path("good.npz").read_bytes()
    with zipfile.ZipFile("zip.npz", "w") as z:
        z.writestr("readme.txt", "hello")
    pathlib.Path("half.npz").write_bytes(good[: len(good) // 2])
    crc = bytearray(good)
    crc[200:260] = bytes(60)
    pathlib.Path("crc.npz").write_bytes(bytes(crc))
    pathlib.Path("text.npz").write_text("x_train,y_train\n")
    np.save("single.npy", x)
    os.replace("single.npy", "single.npz")

    marker = here / "ran"

    class Payload:
        def __reduce__(self):
            return (pathlib.Path(marker).touch, ())

    import pickle

    pathlib.Path("pickle.npz").write_bytes(pickle.dumps({"x_train": Payload()}))
    np.savez("objects.npz", x_train=np.array([Payload()] * 20, dtype=object), y_train=y)

    assert refused(dataset="npz", path="zip.npz") == f"zip.npz: has no x_train or y_train (its keys: readme.txt); {NPZ_HOW}"
    assert refused(dataset="npz", path="half.npz") == (
        f"half.npz: is not a readable .npz archive (BadZipFile: File is not a zip file); {NPZ_HOW}"
    )
    assert refused(dataset="npz", path="crc.npz") == (
        "crc.npz: array x_train cannot be read (BadZipFile: Bad CRC-32 for file 'x_train.npy'); write the file again"
    )
    assert refused(dataset="npz", path="text.npz") == f"text.npz: is not an .npz archive (not a zip archive); {NPZ_HOW}"
    assert refused(dataset="npz", path="single.npz") == f"single.npz: is not an .npz archive (a single .npy array); {NPZ_HOW}"
    assert refused(dataset="npz", path="pickle.npz") == (
        f"pickle.npz: is a pickle, not an .npz archive; edgebnn does not load pickles (they can run code), so {NPZ_HOW}"
    )
    assert refused(dataset="npz", path="objects.npz") == (
        "objects.npz: array x_train holds Python objects (dtype object), which edgebnn does not load "
        "(unpickling can run code); store numbers"
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    "arrays, says",
    [
        ({"X": "x", "Y": "y"}, f"has no x_train or y_train (its keys: X, Y); {NPZ_HOW}"),
        ({"x_train": "x"}, f"has no y_train (its keys: x_train); {NPZ_HOW}"),
        ({"x_train": "x", "y_train": "y", "x_test": "x"}, "has x_test but no y_test; give both or neither"),
        ({"x_train": "x", "y_train": "y", "y_val": "y"}, "has y_val but no x_val; give both or neither"),
        ({"x_train": "x", "y_train": "y[:-1]"}, "x_train has 40 samples but y_train has 39 labels; give one label per sample"),
        (
            {"x_train": "x.astype('U3')", "y_train": "y"},
            "x_train has dtype <U3 (text); features must be numbers (integers or floats)",
        ),
        (
            {"x_train": "x.astype(complex)", "y_train": "y"},
            "x_train has dtype complex128 (complex numbers); features must be numbers (integers or floats)",
        ),
        (
            {"x_train": "x[:, 0]", "y_train": "y"},
            "x_train has shape (40,); give one sample per row: (N, features) vectors or (N, H, W[, C]) images "
            "(e.g. shape (40, 1) for one feature)",
        ),
        ({"x_train": "x[:0]", "y_train": "y[:0]"}, "x_train holds no samples"),
        (
            {"x_train": "nan_at(x, 3, 17)", "y_train": "y"},
            "x_train has NaN or infinite values in 2 samples (the first is sample 3); remove or fill them",
        ),
        (
            {"x_train": "x", "y_train": "np.sort(y) + 0.5"},
            "y_train holds 40 labels that are not whole numbers, e.g. 0.5; labels must be class indices 0, 1, 2, ...",
        ),
        (
            {"x_train": "x", "y_train": "np.where(np.arange(40) == 5, np.nan, y)"},
            "y_train holds 1 label that is not a whole number, e.g. nan; labels must be class indices 0, 1, 2, ...",
        ),
        (
            {"x_train": "x", "y_train": "y - 1"},
            "y_train holds 10 negative labels, e.g. -1; labels must be class indices 0, 1, 2, ...",
        ),
        ({"x_train": "x", "y_train": "y.astype(str)"}, "y_train has dtype <U21 (text); labels must be integers 0, 1, 2, ..."),
        (
            {"x_train": "x", "y_train": "np.eye(4)[y]"},
            "y_train has shape (40, 4); give one integer label per sample, shape (N,) (for one-hot labels, store their argmax)",
        ),
        (
            {"x_train": "x", "y_train": "y * 2.0**40"},
            "y_train holds the label 3298534883328, too large for a class index; labels are 0, 1, 2, ...",
        ),
        (
            {"x_train": "x", "y_train": "y", "x_test": "x[:5, :4]", "y_test": "y[:5]"},
            "x_test samples have shape (4,) but x_train samples have shape (6,); every split needs samples of the same shape",
        ),
        (
            {"x_train": "x[:31]", "y_train": "np.sort(y)[:31]"},
            "class 3 has only 1 sample among the 31 samples, and a stratified split needs at least 2 of each class; "
            "add samples of class 3, remove it, or give a separate test set",
        ),
    ],
)
def test_npz_content_refusals(here, arrays, says):
    x, y = balanced(10, 4)
    x = x.astype(np.float32)

    def nan_at(a, *rows):
        a = a.copy()
        a[rows[0], 1], a[rows[1], 2] = np.nan, -np.inf
        return a

    env = {"x": x, "y": y, "np": np, "nan_at": nan_at}
    np.savez("d.npz", **{k: eval(v, env) for k, v in arrays.items()})
    assert refused(dataset="npz", path="d.npz") == f"d.npz: {says}"


def test_split_size_refusals_name_the_fractions_that_work(here):
    x, y = balanced(10, 4)
    np.savez("d.npz", x_train=x, y_train=y)
    assert refused(dataset="npz", path="d.npz", test_fraction=0.05) == (
        "d.npz: test_fraction 0.05 splits the 40 samples into 38 for training and 2 for testing; a stratified split "
        "needs at least 4 (one per class) on each side, so use a fraction from 0.1000 to 0.9000"
    )
    assert refused(dataset="npz", path="d.npz", validation_fraction=0.9) == (
        "d.npz: validation_fraction 0.9 splits the 32 training samples into 3 for training and 29 for validation; a "
        "stratified split needs at least 4 (one per class) on each side, so use a fraction from 0.1250 to 0.8750"
    )
    np.savez("few.npz", x_train=x[:6], y_train=np.array([0, 0, 1, 1, 2, 2]))
    assert refused(dataset="npz", path="few.npz", test_fraction=0.2) == (
        "few.npz: test_fraction 0.2 splits the 6 samples into 4 for training and 2 for testing; a stratified split "
        "needs at least 3 (one per class) on each side, so use a fraction from 0.5000 to 0.5000"
    )
    assert refused(dataset="npz", path="d.npz", shape=[4, 2]) == (
        "d.npz: shape [4, 2] holds 8 values, but each sample has 6 (shape [6]); give a shape whose product is 6"
    )


def test_csv_refusals(here):
    x, y = balanced(10, 3, (3,))
    rows = np.column_stack([x, y]).tolist()
    write_csv("d.csv", rows)
    write_csv("h.csv", rows, header=["id", "a", "b", "label"])
    write_csv("ragged.csv", rows[:4] + [[1, 2]] + rows[4:])
    write_csv("ragged_header.csv", rows, header=["a", "b", "label"])
    write_csv("text.csv", rows[:2] + [[1, "x", 3, 0]] + rows[2:])
    write_csv("hole.csv", rows[:2] + [[1, "", 3, 0]] + rows[2:])
    write_csv("nan.csv", rows[:6] + [[1, "nan", 3, 0]] + rows[6:])
    write_csv("only_label.csv", [[r[-1]] for r in rows])
    write_csv("three.csv", [r[:3] for r in rows])
    write_csv("other_header.csv", rows, header=["id", "a", "c", "label"])
    write_csv("dup.csv", rows, header=["a", "a", "b", "label"])
    pathlib.Path("empty.csv").write_text("")
    pathlib.Path("blank.csv").write_text("\n\n")
    pathlib.Path("header_only.csv").write_text("a,b,label\n")
    pathlib.Path("binary.csv").write_bytes(b"\xff\xfe\x00\x01\x80")

    def says(path, **kw):
        return refused(dataset="csv", path=path, **kw)

    assert says("ragged.csv") == "ragged.csv: line 5 has 2 values but line 1 has 4; every row needs the same columns"
    assert says("ragged_header.csv") == (
        "ragged_header.csv: line 2 has 4 values but line 1 has 3; every row needs the same columns"
    )
    assert says("text.csv") == "text.csv: line 3, column 2: 'x' is not a number; features and labels must be numeric"
    assert says("hole.csv") == "hole.csv: line 3, column 2: an empty value is not a number; features and labels must be numeric"
    assert says("nan.csv") == (
        "nan.csv: the feature data has NaN or infinite values in 1 sample (the first is data row 7); remove or fill them"
    )
    assert says("empty.csv") == f"empty.csv: is empty; {CSV_HOW}"
    assert says("blank.csv") == f"blank.csv: is empty; {CSV_HOW}"
    assert says("header_only.csv") == "header_only.csv: holds only a header and no samples; give one sample per line after it"
    assert says("binary.csv") == f"binary.csv: is not a UTF-8 text file; {CSV_HOW}"
    assert (
        says("only_label.csv") == "only_label.csv: rows have only the label column; give at least one feature column besides it"
    )
    assert says("d.csv", label_column=4) == (
        "d.csv: label_column 4 is out of range for rows of 4 columns; give an index from -4 to 3"
    )
    assert says("d.csv", label_column=-5).startswith("d.csv: label_column -5 is out of range for rows of 4 columns")
    assert says("d.csv", label_column="label") == (
        "d.csv: label_column 'label' names a header column, but the file has no header (its first row is numeric); "
        "give the label's column index"
    )
    assert says("h.csv", label_column="class") == (
        "h.csv: label_column 'class' is not in the header; the header is 'id', 'a', 'b', 'label'"
    )
    assert (
        says("dup.csv", label_column="a")
        == "dup.csv: label_column 'a' names 2 or more columns; the header is 'a', 'a', 'b', 'label'"
    )
    assert says("d.csv", label_column=1.5) == (
        "label_column must be a column index (negative counts from the end) or a header name, got 1.5"
    )
    assert says("d.csv", label_column=0) == (  # the ids are unique: no class has two samples
        "d.csv: class 0 has only 1 sample among the 30 samples, and a stratified split needs at least 2 of each class; "
        "add samples of class 0, remove it, or give a separate test set"
    )
    assert (
        says("d.csv", test_path="three.csv") == "three.csv: has 3 columns but d.csv has 4; the test file needs the same columns"
    )
    assert says("h.csv", test_path="other_header.csv", label_column="label") == (
        "other_header.csv: column 2 is 'c' but in h.csv it is 'b'; the test file needs the same columns"
    )
    assert says("d.csv", test_path="nan.csv") == (
        "nan.csv: the feature data has NaN or infinite values in 1 sample (the first is data row 7); remove or fill them"
    )
    write_csv("labels.csv", [r[:3] + [i % 3 + 0.25] for i, r in enumerate(rows)])
    assert says("labels.csv") == (
        "labels.csv: the label column holds 30 labels that are not whole numbers, e.g. 0.25; labels must be class "
        "indices 0, 1, 2, ..."
    )


# ------------------------------------------------------------------------------ checks for the pipeline
def test_check_on_grid_counts_shows_and_proposes():
    digits = load_data().x_train
    check_on_grid(digits, "ufixed<5,1>")
    with pytest.raises(DataError) as err:
        check_on_grid(digits, "ufixed<8,0>")
    n_one = int(np.sum(digits == 1.0))
    assert str(err.value) == (
        f"{n_one} of {digits.size} input values are not on the grid of ufixed<8,0> (multiples of 0.00390625 from 0 to "
        "0.99609375), e.g. 1; set data.scale to 0.5 to put them on it, or give an input type that holds them as they "
        "are, e.g. 'ufixed<5,1>'"
    )
    raw = np.arange(256, dtype=np.float64)
    with pytest.raises(DataError) as err:
        check_on_grid([raw, None], "fixed<8,0>")
    assert str(err.value) == (
        "255 of 256 input values are not on the grid of fixed<8,0> (multiples of 0.00390625 from -0.5 to 0.49609375), "
        "e.g. 1; set data.scale to 0.00390625 and data.offset to -0.5 to put them on it, or give an input type that "
        "holds them as they are, e.g. 'uint<8>'"
    )
    # the proposal is absolute: for data already scaled by 1/16, the scale to set is 1/16 of the factor found
    with pytest.raises(DataError) as err:
        check_on_grid(raw / 16, "ufixed<8,0>", scale=1 / 16)
    assert "; set data.scale to 0.00390625 to put them on it, or " in str(err.value)
    assert FixedType.from_string("ufixed<8,0>").contains(raw * 0.00390625)
    with pytest.raises(DataError) as err:
        check_on_grid(np.array([0.0, 0.1, 0.25]), "fixed<8,0>")
    assert str(err.value) == (
        "1 of 3 input values are not on the grid of fixed<8,0> (multiples of 0.00390625 from -0.5 to 0.49609375), "
        "e.g. 0.1; no fixed-point type of at most 16 bits holds them exactly: round the data onto a grid first "
        "(e.g. to integers, then scale them by a power of two with data.scale)"
    )
    with pytest.raises(DataError, match=r"^input type 'fixed<0,1>': "):
        check_on_grid(raw, "fixed<0,1>")


def test_check_labels_names_the_bad_value_and_count():
    check_labels(np.array([0, 9, 3]), 10, "y_test")
    check_labels(np.array([0.0, 9.0]), 10, "y_test")
    with pytest.raises(DataError) as err:
        check_labels(np.array([1, 12, 11, 12, 3]), 10, "d.npz y_test")
    assert str(err.value) == (
        "d.npz y_test: 3 of 5 labels are not classes of a model with 10 outputs (integers 0 to 9), e.g. 12 (2 labels); "
        "give the model 13 outputs or fix the labels"
    )
    with pytest.raises(DataError) as err:
        check_labels(np.array([1, -1, 2.5, 1]), 10, "y_train")
    assert str(err.value) == (
        "y_train: 2 of 4 labels are not classes of a model with 10 outputs (integers 0 to 9), e.g. -1 (1 label); "
        "labels must be whole numbers 0, 1, 2, ... (class indices)"
    )
    with pytest.raises(DataError) as err:
        check_labels(np.array(["a"]), 2, "y_val")
    assert str(err.value) == "y_val: labels have dtype <U1 (text); labels must be integers 0 to 1"


def test_importing_data_loads_neither_sklearn_nor_tensorflow():
    code = "import sys, edgebnn.data; print(sorted(m for m in ('sklearn', 'tensorflow', 'keras') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
