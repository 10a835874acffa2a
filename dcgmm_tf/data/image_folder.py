"""Your own images as a `DataSplits`: a folder with one sub-folder per class, or a CSV of `file,label`.

This is how to bring data like the paper's (private) heart-echo frames: crop the frames, put them in
`frames/<view>/*.png` (or list them in a CSV), and pass the folder or CSV as `--dataset`. Images are
resized to `image_size` x `image_size`, scaled to [0, 1] and split at random (seeded) into 80% train and
20% test.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dcgmm_tf.data.dataset import DataSplits
from dcgmm_tf.data.splits import random_split

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")
_GRAY_MODES = ("1", "L", "LA", "I", "I;16", "F")


def read_images(paths: Sequence[Path], image_size: int, channels: int | None = None) -> np.ndarray:
    """Decode, resize (bilinear) and stack images into uint8 `(N, image_size, image_size, C)`.

    `channels` is 1 (grayscale) or 3 (RGB); None means 1 if every image is grayscale, else 3.
    """
    from PIL import Image  # pylint: disable=g-import-not-at-top

    if channels not in (None, 1, 3):
        raise ValueError(f"channels must be 1, 3 or None, got {channels}")

    def open_image(path: Path):
        try:
            return Image.open(path)
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: not a readable image ({e}).") from e

    if channels is None:  # only the headers are read here
        modes = set()
        for path in paths:
            with open_image(path) as image:
                modes.add(image.mode)
        channels = 1 if modes <= set(_GRAY_MODES) else 3
    mode = "L" if channels == 1 else "RGB"
    out = np.empty((len(paths), image_size, image_size, channels), np.uint8)
    for n, path in enumerate(paths):
        with open_image(path) as image:
            try:
                resized = image.convert(mode).resize((image_size, image_size), Image.Resampling.BILINEAR)
            except (OSError, ValueError) as e:
                raise ValueError(f"{path}: not a readable image ({e}).") from e
        out[n] = np.asarray(resized).reshape(image_size, image_size, channels)
    return out


def split_images(
    images: np.ndarray,
    labels: np.ndarray,
    name: str,
    test_fraction: float = 0.2,
    seed: int = 0,
    class_names: Sequence[str] | None = None,
) -> DataSplits:
    """A `DataSplits` of uint8 images `(N, H, W, C)` scaled to [0, 1], with a seeded random train/test split."""
    flat = (images.reshape(len(images), -1) / np.float32(255)).astype(np.float32)
    splits = random_split(flat, np.asarray(labels, np.int64), test_fraction, seed)
    return DataSplits(
        *splits,
        name=name,
        likelihood="bernoulli",
        image_shape=images.shape[1:],
        class_names=None if class_names is None else tuple(class_names),
    )


def list_class_folders(root: Path) -> tuple[list[Path], np.ndarray, list[str]]:
    """Image files under `root/<class>/` (recursively), their labels, and the sorted class names."""
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    files, labels = [], []
    for label, name in enumerate(classes):
        found = sorted(p for p in (root / name).rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        files += found
        labels += [label] * len(found)
    if len(classes) < 2 or not files:
        raise ValueError(
            f"{root}: expected one sub-folder of images per class (at least 2 classes), found "
            f"{len(classes)} sub-folder(s) and {len(files)} image(s)"
        )
    return files, np.asarray(labels, np.int64), classes


def read_label_csv(path: Path) -> tuple[list[Path], np.ndarray, list[str]]:
    """Files and labels from a CSV with a `file,label` header; files are relative to the CSV's folder.

    Labels may be any strings; they are numbered in sorted order (numerically if all are integers).
    """
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or not {"file", "label"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: the CSV needs a header with columns 'file' and 'label', got {reader.fieldnames}")
        rows = [(row["file"], row["label"].strip()) for row in reader]
    if not rows:
        raise ValueError(f"{path}: no rows")
    names = sorted(
        {label for _, label in rows}, key=lambda s: (0, int(s), "") if s.lstrip("-").isdigit() else (1, 0, s)
    )
    index = {name: n for n, name in enumerate(names)}
    files = [(path.parent / file).resolve() for file, _ in rows]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"{path}: {len(missing)} listed file(s) do not exist, e.g. {missing[:3]}")
    return files, np.asarray([index[label] for _, label in rows], np.int64), names


def load_image_folder(
    path: str | os.PathLike,
    image_size: int = 64,
    *,
    channels: int | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> DataSplits:
    """Load a folder of class sub-folders, or a `file,label` CSV, as a `DataSplits` of flattened images.

    Raises:
      FileNotFoundError: If `path` or a listed file does not exist.
      ValueError: On an empty or malformed folder or CSV, or an unreadable image.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        files, labels, names = list_class_folders(path)
    elif path.is_file() and path.suffix.lower() == ".csv":
        files, labels, names = read_label_csv(path)
    else:
        raise FileNotFoundError(f"{path}: not a folder of class sub-folders nor a .csv file of file,label rows")
    name = path.name if path.is_dir() else path.stem
    return split_images(read_images(files, image_size, channels), labels, name, test_fraction, seed, names)
