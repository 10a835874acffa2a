"""The named data sets `load_dataset` accepts, each mapped to its loader.

Names are matched ignoring case and with `-` read as `_`. `register` adds a data set; the built-in ones are
registered below.
"""

from __future__ import annotations

import os
from typing import Protocol

from dcgmm_tf.data import digits, mnist, reuters, stl10, utkface
from dcgmm_tf.data.dataset import DataSplits


class Loader(Protocol):
    """Loads a data set, searching `data_dir` first (see `paths.search_dirs`).

    `download` allows fetching missing files and `image_size` is the side of resized images; a loader ignores
    what does not apply to its data set.
    """

    def __call__(self, data_dir: str | os.PathLike | None, *, download: bool, image_size: int) -> DataSplits: ...


_LOADERS: dict[str, Loader] = {}


def _key(name: str) -> str:
    return name.lower().replace("-", "_")


def register(name: str, loader: Loader) -> None:
    """Makes `load_dataset(name)` call `loader`.

    Raises:
      ValueError: If `name` is already registered.
    """
    if _key(name) in _LOADERS:
        raise ValueError(f"A loader is already registered for dataset {name!r}.")
    _LOADERS[_key(name)] = loader


def lookup(name: str) -> Loader | None:
    """The loader registered for `name`, or None."""
    return _LOADERS.get(_key(name))


def names() -> list[str]:
    """The registered names, sorted."""
    return sorted(_LOADERS)


def _idx_loader(name: str) -> Loader:
    """MNIST or Fashion-MNIST, whose 28x28 images are not resized."""
    return lambda data_dir, *, download, image_size: mnist.load_mnist(name, data_dir, download=download)


def _utkface_loader(task: str) -> Loader:
    return lambda data_dir, *, download, image_size: utkface.load_utkface(task, data_dir, image_size=image_size)


register("digits", lambda data_dir, *, download, image_size: digits.load_digits())
register("fashion", _idx_loader("fashion_mnist"))
register("fashion_mnist", _idx_loader("fashion_mnist"))
register("mnist", _idx_loader("mnist"))
register("reuters", lambda data_dir, *, download, image_size: reuters.load_reuters(data_dir, download=download))
register("stl10", lambda data_dir, *, download, image_size: stl10.load_stl10(data_dir))
register("utkface_gender", _utkface_loader("gender"))
register("utkface_ethnicity", _utkface_loader("ethnicity"))
