"""Sparse pairwise constraints for constrained clustering.

The prior information of DC-GMM is a symmetric matrix `W` with `W[i, j] > 0`
for a must-link between samples `i` and `j`, `W[i, j] < 0` for a cannot-link
and `|W[i, j]|` the confidence in the constraint. `ConstraintSet` stores only
the non-zero upper-triangular entries, so memory is linear in the number of
pairs and never quadratic in the number of samples.
"""

from __future__ import annotations

import csv
import math
import os
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

LINK_TYPES = ("both", "must", "cannot")

_CSV_COLUMNS = ("i", "j", "weight")


def default_alpha(q: float) -> float:
    """Returns the constraint confidence used in the paper for noise level `q`.

    `alpha = 1000 * log((1 - q) / q)` for noisy constraints and `1e4` when the
    constraints are noise-free (`q == 0`).

    Args:
      q: Probability that a constraint is wrong, in `[0, 0.5)`.

    Raises:
      ValueError: If `q` is outside `[0, 0.5)`.
    """
    q = float(q)
    if not 0.0 <= q < 0.5:
        raise ValueError(
            f"Noise level q must be in [0, 0.5), got {q}. With q >= 0.5 the "
            "constraints carry no (or inverted) information."
        )
    if q == 0.0:
        return 1e4
    return 1000.0 * math.log((1.0 - q) / q)


def flip_probability(weight: Any) -> np.ndarray:
    """Probability that a link is wrong given its confidence: the inverse of :func:`default_alpha`.

    ``q = 1 / (1 + exp(|W_ij| / 1000))``, so ``|W_ij| = 1000 * log((1 - q) / q)``; computed in log space
    (``|W_ij| = 1e4`` gives 4.5e-5).
    """
    return np.exp(-np.logaddexp(0.0, np.abs(np.asarray(weight, np.float64)) / 1000.0))


