"""Look-ups in a constraint matrix: the entries of the blocks of batches, in time linear in the pairs touched."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from .arrays import as_index_array


def _ragged_arange(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of `arange(s, s + c)` for every `(s, c)` pair."""
    total = int(counts.sum())
    offsets = np.repeat(np.cumsum(counts) - counts - starts, counts)
    return np.arange(total, dtype=np.int64) - offsets


def block_entries(
    adjacency: sparse.csr_matrix, indices: Any, lengths: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zero entries of the blocks ``W[b][:, b]`` of consecutive batches ``b`` of ``indices``.

    See :meth:`dcgmm_tf.constraints.ConstraintSet.block_entries`; ``adjacency`` is the symmetric CSR matrix ``W``
    with sorted indices.
    """
    num_samples = adjacency.shape[0]
    indices = as_index_array(indices, "indices")
    bad = (indices < 0) | (indices >= num_samples)
    if bad.any():
        raise ValueError(f"`indices` contains {indices[bad][0]} outside [0, {num_samples}).")
    lengths = np.asarray([indices.size] if lengths is None else lengths, np.int64)
    if lengths.sum() != indices.size or (lengths < 0).any():
        raise ValueError(f"`lengths` must be >= 0 and sum to {indices.size}, got {lengths.sum()}.")
    batch = np.repeat(np.arange(lengths.size), lengths)
    row_starts = adjacency.indptr[indices].astype(np.int64)
    row_counts = adjacency.indptr[indices + 1] - row_starts
    entries = _ragged_arange(row_starts, row_counts)
    rows = np.repeat(np.arange(indices.size), row_counts)
    cols = adjacency.indices[entries]
    values = adjacency.data[entries]
    # Map every neighbour to all positions of the same batch holding it.
    keys = batch * num_samples + indices
    position_order = np.argsort(keys, kind="stable")
    sorted_keys = keys[position_order]
    wanted = batch[rows] * num_samples + cols
    first = np.searchsorted(sorted_keys, wanted, side="left")
    counts = np.searchsorted(sorted_keys, wanted, side="right") - first
    return (np.repeat(rows, counts), position_order[_ragged_arange(first, counts)], np.repeat(values, counts))
