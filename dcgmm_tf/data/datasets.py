"""Dataset loading: MNIST, Fashion-MNIST (IDX files) and user `.npz` files."""

from __future__ import annotations

import dataclasses
import gzip
import os
import zipfile
from pathlib import Path

import numpy as np

_REPO_DATA_DIR = Path(__file__).resolve().parents[2] / "data"
_SYSTEM_DATA_DIR = Path("/usr/share/datasets")

# Canonical dataset name -> sub-folder used by Debian and Keras.
_SUBFOLDERS = {"fashion_mnist": "fashion-mnist", "mnist": "mnist"}
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
_LIKELIHOODS = ("bernoulli", "gaussian")


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A train/test split of flat features and integer labels.

    Attributes:
      x_train: float32 array of shape `(N, M)`.
      y_train: int64 array of shape `(N,)`.
      x_test: float32 array of shape `(N_test, M)`.
      y_test: int64 array of shape `(N_test,)`.
      name: Dataset name.
      likelihood: `"bernoulli"` for data in `[0, 1]`, else `"gaussian"`.
      image_shape: `(H, W, C)` of each sample when the features are a
        flattened image (see `images`), else None.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    name: str
    likelihood: str
    image_shape: tuple[int, ...] | None = None

    def __post_init__(self):
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if x.dtype != np.float32 or x.ndim != 2:
                raise ValueError(
                    f"x_{split} must be a 2-D float32 array, got {x.dtype} "
                    f"with shape {x.shape}."
                )
            if y.dtype != np.int64 or y.shape != (x.shape[0],):
                raise ValueError(
                    f"y_{split} must be an int64 array of shape "
                    f"({x.shape[0]},), got {y.dtype} with shape {y.shape}."
                )
        if self.x_train.shape[1] != self.x_test.shape[1]:
            raise ValueError(
                f"x_train has {self.x_train.shape[1]} features but x_test has "
                f"{self.x_test.shape[1]}."
            )
        if self.likelihood not in _LIKELIHOODS:
            raise ValueError(
                f"likelihood must be one of {_LIKELIHOODS}, got "
                f"{self.likelihood!r}."
            )
        if self.image_shape is not None and (
            len(self.image_shape) != 3
            or int(np.prod(self.image_shape)) != self.x_train.shape[1]
        ):
            raise ValueError(
                f"image_shape must be (H, W, C) with H*W*C = "
                f"{self.x_train.shape[1]} features, got {self.image_shape}."
            )

    def images(self, x: np.ndarray) -> np.ndarray:
        """Rows of flat features `x` (e.g. `x_train`) as images `(N, H, W, C)`.

        Raises:
          ValueError: If the data set does not hold images.
        """
        if self.image_shape is None:
            raise ValueError(
                f"Dataset {self.name!r} holds feature vectors, not images; "
                "convolutional networks need an image data set."
            )
        return np.reshape(x, (len(x), *self.image_shape))

    @property
    def num_classes(self) -> int:
        """Number of distinct labels in the train and test splits."""
        return int(np.union1d(self.y_train, self.y_test).size)

    @property
    def input_dim(self) -> int:
        """Number of features per sample."""
        return int(self.x_train.shape[1])


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
        raise ValueError(
            f"{path}: truncated or invalid IDX header ({ndim} dimensions, "
            f"{len(raw)} bytes)."
        )
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
        raise ValueError(
            f"Unknown dataset {name!r}. Known names: "
            f"{sorted(_ALIASES) + list(_OTHER_NAMES)}, a path to a .npz file "
            "with arrays x_train, y_train, x_test, y_test, or a folder of class "
            "sub-folders of images or a file,label .csv."
        ) from None


def _keras_datasets_dir() -> Path:
    keras_home = os.environ.get("KERAS_HOME") or Path.home() / ".keras"
    return Path(keras_home) / "datasets"


