"""Tests for dcgmm_tf.metrics."""

import numpy as np
import pytest

from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.metrics import (
    ari,
    cluster_accuracy,
    clustering_scores,
    constraint_satisfaction,
    matched_confusion,
    nmi,
)

Y_TRUE = np.array([0, 0, 1, 1, 2, 2, 2])
PERMUTED = np.array([2, 2, 0, 0, 1, 1, 1])  # Perfect clustering, renamed.


def test_permuted_perfect_clustering_scores_one():
    assert clustering_scores(Y_TRUE, PERMUTED) == {"acc": 1.0, "nmi": 1.0, "ari": 1.0}
    assert cluster_accuracy(Y_TRUE, PERMUTED + 10) == 1.0


def test_cluster_accuracy_hand_made():
    # Best matching: cluster 1 -> class 0 (2 hits), cluster 0 -> class 1 (3).
    assert cluster_accuracy([0, 0, 0, 1, 1, 1], [1, 1, 0, 0, 0, 0]) == pytest.approx(5 / 6)
    assert cluster_accuracy(["a", "b", "b"], ["x", "x", "y"]) == pytest.approx(2 / 3)


def test_cluster_accuracy_more_clusters_than_classes():
    # One-to-one matching: only 2 of the 4 clusters can be matched.
    assert cluster_accuracy([0, 0, 1, 1], [0, 1, 2, 3]) == 0.5
    assert cluster_accuracy([0, 0, 0, 1, 1], [0, 0, 3, 1, 1]) == pytest.approx(4 / 5)


def test_cluster_accuracy_fewer_clusters_than_classes():
    assert cluster_accuracy([0, 0, 1, 1, 2, 2], [5, 5, 5, 5, 5, 5]) == pytest.approx(1 / 3)


def test_nmi_and_ari_hand_made():
    assert nmi([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0, abs=1e-12)
    assert ari([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(-0.5)
    scores = clustering_scores([0, 0, 0, 1, 1, 1], [1, 1, 0, 0, 0, 0])
    assert scores["acc"] == pytest.approx(5 / 6)
    assert scores["ari"] == pytest.approx(0.324324, abs=1e-6)
    assert scores["nmi"] == pytest.approx(0.478704, abs=1e-6)
    assert all(type(v) is float for v in scores.values())


@pytest.mark.parametrize("metric", [cluster_accuracy, nmi, ari, clustering_scores])
@pytest.mark.parametrize(
    "y_true, y_pred, match",
    [
        ([0, 1, 1], [0, 1], "same length"),
        ([[0, 1]], [[0, 1]], "1-D"),
        ([], [], "empty"),
    ],
)
def test_label_validation(metric, y_true, y_pred, match):
    with pytest.raises(ValueError, match=match):
        metric(y_true, y_pred)


def test_constraint_satisfaction():
    # (0, 1) ML, (0, 2) CL, (2, 3) ML.
    c = ConstraintSet([0, 0, 2], [1, 2, 3], [1.0, -1.0, 1.0], 4)
    assert constraint_satisfaction(c, [0, 0, 1, 1]) == 1.0
    assert constraint_satisfaction(c, [0, 0, 1, 2]) == pytest.approx(2 / 3)
    assert constraint_satisfaction(c, [0, 1, 0, 2]) == 0.0
    with pytest.raises(ValueError, match="empty"):
        constraint_satisfaction(ConstraintSet.empty(4), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="shape"):
        constraint_satisfaction(c, [0, 0, 1])


def test_matched_confusion_orders_clusters_by_their_matched_class():
    y_true = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    y_pred = np.array([7, 7, 5, 5, 5, 3, 3, 9])  # 7 -> class 0, 5 -> class 1, 3 -> class 2, 9 unmatched
    matrix, classes, clusters = matched_confusion(y_true, y_pred)
    assert classes.tolist() == [0, 1, 2] and clusters.tolist() == [7, 5, 3, 9]
    np.testing.assert_array_equal(matrix, [[2, 1, 0, 0], [0, 2, 0, 0], [0, 0, 2, 1]])
    assert np.trace(matrix) / len(y_true) == cluster_accuracy(y_true, y_pred)
