"""Tests for dcgmm_tf.data: load_dataset, the registry, the search paths, MNIST-style and .npz data sets, and the
package's import graph."""

import ast
import dataclasses
import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from dcgmm_tf.data import DataSplits, load_dataset, mnist, paths, read_idx, registry, reuters, stl10, utkface
from dcgmm_tf.data.mnist import search_paths

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "dcgmm_tf"

IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
IDX_TYPE_CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}


def write_idx(path, array, compress=False):
    """Writes `array` in the IDX format (big-endian), optionally gzipped."""
    array = np.asarray(array)
    header = bytes([0, 0, IDX_TYPE_CODES[array.dtype.type], array.ndim])
    header += np.asarray(array.shape, ">u4").tobytes()
    raw = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    Path(path).write_bytes(gzip.compress(raw) if compress else raw)


def write_mnist_like(directory, n_train=5, n_test=3, compress=(True, False, True, False)):
    """Writes the 4 IDX files of a tiny MNIST-like dataset; returns arrays."""
    rng = np.random.default_rng(0)
    arrays = (
        rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, n_train).astype(np.uint8),
        rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, n_test).astype(np.uint8),
    )
    arrays[0][0, 0, 0], arrays[0][0, 0, 1] = 0, 255
    directory.mkdir(parents=True, exist_ok=True)
    for stem, array, gz in zip(IDX_FILES, arrays, compress):
        write_idx(directory / (stem + (".gz" if gz else "")), array, gz)
    return arrays


@pytest.fixture(name="isolated")
def fixture_isolated(tmp_path, monkeypatch):
    """Points every default search location to empty temporary folders."""
    roots = {key: tmp_path / key for key in ("repo", "system", "keras", "env")}
    for root in roots.values():
        root.mkdir()
    monkeypatch.setattr(paths, "REPO_DATA_DIR", roots["repo"])
    monkeypatch.setattr(paths, "SYSTEM_DATA_DIR", roots["system"])
    monkeypatch.setenv("KERAS_HOME", str(roots["keras"]))
    monkeypatch.delenv("DCGMM_DATA", raising=False)

    def no_download(name):
        raise AssertionError(f"unexpected download of {name}")

    monkeypatch.setattr(mnist, "_download", no_download)
    return roots


# ---------------------------------------------------------------- IDX ---


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32, np.float64])
def test_idx_round_trip(tmp_path, compress, dtype):
    array = (np.arange(2 * 3 * 4) - 5).reshape(2, 3, 4).astype(dtype)
    if dtype is np.uint8:
        array = array + np.uint8(5)
    write_idx(tmp_path / "a", array, compress)  # No suffix: magic bytes decide.
    result = read_idx(tmp_path / "a")
    assert result.dtype == dtype and result.dtype.isnative
    np.testing.assert_array_equal(result, array)


def test_idx_one_dimensional(tmp_path):
    write_idx(tmp_path / "labels.gz", np.array([3, 1, 4], np.uint8), True)
    np.testing.assert_array_equal(read_idx(tmp_path / "labels.gz"), [3, 1, 4])


@pytest.mark.parametrize("compress", [False, True])
def test_idx_truncated_or_padded(tmp_path, compress):
    write_idx(tmp_path / "a", np.ones((4, 5, 6), np.uint8))
    raw = (tmp_path / "a").read_bytes()
    for name, data in (("short", raw[:-7]), ("long", raw + b"\0")):
        (tmp_path / name).write_bytes(gzip.compress(data) if compress else data)
        with pytest.raises(ValueError, match="size mismatch"):
            read_idx(tmp_path / name)


def test_idx_corrupt(tmp_path):
    write_idx(tmp_path / "a", np.ones((4, 5), np.uint8))
    raw = (tmp_path / "a").read_bytes()
    cases = {
        "magic": b"\x01" + raw[1:],
        "type": raw[:2] + b"\x07" + raw[3:],
        "header": raw[:6],
        "tiny": raw[:2],
        "gzip": gzip.compress(raw)[:-12],
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match="IDX|gzip"):
            read_idx(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "missing")


# ------------------------------------------------------------ search ---


