"""`ConstraintSet`: the storage and queries of a sparse constraint matrix `W`.

Each pair is stored once, upper-triangular, so memory is linear in the number of
pairs. Checking and canonicalising the pairs, the batch look-ups, drawing from
labels, CSV I/O and the transitive closure are array functions in the sibling
modules `canonical`, `lookups`, `sampling`, `csv_io` and `closure`; the methods
here build the set from what they return. Those modules never import this one.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from . import canonical, closure, csv_io, lookups, sampling


class ConstraintSet:
    """Symmetric sparse constraint matrix `W` over `num_samples` samples.

    Each pair `(i, j)` is stored once with `i < j`, sorted by `(i, j)`.
    `weight > 0` is a must-link, `weight < 0` a cannot-link and `|weight|` the
    confidence. The arrays `i`, `j` (int64) and `weight` (float32) are
    read-only.

    Duplicate pairs given to the constructor (in either orientation) are
    merged: if all duplicates have the same sign the one with the largest
    `|weight|` is kept; a pair given as both must-link and cannot-link raises
    a `ValueError`.
    """

    def __init__(self, i: Any, j: Any, weight: Any, num_samples: int):
        i, j, weight, num_samples = canonical.canonical_pairs(i, j, weight, num_samples)
        self.num_samples = num_samples
        self.i, self.j, self.weight = i, j, weight
        for array in (self.i, self.j, self.weight):
            array.setflags(write=False)
        self._adjacency: sparse.csr_matrix | None = None
        self._must_link_components: np.ndarray | None = None

    @classmethod
    def empty(cls, num_samples: int) -> ConstraintSet:
        """Returns a set without constraints over `num_samples` samples."""
        return cls(
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.float32),
            num_samples,
        )

    @classmethod
    def from_pairs(cls, num_samples: int, ml: Any = None, cl: Any = None, weight: float = 1e4) -> ConstraintSet:
        """Must-links ``ml`` and cannot-links ``cl`` (each a sequence of index pairs ``(i, j)`` or an array of
        shape ``[n, 2]``), all with confidence ``weight`` (W = +weight for a must-link, -weight for a cannot-link).

        Raises:
          ValueError: On pairs not of shape ``[n, 2]``, a weight that is not finite and > 0, or any of the
            constructor's checks (indices out of range, i == j, a pair given twice or as both kinds).
        """
        if not (np.isfinite(weight) and weight > 0):
            raise ValueError(f"weight must be a finite number > 0, got {weight}")
        parts = []
        for name, pairs, sign in (("ml", ml, 1.0), ("cl", cl, -1.0)):
            pairs = np.zeros((0, 2), np.int64) if pairs is None else np.asarray(pairs)
            if pairs.size == 0:
                pairs = pairs.reshape(0, 2)
            if pairs.ndim != 2 or pairs.shape[1] != 2:
                raise ValueError(f"{name} must be index pairs of shape [n, 2], got shape {pairs.shape}")
            parts.append((pairs, np.full(len(pairs), sign * weight, np.float32)))
        pairs = np.concatenate([p for p, _ in parts])
        return cls(pairs[:, 0], pairs[:, 1], np.concatenate([w for _, w in parts]), num_samples)

    @classmethod
    def from_labels(
        cls,
        labels: Any,
        num_constraints: int,
        *,
        alpha: float | None = None,
        q: float = 0.0,
        link_type: str = "both",
        seed: int = 0,
        transitive_closure: bool = False,
    ) -> ConstraintSet:
        """Simulates `num_constraints` distinct constraints from class labels.

        As in the paper, pairs of distinct samples are drawn uniformly at
        random without repeating a pair; a pair is a must-link if both samples
        share a label and a cannot-link otherwise.

        With `link_type="both"` every drawn pair is kept and, with probability
        `q`, its link type is flipped. With `link_type="must"` (`"cannot"`)
        all returned constraints are must-links (cannot-links); noise then
        means each of them is, with probability `q`, drawn among the pairs
        with different (equal) labels. In all cases `q` is the expected share
        of wrong constraints.

        Args:
          labels: 1-D integer class labels, one per sample.
          num_constraints: Number of distinct pairs to return.
          alpha: Confidence `|W|` of every constraint; defaults to
            `default_alpha(q)`.
          q: Noise level in `[0, 0.5)`.
          link_type: One of `LINK_TYPES`.
          seed: Seed of the random generator.
          transitive_closure: If True, returns the transitive closure of the
            drawn constraints (which usually has more pairs than
            `num_constraints`). Only allowed with `q == 0`.

        Raises:
          ValueError: On invalid arguments or if fewer eligible pairs exist
            than requested.
        """
        codes = sampling.label_codes(labels)
        i, j, weight = sampling.draw_pairs(
            codes,
            num_constraints,
            alpha=alpha,
            q=q,
            link_type=link_type,
            seed=seed,
            transitive_closure=transitive_closure,
        )
        drawn = cls(i, j, weight, codes.size)
        return drawn.transitive_closure() if transitive_closure else drawn

    @classmethod
    def from_csv(cls, path: str | os.PathLike, num_samples: int) -> ConstraintSet:
        """Reads constraints from a CSV file with header columns `i,j,weight`.

        `i` and `j` index samples of the training split. Extra columns are
        ignored; blank lines are skipped. A file with only the header is an
        empty set.

        Raises:
          FileNotFoundError: If `path` does not exist.
          ValueError: On an empty file, missing header columns or any invalid
            row (the message gives the line number).
        """
        return cls(*csv_io.read_pairs(path, num_samples), num_samples)

    def to_csv(self, path: str | os.PathLike) -> None:
        """Writes the pairs to a CSV file readable by `from_csv`."""
        csv_io.write_pairs(path, self.i, self.j, self.weight)

    def __len__(self) -> int:
        return int(self.weight.size)

    def __repr__(self) -> str:
        return (
            f"ConstraintSet(num_samples={self.num_samples}, "
            f"must_links={int(self.must_link_mask.sum())}, "
            f"cannot_links={int(self.cannot_link_mask.sum())})"
        )

    @property
    def must_link_mask(self) -> np.ndarray:
        """Boolean mask of the stored pairs that are must-links."""
        return self.weight > 0

    @property
    def cannot_link_mask(self) -> np.ndarray:
        """Boolean mask of the stored pairs that are cannot-links."""
        return self.weight < 0

    @property
    def adjacency(self) -> sparse.csr_matrix:
        """Symmetric `num_samples x num_samples` CSR matrix `W` (cached)."""
        if self._adjacency is None:
            rows = np.concatenate([self.i, self.j])
            cols = np.concatenate([self.j, self.i])
            data = np.concatenate([self.weight, self.weight])
            shape = (self.num_samples, self.num_samples)
            self._adjacency = sparse.csr_matrix((data, (rows, cols)), shape=shape)
            self._adjacency.sort_indices()
        return self._adjacency

    def must_link_components(self) -> np.ndarray:
        """Connected component of every sample in the must-link graph (cached).

        Returns a read-only int array of shape `[num_samples]` with the labels
        of `scipy.sparse.csgraph.connected_components`: samples joined by a
        chain of must-links share a label, a sample without must-links has a
        label of its own. Computed once per set.
        """
        if self._must_link_components is None:
            n = self.num_samples
            must = self.must_link_mask
            graph = sparse.coo_matrix(
                (np.ones(int(must.sum()), np.int8), (self.i[must], self.j[must])),
                shape=(n, n),
            )
            _, components = csgraph.connected_components(graph, directed=False)
            components.setflags(write=False)
            self._must_link_components = components
        return self._must_link_components

    def subset(self, mask: Any) -> ConstraintSet:
        """Returns the pairs selected by a boolean mask or an index array."""
        mask = np.asarray(mask)
        if mask.dtype == bool and mask.shape != (len(self),):
            raise ValueError(f"Boolean mask must have shape ({len(self)},), got {mask.shape}.")
        return ConstraintSet(self.i[mask], self.j[mask], self.weight[mask], self.num_samples)

    def transitive_closure(self) -> ConstraintSet:
        """Returns all constraints entailed by this set.

        Must-links are an equivalence relation: every pair inside a connected
        component of the must-link graph becomes a must-link. A cannot-link
        between two components entails a cannot-link between every member of
        one and every member of the other. All pairs of the closure get weight
        `+-max|w|` of this set. The closure grows quadratically with component
        sizes, which is fine for the sparse random constraints it is meant
        for. Idempotent.

        Raises:
          ValueError: If a cannot-link joins two samples of the same must-link
            component.
        """
        if len(self) == 0:
            return self
        i, j, weight = closure.close(self.i, self.j, self.weight, self.must_link_components())
        return ConstraintSet(i, j, weight, self.num_samples)

    def block_entries(self, indices: Any, lengths: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The non-zero entries of the blocks `W[b][:, b]` of consecutive batches `b` of `indices`.

        `indices` is cut into batches of `lengths` (one batch when None) and
        may repeat samples. Returns `(row, col, weight)`: positions in
        `indices` of both ends (always in the same batch) and `W` there,
        ordered by row. Cost is linear in the number of constraints touching
        the batches, not in `num_samples`.
        """
        return lookups.block_entries(self.adjacency, indices, lengths)

    def submatrix(self, indices: Any) -> np.ndarray:
        """Returns the dense float32 block `W[indices][:, indices]`.

        `indices` may repeat; entries between a sample and itself are 0. Cost
        is linear in the number of constraints touching the batch, not in
        `num_samples`.
        """
        rows, cols, values = self.block_entries(indices)
        size = len(np.asarray(indices))
        out = np.zeros((size, size), np.float32)
        out[rows, cols] = values
        return out

    def satisfied(self, assignments: Any) -> np.ndarray:
        """Boolean per stored pair: whether `assignments` respects it.

        A must-link is satisfied if both samples share a cluster, a
        cannot-link if they are in different clusters.

        Args:
          assignments: 1-D cluster assignments of all `num_samples` samples.
        """
        assignments = np.asarray(assignments)
        if assignments.shape != (self.num_samples,):
            raise ValueError(f"assignments must have shape ({self.num_samples},), got {assignments.shape}.")
        same = assignments[self.i] == assignments[self.j]
        return np.where(self.must_link_mask, same, ~same)
