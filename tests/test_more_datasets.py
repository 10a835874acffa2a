"""Reuters-10k, STL-10, UTKFace and image-folder loaders, on tiny files written in the real formats."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import sparse

from dcgmm_tf.data import DataSplits, image_folder, load_dataset, reuters, stl10, utkface

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def no_env_data(monkeypatch):
    monkeypatch.delenv("DCGMM_DATA", raising=False)


def write_idf(path, n, seed=0, **overrides):
    rng = np.random.default_rng(seed)
    content = {"data": rng.random((n, 2000)).astype(np.float64), "label": rng.integers(0, 4, n)}
    content.update(overrides)
    np.save(path, content, allow_pickle=True)
    return content


# ---- Reuters ---------------------------------------------------------------------------------------
def test_reuters_single_file_gets_a_seeded_80_20_split(tmp_path):
    content = write_idf(tmp_path / "reutersidf10k.npy", 50)
    data = load_dataset("reuters", tmp_path, download=False)
    assert data.likelihood == "gaussian" and data.name == "reuters"
    assert data.x_train.shape == (40, 2000) and data.x_test.shape == (10, 2000)
    x = np.concatenate([data.x_train, data.x_test])
    y = np.concatenate([data.y_train, data.y_test])
    order = np.lexsort(x.T[:3])
    expected_order = np.lexsort(content["data"].T[:3].astype(np.float32))
    np.testing.assert_allclose(x[order], content["data"][expected_order], rtol=1e-6)
    np.testing.assert_array_equal(y[order], content["label"][expected_order])
    again = reuters.load_reuters(tmp_path, download=False)
    np.testing.assert_array_equal(again.y_test, data.y_test)
    other_seed = reuters.load_reuters(tmp_path, download=False, seed=1)
    assert not np.array_equal(other_seed.x_test, data.x_test)


def test_reuters_train_test_files_are_used_as_they_are(tmp_path):
    folder = tmp_path / "reuters"
    folder.mkdir()
    train = write_idf(folder / "reutersidf10k_train.npy", 12, seed=1)
    test = write_idf(folder / "reutersidf10k_test.npy", 5, seed=2)
    write_idf(folder / "reutersidf10k.npy", 50)  # the split files take precedence
    data = load_dataset("reuters", tmp_path, download=False)
    np.testing.assert_allclose(data.x_train, train["data"], rtol=1e-6)
    np.testing.assert_array_equal(data.y_test, test["label"])


@pytest.mark.parametrize(
    "content, message",
    [
        (np.zeros((3, 4)), "dict"),
        ({"data": np.zeros((3, 4))}, "keys"),
        ({"data": np.zeros((3, 4)), "label": np.array([0, 1, 4])}, "0..3"),
        ({"data": np.zeros((3, 4)), "label": np.array([0, 1])}, "one row per label"),
        ({"data": np.full((2, 4), np.nan), "label": np.array([0, 1])}, "NaN"),
    ],
)
def test_reuters_rejects_malformed_files(tmp_path, content, message):
    np.save(tmp_path / "reutersidf10k.npy", content, allow_pickle=True)
    with pytest.raises(ValueError, match=message):
        reuters.load_reuters(tmp_path, download=False)


def test_reuters_missing_says_where_and_how(tmp_path):
    with pytest.raises(FileNotFoundError, match="reutersidf10k.npy") as e:
        load_dataset("reuters", tmp_path, download=False)
    assert str(tmp_path) in str(e.value) and "RCV1" in str(e.value)


def test_build_from_rcv1_keeps_single_root_documents_and_frequent_words():
    names = ["C11", "CCAT", "ECAT", "GCAT", "MCAT"]
    # documents: CCAT, GCAT+MCAT (dropped), MCAT, ECAT, no root (dropped), GCAT
    topics = sparse.csr_matrix(
        np.array([[1, 1, 0, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1], [0, 0, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 1, 0]])
    )
    features = np.zeros((6, 5))
    features[:, 0] = [1, 1, 1, 1, 1, 1]  # in every document
    features[[0, 2, 3], 3] = 2.0  # in 3 kept documents
    features[[0, 1, 4], 4] = 5.0  # in 1 kept document (1 and 4 are dropped)
    features[5, 2] = 3.0  # in 1 kept document
    x, y = reuters.build_from_rcv1(sparse.csr_matrix(features), topics, names, num_documents=10, num_words=2)
    np.testing.assert_array_equal(y, [0, 2, 3, 1])  # CCAT, MCAT, ECAT, GCAT
    expected = np.array([[1, 2], [1, 2], [1, 2], [1, 0]], np.float32)  # words 0 and 3
    np.testing.assert_allclose(x, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)
    x_small, _ = reuters.build_from_rcv1(sparse.csr_matrix(features), topics, names, num_documents=2, num_words=2)
    assert x_small.shape == (2, 2)


# ---- STL-10 ----------------------------------------------------------------------------------------
def write_stl_binaries(folder, n_train=2, n_test=1, seed=0):
    """Images [N, 96, 96, 3] written as STL-10 does (channel by channel, column-major), labels 1..10."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 96, 96, 3), dtype=np.uint8)
        labels = rng.integers(1, 11, n).astype(np.uint8)
        images.transpose(0, 3, 2, 1).tofile(folder / f"{split}_X.bin")
        labels.tofile(folder / f"{split}_y.bin")
        out[split] = (images, labels)
    return out