def test_search_paths_order(isolated, tmp_path, monkeypatch):
    monkeypatch.setenv("DCGMM_DATA", str(tmp_path / "env"))
    keras = isolated["keras"] / "datasets"
    expected = [
        tmp_path / "mine" / "fashion-mnist",
        tmp_path / "mine",
        tmp_path / "env" / "fashion-mnist",
        tmp_path / "env",
        isolated["repo"] / "fashion-mnist",
        isolated["repo"],
        isolated["system"] / "fashion-mnist",
        isolated["system"],
        keras / "fashion-mnist",
        keras,
    ]
    assert search_paths("fashion", tmp_path / "mine") == expected
    assert search_paths("fashion_mnist", tmp_path / "mine") == expected
    mnist = search_paths("mnist")
    assert mnist == [
        tmp_path / "env" / "mnist",
        tmp_path / "env",
        isolated["repo"] / "mnist",
        isolated["repo"],
        keras / "mnist",
        keras,
    ]


def test_search_paths_defaults(monkeypatch):
    monkeypatch.delenv("DCGMM_DATA", raising=False)
    paths = search_paths("fashion")
    assert Path("/usr/share/datasets/fashion-mnist") in paths
    assert paths[0] == Path(__file__).resolve().parents[1] / "data" / "fashion-mnist"
    assert not any(str(p).startswith("/usr/share") for p in search_paths("mnist"))


def test_search_dirs_of_the_other_loaders(isolated, tmp_path, monkeypatch):
    """Reuters and STL-10 try each base with, then without their sub-folder; UTKFace three sub-folders only."""
    monkeypatch.setenv("DCGMM_DATA", str(tmp_path / "env"))
    bases = [tmp_path / "mine", tmp_path / "env", isolated["repo"]]
    for subfolder in (reuters.SUBFOLDER, stl10.SUBFOLDER):
        expected = [path for base in bases for path in (base / subfolder, base)]
        assert paths.search_dirs(subfolder, tmp_path / "mine") == expected
        assert paths.search_dirs(subfolder, tmp_path / "env") == expected[2:]  # no repeats
    expected = [path for base in bases for path in (base / "utkface" / "UTKFace", base / "utkface", base / "UTKFace")]
    assert paths.search_dirs(utkface.SUBFOLDERS, tmp_path / "mine") == expected
    assert utkface.find_folder(tmp_path / "mine") == (None, expected)
    (tmp_path / "env" / "UTKFace").mkdir(parents=True)
    (tmp_path / "env" / "UTKFace" / "25_0_0_20170116174525125.jpg").touch()
    assert utkface.find_folder(tmp_path / "mine") == (tmp_path / "env" / "UTKFace", expected[:6])


# ------------------------------------------------------------ loading ---


def test_load_idx_dataset(isolated, tmp_path):
    arrays = write_mnist_like(tmp_path / "mine")
    ds = load_dataset("fashion", data_dir=tmp_path / "mine", download=False)
    assert ds.name == "fashion_mnist" and ds.likelihood == "bernoulli"
    assert ds.x_train.shape == (5, 784) and ds.x_test.shape == (3, 784)
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int64
    assert ds.x_train.min() == 0.0 and ds.x_train.max() == 1.0
    np.testing.assert_allclose(ds.x_train, arrays[0].reshape(5, 784) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(ds.y_test, arrays[3])
    assert ds.input_dim == 784
    assert ds.num_classes == np.union1d(arrays[1], arrays[3]).size


def test_load_prefers_dataset_subfolder(isolated):
    write_mnist_like(isolated["repo"], n_train=2)
    write_mnist_like(isolated["repo"] / "mnist", n_train=4)
    assert load_dataset("mnist", download=False).x_train.shape == (4, 784)
    assert load_dataset("fashion", download=False).x_train.shape == (2, 784)


def test_load_keras_mnist_npz(isolated):
    keras = isolated["keras"] / "datasets"
    keras.mkdir()
    rng = np.random.default_rng(0)
    np.savez(
        keras / "mnist.npz",
        x_train=rng.integers(0, 256, (4, 28, 28), dtype=np.uint8),
        y_train=np.array([0, 1, 2, 3], np.uint8),
        x_test=np.full((2, 28, 28), 255, np.uint8),
        y_test=np.array([4, 5], np.uint8),
    )
    ds = load_dataset("mnist", download=False)
    assert ds.x_train.shape == (4, 784) and ds.x_test.shape == (2, 784)
    assert np.all(ds.x_test == 1.0) and ds.num_classes == 6


def test_mismatched_idx_counts(isolated, tmp_path):
    write_mnist_like(tmp_path)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="train split"):
        load_dataset("mnist", data_dir=tmp_path, download=False)


