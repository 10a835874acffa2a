"""Simulated constraints: distinct pairs drawn uniformly from class labels, with optional label noise.

A pair `(i, j)`, `i < j`, of `n` samples is handled as the int64 key `i * n + j`
while drawing. The public entry point is `ConstraintSet.from_labels`, which
builds the set from :func:`label_codes` and :func:`draw_pairs`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dcgmm_tf.config import LINK_TYPES

from .arrays import as_index_array
from .confidence import default_alpha


def label_codes(labels: Any) -> np.ndarray:
    """Returns the class of every sample as a code in `0 .. num_classes - 1` (1-D int array).

    Raises:
      ValueError: If `labels` is not a non-empty 1-D array of integers.
    """
    codes = np.unique(as_index_array(labels, "labels"), return_inverse=True)[1]
    codes = codes.reshape(-1)
    if codes.size < 1:
        raise ValueError("`labels` must contain at least one sample.")
    return codes


def draw_pairs(
    codes: np.ndarray,
    num_constraints: int,
    *,
    alpha: float | None,
    q: float,
    link_type: str,
    seed: int,
    transitive_closure: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draws `num_constraints` distinct pairs of the `codes.size` samples as `(i, j, weight)`, `i < j`.

    Implements `ConstraintSet.from_labels`, which documents the arguments, the
    noise model and the errors; `codes` comes from :func:`label_codes`. The
    caller closes the pairs if `transitive_closure`, which is checked against
    `q` here (after the other arguments, before drawing).
    """
    n = codes.size
    if (
        isinstance(num_constraints, (bool, np.bool_))
        or not isinstance(num_constraints, (int, np.integer))
        or num_constraints < 0
    ):
        raise ValueError(f"num_constraints must be a non-negative integer, got {num_constraints!r}.")
    if link_type not in LINK_TYPES:
        raise ValueError(f"link_type must be one of {LINK_TYPES}, got {link_type!r}.")
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
        relation, opposite = ("same", "different") if link_type == "must" else ("different", "same")
        num_wrong = int(rng.binomial(num_constraints, q)) if q > 0 else 0
        keys = np.concatenate(
            [
                draw(num_constraints - num_wrong, relation, f"{relation}-label pairs for {link_type}-links"),
                draw(num_wrong, opposite, f"{opposite}-label pairs for noisy {link_type}-links"),
            ]
        )
        is_must = np.full(keys.size, link_type == "must")
    return keys // n, keys % n, np.where(is_must, alpha, -alpha)


def random_pairs(num_samples: int, num_pairs: int, seed: int) -> np.ndarray:
    """``num_pairs`` distinct pairs of ``num_samples`` samples drawn uniformly, as an int64 array ``[num_pairs, 2]``
    with ``i < j``: the pairs of ``ConstraintSet.from_labels(labels, num_pairs, seed=seed)`` (link type "both"),
    which draws them before it looks at the labels. The questions to ask a person before any training.

    Raises:
      ValueError: If fewer than ``num_pairs`` pairs exist or ``num_samples`` is not a positive integer.
    """
    if isinstance(num_samples, (bool, np.bool_)) or not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive integer, got {num_samples!r}.")
    total = num_samples * (num_samples - 1) // 2
    if not 0 <= num_pairs <= total:
        raise ValueError(f"Cannot draw {num_pairs} distinct pairs: {num_samples} samples have {total} pairs.")
    codes = np.zeros(num_samples, np.int64)
    keys = _draw_pair_keys(codes, int(num_pairs), "any", total, np.random.default_rng(seed))
    return np.stack([keys // num_samples, keys % num_samples], axis=1)


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
            rest = np.concatenate(groups[k + 1 :] + [np.zeros(0, np.int64)])
            a, b = np.repeat(group, rest.size), np.tile(rest, group.size)
        parts.append(np.minimum(a, b).astype(np.int64) * n + np.maximum(a, b))
    return np.concatenate(parts)
