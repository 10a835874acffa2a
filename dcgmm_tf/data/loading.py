"""`load_dataset`: a data set by name (see `registry`), or your own `.npz` file, image folder or CSV."""

from __future__ import annotations

import os
from pathlib import Path

from dcgmm_tf.data import registry
from dcgmm_tf.data.dataset import DataSplits
from dcgmm_tf.data.image_folder import load_image_folder
from dcgmm_tf.data.npz import load_npz

__all__ = ["DataSplits", "load_dataset"]  # DataSplits is re-exported for callers that import it from here


def load_dataset(
    name_or_path: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    *,
    download: bool = True,
    image_size: int = 64,
) -> DataSplits:
    """Loads a dataset by name, or from a `.npz` file, a folder of class sub-folders of images or a CSV.

    The names are those of `registry.names()`: `"fashion"` (`"fashion_mnist"`) and `"mnist"`
    (`dcgmm_tf.data.mnist`), `"reuters"` (`dcgmm_tf.data.reuters`), `"stl10"` (`dcgmm_tf.data.stl10`),
    `"utkface_gender"` and `"utkface_ethnicity"` (`dcgmm_tf.data.utkface`). Each loader searches
    `paths.search_dirs` from `data_dir` on; `download` lets it fetch missing files where it can, and `image_size`
    is the side images are resized to (UTKFace, image folders). See data/README.md.

    A `.npz` file must hold `x_train`, `y_train`, `x_test`, `y_test` (`dcgmm_tf.data.npz`). A folder of class
    sub-folders or a `file,label` CSV loads your own images (`dcgmm_tf.data.image_folder`).

    Raises:
      ValueError: On an unknown name or invalid data.
      FileNotFoundError: If the dataset cannot be found (the message lists every searched directory and how to
        obtain the files).
    """
    if str(name_or_path).lower().endswith(".npz"):
        return load_npz(name_or_path)
    loader = registry.lookup(str(name_or_path))
    if loader is not None:
        return loader(data_dir, download=download, image_size=image_size)
    path = Path(name_or_path).expanduser()
    if path.is_dir() or str(name_or_path).lower().endswith(".csv"):
        return load_image_folder(path, image_size)
    raise ValueError(
        f"Unknown dataset {str(name_or_path)!r}. Known names: {registry.names()}, a path to a .npz file with arrays "
        "x_train, y_train, x_test, y_test, or a folder of class sub-folders of images or a file,label .csv."
    )
