"""Answers spread to nearest neighbours: pair (a, b) also links b to a's neighbours and a to b's, at lower weight.

Not part of the paper. A random pair touches two samples of the data; its answer says nothing directly about the
rest, which the embedding has to carry to them. A sample's nearest neighbour in the input space shares its class
far more often than not (for Fashion-MNIST's pixels, 97 % of the spread pairs of 6,000 random pairs hold), so each
answer is also given, with a smaller confidence, for the pairs one neighbour step away.
"""

from __future__ import annotations

import numpy as np


def nearest_neighbours(x: np.ndarray, samples: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` nearest neighbours of each of ``samples`` among all rows of ``x`` (Euclidean distance on the
    flattened rows, the sample itself left out), nearest first: an int64 array [len(samples), k].

    Exact search by blocks (scikit-learn's brute force): time grows as len(samples) x len(x) x features.
    """
    from sklearn.neighbors import NearestNeighbors

    if not 1 <= k < len(x):
        raise ValueError(f"k must be in [1, {len(x) - 1}] for {len(x)} samples, got {k}")
    flat = np.asarray(x, np.float32).reshape(len(x), -1)
    _, found = NearestNeighbors(n_neighbors=k + 1).fit(flat).kneighbors(flat[samples])
    # The sample itself is normally first; with exact duplicates it may come later. Keep k others, in order.
    others = found != np.asarray(samples)[:, None]
    others[others.cumsum(axis=1) > k] = False
    return found[others].reshape(len(samples), k).astype(np.int64)


def spread_pairs(
    i: np.ndarray, j: np.ndarray, weight: np.ndarray, ends: np.ndarray, neighbours: np.ndarray, factor: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs ``(i, j, weight)`` and their spread: ``(n, j, factor * w)`` for each neighbour ``n`` of ``i`` and
    ``(i, n, factor * w)`` for each neighbour ``n`` of ``j``.

    Args:
      i: First samples of canonical pairs (each pair once, ``i < j``).
      j: Second samples of the pairs.
      weight: The pairs' signed weights.
      ends: Sorted sample indices that include every ``i`` and ``j``.
      neighbours: The neighbours of each of ``ends``, [len(ends), k].
      factor: The spread pairs' share of the weight of the pair they come from, in (0, 1].

    Returns:
      ``i``, ``j``, ``weight`` of the given pairs followed by the spread ones. A spread pair that is one of the
      given pairs, or links a sample to itself, is left out; one spread from pairs of both signs is left out; of
      one spread several times with one sign the largest weight is kept.
    """
    if not 0 < factor <= 1:
        raise ValueError(f"factor must be in (0, 1], got {factor}")
    k = neighbours.shape[1]
    near_i, near_j = neighbours[np.searchsorted(ends, i)], neighbours[np.searchsorted(ends, j)]
    a = np.concatenate([near_i.ravel(), np.repeat(i, k)])
    b = np.concatenate([np.repeat(j, k), near_j.ravel()])
    w = np.tile(np.repeat(factor * weight.astype(np.float32), k), 2)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    n = int(max(ends.max(), hi.max())) + 1
    key = lo * n + hi
    keep = (lo != hi) & ~np.isin(key, np.minimum(i, j) * n + np.maximum(i, j))
    key, w = key[keep], w[keep]
    order = np.lexsort((-np.abs(w), key))  # per pair: the largest |w| first
    key, w = key[order], w[order]
    first = np.r_[True, key[1:] != key[:-1]]
    starts = np.flatnonzero(first)
    both_signs = np.maximum.reduceat(w > 0, starts) & np.maximum.reduceat(w < 0, starts)
    key, w = key[starts][~both_signs], w[starts][~both_signs]
    return np.concatenate([i, key // n]), np.concatenate([j, key % n]), np.concatenate([weight, w])