def test_stl10_binaries_are_read_as_hwc_images(tmp_path):
    written = write_stl_binaries(tmp_path / "stl10_binary")
    images, labels = stl10.read_binaries(tmp_path / "stl10_binary", "train")
    np.testing.assert_array_equal(images, written["train"][0])
    np.testing.assert_array_equal(labels, written["train"][1].astype(np.int64) - 1)
    all_images, all_labels = stl10.read_labelled(tmp_path / "stl10_binary")
    assert all_images.shape == (3, 96, 96, 3) and all_labels.shape == (3,)
    assert stl10.find_binaries(tmp_path) == tmp_path / "stl10_binary"


def test_stl10_binaries_are_validated(tmp_path):
    write_stl_binaries(tmp_path)
    np.zeros(5, np.uint8).tofile(tmp_path / "train_y.bin")
    with pytest.raises(ValueError, match="one label byte per image"):
        stl10.read_binaries(tmp_path, "train")
    np.array([0, 3], np.uint8).tofile(tmp_path / "train_y.bin")
    with pytest.raises(ValueError, match="1..10"):
        stl10.read_binaries(tmp_path, "train")


@pytest.mark.slow
def test_stl10_feature_script_and_loader(tmp_path):
    write_stl_binaries(tmp_path / "stl10_binary", n_train=3, n_test=2)
    output = tmp_path / "stl10" / "stl10_resnet50.npz"
    proc = subprocess.run(
        [
            sys.executable,
            "scripts/extract_stl10_features.py",
            f"--data_dir={tmp_path}",
            "--weights=none",
            "--image_size=32",
            "--batch_size=2",
            "--nodownload",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(output) as f:
        assert f["features"].shape == (5, 2048) and f["features"].dtype == np.float32
        assert np.all(np.isfinite(f["features"])) and f["features"].std() > 0
        labels = f["labels"]
    data = load_dataset("stl10", tmp_path)
    assert data.likelihood == "gaussian" and data.x_train.shape == (4, 2048) and data.x_test.shape == (1, 2048)
    assert sorted(np.concatenate([data.y_train, data.y_test])) == sorted(labels)


def test_stl10_missing_features_point_to_the_script(tmp_path):
    with pytest.raises(FileNotFoundError, match="extract_stl10_features.py"):
        load_dataset("stl10", tmp_path)
    np.savez(tmp_path / "stl10_resnet50.npz", features=np.zeros((3, 4)), labels=np.array([0, 1, 10]))
    with pytest.raises(ValueError, match="0..9"):
        load_dataset("stl10", tmp_path)


# ---- UTKFace ---------------------------------------------------------------------------------------
UTK_FILES = {  # name: (age, gender, race)
    "25_0_0_20170116174525125.jpg.chip.jpg": (25, 0, 0),
    "30_1_1_20170117000000000.jpg.chip.jpg": (30, 1, 1),
    "18_1_2_20170117000000001.jpg": (18, 1, 2),
    "50_0_3_20170117000000002.jpg": (50, 0, 3),
    "44_1_3_20170117000000003.jpg": (44, 1, 3),
    "10_0_0_20170117000000004.jpg": (10, 0, 0),  # too young for the ethnicity task
    "60_1_1_20170117000000005.jpg": (60, 1, 1),  # too old for the ethnicity task
    "33_0_4_20170117000000006.jpg": (33, 0, 4),  # race "Others"
    "39_1_20170116174525125.jpg.chip.jpg": None,  # malformed (no race), as a few real files are
}


def write_faces(folder):
    folder.mkdir(parents=True)
    for n, name in enumerate(UTK_FILES):
        Image.fromarray(np.full((20, 20, 3), 10 * n, np.uint8)).save(folder / name, quality=100)


def test_utkface_parse_name():
    for name, expected in UTK_FILES.items():
        assert utkface.parse_name(name) == expected


def test_utkface_tasks(tmp_path):
    write_faces(tmp_path / "utkface" / "UTKFace")
    gender = load_dataset("utkface_gender", tmp_path, image_size=8)
    assert gender.image_shape == (8, 8, 3) and gender.likelihood == "bernoulli"
    assert len(gender.y_train) + len(gender.y_test) == 8
    ethnicity = load_dataset("utkface_ethnicity", tmp_path, image_size=8)
    labels = np.concatenate([ethnicity.y_train, ethnicity.y_test])
    assert sorted(labels) == [0, 1, 2, 3, 3]  # White, Black, Asian, Indian, Indian; 18 <= age <= 50
    pixels = np.concatenate([ethnicity.x_train, ethnicity.x_test])[:, 0] * 255
    assert sorted(np.round(pixels / 10).astype(int)) == [0, 1, 2, 3, 4]


def test_utkface_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="UTKFace.tar.gz"):
        utkface.load_utkface("gender", tmp_path)
    with pytest.raises(ValueError, match="Unknown UTKFace task"):
        utkface.load_utkface("age", tmp_path)


# ---- image folders ---------------------------------------------------------------------------------
def write_class_folders(root, mode="L", per_class=3):
    for c, name in enumerate(("cat", "dog")):
        (root / name).mkdir(parents=True)
        for n in range(per_class):
            value = 100 * c + 10 * n
            shape = (6, 6) if mode == "L" else (6, 6, 3)
            Image.fromarray(np.full(shape, value, np.uint8), mode).save(root / name / f"{n}.png")


def test_image_folder_of_class_subfolders(tmp_path):
    write_class_folders(tmp_path / "frames")
    data = load_dataset(tmp_path / "frames", image_size=6)
    assert data.name == "frames" and data.image_shape == (6, 6, 1) and data.likelihood == "bernoulli"
    assert len(data.x_train) + len(data.x_test) == 6 and len(data.x_test) == 1
    x = np.concatenate([data.x_train, data.x_test])
    y = np.concatenate([data.y_train, data.y_test])
    np.testing.assert_allclose(x * 255, np.repeat(x[:, :1] * 255, 36, axis=1), atol=1e-3)
    assert all((value >= 100) == label for value, label in zip(x[:, 0] * 255, y))  # dog = 1
    assert data.images(data.x_test).shape == (1, 6, 6, 1)


def test_image_folder_rgb_and_resize(tmp_path):
    write_class_folders(tmp_path / "faces", mode="RGB")
    data = image_folder.load_image_folder(tmp_path / "faces", image_size=4)
    assert data.image_shape == (4, 4, 3)


def test_image_folder_csv(tmp_path):
    write_class_folders(tmp_path / "imgs")
    rows = ["file,label"] + [f"imgs/{c}/{n}.png,{c}" for c in ("dog", "cat") for n in range(3)]
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    data = load_dataset(str(tmp_path / "labels.csv"), image_size=6)
    y = np.concatenate([data.y_train, data.y_test])
    x = np.concatenate([data.x_train, data.x_test])
    assert data.name == "labels" and sorted(y) == [0, 0, 0, 1, 1, 1]
    assert all((value >= 100) == (label == 1) for value, label in zip(x[:, 0] * 255, y))  # cat=0, dog=1
    (tmp_path / "labels.csv").write_text("file,label\nimgs/cat/0.png,a\nimgs/none.png,b\n")
    with pytest.raises(FileNotFoundError, match="do not exist"):
        load_dataset(str(tmp_path / "labels.csv"))
    (tmp_path / "labels.csv").write_text("path,class\nimgs/cat/0.png,a\n")
    with pytest.raises(ValueError, match="'file' and 'label'"):
        load_dataset(str(tmp_path / "labels.csv"))


def test_image_folder_errors(tmp_path):
    (tmp_path / "one" / "only").mkdir(parents=True)
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "one" / "only" / "a.png")
    with pytest.raises(ValueError, match="at least 2 classes"):
        load_dataset(tmp_path / "one")
    write_class_folders(tmp_path / "bad")
    (tmp_path / "bad" / "cat" / "broken.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="not a readable image"):
        load_dataset(tmp_path / "bad")


# ---- Dataset images --------------------------------------------------------------------------------
def test_dataset_images_and_image_shape_validation():
    x = np.arange(24, dtype=np.float32).reshape(2, 12)
    y = np.zeros(2, np.int64)
    data = DataSplits(x, y, x, y, name="t", likelihood="gaussian", image_shape=(2, 2, 3))
    np.testing.assert_array_equal(data.images(x)[1, 1, 0], [18, 19, 20])
    with pytest.raises(ValueError, match="H\\*W\\*C"):
        DataSplits(x, y, x, y, name="t", likelihood="gaussian", image_shape=(2, 2, 2))
    with pytest.raises(ValueError, match="not images"):
        DataSplits(x, y, x, y, name="t", likelihood="gaussian").images(x)