@pytest.mark.parametrize("name", ["mnist", "fashion"])
def test_missing_dataset_lists_searched_paths(isolated, tmp_path, name):
    write_mnist_like(tmp_path / "partial")
    (tmp_path / "partial" / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError) as info:
        load_dataset(name, data_dir=tmp_path / "partial", download=False)
    message = str(info.value)
    for path in search_paths(name, tmp_path / "partial"):
        assert f"  {path}\n" in message
    assert "download=False" in message and "--data_dir" in message
    assert ("apt-get install dataset-fashion-mnist" in message) == (name == "fashion")


def test_download_fallback(isolated, monkeypatch):
    def fake_download(name):
        assert name == "mnist"
        x = np.zeros((3, 28, 28), np.uint8)
        return (x, np.array([0, 1, 2], np.uint8)), (x[:1], np.array([1], np.uint8))

    monkeypatch.setattr(mnist, "_download", fake_download)
    ds = load_dataset("mnist")
    assert ds.x_train.shape == (3, 784) and ds.y_test.tolist() == [1]

    def failing_download(name):
        raise OSError("no network")

    monkeypatch.setattr(mnist, "_download", failing_download)
    with pytest.raises(FileNotFoundError, match="no network"):
        load_dataset("mnist")


def test_unknown_name():
    with pytest.raises(ValueError, match=r"Unknown dataset 'cifar'.*'mnist'"):
        load_dataset("cifar")
    with pytest.raises(
        ValueError,
        match=r"Known names: \['digits', 'fashion', 'fashion_mnist', 'mnist', 'reuters', 'stl10', "
        r"'utkface_ethnicity', 'utkface_gender'\]",
    ):
        load_dataset("utkface_age")


def test_registry(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_LOADERS", dict(registry._LOADERS))  # pylint: disable=protected-access
    assert registry.lookup("Fashion-MNIST") is registry.lookup("fashion_mnist") is not None
    assert registry.lookup("UTKFace-Gender") is registry.lookup("utkface_gender") is not None
    assert registry.lookup("cifar") is None
    calls = []
    x, y = np.zeros((2, 1), np.float32), np.zeros(2, np.int64)

    def toy(data_dir, *, download, image_size):
        calls.append((data_dir, download, image_size))
        return DataSplits(x, y, x, y, "toy", "gaussian")

    registry.register("toy", toy)
    assert "toy" in registry.names()
    assert load_dataset("TOY", tmp_path, download=False, image_size=8).name == "toy"
    assert calls == [(tmp_path, False, 8)]
    with pytest.raises(ValueError, match="already registered"):
        registry.register("Toy", toy)


def test_real_fashion_mnist(monkeypatch):
    if not Path("/usr/share/datasets/fashion-mnist").is_dir():
        pytest.skip("Debian package dataset-fashion-mnist not installed")
    monkeypatch.delenv("DCGMM_DATA", raising=False)
    ds = load_dataset("fashion", download=False)
    assert ds.x_train.shape == (60000, 784) and ds.x_test.shape == (10000, 784)
    assert ds.x_train.dtype == np.float32
    assert ds.x_train.min() == 0.0 and ds.x_train.max() == 1.0
    assert ds.num_classes == 10 and ds.likelihood == "bernoulli"
    np.testing.assert_array_equal(np.bincount(ds.y_train), np.full(10, 6000))


def test_real_mnist(monkeypatch):
    """The official release, which the set-up puts in data/mnist (scripts/fetch_mnist.py)."""
    monkeypatch.delenv("DCGMM_DATA", raising=False)
    ds = load_dataset("mnist", download=False)
    assert ds.x_train.shape == (60000, 784) and ds.x_test.shape == (10000, 784)
    assert ds.x_train.min() == 0.0 and ds.x_train.max() == 1.0 and ds.image_shape == (28, 28, 1)
    train_counts = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    test_counts = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    np.testing.assert_array_equal(np.bincount(ds.y_train), train_counts)
    np.testing.assert_array_equal(np.bincount(ds.y_test), test_counts)


def test_fetch_mnist_checks_what_it_writes(tmp_path):
    """The fetch script refuses an archive or a file that is not the official one, and writes nothing then."""
    spec = importlib.util.spec_from_file_location("fetch_mnist", Path(__file__).parents[1] / "scripts/fetch_mnist.py")
    fetch_mnist = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetch_mnist)
    with pytest.raises(ValueError, match="SHA-256"):
        fetch_mnist.extract(b"not the archive")
    with pytest.raises(ValueError, match="expected 10008 bytes"):
        fetch_mnist.check_file("t10k-labels-idx1-ubyte", b"\x00" * 10)
    assert fetch_mnist.main(["--dest", str(tmp_path / "m"), "--url", (tmp_path / "none").as_uri()]) == 1
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())


