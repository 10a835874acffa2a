"""What the networks read of each image: its pixels, or its histograms of oriented gradients (HOG).

HOG (Dalal & Triggs, CVPR 2005) is not the paper's input: an option (``input_features="hog"``) that feeds the
paper's network each grey image's HOG features instead of its pixels. Each image's gradient (central differences,
zero on the border rows and columns) gives every pixel an unsigned orientation in [0, 180) degrees and a magnitude;
each square cell of ``cell`` x ``cell`` pixels holds the mean magnitude per orientation bin (hard binning); each
block of ``block`` x ``block`` neighbouring cells is normalised by L2-Hys (scaled to unit L2 norm, clipped at 0.2,
scaled again). The features are the blocks' histograms side by side, in the layout of scikit-image's ``hog`` with
its defaults (``block_norm="L2-Hys"``, no gamma correction), whose values they match (checked to 1e-7 on
Fashion-MNIST). The computation is vectorised over the images: Fashion-MNIST's 70,000 take under a minute on 2 cores.

``input_features="hog_scaled"`` (not the paper's either) divides each HOG feature by its maximum over the training
split (a feature that is zero there is left as it is) and clips the test split at 1, so that every feature spans
[0, 1] as a Bernoulli mean should: after the block normalisation most features never reach 1 (a block's values are
clipped at 0.2 before it is normalised again; on 20,000 of Fashion-MNIST's training images the median feature's
maximum is 0.61). The maxima come from the training split alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dcgmm_tf.config import INPUT_FEATURES
from dcgmm_tf.data.dataset import DataSplits

L2_HYS_CLIP = 0.2  # Dalal & Triggs' clipping of the normalised block histogram
_EPS = 1e-5  # keeps the norm of an empty block away from zero


def hog_size(height: int, width: int, cell: int = 4, orientations: int = 9, block: int = 2) -> int:
    """The number of HOG features of one ``height`` x ``width`` image (see :func:`hog_features`)."""
    rows, cols = height // cell - block + 1, width // cell - block + 1
    if rows < 1 or cols < 1:
        raise ValueError(f"a {height}x{width} image holds no block of {block}x{block} cells of {cell} pixels")
    return rows * cols * block * block * orientations


def hog_features(
    images: np.ndarray, cell: int = 4, orientations: int = 9, block: int = 2, chunk: int = 4096
) -> np.ndarray:
    """The HOG features of each grey image.

    Args:
      images: ``[N, H, W]`` grey images (any scale: the block normalisation removes it). Pixels beyond the last whole
        cell are left out.
      cell: Side of a cell in pixels.
      orientations: Number of orientation bins over [0, 180) degrees.
      block: Side of a normalisation block in cells.
      chunk: Images computed at a time (bounds the memory: about ``chunk * H * W * orientations`` floats).

    Returns:
      float32 ``[N, hog_size(H, W, cell, orientations, block)]``, each value in [0, 1].

    Raises:
      ValueError: On an array that is not ``[N, H, W]``, or images too small for one block.
    """
    images = np.asarray(images)
    if images.ndim != 3:
        raise ValueError(f"images must be [N, H, W] grey images, got shape {images.shape}")
    size = hog_size(images.shape[1], images.shape[2], cell, orientations, block)
    out = np.empty((len(images), size), np.float32)
    for start in range(0, len(images), chunk):
        part = images[start : start + chunk].astype(np.float64)
        out[start : start + chunk] = _hog_chunk(part, cell, orientations, block)
    return out


def _hog_chunk(x: np.ndarray, cell: int, orientations: int, block: int) -> np.ndarray:
    n, height, width = x.shape
    cy, cx = height // cell, width // cell
    g_row = np.zeros_like(x)
    g_col = np.zeros_like(x)
    g_row[:, 1:-1, :] = x[:, 2:, :] - x[:, :-2, :]
    g_col[:, :, 1:-1] = x[:, :, 2:] - x[:, :, :-2]
    magnitude = np.hypot(g_row, g_col)[:, : cy * cell, : cx * cell]
    angle = (np.rad2deg(np.arctan2(g_row, g_col)) % 180.0)[:, : cy * cell, : cx * cell]
    bins = np.minimum((angle * (orientations / 180.0)).astype(np.int64), orientations - 1)
    hist = np.zeros((n, cy * cell, cx * cell, orientations))
    np.put_along_axis(hist, bins[..., None], magnitude[..., None], axis=-1)
    cells = hist.reshape(n, cy, cell, cx, cell, orientations).mean(axis=(2, 4))  # [n, cy, cx, orientations]
    rows, cols = cy - block + 1, cx - block + 1
    blocks = np.stack(
        [np.stack([cells[:, r : r + block, c : c + block] for c in range(cols)], 1) for r in range(rows)], 1
    )  # [n, rows, cols, block, block, orientations]
    blocks = blocks / np.sqrt((blocks**2).sum(axis=(3, 4, 5), keepdims=True) + _EPS**2)
    blocks = np.minimum(blocks, L2_HYS_CLIP)
    blocks = blocks / np.sqrt((blocks**2).sum(axis=(3, 4, 5), keepdims=True) + _EPS**2)
    return blocks.reshape(n, -1)


def scaled_to_train_maximum(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each feature divided by its maximum over ``x_train`` (features that are all zero there are kept as they are),
    ``x_test`` then clipped at 1. The features must be non-negative (as HOG's are).

    Returns:
      ``x_train`` and ``x_test`` scaled, each ``[N, F]`` float32 with values in [0, 1].

    Raises:
      ValueError: On arrays that are not ``[N, F]`` with the same F, an empty ``x_train``, or a negative value.
    """
    if x_train.ndim != 2 or x_test.ndim != 2 or x_train.shape[1] != x_test.shape[1] or not len(x_train):
        raise ValueError(f"need [N, F] arrays with the same F, got {x_train.shape} and {x_test.shape}")
    if x_train.min() < 0 or (len(x_test) and x_test.min() < 0):
        raise ValueError("the features to scale must be non-negative (a maximum does not scale negative values)")
    top = x_train.max(axis=0)
    top[top == 0] = 1
    return (x_train / top).astype(np.float32), np.minimum(x_test / top, 1).astype(np.float32)


def with_input_features(data: DataSplits, features: str) -> DataSplits:
    """``data`` as the networks read it: as it is (``"pixels"``), its grey images' :func:`hog_features` (``"hog"``),
    or those features :func:`scaled_to_train_maximum` (``"hog_scaled"``).

    Both HOG inputs are in [0, 1], so the likelihood is Bernoulli; they are no longer an image (``image_shape``
    None).

    Raises:
      ValueError: On an unknown ``features``, or HOG for data that are not grey images.
    """
    if features not in INPUT_FEATURES:
        raise ValueError(f"input_features must be one of {list(INPUT_FEATURES)}, got {features!r}.")
    if features == "pixels":
        return data
    if data.image_shape is None or data.image_shape[-1] != 1:
        shape = "no images" if data.image_shape is None else f"images of shape {data.image_shape}"
        raise ValueError(f"input_features={features} needs grey images; {data.name} holds {shape}.")
    height, width, _ = data.image_shape
    x_train = hog_features(data.x_train.reshape(-1, height, width))
    x_test = hog_features(data.x_test.reshape(-1, height, width))
    if features == "hog_scaled":
        x_train, x_test = scaled_to_train_maximum(x_train, x_test)
    return dataclasses.replace(data, x_train=x_train, x_test=x_test, likelihood="bernoulli", image_shape=None)
