"""Validation of index arrays, shared by the constraint store and the sampling of pairs from labels."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_index_array(values: Any, name: str) -> np.ndarray:
    """Converts `values` to a 1-D int64 array, rejecting non-integers (`name` is used in the error messages)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D, got shape {array.shape}.")
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.size == 0:
        return np.zeros(0, np.int64)
    if array.dtype.kind != "f" or not np.all(np.isfinite(array)):
        raise ValueError(f"`{name}` must contain integers, got dtype {array.dtype}.")
    if not np.all(array == np.round(array)):
        bad = array[array != np.round(array)][0]
        raise ValueError(f"`{name}` must contain integers, got {bad}.")
    return array.astype(np.int64)