def search_paths(name: str, data_dir: str | os.PathLike | None = None) -> list[Path]:
    """Directories searched for the files of dataset `name`, in order.

    The bases are `data_dir`, `$DCGMM_DATA`, `<repo>/data`, for Fashion-MNIST
    `/usr/share/datasets` (Debian's `dataset-fashion-mnist`), and
    `$KERAS_HOME/datasets` (default `~/.keras/datasets`). Each base is tried
    first with the dataset sub-folder (`fashion-mnist` or `mnist`), then as is.
    """
    name = _canonical_name(name)
    bases = [data_dir, os.environ.get("DCGMM_DATA") or None, _REPO_DATA_DIR]
    if name == "fashion_mnist":
        bases.append(_SYSTEM_DATA_DIR)
    bases.append(_keras_datasets_dir())
    paths = []
    for base in bases:
        if base is None:
            continue
        base = Path(base).expanduser()
        for path in (base / _SUBFOLDERS[name], base):
            if path not in paths:
                paths.append(path)
    return paths


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


def _from_idx(files: list[Path], name: str) -> Dataset:
    x_train, y_train, x_test, y_test = (read_idx(f) for f in files)
    return _make_image_dataset(
        (x_train, y_train), (x_test, y_test), name, [str(f) for f in files]
    )


def _make_image_dataset(
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    name: str,
    sources: list[str],
) -> Dataset:
    """Builds a Dataset from uint8 images and labels, scaling to [0, 1]."""
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
        arrays[f"x_{split}"] = (x.reshape(len(x), -1) / np.float32(255)).astype(
            np.float32
        )
        arrays[f"y_{split}"] = y.astype(np.int64)
    return Dataset(**arrays, name=name, likelihood="bernoulli",
                   image_shape=image_shape if len(image_shape) == 3 else None)