# ---------------------------------------------------------------- npz ---


def _save(path, **arrays):
    base = dict(x_train=np.zeros((4, 2, 3)), y_train=np.arange(4), x_test=np.ones((2, 2, 3)), y_test=np.arange(2))
    base.update(arrays)
    with open(path, "wb") as f:  # np.savez(path) would append ".npz".
        np.savez(f, **{k: v for k, v in base.items() if v is not None})
    return path


def test_load_npz(tmp_path):
    ds = load_dataset(str(_save(tmp_path / "toy.npz", y_train=np.arange(4.0)[:, None])))
    assert ds.name == "toy" and ds.likelihood == "bernoulli"
    assert ds.x_train.shape == (4, 6) and ds.x_train.dtype == np.float32
    assert ds.y_train.dtype == np.int64 and ds.y_train.tolist() == [0, 1, 2, 3]
    assert ds.num_classes == 4 and ds.input_dim == 6
    gaussian = load_dataset(_save(tmp_path / "g.NPZ", x_test=np.full((2, 6), -0.5)))
    assert gaussian.likelihood == "gaussian"
    above_one = load_dataset(_save(tmp_path / "b.npz", x_train=np.full((4, 6), 1.5)))
    assert above_one.likelihood == "gaussian"


@pytest.mark.parametrize(
    "arrays, match",
    [
        (dict(y_test=None), r"lacks array\(s\) \['y_test'\]"),
        (dict(y_train=np.arange(3)), "4 samples but y_train"),
        (dict(x_test=np.full((2, 6), np.nan)), "NaN"),
        (dict(y_test=np.array([0.5, 1.0])), "integer class labels"),
        (dict(x_test=np.ones((2, 5))), "features"),
        (dict(x_train=np.zeros((0, 6)), y_train=np.zeros(0, int)), "empty"),
        (dict(x_train=np.array([["a"] * 6] * 4)), "numeric"),
    ],
)
def test_npz_validation(tmp_path, arrays, match):
    with pytest.raises(ValueError, match=match):
        load_dataset(str(_save(tmp_path / "bad.npz", **arrays)))


def test_npz_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.npz"):
        load_dataset(str(tmp_path / "nothing.npz"))


def test_dataset_validation():
    x, y = np.zeros((3, 2), np.float32), np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="float32"):
        DataSplits(x.astype(np.float64), y, x, y, "d", "bernoulli")
    with pytest.raises(ValueError, match="int64"):
        DataSplits(x, y[:2], x, y, "d", "bernoulli")
    with pytest.raises(ValueError, match="features"):
        DataSplits(x, y, x[:, :1], y, "d", "bernoulli")
    with pytest.raises(ValueError, match="likelihood"):
        DataSplits(x, y, x, y, "d", "poisson")
    assert DataSplits(x, y, x, y + 2, "d", "gaussian").num_classes == 2


# ------------------------------------------------------- import graph ---


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, read statically with `ast`.

    Imports at module level and inside functions count, those under `if TYPE_CHECKING:` do not. Importing a
    submodule is an edge to that submodule only (not to the parent packages Python initialises first); `from pkg
    import name` is an edge to `pkg.name` if that is a module, else to `pkg`.
    """
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = graph[name] = set()
        pending = [ast.parse(path.read_text(), str(path))]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                pending.extend(node.orelse)
                continue
            pending.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    if target in modules or source in modules:
                        targets.add(target if target in modules else source)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycle closed by each back edge of a depth-first search, as `[a, b, ..., a]`; empty if acyclic."""
    cycles, done, stack = [], set(), []

    def visit(node):
        stack.append(node)
        for target in sorted(graph[node]):
            if target in stack:
                cycles.append(stack[stack.index(target) :] + [target])
            elif target not in done:
                visit(target)
        stack.pop()
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node)
    return cycles


