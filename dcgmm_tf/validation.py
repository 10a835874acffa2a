"""Checks of user data with error messages that say what is wrong and how to fix it.

The public entry points (:func:`dcgmm_tf.pretrain`, :func:`dcgmm_tf.data.constrained_dataset`) and the
experiment runners call these functions, so bad input fails early with a ``ValueError`` instead of a NaN
loss many epochs later. Constraint files and data files are checked where they are read
(:class:`dcgmm_tf.ConstraintSet`, :mod:`dcgmm_tf.data.loading`).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dcgmm_tf.storage import DiskFullError

# Errors a command-line program reports as one line: bad input, a missing file, a diverged training, a full disk.
USER_ERRORS = (ValueError, FileNotFoundError, FloatingPointError, DiskFullError)


TENSOR_ALIGNMENT = 64  # bytes; TensorFlow's CPU kernels abort on a buffer shared with them that is not aligned to this


def aligned_float32(x: np.ndarray) -> np.ndarray:
    """A C-contiguous float32 copy of ``x`` in a buffer aligned to :data:`TENSOR_ALIGNMENT` bytes, which TensorFlow
    can use without a copy of its own (:func:`dcgmm_tf.data.pipeline.host_tensor`)."""
    buffer = np.empty(x.size * 4 + TENSOR_ALIGNMENT, np.uint8)
    start = -buffer.ctypes.data % TENSOR_ALIGNMENT
    aligned = buffer[start : start + x.size * 4].view(np.float32).reshape(x.shape)
    aligned[...] = x
    return aligned


def check_matrix(x: Any, name: str, dtype: Any = None) -> np.ndarray:
    """``x`` as an array (of ``dtype`` if given), refused unless it is a finite [N, F] matrix.

    Raises:
      ValueError: naming ``name`` and the shape.
    """
    array = np.asarray(x, dtype)
    if array.ndim != 2 or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be a finite [N, F] array, got shape {array.shape}")
    return array


def check_data(
    x: Any,
    y: Any = None,
    *,
    num_clusters: int | None = None,
    likelihood: str | None = None,
    sample_shape: Sequence[int] | None = None,
    name: str = "x",
) -> np.ndarray:
    """Checks one split of the data and returns ``x`` as a float32 array.

    ``x`` must be a non-empty numeric array of shape ``[N, *sample_shape]`` (rank >= 2) holding only finite
    values, in ``[0, 1]`` for the Bernoulli likelihood; ``y``, if given, must hold N integer labels; N must be
    at least ``num_clusters``.

    Raises:
      ValueError: naming the array, the problem and the fix.
    """
    array = np.asarray(x)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {array.dtype}.")
    if array.ndim < 2:
        raise ValueError(
            f"{name} must have shape [num_samples, num_features, ...] (rank >= 2), got shape "
            f"{array.shape}; reshape a single feature to x[:, None] or a single sample to x[None]."
        )
    if sample_shape is not None and array.shape[1:] != tuple(sample_shape):
        raise ValueError(
            f"{name} has samples of shape {array.shape[1:]} but the model expects "
            f"{tuple(sample_shape)}; build the model with input_shape={array.shape[1:]}."
        )
    if array.shape[0] == 0:
        raise ValueError(f"{name} holds no samples (shape {array.shape}).")
    array = array if array.dtype == np.float32 else aligned_float32(array)
    finite = np.isfinite(array)
    if not finite.all():
        bad = np.argwhere(~finite)[0]
        raise ValueError(
            f"{name} contains {int((~finite).sum())} NaN or infinite value(s), the first at index "
            f"{tuple(int(b) for b in bad)} ({array[tuple(bad)]}); remove or impute them."
        )
    if likelihood == "bernoulli":
        low, high = float(array.min()), float(array.max())
        if low < 0 or high > 1:
            raise ValueError(
                f"{name} has values in [{low:g}, {high:g}] but the Bernoulli likelihood needs data in "
                "[0, 1]: scale it (e.g. divide 8-bit pixels by 255) or use likelihood='gaussian'."
            )
    if y is not None:
        labels = np.asarray(y)
        if labels.shape != (array.shape[0],):
            raise ValueError(
                f"{name} has {array.shape[0]} samples but its labels have shape {labels.shape}; "
                f"expected ({array.shape[0]},), one label per sample."
            )
        if labels.dtype.kind not in "iu":
            raise ValueError(f"the labels of {name} must be integers, got dtype {labels.dtype}.")
    if num_clusters is not None and array.shape[0] < num_clusters:
        raise ValueError(
            f"{name} has {array.shape[0]} samples, fewer than the {num_clusters} clusters; use more "
            "samples or fewer clusters."
        )
    return array


def exit_on_user_error(main: Callable[[list[str]], Any]) -> Callable[[list[str]], Any]:
    """Wraps the ``main`` of an absl program: a ``USER_ERRORS`` exception ends it with ``error: <message>``
    on stderr and exit status 1, without a traceback (logged at debug level, e.g. with ``--verbosity=1``)."""

    @functools.wraps(main)
    def wrapped(argv: list[str]) -> Any:
        try:
            return main(argv)
        except USER_ERRORS as e:
            logging.debug("traceback of the error", exc_info=True)
            sys.exit(f"error: {e}")

    return wrapped
