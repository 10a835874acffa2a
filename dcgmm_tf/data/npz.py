"""Your own data set as a `.npz` file of `x_train`, `y_train`, `x_test`, `y_test`."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from dcgmm_tf.data.dataset import DataSplits, with_image_shape


def read_arrays(path: Path, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of an .npz file, and those of ``optional`` that it holds; ValueError naming the file when
    it is unreadable (truncated, corrupt) or lacks one of ``keys``."""
    try:
        with np.load(path, allow_pickle=False) as f:
            found = list(f.files)
            arrays = {k: f[k] for k in (*keys, *optional) if k in found}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as e:
        raise ValueError(
            f"{path} is not a readable .npz file ({e}); it may be truncated or "
            "corrupt: write it again with numpy.savez."
        ) from e
    missing = [k for k in keys if k not in found]
    if missing:
        raise ValueError(f"{path} lacks array(s) {missing}; it must contain {list(keys)} (found {found}).")
    return arrays


def load_npz(path: str | os.PathLike) -> DataSplits:
    """Loads and validates a user dataset stored as a .npz file.

    The file must hold `x_train`, `y_train`, `x_test`, `y_test`; features of any shape are flattened per
    sample. Samples stored as images (N, H, W) or (N, H, W, C), or flat rows with an `image_shape` array in the
    file, keep their image shape (see `DataSplits.image_shape`). The likelihood is `"bernoulli"` if all features
    lie in `[0, 1]`, else `"gaussian"`.

    Raises:
      FileNotFoundError: If `path` does not exist.
      ValueError: If the file is unreadable or its arrays are invalid.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Dataset file not found: {path}")
    keys = ("x_train", "y_train", "x_test", "y_test")
    arrays = read_arrays(path, keys, optional=("image_shape",))
    image_shape = _image_shape(path, arrays["x_train"], arrays.pop("image_shape", None))
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.ndim < 1 or x.shape[0] == 0:
            raise ValueError(f"{path}: x_{split} is empty (shape {x.shape}).")
        if x.dtype.kind not in "biuf":
            raise ValueError(f"{path}: x_{split} must be numeric, got dtype {x.dtype}.")
        x = x.reshape(len(x), -1).astype(np.float32)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{path}: x_{split} contains NaN or infinite values.")
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
            raise ValueError(f"{path}: y_{split} must hold integer class labels, got dtype {y.dtype}.")
        arrays[f"x_{split}"], arrays[f"y_{split}"] = x, y.astype(np.int64)
    if arrays["x_train"].shape[1] != arrays["x_test"].shape[1]:
        raise ValueError(
            f"{path}: x_train has {arrays['x_train'].shape[1]} features per "
            f"sample but x_test has {arrays['x_test'].shape[1]}."
        )
    in_unit_range = all(arrays[k].min() >= 0 and arrays[k].max() <= 1 for k in ("x_train", "x_test"))
    data = DataSplits(**arrays, name=path.stem, likelihood="bernoulli" if in_unit_range else "gaussian")
    if image_shape is None:
        return data
    return with_image_shape(data, image_shape)[0]


def _image_shape(path: Path, x_train: np.ndarray, stored: np.ndarray | None) -> tuple[int, ...] | None:
    """The image shape of the samples of an .npz file: that of image arrays, or the file's ``image_shape`` array."""
    if x_train.ndim in (3, 4):
        return x_train.shape[1:]
    if stored is None:
        return None
    if stored.dtype.kind not in "iu" or stored.ndim != 1:
        raise ValueError(f"{path}: image_shape must be a 1-D integer array such as [28, 28], got {stored!r}.")
    return tuple(int(v) for v in stored)
