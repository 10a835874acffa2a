"""STL-10 (Coates et al., 2011) as ResNet-50 features, as in VaDE and DC-GMM.

The paper clusters the 2,048-d average-pooled features of an ImageNet ResNet-50 for all 13,000 labelled
images (5,000 train + 8,000 test), split 80/20 at random. `scripts/extract_stl10_features.py` reads the
STL-10 binaries (downloading them when online), computes the features with `keras.applications.ResNet50`
and saves `stl10_resnet50.npz` (`features` [N, 2048] float32, `labels` [N] in 0..9); `load_stl10` reads it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dcgmm_tf.data import paths
from dcgmm_tf.data.dataset import DataSplits
from dcgmm_tf.data.npz import read_arrays
from dcgmm_tf.data.splits import random_split

URL = "http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz"
SUBFOLDER = "stl10"  # of each searched folder (see `paths.search_dirs`)
FEATURES_FILE = "stl10_resnet50.npz"
LABELLED_SPLITS = ("train", "test")
IMAGE_SHAPE = (96, 96, 3)
CLASS_NAMES = ("airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck")  # of the labels 0-9
TEST_FRACTION = 0.2


def read_binaries(directory: str | os.PathLike, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Images uint8 [N, 96, 96, 3] and labels int64 in 0..9 from `<split>_X.bin` and `<split>_y.bin`.

    The binaries store each image channel by channel in column-major order, i.e. as [3, 96(x), 96(y)],
    and the labels as bytes 1..10.
    """
    directory = Path(directory)
    x_path, y_path = directory / f"{split}_X.bin", directory / f"{split}_y.bin"
    raw = np.fromfile(x_path, np.uint8)
    labels = np.fromfile(y_path, np.uint8)
    per_image = int(np.prod(IMAGE_SHAPE))
    if raw.size == 0 or raw.size % per_image or raw.size // per_image != labels.size:
        raise ValueError(
            f"{x_path} holds {raw.size} bytes and {y_path} {labels.size} labels: expected "
            f"{per_image} bytes per image and one label byte per image"
        )
    if labels.min() < 1 or labels.max() > 10:
        raise ValueError(f"{y_path}: labels must be 1..10, found [{labels.min()}, {labels.max()}]")
    images = raw.reshape(-1, IMAGE_SHAPE[2], IMAGE_SHAPE[1], IMAGE_SHAPE[0]).transpose(0, 3, 2, 1)
    return images, labels.astype(np.int64) - 1


def read_labelled(directory: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """All labelled images (train then test, 13,000 in the full data set) and their labels."""
    parts = [read_binaries(directory, split) for split in LABELLED_SPLITS]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def find_binaries(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The first searched folder (or its `stl10_binary` sub-folder) holding the labelled binaries."""
    for directory in paths.search_dirs(SUBFOLDER, data_dir):
        for folder in (directory / "stl10_binary", directory):
            if all((folder / f"{s}_{k}.bin").is_file() for s in LABELLED_SPLITS for k in "Xy"):
                return folder
    return None


def download_binaries(target_dir: str | os.PathLike) -> Path:
    """Download and extract the STL-10 binaries (2.6 GB) into `target_dir`; returns their folder."""
    import keras  # pylint: disable=g-import-not-at-top

    target_dir = Path(target_dir)
    target_dir.mkdir(parents=True, exist_ok=True)
    keras.utils.get_file("stl10_binary.tar.gz", URL, cache_dir=str(target_dir), cache_subdir=".", extract=True)
    found = next((p.parent for p in target_dir.rglob("train_X.bin")), None)
    if found is None:
        raise FileNotFoundError(f"the STL-10 archive from {URL} did not contain train_X.bin")
    return found


def extract_features(
    images: np.ndarray, weights: str | None = "imagenet", image_size: int = 224, batch_size: int = 64
) -> np.ndarray:
    """ResNet-50 average-pooled features [N, 2048] of uint8 RGB images, resized to `image_size`.

    `weights` is "imagenet" (downloaded by Keras on first use), a path to a weights file, or None for a
    random network (only useful to test the plumbing).
    """
    import keras  # pylint: disable=g-import-not-at-top
    from keras.applications import resnet50  # pylint: disable=g-import-not-at-top

    network = resnet50.ResNet50(
        include_top=False, weights=weights, pooling="avg", input_shape=(image_size, image_size, 3)
    )
    features = []
    for start in range(0, len(images), batch_size):
        batch = keras.ops.image.resize(images[start : start + batch_size].astype(np.float32), (image_size, image_size))
        features.append(keras.ops.convert_to_numpy(network(resnet50.preprocess_input(batch), training=False)))
    return np.concatenate(features).astype(np.float32)


def load_stl10(data_dir: str | os.PathLike | None = None, *, seed: int = 0) -> DataSplits:
    """The saved ResNet-50 features as a `DataSplits` (Gaussian likelihood), split 80/20 with `seed`.

    Raises:
      FileNotFoundError: If no features file is found (the message says how to make one).
      ValueError: If the file is malformed.
    """
    dirs = paths.search_dirs(SUBFOLDER, data_dir)
    path = next((d / FEATURES_FILE for d in dirs if (d / FEATURES_FILE).is_file()), None)
    if path is None:
        where = "\n".join(f"  {d}" for d in dirs)
        raise FileNotFoundError(
            f"STL-10 features {FEATURES_FILE} not found in:\n{where}\nMake them with "
            "`python scripts/extract_stl10_features.py` (it reads stl10_binary/ from these folders or downloads "
            f"it from {URL}, and needs the ImageNet ResNet-50 weights Keras downloads). See data/README.md."
        )
    arrays = read_arrays(path, ("features", "labels"))
    x, y = arrays["features"], arrays["labels"]
    if x.ndim != 2 or len(x) != len(y) or len(x) < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"{path}: 'features' must be a finite [N, D] array with N labels; got {x.shape} and {y.shape}")
    if y.dtype.kind not in "iu" or y.min() < 0 or y.max() > 9:
        raise ValueError(f"{path}: 'labels' must be integers in 0..9")
    splits = random_split(x.astype(np.float32), y.astype(np.int64), TEST_FRACTION, seed)
    return DataSplits(*splits, name="stl10", likelihood="gaussian", class_names=CLASS_NAMES)
