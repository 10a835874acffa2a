"""The `DataSplits` type every loader returns: flat features and integer labels, split into train and test."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dcgmm_tf.losses import LIKELIHOODS


@dataclasses.dataclass(frozen=True)
class DataSplits:
    """A train/test split of flat features and integer labels.

    Attributes:
      x_train: float32 array of shape `(N, M)`.
      y_train: int64 array of shape `(N,)`.
      x_test: float32 array of shape `(N_test, M)`.
      y_test: int64 array of shape `(N_test,)`.
      name: DataSplits name.
      likelihood: `"bernoulli"` for data in `[0, 1]`, else `"gaussian"`.
      image_shape: `(H, W, C)` of each sample when the features are a
        flattened image (see `images`), else None.
      class_names: The name of each label value (label k is `class_names[k]`),
        where the data set has names, else None.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    name: str
    likelihood: str
    image_shape: tuple[int, ...] | None = None
    class_names: tuple[str, ...] | None = None

    def __post_init__(self):
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if x.dtype != np.float32 or x.ndim != 2:
                raise ValueError(f"x_{split} must be a 2-D float32 array, got {x.dtype} with shape {x.shape}.")
            if y.dtype != np.int64 or y.shape != (x.shape[0],):
                raise ValueError(
                    f"y_{split} must be an int64 array of shape ({x.shape[0]},), got {y.dtype} with shape {y.shape}."
                )
        if self.x_train.shape[1] != self.x_test.shape[1]:
            raise ValueError(f"x_train has {self.x_train.shape[1]} features but x_test has {self.x_test.shape[1]}.")
        if self.likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {self.likelihood!r}.")
        if self.image_shape is not None and (
            len(self.image_shape) != 3 or int(np.prod(self.image_shape)) != self.x_train.shape[1]
        ):
            raise ValueError(
                f"image_shape must be (H, W, C) with H*W*C = {self.x_train.shape[1]} features, got {self.image_shape}."
            )

    def class_name(self, label: int) -> str:
        """The name of a label value, or the value itself when the data set has no names for it."""
        if self.class_names is not None and 0 <= label < len(self.class_names):
            return self.class_names[label]
        return str(label)

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


def with_image_shape(data: DataSplits, shape: tuple[int, ...] | None = None) -> tuple[DataSplits, str]:
    """``data`` with the image shape of its rows, for pages and figures that draw samples; and how it was found.

    Flat rows are images when ``shape`` says so ((H, W) for grey images or (H, W, C)), when the data set knows its
    shape, or when each row's length is a perfect square, taken as a square grey image (an assumption, said in the
    returned note). Otherwise the data stays as it is: feature vectors.

    Args:
      data: The data set.
      shape: The shape of one image, or None.

    Returns:
      The data set (with ``image_shape`` set where an image shape was found) and a note saying which shape was used
      and why.

    Raises:
      ValueError: When ``shape`` does not hold the row's number of features.
    """
    features = data.x_train.shape[1]
    if shape is not None:
        shape = tuple(int(v) for v in shape)
        if len(shape) == 2:
            shape = (*shape, 1)
        if len(shape) != 3 or min(shape) < 1 or math.prod(shape) != features:
            raise ValueError(
                f"image shape {shape} does not hold the {features} features of a row of {data.name!r}: give H,W "
                "(grey) or H,W,C with H*W*C equal to the number of features."
            )
        return dataclasses.replace(data, image_shape=shape), f"images of shape {shape} (given)"
    if data.image_shape is not None:
        return data, f"images of shape {data.image_shape} (the data set's own)"
    side = math.isqrt(features)
    if side >= 4 and side * side == features:
        shape = (side, side, 1)
        note = f"images of shape {shape} (assumed: {features} features per row make a square grey image)"
        return dataclasses.replace(data, image_shape=shape), note
    return data, "feature vectors (no image shape given, and the row length is not a square)"