def test_import_graph_checker_finds_function_level_and_relative_cycles(tmp_path):
    files = {
        "__init__.py": "from pkg.a import f\n",
        "a.py": "def f():\n    from pkg import b\n",
        "b.py": "from . import a\nimport os\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\nelse:\n    import pkg.a\n",
        "sub/__init__.py": "from ..c import x\n",
    }
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    graph = import_graph(tmp_path / "pkg")
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}, "pkg.sub": {"pkg.c"}}
    assert find_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert find_cycles(graph | {"pkg.b": set()}) == []


def test_data_package_has_no_import_cycle():
    graph = import_graph(PACKAGE_ROOT)
    data = {name for name in graph if name.startswith("dcgmm_tf.data.")}
    assert {"dcgmm_tf.data.splits", "dcgmm_tf.data.paths", "dcgmm_tf.data.registry"} <= data
    assert "dcgmm_tf.data.reuters" in graph["dcgmm_tf.data.registry"]
    assert "dcgmm_tf.data.registry" in graph["dcgmm_tf.data.loading"]
    assert [name for name in data if "dcgmm_tf.data.loading" in graph[name]] == []  # only __init__ imports it
    assert [cycle for cycle in find_cycles(graph) if any(name.startswith("dcgmm_tf.data") for name in cycle)] == []


def test_package_has_no_import_cycle():
    assert find_cycles(import_graph(PACKAGE_ROOT)) == []


def test_digits_by_name_is_a_fixed_stratified_split():
    from dcgmm_tf.data import load_dataset

    first, again = load_dataset("digits"), load_dataset("Digits")
    assert first.x_train.shape == (1437, 64) and first.x_test.shape == (360, 64)
    assert 0.0 <= first.x_train.min() and first.x_train.max() == 1.0 and first.likelihood == "bernoulli"
    assert np.array_equal(first.x_train, again.x_train) and np.array_equal(first.y_test, again.y_test)
    assert np.bincount(first.y_test).min() >= 35  # every class in the test split (stratified: 35-37 each)


def test_flat_rows_are_drawn_as_images_when_told_or_when_square(tmp_path):
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.data.dataset import with_image_shape
    from dcgmm_tf.labelling.render import image_png

    rng = np.random.default_rng(0)
    flat = {k: rng.random((n, 784), dtype=np.float32) for k, n in (("x_train", 12), ("x_test", 4))}
    labels = {"y_train": np.arange(12) % 3, "y_test": np.arange(4) % 3}
    np.savez(tmp_path / "flat.npz", **flat, **labels)
    data = load_dataset(str(tmp_path / "flat.npz"))
    assert data.image_shape is None  # flat rows, no shape in the file
    given, note = with_image_shape(data, (28, 28))
    assert given.image_shape == (28, 28, 1) and "given" in note
    assumed, note = with_image_shape(data)
    assert assumed.image_shape == (28, 28, 1) and "assumed" in note
    assert image_png(assumed.x_train[0], assumed.image_shape)[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="does not hold the 784 features"):
        with_image_shape(data, (28, 27))
    np.savez(tmp_path / "tagged.npz", **flat, **labels, image_shape=np.array([14, 56]))
    assert load_dataset(str(tmp_path / "tagged.npz")).image_shape == (14, 56, 1)
    images = {k: v.reshape(len(v), 28, 28) for k, v in flat.items()}
    np.savez(tmp_path / "images.npz", **images, **labels)
    loaded = load_dataset(str(tmp_path / "images.npz"))
    assert loaded.image_shape == (28, 28, 1) and loaded.x_train.shape == (12, 784)
    table = dataclasses.replace(data, x_train=data.x_train[:, :30], x_test=data.x_test[:, :30])
    kept, note = with_image_shape(table)
    assert kept.image_shape is None and "feature vectors" in note
