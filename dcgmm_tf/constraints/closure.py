"""Transitive closure of constraint pairs, given the must-link component of every sample."""

from __future__ import annotations

import numpy as np


def close(
    i: np.ndarray, j: np.ndarray, weight: np.ndarray, component: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns the pairs `(i, j, weight)` entailed by at least one given pair.

    Implements `ConstraintSet.transitive_closure` (semantics and errors
    documented there): every pair inside a must-link component, and every
    pair across two components joined by a cannot-link, with float32 weight
    `+-max|w|`. `component` labels the must-link component of every sample;
    the given pairs must be non-empty.
    """
    must = weight > 0
    ci, cj = component[i[~must]], component[j[~must]]
    if (ci == cj).any():
        k = int(np.flatnonzero(ci == cj)[0])
        a, b = i[~must][k], j[~must][k]
        raise ValueError(
            f"Cannot-link ({a}, {b}) contradicts the must-links, which transitively connect samples {a} and {b}."
        )
    order = np.argsort(component, kind="stable")
    sizes = np.bincount(component)
    starts = np.cumsum(sizes) - sizes

    def members(c: int) -> np.ndarray:
        return order[starts[c] : starts[c] + sizes[c]]

    parts_i, parts_j = [], []
    for c in np.unique(component[i[must]]):
        a, b = np.triu_indices(int(sizes[c]), 1)
        parts_i.append(members(c)[a])
        parts_j.append(members(c)[b])
    num_must = sum(p.size for p in parts_i)
    for c1, c2 in np.unique(np.stack([ci, cj], axis=1), axis=0):
        m1, m2 = members(c1), members(c2)
        parts_i.append(np.repeat(m1, m2.size))
        parts_j.append(np.tile(m2, m1.size))
    closed_i, closed_j = np.concatenate(parts_i), np.concatenate(parts_j)
    alpha = float(np.abs(weight).max())
    closed_weight = np.full(closed_i.size, -alpha, np.float32)
    closed_weight[:num_must] = alpha
    return closed_i, closed_j, closed_weight
