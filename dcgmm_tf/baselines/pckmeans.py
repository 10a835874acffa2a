"""Pairwise-constrained k-means (PCKmeans; Basu, Banerjee & Mooney, SDM 2004), vectorised with NumPy.

The objective is ``sum_i ||x_i - mu_{l_i}||^2 + w * (#violated must-links + #violated cannot-links)``.
Centroids start from the must-link neighbourhoods (connected components of the must-link graph), then
assignments and centroids alternate until the assignments stop changing. The assignment step is an exact
block-coordinate descent: the constrained samples are split into independent sets (no two samples of a set
share a constraint) by a vectorised greedy colouring, and each set is assigned in one NumPy step given the
current labels of all other samples. Every step therefore lowers the objective, as in the original sequential
algorithm, while the work per iteration is a handful of matrix products.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from dcgmm_tf.constraints import ConstraintSet, as_constraint_set


def squared_distances(x: np.ndarray, centroids: np.ndarray, x_norm: np.ndarray | None = None) -> np.ndarray:
    """``||x_n - c_k||^2`` of shape ``[N, K]`` via ``||x||^2 - 2 x.c + ||c||^2`` (``x_norm``: cached ``||x||^2``)."""
    centroids = np.asarray(centroids, np.float32)
    x_norm = np.einsum("nd,nd->n", x, x) if x_norm is None else x_norm
    c_norm = np.einsum("kd,kd->k", centroids, centroids)
    return np.maximum(x_norm[:, None] - 2.0 * (x @ centroids.T) + c_norm[None, :], 0.0).astype(np.float64)


def must_link_neighbourhoods(constraints: ConstraintSet) -> list[np.ndarray]:
    """Connected components of the must-link graph with at least two samples, largest first.

    Uses the set's cached :meth:`ConstraintSet.must_link_components`.
    """
    component = constraints.must_link_components()
    sizes = np.bincount(component)
    order = np.argsort(-sizes, kind="stable")
    return [np.flatnonzero(component == c) for c in order if sizes[c] > 1]


def independent_sets(constraints: ConstraintSet, seed: int = 0) -> list[np.ndarray]:
    """Partition of the constrained samples into sets without a constraint inside any set.

    Vectorised Jones-Plassmann colouring: in each round, every uncoloured sample whose random priority beats
    all its uncoloured neighbours joins the round's set.
    """
    graph = constraints.adjacency.astype(bool).tocsr()
    remaining = np.unique(np.concatenate([constraints.i, constraints.j]))
    priority = np.random.default_rng(seed).permutation(constraints.num_samples).astype(np.float64) + 1.0
    sets = []
    while remaining.size:
        active = np.zeros(constraints.num_samples)
        active[remaining] = priority[remaining]
        sub = graph[remaining]
        # Highest priority among each sample's uncoloured neighbours (0 when it has none).
        neighbour_max = sub.multiply(active[None, :]).max(axis=1).toarray().ravel()
        chosen = remaining[priority[remaining] > neighbour_max]
        sets.append(chosen)
        remaining = np.setdiff1d(remaining, chosen, assume_unique=True)
    return sets


class PCKMeans:
    """Pairwise-constrained k-means.

    Args:
      num_clusters: Number of clusters K.
      weight: Penalty ``w`` per violated must-link or cannot-link (in units of squared distance).
      max_iter: Maximum number of assignment/update iterations.
      seed: Seed of the centroid fill-up and of empty-cluster handling.

    After ``fit``: ``centroids_`` ``[K, D]``, ``labels_`` ``[N]``, ``n_iter_``, ``converged_`` and
    ``history_`` (per iteration: changed assignments, and the objective after the assignment step).
    """

    def __init__(self, num_clusters: int, weight: float = 1.0, max_iter: int = 100, seed: int = 0):
        if num_clusters < 1:
            raise ValueError(f"num_clusters must be >= 1, got {num_clusters}")
        if weight < 0:
            raise ValueError(f"weight must be >= 0, got {weight}")
        if max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {max_iter}")
        self.num_clusters, self.weight, self.max_iter, self.seed = int(num_clusters), float(weight), max_iter, seed

    def _initial_centroids(self, x: np.ndarray, constraints: ConstraintSet, rng: np.random.Generator) -> np.ndarray:
        """Means of the K largest must-link neighbourhoods, filled up by k-means++ sampling when fewer."""
        hoods = must_link_neighbourhoods(constraints)[: self.num_clusters]
        centroids = [x[h].mean(axis=0) for h in hoods]
        if not centroids:
            centroids.append(x[rng.integers(len(x))])
        nearest = squared_distances(x, np.stack(centroids)).min(axis=1)
        while len(centroids) < self.num_clusters:
            total = nearest.sum()
            pick = rng.choice(len(x), p=nearest / total) if total > 0 else rng.integers(len(x))
            centroids.append(x[pick])
            nearest = np.minimum(nearest, squared_distances(x, x[pick][None])[:, 0])
        return np.stack(centroids)

    def _penalties(
        self, rows: np.ndarray, labels: np.ndarray, must: sparse.csr_matrix, cannot: sparse.csr_matrix
    ) -> np.ndarray:
        """``w * (violated must-links + violated cannot-links)`` of each sample in ``rows`` for each cluster."""
        onehot = sparse.csr_matrix(
            (np.ones(len(labels)), (np.arange(len(labels)), labels)), shape=(len(labels), self.num_clusters)
        )
        must_rows = must[rows]
        same = (must_rows @ onehot).toarray()
        violated_must = np.asarray(must_rows.sum(axis=1)) - same  # must-neighbours outside cluster h
        violated_cannot = (cannot[rows] @ onehot).toarray()  # cannot-neighbours inside cluster h
        return self.weight * (violated_must + violated_cannot)

    def _update_centroids(
        self, x: np.ndarray, labels: np.ndarray, distances: np.ndarray, centroids: np.ndarray
    ) -> np.ndarray:
        """Cluster means; an empty cluster is re-seeded with the sample farthest from its own centroid."""
        counts = np.bincount(labels, minlength=self.num_clusters)
        members = sparse.csr_matrix(
            (np.ones(len(x), np.float32), (labels, np.arange(len(x)))), shape=(self.num_clusters, len(x))
        )
        sums = members @ x
        new = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centroids)
        cost = distances[np.arange(len(x)), labels].copy()
        for k in np.flatnonzero(counts == 0):
            far = int(np.argmax(cost))
            new[k] = x[far]
            cost[far] = -np.inf
        return new

    def fit(
        self, x: np.ndarray, constraints: ConstraintSet | None = None, *, ml: Any = None, cl: Any = None
    ) -> PCKMeans:
        """Cluster the rows of ``x`` (``[N, D]``) under ``constraints`` over the same N samples, or under must-links
        ``ml`` and cannot-links ``cl`` given as index pairs (as scikit-learn-style clusterers take them)."""
        x = np.asarray(x, np.float32).reshape(len(x), -1)
        constraints = as_constraint_set(len(x), ml, cl, constraints)
        if len(x) < self.num_clusters:
            raise ValueError(f"need at least {self.num_clusters} samples, got {len(x)}")
        rng = np.random.default_rng(self.seed)
        n = len(x)

        def adjacency(mask):
            i, j = constraints.i[mask], constraints.j[mask]
            return sparse.csr_matrix(
                (np.ones(2 * i.size), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n)
            )

        must, cannot = adjacency(constraints.must_link_mask), adjacency(constraints.cannot_link_mask)
        blocks = independent_sets(constraints, seed=self.seed) if len(constraints) else []
        constrained = np.concatenate(blocks) if blocks else np.zeros(0, np.int64)
        centroids = self._initial_centroids(x, constraints, rng)
        x_norm = np.einsum("nd,nd->n", x, x)
        labels = np.full(n, -1)
        self.history_, self.converged_ = [], False
        for iteration in range(1, self.max_iter + 1):
            distances = squared_distances(x, centroids, x_norm)
            new = distances.argmin(axis=1)
            if iteration > 1:  # constrained samples move only by the exact updates below
                new[constrained] = labels[constrained]
            for rows in blocks:  # constrained samples, one independent set at a time
                new[rows] = (distances[rows] + self._penalties(rows, new, must, cannot)).argmin(axis=1)
            changed = int(np.sum(new != labels))
            labels = new
            distortion = float(distances[np.arange(n), labels].sum())
            violations = int(len(constraints) - constraints.satisfied(labels).sum()) if len(constraints) else 0
            self.history_.append(
                {
                    "iteration": iteration,
                    "changed": changed,
                    "distortion": distortion,
                    "violations": violations,
                    "objective": distortion + self.weight * violations,
                }
            )
            centroids = self._update_centroids(x, labels, distances, centroids)
            if changed == 0:
                self.converged_ = True
                break
        self.centroids_, self.labels_, self.n_iter_ = centroids, labels, iteration
        return self

    def fit_predict(
        self, x: np.ndarray, constraints: ConstraintSet | None = None, *, ml: Any = None, cl: Any = None
    ) -> np.ndarray:
        """``fit``, then the cluster of each training sample (``labels_``)."""
        return self.fit(x, constraints, ml=ml, cl=cl).labels_

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Index of the nearest centroid of each row of ``x`` (new samples carry no constraints)."""
        x = np.asarray(x, np.float32).reshape(len(x), -1)
        return squared_distances(x, self.centroids_).argmin(axis=1)