def _as_index_array(values: Any, name: str) -> np.ndarray:
    """Converts `values` to a 1-D int64 array, rejecting non-integers."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D, got shape {array.shape}.")
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.size == 0:
        return np.zeros(0, np.int64)
    if array.dtype.kind != "f" or not np.all(np.isfinite(array)):
        raise ValueError(
            f"`{name}` must contain integers, got dtype {array.dtype}."
        )
    if not np.all(array == np.round(array)):
        bad = array[array != np.round(array)][0]
        raise ValueError(f"`{name}` must contain integers, got {bad}.")
    return array.astype(np.int64)


def _ragged_arange(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of `arange(s, s + c)` for every `(s, c)` pair."""
    total = int(counts.sum())
    offsets = np.repeat(np.cumsum(counts) - counts - starts, counts)
    return np.arange(total, dtype=np.int64) - offsets


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
        if (
            isinstance(num_samples, (bool, np.bool_))
            or not isinstance(num_samples, (int, np.integer))
            or num_samples < 1
        ):
            raise ValueError(
                f"num_samples must be a positive integer, got {num_samples!r}."
            )
        num_samples = int(num_samples)
        i = _as_index_array(i, "i")
        j = _as_index_array(j, "j")
        weight = np.asarray(weight)
        if weight.ndim != 1:
            raise ValueError(f"`weight` must be 1-D, got shape {weight.shape}.")
        if weight.dtype.kind not in "iuf":
            raise ValueError(
                f"`weight` must be numeric, got dtype {weight.dtype}."
            )
        with np.errstate(over="ignore"):
            weight = weight.astype(np.float32)
        if not i.size == j.size == weight.size:
            raise ValueError(
                "`i`, `j` and `weight` must have the same length, got "
                f"{i.size}, {j.size} and {weight.size}."
            )
        for name, index in (("i", i), ("j", j)):
            bad = (index < 0) | (index >= num_samples)
            if bad.any():
                raise ValueError(
                    f"`{name}` contains index {index[bad][0]} outside "
                    f"[0, {num_samples}) (num_samples={num_samples})."
                )
        if (i == j).any():
            k = int(np.flatnonzero(i == j)[0])
            raise ValueError(
                f"Pair ({i[k]}, {j[k]}) links a sample to itself; i != j is "
                "required."
            )
        bad = ~np.isfinite(weight) | (weight == 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Pair ({i[k]}, {j[k]}) has weight {weight[k]} (as float32); "
                "weights must be finite and non-zero."
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
                    f"Pair ({k // num_samples}, {k % num_samples}) is given "
                    "both as a must-link and as a cannot-link."
                )
        key, weight = key[first], weight[first]

        self.num_samples = num_samples
        self.i = key // num_samples
        self.j = key % num_samples
        self.weight = weight
        for array in (self.i, self.j, self.weight):
            array.setflags(write=False)
        self._adjacency: sparse.csr_matrix | None = None

    @classmethod
    def empty(cls, num_samples: int) -> ConstraintSet:
        """Returns a set without constraints over `num_samples` samples."""
        return cls(
            np.zeros(0, np.int64), np.zeros(0, np.int64),
            np.zeros(0, np.float32), num_samples,
        )

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
        codes = np.unique(_as_index_array(labels, "labels"), return_inverse=True)[1]
        codes = codes.reshape(-1)
        n = codes.size
        if n < 1:
            raise ValueError("`labels` must contain at least one sample.")
        if (
            isinstance(num_constraints, (bool, np.bool_))
            or not isinstance(num_constraints, (int, np.integer))
            or num_constraints < 0
        ):
            raise ValueError(
                "num_constraints must be a non-negative integer, got "
                f"{num_constraints!r}."
            )
        if link_type not in LINK_TYPES:
            raise ValueError(
                f"link_type must be one of {LINK_TYPES}, got {link_type!r}."
            )
        default = default_alpha(q)  # Also validates q.
        alpha = default if alpha is None else float(alpha)
        if not (math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be finite and > 0, got {alpha}.")
        if transitive_closure and q > 0:
            raise ValueError(
                "transitive_closure=True requires noise-free constraints "
                f"(q == 0, got q={q}): the closure would propagate wrong "
                "constraints."
            )

        rng = np.random.default_rng(seed)
        class_sizes = np.bincount(codes)
        num_pairs = {"any": n * (n - 1) // 2}
        num_pairs["same"] = int(np.sum(class_sizes * (class_sizes - 1) // 2))
        num_pairs["different"] = num_pairs["any"] - num_pairs["same"]

        def draw(count: int, relation: str, description: str) -> np.ndarray:
            if count > num_pairs[relation]:
                raise ValueError(
                    f"Cannot draw {count} distinct {description}: only "
                    f"{num_pairs[relation]} such pairs exist among {n} "
                    f"samples. Request at most {num_pairs[relation]}."
                )
            return _draw_pair_keys(codes, count, relation, num_pairs[relation], rng)

        if link_type == "both":
            keys = draw(num_constraints, "any", "pairs")
            same = codes[keys // n] == codes[keys % n]
            is_must = same ^ (rng.random(keys.size) < q)
        else:
            relation, opposite = (
                ("same", "different") if link_type == "must"
                else ("different", "same")
            )
            num_wrong = int(rng.binomial(num_constraints, q)) if q > 0 else 0
            keys = np.concatenate([
                draw(num_constraints - num_wrong, relation,
                     f"{relation}-label pairs for {link_type}-links"),
                draw(num_wrong, opposite,
                     f"{opposite}-label pairs for noisy {link_type}-links"),
            ])
            is_must = np.full(keys.size, link_type == "must")
        weight = np.where(is_must, alpha, -alpha)
        constraints = cls(keys // n, keys % n, weight, n)
        return constraints.transitive_closure() if transitive_closure else constraints

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
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Constraint file not found: {path}")
        rows_i, rows_j, rows_w = [], [], []
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise ValueError(
                    f"{path} is empty; expected a header line 'i,j,weight'."
                )
            header = [name.strip() for name in header]
            missing = [c for c in _CSV_COLUMNS if c not in header]
            if missing:
                raise ValueError(
                    f"{path}, line 1: header {header} lacks column(s) {missing}; "
                    "expected a header line 'i,j,weight'."
                )
            columns = [header.index(c) for c in _CSV_COLUMNS]
            for row in reader:
                if not any(field.strip() for field in row):
                    continue
                where = f"{path}, line {reader.line_num}"
                values = []
                for name, column in zip(_CSV_COLUMNS, columns):
                    if column >= len(row) or not row[column].strip():
                        raise ValueError(f"{where}: missing value for '{name}'.")
                    values.append(row[column].strip())
                i = _parse_index(values[0], "i", num_samples, where)
                j = _parse_index(values[1], "j", num_samples, where)
                if i == j:
                    raise ValueError(
                        f"{where}: i == j == {i}; a sample cannot be linked "
                        "to itself."
                    )
                try:
                    w = float(values[2])
                except ValueError:
                    raise ValueError(
                        f"{where}: weight {values[2]!r} is not a number."
                    ) from None
                if not math.isfinite(w) or w == 0:
                    raise ValueError(
                        f"{where}: weight {values[2]!r} must be finite and "
                        "non-zero (> 0 must-link, < 0 cannot-link)."
                    )
                rows_i.append(i)
                rows_j.append(j)
                rows_w.append(w)
        return cls(
            np.asarray(rows_i, np.int64), np.asarray(rows_j, np.int64),
            np.asarray(rows_w, np.float64), num_samples,
        )

    def to_csv(self, path: str | os.PathLike) -> None:
        """Writes the pairs to a CSV file readable by `from_csv`."""
        table = np.empty(len(self), dtype=[("i", "i8"), ("j", "i8"), ("w", "f4")])
        table["i"], table["j"], table["w"] = self.i, self.j, self.weight
        np.savetxt(
            path, table, fmt=["%d", "%d", "%.9g"], delimiter=",",
            header=",".join(_CSV_COLUMNS), comments="",
        )

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

    def subset(self, mask: Any) -> ConstraintSet:
        """Returns the pairs selected by a boolean mask or an index array."""
        mask = np.asarray(mask)
        if mask.dtype == bool and mask.shape != (len(self),):
            raise ValueError(
                f"Boolean mask must have shape ({len(self)},), got {mask.shape}."
            )
        return ConstraintSet(
            self.i[mask], self.j[mask], self.weight[mask], self.num_samples
        )

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
        n = self.num_samples
        must = self.must_link_mask
        graph = sparse.coo_matrix(
            (np.ones(int(must.sum()), np.int8), (self.i[must], self.j[must])),
            shape=(n, n),
        )
        _, component = csgraph.connected_components(graph, directed=False)
        ci, cj = component[self.i[~must]], component[self.j[~must]]
        if (ci == cj).any():
            k = int(np.flatnonzero(ci == cj)[0])
            a, b = self.i[~must][k], self.j[~must][k]
            raise ValueError(
                f"Cannot-link ({a}, {b}) contradicts the must-links, which "
                f"transitively connect samples {a} and {b}."
            )
        order = np.argsort(component, kind="stable")
        sizes = np.bincount(component)
        starts = np.cumsum(sizes) - sizes

        def members(c: int) -> np.ndarray:
            return order[starts[c]:starts[c] + sizes[c]]

        parts_i, parts_j = [], []
        for c in np.unique(component[self.i[must]]):
            a, b = np.triu_indices(int(sizes[c]), 1)
            parts_i.append(members(c)[a])
            parts_j.append(members(c)[b])
        num_must = sum(p.size for p in parts_i)
        for c1, c2 in np.unique(np.stack([ci, cj], axis=1), axis=0):
            m1, m2 = members(c1), members(c2)
            parts_i.append(np.repeat(m1, m2.size))
            parts_j.append(np.tile(m2, m1.size))
        i, j = np.concatenate(parts_i), np.concatenate(parts_j)
        alpha = float(np.abs(self.weight).max())
        weight = np.full(i.size, -alpha, np.float32)
        weight[:num_must] = alpha
        return ConstraintSet(i, j, weight, n)

    def submatrix(self, indices: Any) -> np.ndarray:
        """Returns the dense float32 block `W[indices][:, indices]`.

        `indices` may repeat; entries between a sample and itself are 0. Cost
        is linear in the number of constraints touching the batch, not in
        `num_samples`.
        """
        indices = _as_index_array(indices, "indices")
        bad = (indices < 0) | (indices >= self.num_samples)
        if bad.any():
            raise ValueError(
                f"`indices` contains {indices[bad][0]} outside "
                f"[0, {self.num_samples})."
            )
        adjacency = self.adjacency
        batch = indices.size
        row_starts = adjacency.indptr[indices].astype(np.int64)
        row_counts = adjacency.indptr[indices + 1] - row_starts
        entries = _ragged_arange(row_starts, row_counts)
        rows = np.repeat(np.arange(batch), row_counts)
        cols = adjacency.indices[entries]
        values = adjacency.data[entries]
        # Map every neighbour to all batch positions holding it.
        position_order = np.argsort(indices, kind="stable")
        sorted_indices = indices[position_order]
        first = np.searchsorted(sorted_indices, cols, side="left")
        counts = np.searchsorted(sorted_indices, cols, side="right") - first
        out = np.zeros((batch, batch), np.float32)
        out[
            np.repeat(rows, counts),
            position_order[_ragged_arange(first, counts)],
        ] = np.repeat(values, counts)
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
            raise ValueError(
                f"assignments must have shape ({self.num_samples},), got "
                f"{assignments.shape}."
            )
        same = assignments[self.i] == assignments[self.j]
        return np.where(self.must_link_mask, same, ~same)


def _parse_index(text: str, name: str, num_samples: int, where: str) -> int:
    """Parses a sample index from a CSV field, with a clear error message."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{where}: {name}={text!r} is not a number.") from None
        if not (math.isfinite(number) and number.is_integer()):
            raise ValueError(f"{where}: {name}={text!r} is not an integer.")
        value = int(number)
    if value < 0:
        raise ValueError(f"{where}: {name}={value} is negative.")
    if value >= num_samples:
        raise ValueError(
            f"{where}: {name}={value} is out of range; indices must be < "
            f"num_samples={num_samples} (the training split size)."
        )
    return value


def _draw_pair_keys(
    codes: np.ndarray,
    count: int,
    relation: str,
    num_eligible: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws `count` distinct pairs uniformly among the eligible ones.

    A pair `(i, j)`, `i < j`, is encoded as `i * n + j`. `relation` is `"any"`,
    `"same"` (equal labels) or `"different"`. Uses vectorised rejection
    sampling in rounds, unless more than half of the eligible pairs are
    requested or rejection would need more candidates than there are eligible
    pairs: then the eligible pairs are enumerated (O(num_eligible) memory).
    """
    n = codes.size
    if count == 0:
        return np.zeros(0, np.int64)
    acceptance = num_eligible / (n * (n - 1) / 2)
    if 2 * count > num_eligible or count / acceptance > num_eligible:
        return rng.choice(_enumerate_pair_keys(codes, relation), count, replace=False)
    selected = np.zeros(0, np.int64)
    while selected.size < count:
        size = int(min(1.5 * (count - selected.size) / acceptance + 64, 2**24))
        a = rng.integers(0, n, size)
        b = rng.integers(0, n - 1, size)
        b += b >= a
        if relation != "any":
            keep = (codes[a] == codes[b]) == (relation == "same")
            a, b = a[keep], b[keep]
        # Previously selected pairs come first, so they survive deduplication.
        keys = np.concatenate([selected, np.minimum(a, b) * n + np.maximum(a, b)])
        _, first = np.unique(keys, return_index=True)
        selected = keys[np.sort(first)][:count]
    return selected


def _enumerate_pair_keys(codes: np.ndarray, relation: str) -> np.ndarray:
    """Returns the keys `i * n + j` of all eligible pairs `i < j`."""
    n = codes.size
    if relation == "any":
        a, b = np.triu_indices(n, 1)
        return a.astype(np.int64) * n + b
    order = np.argsort(codes, kind="stable")
    groups = np.split(order, np.cumsum(np.bincount(codes))[:-1])
    parts = [np.zeros(0, np.int64)]
    for k, group in enumerate(groups):
        if relation == "same":
            if group.size < 2:
                continue
            a, b = np.triu_indices(group.size, 1)
            a, b = group[a], group[b]
        else:
            rest = np.concatenate(groups[k + 1:] + [np.zeros(0, np.int64)])
            a, b = np.repeat(group, rest.size), np.tile(rest, group.size)
        parts.append(np.minimum(a, b).astype(np.int64) * n + np.maximum(a, b))
    return np.concatenate(parts)