def _download(name: str) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Fetches the dataset with `keras.datasets` (needs network access)."""
    import keras  # pylint: disable=g-import-not-at-top

    return getattr(keras.datasets, name).load_data()


def load_dataset(
    name_or_path: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    *,
    download: bool = True,
    image_size: int = 64,
) -> Dataset:
    """Loads a dataset by name (`"fashion"`, `"fashion_mnist"`, `"mnist"`) or
    from a `.npz` file.

    The paper's other data sets are `"reuters"` (`dcgmm_tf.data.reuters`),
    `"stl10"` (`dcgmm_tf.data.stl10`), `"utkface_gender"` and
    `"utkface_ethnicity"` (`dcgmm_tf.data.utkface`); a folder of class
    sub-folders or a `file,label` CSV loads your own images resized to
    `image_size` (`dcgmm_tf.data.image_folder`). See data/README.md.

    Named datasets are read from the four IDX files (plain or `.gz`) in the
    first directory of `search_paths(name, data_dir)` holding all of them; for
    MNIST a Keras-style `mnist.npz` is accepted too. Images are flattened to
    784 features scaled to `[0, 1]`. If nothing is found and `download` is
    True, `keras.datasets` is tried as a last resort.

    A `.npz` file must hold `x_train`, `y_train`, `x_test`, `y_test`; features
    of any shape are flattened per sample. Its likelihood is `"bernoulli"` if
    all features lie in `[0, 1]`, else `"gaussian"`.

    Raises:
      ValueError: On an unknown name or invalid data.
      FileNotFoundError: If the dataset cannot be found (the message lists
        every searched directory and how to obtain the files).
    """
    if str(name_or_path).lower().endswith(".npz"):
        return _load_npz(Path(name_or_path))
    other = _load_other(str(name_or_path), data_dir, download, image_size)
    if other is not None:
        return other
    name = _canonical_name(str(name_or_path))
    paths = search_paths(name, data_dir)
    for directory in paths:
        files = _find_idx_files(directory)
        if files is not None:
            return _from_idx(files, name)
        keras_npz = directory / "mnist.npz"
        if name == "mnist" and keras_npz.is_file():
            with np.load(keras_npz, allow_pickle=False) as f:
                return _make_image_dataset(
                    (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"]),
                    name, [f"{keras_npz}:{key}" for key in
                           ("x_train", "y_train", "x_test", "y_test")],
                )
    download_note = "download=False"
    if download:
        try:
            train, test = _download(name)
            return _make_image_dataset(train, test, name, [f"keras.datasets.{name}"] * 4)
        except Exception as e:  # pylint: disable=broad-except
            download_note = f"download via keras.datasets.{name} failed: {e!r}"
    searched = "\n".join(f"  {p}" for p in paths)
    wanted = ", ".join(f"{stem}[.gz]" for stem in _IDX_FILES)
    if name == "mnist":
        wanted += " (or a Keras mnist.npz)"
    debian = (
        "`apt-get install dataset-fashion-mnist` (Debian/Ubuntu), or "
        if name == "fashion_mnist" else ""
    )
    raise FileNotFoundError(
        f"Dataset {name!r} not found ({download_note}). Looked for {wanted} "
        f"in:\n{searched}\nTo get the files: {debian}put them in "
        f"{_REPO_DATA_DIR}, in $DCGMM_DATA or in the directory passed as "
        "--data_dir."
    )


def _load_npz(path: Path) -> Dataset:
    """Loads and validates a user dataset stored as a .npz file."""
    if not path.is_file():
        raise FileNotFoundError(f"Dataset file not found: {path}")
    keys = ("x_train", "y_train", "x_test", "y_test")
    try:
        with np.load(path, allow_pickle=False) as f:
            found = list(f.files)
            arrays = {k: f[k] for k in keys if k in found}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as e:
        raise ValueError(
            f"{path} is not a readable .npz file ({e}); it may be truncated or "
            "corrupt: write it again with numpy.savez."
        ) from e
    missing = [k for k in keys if k not in found]
    if missing:
        raise ValueError(
            f"{path} lacks array(s) {missing}; it must contain {list(keys)} "
            f"(found {found})."
        )
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.ndim < 1 or x.shape[0] == 0:
            raise ValueError(f"{path}: x_{split} is empty (shape {x.shape}).")
        if x.dtype.kind not in "biuf":
            raise ValueError(
                f"{path}: x_{split} must be numeric, got dtype {x.dtype}."
            )
        x = x.reshape(len(x), -1).astype(np.float32)
        if not np.all(np.isfinite(x)):
            raise ValueError(
                f"{path}: x_{split} contains NaN or infinite values."
            )
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(
                f"{path}: x_{split} has {x.shape[0]} samples but y_{split} has "
                f"shape {arrays[f'y_{split}'].shape}; expected ({x.shape[0]},)."
            )
        if y.dtype.kind not in "iu" and not (
            y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))
        ):
            raise ValueError(
                f"{path}: y_{split} must hold integer class labels, got dtype "
                f"{y.dtype}."
            )
        arrays[f"x_{split}"], arrays[f"y_{split}"] = x, y.astype(np.int64)
    if arrays["x_train"].shape[1] != arrays["x_test"].shape[1]:
        raise ValueError(
            f"{path}: x_train has {arrays['x_train'].shape[1]} features per "
            f"sample but x_test has {arrays['x_test'].shape[1]}."
        )
    in_unit_range = all(
        arrays[k].min() >= 0 and arrays[k].max() <= 1 for k in ("x_train", "x_test")
    )
    return Dataset(
        **arrays,
        name=path.stem,
        likelihood="bernoulli" if in_unit_range else "gaussian",
    )


_OTHER_NAMES = ("reuters", "stl10", "utkface_gender", "utkface_ethnicity")


def _load_other(
    name_or_path: str, data_dir, download: bool, image_size: int
) -> Dataset | None:
    """Loads Reuters, STL-10, UTKFace or an image folder / CSV; None for other names."""
    # pylint: disable=g-import-not-at-top  (these modules import this one)
    name = name_or_path.lower().replace("-", "_")
    if name_or_path.lower() in _ALIASES:
        return None
    if name == "reuters":
        from dcgmm_tf.data.reuters import load_reuters

        return load_reuters(data_dir, download=download)
    if name == "stl10":
        from dcgmm_tf.data.stl10 import load_stl10

        return load_stl10(data_dir)
    if name.startswith("utkface_"):
        from dcgmm_tf.data.utkface import load_utkface

        return load_utkface(name[len("utkface_"):], data_dir, image_size=image_size)
    path = Path(name_or_path).expanduser()
    if path.is_dir() or name.endswith(".csv"):
        from dcgmm_tf.data.image_folder import load_image_folder

        return load_image_folder(path, image_size)
    return None
