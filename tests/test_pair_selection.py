"""Active pair selection: the strategies on synthetic embeddings."""

import numpy as np
import pytest

from dcgmm_tf import ConstraintSet, pair_selection
from dcgmm_tf.active_loop import ActiveSchedule


def blobs(n=600, k=4, seed=0):
    """Embeddings of k Gaussian blobs, the labels, and posteriors that are sure inside a blob and unsure between."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    centres = 4.0 * np.eye(k, 3 if k <= 3 else k)
    z = centres[y] + rng.normal(0, 1.0, (n, centres.shape[1]))
    logits = -0.5 * ((z[:, None, :] - centres[None]) ** 2).sum(-1)
    p = np.exp(logits - logits.max(1, keepdims=True))
    return z, y, p / p.sum(1, keepdims=True)


@pytest.mark.parametrize("strategy", pair_selection.SELECTION_STRATEGIES)
def test_pairs_are_valid_new_distinct_and_fixed_by_the_seed(strategy):
    z, y, p = blobs()
    known = ConstraintSet.from_labels(y, 50, seed=0)
    features = np.concatenate([z, np.random.default_rng(1).random((len(z), 5))], axis=1)  # the "inputs"
    pairs = pair_selection.select_pairs(z, p, known, 120, strategy, seed=3, features=features)
    assert pairs.shape == (120, 2) and pairs.dtype == np.int64
    assert np.all(pairs[:, 0] < pairs[:, 1]) and pairs.min() >= 0 and pairs.max() < len(z)
    keys = pairs[:, 0] * len(z) + pairs[:, 1]
    assert len(np.unique(keys)) == 120
    assert not np.isin(keys, known.i * len(z) + known.j).any()
    np.testing.assert_array_equal(
        pairs, pair_selection.select_pairs(z, p, known, 120, strategy, seed=3, features=features)
    )
    assert not np.array_equal(pairs, pair_selection.select_pairs(z, p, known, 120, strategy, seed=4, features=features))


def test_uncertain_asks_about_the_pairs_the_model_doubts():
    z, y, p = blobs()
    known = ConstraintSet.empty(len(z))
    same = lambda pairs: np.einsum("nk,nk->n", p[pairs[:, 0]], p[pairs[:, 1]])  # noqa: E731
    doubt = lambda pairs: same(pairs) * (1 - same(pairs))  # noqa: E731
    asked = pair_selection.select_pairs(z, p, known, 40, "uncertain", seed=0)
    drawn = pair_selection.select_pairs(z, p, known, 40, "random", seed=0)
    assert doubt(asked).mean() > 3 * doubt(drawn).mean()
    assert len(np.unique(asked)) == asked.size  # one pair per sample
    agree = lambda pairs: (y[pairs[:, 0]] == y[pairs[:, 1]]).mean()  # noqa: E731
    assert agree(drawn) < agree(asked) < 1  # both kinds of answers, more must-links than random pairs give


def test_explore_goes_to_the_clusters_without_constraints():
    z, y, p = blobs()
    clusters = p.argmax(1)
    in_zero = np.flatnonzero(clusters == 0)
    known = ConstraintSet(in_zero[:40], in_zero[40:80], np.ones(40), len(z))  # only cluster 0 is constrained
    pairs = pair_selection.select_pairs(z, p, known, 30, "explore", seed=0)
    assert not np.isin(clusters[pairs], [0]).all(axis=1).any()
    assert len(np.unique(clusters[pairs[:, 0]])) == 3  # the three others share the pairs


def test_disagree_asks_about_input_neighbours_the_model_separates():
    z, y, p = blobs()
    wrong = np.random.default_rng(5).random(len(z)) < 0.2  # the model puts a fifth of the samples in a wrong cluster
    p_wrong = np.where(wrong[:, None], np.roll(p, 1, axis=1), p)
    features = np.eye(4)[y] * 3 + np.random.default_rng(6).normal(0, 0.3, (len(z), 4))  # inputs reveal the class
    pairs = pair_selection.select_pairs(
        z, p_wrong, ConstraintSet.empty(len(z)), 20, "disagree", seed=0, features=features
    )
    clusters = p_wrong.argmax(1)
    split = clusters[pairs[:, 0]] != clusters[pairs[:, 1]]
    assert split.mean() >= 0.9  # the rest is the random fill once the diverse candidates are used up
    assert (y[pairs[split, 0]] == y[pairs[split, 1]]).mean() > 0.9  # must-links that join what the model split
    with pytest.raises(ValueError, match="needs the inputs"):
        pair_selection.select_pairs(z, p, ConstraintSet.empty(len(z)), 5, "disagree")


def test_consolidate_asks_each_component_about_its_likeliest_partner():
    z, y, p = blobs()  # 12 components (K' = N / 50), three per blob
    pairs = pair_selection.select_pairs(z, p, ConstraintSet.empty(len(z)), 10, "consolidate", seed=0)
    clusters = p.argmax(1)
    assert (clusters[pairs[:, 0]] == clusters[pairs[:, 1]]).mean() >= 0.6  # partners within the cluster first
    assert (y[pairs[:, 0]] == y[pairs[:, 1]]).mean() >= 0.6  # so must-links, where random pairs give ~1/4


def test_anchor_places_new_samples_next_to_known_groups():
    z, y, p = blobs()
    rng = np.random.default_rng(0)
    groups = [rng.choice(np.flatnonzero(y == c), 3, replace=False) for c in range(4)]  # a must-link group per blob
    i = np.concatenate([g[[0, 0]] for g in groups])
    j = np.concatenate([g[[1, 2]] for g in groups])
    known = ConstraintSet(i, j, np.ones(len(i)), len(z))
    pairs = pair_selection.select_pairs(z, p, known, 60, "anchor", seed=0)
    first = pairs[:6]  # one anchor per cluster, here the four groups, asked about each other
    anchors = np.unique(first)
    assert set(anchors.tolist()) == {int(g.min()) for g in groups} and (y[first[:, 0]] != y[first[:, 1]]).all()
    later = pairs[6:]
    on_anchor = np.isin(later, anchors)
    assert on_anchor.any(axis=1).all()  # then every pair is a new sample with an anchor
    new = later[~on_anchor]
    assert len(np.unique(new)) == len(new) and not np.isin(new, np.concatenate(groups)).any()
    assert (y[later[:, 0]] == y[later[:, 1]]).mean() >= 0.9  # each with the anchor of its class


def test_tiny_sets_are_filled_up_and_bad_requests_refused():
    z, _, p = blobs(n=6)
    known = ConstraintSet([0], [1], [1.0], 6)
    pairs = pair_selection.select_pairs(z, p, known, 14, "uncertain", seed=0)  # every unknown pair of 6 samples
    assert len({tuple(pair) for pair in pairs}) == 14
    for bad, message in (
        ({"num_pairs": 15}, "num_pairs"),
        ({"num_pairs": 0}, "num_pairs"),
        ({"strategy": "greedy"}, "strategy"),
        ({"posteriors": p[:5]}, "same N"),
        ({"embeddings": z * np.nan}, "finite"),
        ({"constraints": ConstraintSet.empty(7)}, "index 7 samples"),
    ):
        args = dict(embeddings=z, posteriors=p, constraints=known, num_pairs=3, strategy="random") | bad
        with pytest.raises(ValueError, match=message):
            pair_selection.select_pairs(**args)


def test_answers_follow_the_labels():
    known = ConstraintSet([0], [1], [5.0], 4)
    answered = pair_selection.answered(known, np.array([[0, 2], [1, 3]]), np.array([0, 0, 0, 1]), 7.0)
    assert answered.i.tolist() == [0, 0, 1] and answered.j.tolist() == [1, 2, 3]
    assert answered.weight.tolist() == [5.0, 7.0, -7.0]


def test_schedule_is_checked():
    with pytest.raises(ValueError, match="increasing"):
        ActiveSchedule(start_pairs=500, budgets=(400,))
    with pytest.raises(ValueError, match="round_epochs"):
        ActiveSchedule(round_epochs=0)


def test_suggesting_pairs_from_many_models_prints_no_retracing_warning():
    """Each round of an active loop asks a new model for pairs; TensorFlow must not warn that the library's own
    predictions retrace (each model traces its predict function once)."""
    from tests.helpers import small_model, tensorflow_messages, toy_data

    x, y = toy_data(64)
    constraints = ConstraintSet.from_labels(y, 20, seed=0)
    with tensorflow_messages() as seen:
        for seed in range(8):
            pairs = pair_selection.suggest_pairs(small_model(seed=seed), x, constraints, 4, seed=seed)
            assert pairs.shape == (4, 2)
    assert not [message for message in seen if "retracing" in message]
