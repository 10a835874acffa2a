"""The autoencoder tuned with the pairs before the start (``pair_tuning_epochs``)."""

import numpy as np
import pytest
from helpers import small_model, toy_data, weights_equal

from dcgmm_tf import ConstraintSet
from dcgmm_tf.pair_tuning import tune_with_pairs
from dcgmm_tf.pretraining import pretrain_autoencoder


def _pair_distances(model, x, constraints):
    z = model.embed(x)
    d = np.linalg.norm(z[constraints.i] - z[constraints.j], axis=1)
    must = constraints.weight > 0
    return d[must].mean(), d[~must].mean()


def test_tuning_pulls_must_links_together_and_leaves_the_mixture():
    x, y = toy_data(256)
    constraints = ConstraintSet.from_labels(y, 60, seed=0)
    ratios = {}
    for weight in (1e-3, 100.0):  # the pair term next to nothing, then weighted
        model = small_model()
        pretrain_autoencoder(model, x, epochs=2, batch_size=64, seed=0, verbose=0)
        mixture = [model.cluster_means.numpy().copy(), model.cluster_variances.numpy().copy()]
        tune_with_pairs(model, x, constraints, epochs=20, weight=weight, seed=0, batch_size=64)
        must, cannot = _pair_distances(model, x, constraints)
        ratios[weight] = must / cannot
        assert weights_equal([model.cluster_means.numpy(), model.cluster_variances.numpy()], mixture)
    assert ratios[100.0] < 0.85 * ratios[1e-3]  # measured: 0.103 against 0.136


def test_tuning_is_reproducible_and_handles_fewer_pairs_than_batches():
    x, y = toy_data(256)
    few = ConstraintSet.from_labels(y, 3, seed=1)  # 3 pairs, 4 batches of 64: the pairs repeat
    weights = []
    for _ in range(2):
        model = small_model()
        tune_with_pairs(model, x, few, epochs=1, weight=10.0, seed=2, batch_size=64)
        weights.append(model.get_weights())
    assert weights_equal(*weights)
    assert all(np.isfinite(w).all() for w in weights[0])


def test_tuning_refuses_bad_settings_and_does_nothing_for_zero_epochs():
    x, y = toy_data(64)
    constraints = ConstraintSet.from_labels(y, 10, seed=0)
    model = small_model()
    before = model.get_weights()
    tune_with_pairs(model, x, constraints, epochs=0, weight=1.0, seed=0)
    assert weights_equal(model.get_weights(), before)
    with pytest.raises(ValueError, match="epochs"):
        tune_with_pairs(model, x, constraints, epochs=-1, weight=1.0, seed=0)
    with pytest.raises(ValueError, match="weight"):
        tune_with_pairs(model, x, constraints, epochs=1, weight=0.0, seed=0)
    with pytest.raises(ValueError, match="at least one pair"):
        tune_with_pairs(model, x, ConstraintSet.empty(64), epochs=1, weight=1.0, seed=0)
