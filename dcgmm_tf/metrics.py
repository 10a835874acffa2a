"""Clustering metrics computed from label arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import optimize
from sklearn import metrics as sk_metrics

from dcgmm_tf.constraints import ConstraintSet


def _check_labels(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validates two non-empty 1-D label arrays of equal length."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if y.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {y.shape}.")
    if y_true.size != y_pred.size:
        raise ValueError(f"y_true and y_pred must have the same length, got {y_true.size} and {y_pred.size}.")
    if y_true.size == 0:
        raise ValueError("y_true and y_pred are empty.")
    return y_true, y_pred


def _matched_counts(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The contingency counts [cluster, class], the classes, the clusters, and the matched (cluster, class) index
    pairs of the one-to-one matching with the most samples (Hungarian algorithm)."""
    y_true, y_pred = _check_labels(y_true, y_pred)
    classes, true_codes = np.unique(y_true, return_inverse=True)
    clusters, pred_codes = np.unique(y_pred, return_inverse=True)
    counts = np.zeros((clusters.size, classes.size), np.int64)
    np.add.at(counts, (pred_codes.reshape(-1), true_codes.reshape(-1)), 1)
    rows, cols = optimize.linear_sum_assignment(counts, maximize=True)
    return counts, classes, clusters, np.stack([rows, cols], axis=1)


def cluster_accuracy(y_true: Any, y_pred: Any) -> float:
    """Accuracy under the best one-to-one matching of clusters to classes.

    The matching maximises the number of correctly assigned samples
    (Hungarian algorithm). With more clusters than classes the unmatched
    clusters count as errors; with fewer, the unmatched classes do.
    """
    counts, _, _, matched = _matched_counts(y_true, y_pred)
    return float(counts[matched[:, 0], matched[:, 1]].sum() / counts.sum())


def matched_confusion(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The confusion matrix [class, cluster] with the clusters ordered by the class matched to them (the matching
    of :func:`cluster_accuracy`: with as many clusters as classes its diagonal sums to ACC x N), unmatched
    clusters last; returns the matrix, the classes (rows) and the clusters (columns)."""
    counts, classes, clusters, matched = _matched_counts(y_true, y_pred)
    by_class = dict(zip(matched[:, 1], matched[:, 0]))
    order = [by_class[c] for c in range(classes.size) if c in by_class]
    order += [k for k in range(clusters.size) if k not in set(order)]
    return counts[order].T, classes, clusters[order]


def nmi(y_true: Any, y_pred: Any) -> float:
    """Normalized mutual information (arithmetic normalisation)."""
    y_true, y_pred = _check_labels(y_true, y_pred)
    return float(sk_metrics.normalized_mutual_info_score(y_true, y_pred))


def ari(y_true: Any, y_pred: Any) -> float:
    """Adjusted Rand index."""
    y_true, y_pred = _check_labels(y_true, y_pred)
    return float(sk_metrics.adjusted_rand_score(y_true, y_pred))


def constraint_satisfaction(constraints: ConstraintSet, y_pred: Any) -> float:
    """Share of the constraints satisfied by the cluster assignments `y_pred`.

    Raises:
      ValueError: If `constraints` is empty or `y_pred` does not have one
        entry per sample of `constraints`.
    """
    if len(constraints) == 0:
        raise ValueError("Constraint satisfaction is undefined for an empty ConstraintSet.")
    return float(np.mean(constraints.satisfied(y_pred)))


def clustering_scores(y_true: Any, y_pred: Any) -> dict[str, float]:
    """Returns `{"acc": ..., "nmi": ..., "ari": ...}`."""
    y_true, y_pred = _check_labels(y_true, y_pred)
    return {
        "acc": cluster_accuracy(y_true, y_pred),
        "nmi": nmi(y_true, y_pred),
        "ari": ari(y_true, y_pred),
    }
