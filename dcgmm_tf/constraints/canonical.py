"""The canonical arrays of a constraint set: checked pairs, each stored once with ``i < j``, sorted, merged."""

from __future__ import annotations

from typing import Any

import numpy as np

from .arrays import as_index_array


def canonical_pairs(i: Any, j: Any, weight: Any, num_samples: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Checks pairs ``(i, j)`` with weights over ``num_samples`` samples and returns them canonical.

    Each pair comes once with ``i < j``, sorted by ``(i, j)``; duplicates (in either orientation) of one sign keep
    the largest ``|weight|``.

    Returns:
      ``i``, ``j`` (int64), ``weight`` (float32) and ``num_samples`` (int).

    Raises:
      ValueError: On a bad index, a self-pair, a zero or non-finite weight, or a pair given as both a must-link
        and a cannot-link.
    """
    if isinstance(num_samples, (bool, np.bool_)) or not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive integer, got {num_samples!r}.")
    num_samples = int(num_samples)
    i = as_index_array(i, "i")
    j = as_index_array(j, "j")
    weight = np.asarray(weight)
    if weight.ndim != 1:
        raise ValueError(f"`weight` must be 1-D, got shape {weight.shape}.")
    if weight.dtype.kind not in "iuf":
        raise ValueError(f"`weight` must be numeric, got dtype {weight.dtype}.")
    with np.errstate(over="ignore"):
        weight = weight.astype(np.float32)
    if not i.size == j.size == weight.size:
        raise ValueError(f"`i`, `j` and `weight` must have the same length, got {i.size}, {j.size} and {weight.size}.")
    for name, index in (("i", i), ("j", j)):
        bad = (index < 0) | (index >= num_samples)
        if bad.any():
            raise ValueError(
                f"`{name}` contains index {index[bad][0]} outside [0, {num_samples}) (num_samples={num_samples})."
            )
    if (i == j).any():
        k = int(np.flatnonzero(i == j)[0])
        raise ValueError(f"Pair ({i[k]}, {j[k]}) links a sample to itself; i != j is required.")
    bad = ~np.isfinite(weight) | (weight == 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"Pair ({i[k]}, {j[k]}) has weight {weight[k]} (as float32); weights must be finite and non-zero."
        )

    lo, hi = np.minimum(i, j), np.maximum(i, j)
    key = lo * num_samples + hi
    # Sort by pair, then by decreasing |weight|: the first entry of every
    # group of duplicates is the one to keep.
    order = np.lexsort((-np.abs(weight), key))
    key, weight = key[order], weight[order]
    first = np.ones(key.size, bool)
    first[1:] = key[1:] != key[:-1]
    if not first.all():
        starts = np.flatnonzero(first)
        positive = np.maximum.reduceat(weight > 0, starts)
        negative = np.maximum.reduceat(weight < 0, starts)
        conflict = positive & negative
        if conflict.any():
            k = int(key[starts[np.flatnonzero(conflict)[0]]])
            raise ValueError(
                f"Pair ({k // num_samples}, {k % num_samples}) is given both as a must-link and as a cannot-link."
            )
    key, weight = key[first], weight[first]
    return key // num_samples, key % num_samples, weight, num_samples
