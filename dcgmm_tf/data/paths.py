"""Where the loaders look for data files: one search order for every data set."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

REPO_DATA_DIR = Path(__file__).resolve().parents[2] / "data"
SYSTEM_DATA_DIR = Path("/usr/share/datasets")


def keras_datasets_dir() -> Path:
    """Keras' download cache, `$KERAS_HOME/datasets` (default `~/.keras/datasets`)."""
    keras_home = os.environ.get("KERAS_HOME") or Path.home() / ".keras"
    return Path(keras_home) / "datasets"


def search_dirs(
    subfolders: str | Sequence[str],
    data_dir: str | os.PathLike | None = None,
    *,
    system: bool = False,
    keras: bool = False,
) -> list[Path]:
    """Folders searched for a data set's files, in order and without repeats.

    The bases are `data_dir`, `$DCGMM_DATA` and `REPO_DATA_DIR` (`<repo>/data`), followed by `SYSTEM_DATA_DIR`
    (`/usr/share/datasets`, where Debian's dataset packages install) if `system`, and by `keras_datasets_dir()` if
    `keras`. Each base is tried with each of `subfolders` in turn ("" is the base itself); a single name `sub`
    stands for `(sub, "")`, i.e. the sub-folder first, then the base. The loaders differ only in these arguments:
    Fashion-MNIST uses `system` and `keras`, MNIST `keras`, UTKFace three sub-folders and not the bare base.
    """
    if isinstance(subfolders, str):
        subfolders = (subfolders, "")
    bases = [data_dir, os.environ.get("DCGMM_DATA") or None, REPO_DATA_DIR]
    if system:
        bases.append(SYSTEM_DATA_DIR)
    if keras:
        bases.append(keras_datasets_dir())
    dirs = []
    for base in bases:
        if base is None:
            continue
        base = Path(base).expanduser()
        for path in (base / sub for sub in subfolders):
            if path not in dirs:
                dirs.append(path)
    return dirs
