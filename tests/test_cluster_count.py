"""Choosing K: the held-out pair likelihood on embeddings with a known number of groups, each link type alone,
no pairs, bad candidates, and the trained probes' split and choice."""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

from dcgmm_tf import ConstraintSet
from dcgmm_tf.cluster_count import (
    SPLIT_SEED_STEP,
    ClusterCount,
    choose_by_probes,
    choose_num_clusters,
    held_out_mask,
    held_out_values,
    log_responsibilities,
    one_standard_error_band,
    pair_guided_gmm,
    pair_log_likelihood,
    probe_candidates,
)
from dcgmm_tf.constraints.confidence import flip_probability
from dcgmm_tf.shims import EqualWeightGaussianMixture


def _blobs(k=5, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.multinomial(n, np.linspace(1, 3, k) / np.linspace(1, 3, k).sum())  # unequal sizes
    y = np.repeat(np.arange(k), sizes)
    centres = rng.normal(0, 6, (k, 4))
    return centres[y] + rng.normal(0, 1, (n, 4)), y


@pytest.mark.parametrize("link_type", ["both", "must", "cannot"])
def test_the_pairs_choose_the_number_of_groups(link_type):
    z, y = _blobs()
    pairs = ConstraintSet.from_labels(y, 600, seed=0, link_type=link_type)
    count = choose_num_clusters(z, pairs, candidates=range(2, 11), seed=0)
    assert count.criterion == "pairs" and count.candidates == tuple(range(2, 11))
    assert abs(count.num_clusters - 5) <= 1, count
    # the choice is the tie's smallest K, or its largest with must-links alone (fewer clusters never break them)
    assert count.num_clusters == (max if link_type == "must" else min)(count.tied)
    best = count.candidates[int(np.argmax(count.scores))]
    assert best in count.tied and set(count.tied) <= set(count.candidates)


def test_each_fold_can_bring_its_own_embedding_made_without_its_held_out_pairs():
    z, y = _blobs()
    pairs = ConstraintSet.from_labels(y, 600, seed=0)
    noise = np.random.default_rng(1).normal(size=z.shape)  # no groups at all: only the folds' embeddings have them
    seen = []

    def fold_embedding(train: ConstraintSet) -> np.ndarray:
        seen.append(set(zip(train.i.tolist(), train.j.tolist())))
        return z

    count = choose_num_clusters(noise, pairs, candidates=range(2, 11), seed=0, fold_embedding=fold_embedding)
    assert abs(count.num_clusters - 5) <= 1, count
    assert len(seen) == 4 and all(len(train) == pytest.approx(450, abs=2) for train in seen)
    for pair in zip(pairs.i.tolist(), pairs.j.tolist()):  # each pair is held out by exactly one fold
        assert sum(pair in train for train in seen) == 3
    with pytest.raises(ValueError, match="a fold's embeddings"):
        choose_num_clusters(z, pairs, candidates=range(2, 4), fold_embedding=lambda train: z[:, :2])


def test_more_splits_rescore_the_tie_and_its_neighbours_on_each_pairs_mean_score():
    z, y = _blobs()
    pairs = ConstraintSet.from_labels(y, 400, seed=0)
    args = dict(candidates=range(2, 9), seed=3, n_init=2)
    once = choose_num_clusters(z, pairs, **args)
    assert once.rescored == () and once.rescored_scores == ()
    count = choose_num_clusters(z, pairs, splits=3, **args)
    assert count.scores == once.scores  # the first split is the one-split choice's
    first, last = once.candidates.index(once.tied[0]), once.candidates.index(once.tied[-1])
    assert count.rescored == once.candidates[max(first - 1, 0) : last + 2]
    settings = dict(folds=4, n_init=2, max_samples=10000, fold_embedding=None, weights="equal")
    values = sum(held_out_values(z, pairs, count.rescored, seed=3 + s * SPLIT_SEED_STEP, **settings) for s in range(3))
    np.testing.assert_allclose(count.rescored_scores, values.mean(axis=1) / 3)
    tied = tuple(count.rescored[i] for i in one_standard_error_band(values / 3))
    assert count.tied == tied and count.num_clusters == tied[0] and abs(count.num_clusters - 5) <= 1


def test_splits_are_checked_and_one_link_type_is_not_rescored():
    z, y = _blobs()
    with pytest.raises(ValueError, match="splits must be at least 1"):
        choose_num_clusters(z, ConstraintSet.from_labels(y, 100, seed=0), splits=0)
    must = ConstraintSet.from_labels(y, 300, seed=0, link_type="must")
    with pytest.warns(UserWarning, match="only must-links"):
        count = choose_num_clusters(z, must, candidates=range(2, 8), seed=0, n_init=2, splits=3)
    assert count.rescored == ()


def test_the_best_rule_takes_the_best_score_of_the_same_tie():
    """Only the pick moves: the scores, the tie and the rescored candidates are the one-standard-error rule's, and
    the choice is the best score's K, on the first split's scores alone or on those averaged over the splits."""
    z, y = _blobs()
    pairs = ConstraintSet.from_labels(y, 40, seed=1)  # few pairs: a wide tie
    for splits in (1, 2):
        args = dict(candidates=range(2, 11), seed=0, n_init=2, splits=splits)
        one_se = choose_num_clusters(z, pairs, **args)
        best = choose_num_clusters(z, pairs, rule="best", **args)
        assert len(one_se.tied) >= 2 and one_se.num_clusters == one_se.tied[0], one_se  # a tie to choose in
        assert dataclasses.replace(best, num_clusters=one_se.num_clusters) == one_se
        ks, scores = (best.rescored, best.rescored_scores) if splits > 1 else (best.candidates, best.scores)
        assert best.num_clusters == ks[int(np.argmax(scores))] and best.num_clusters in best.tied
        assert splits > 1 or best.num_clusters > one_se.num_clusters  # here the first split's best is not the smallest
    with pytest.raises(ValueError, match="rule must be one of"):  # before any GMM is fitted
        choose_num_clusters(z, pairs, rule="median")


@pytest.mark.parametrize("weights, mixture", [("equal", EqualWeightGaussianMixture), ("fitted", GaussianMixture)])
def test_the_gmm_start_kept_is_the_one_that_best_explains_the_pairs(weights, mixture):
    z, y = _blobs(k=6, seed=3)
    pairs = ConstraintSet.from_labels(y, 300, seed=0)
    log_p = pair_guided_gmm(z, pairs, 4, seed=5, starts=6, weights=weights)
    scores = []
    for start in range(6):  # each start on its own, with the seed pair_guided_gmm gives it
        gmm = mixture(4, covariance_type="diag", random_state=5 + 1000 * start).fit(z)
        start_log_p = log_responsibilities(gmm, z)
        flip = flip_probability(pairs.weight)
        pair_scores = pair_log_likelihood(start_log_p[pairs.i], start_log_p[pairs.j], pairs.must_link_mask, flip)
        scores.append(pair_scores.mean())
        if start == int(np.argmax(scores)):
            best = start_log_p
    np.testing.assert_allclose(log_p, best)
    assert len(set(np.round(scores, 6))) > 1  # the starts differ, so the choice among them is tested


def test_the_equal_weight_mixture_keeps_its_weights_and_fits_the_components():
    """EM with the weights held at 1/K (DC-GMM's prior) still finds two blobs of sizes 900 and 100, their means and
    variances; EM's own weights would be 0.9 and 0.1."""
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.normal(0, 1, (900, 2)), rng.normal([10, 0], [1, 2], (100, 2))])
    gmm = EqualWeightGaussianMixture(2, covariance_type="diag", random_state=0).fit(z)
    np.testing.assert_array_equal(gmm.weights_, [0.5, 0.5])
    order = np.argsort(gmm.means_[:, 0])
    np.testing.assert_allclose(gmm.means_[order], [[0, 0], [10, 0]], atol=0.3)
    np.testing.assert_allclose(gmm.covariances_[order], [[1, 1], [1, 4]], rtol=0.35)
    np.testing.assert_allclose(np.exp(log_responsibilities(gmm, z)), gmm.predict_proba(z), atol=1e-12)
    fitted = GaussianMixture(2, covariance_type="diag", random_state=0).fit(z)
    np.testing.assert_allclose(np.sort(fitted.weights_), [0.1, 0.9], atol=0.01)


def test_unknown_mixture_weights_are_refused():
    z, y = _blobs(n=300)
    with pytest.raises(ValueError, match="weights must be one of"):
        choose_num_clusters(z, ConstraintSet.from_labels(y, 50, seed=0), candidates=range(2, 4), weights="free")
    with pytest.raises(ValueError, match="weights must be one of"):
        pair_guided_gmm(z, ConstraintSet.from_labels(y, 50, seed=0), 2, seed=0, starts=1, weights="free")


def test_without_pairs_the_bic_chooses_with_a_warning():
    z, _ = _blobs()
    with pytest.warns(UserWarning, match="K=5 is chosen by the BIC") as caught:
        count = choose_num_clusters(z, ConstraintSet.empty(len(z)), candidates=range(2, 9))
    assert count.criterion == "bic" and count.num_clusters == 5 and count.tied == ()
    assert len(caught) == 1
    with pytest.warns(UserWarning) as caught:  # at the range's end: the BIC's warning only, not "widen it"
        assert choose_num_clusters(z, ConstraintSet.empty(len(z)), candidates=range(2, 5)).num_clusters == 4
    assert len(caught) == 1 and "BIC" in str(caught[0].message)


def test_a_choice_at_the_largest_candidate_is_warned_about():
    z, y = _blobs()
    pairs = ConstraintSet.from_labels(y, 600, seed=0)
    with pytest.warns(UserWarning, match="K=4 is the largest candidate"):
        count = choose_num_clusters(z, pairs, candidates=range(2, 5), seed=0)
    assert count.num_clusters == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside the range: no warning
        assert choose_num_clusters(z, pairs, candidates=range(2, 11), seed=0).num_clusters == 5


def test_the_largest_candidate_warning_follows_the_rescored_choice(monkeypatch):
    """The first split chooses K = 3 of 2-4; the second moves the choice to 4, which is then warned about."""
    noise = np.random.default_rng(0).normal(0, 0.01, 200)
    levels = {0: {2: -2.0, 3: -1.0, 4: -1.5}, SPLIT_SEED_STEP: {2: -2.0, 3: -1.0, 4: 1.0}}

    def held_out(z, constraints, candidates, *, seed, **settings):
        return np.stack([levels[seed][k] + noise for k in candidates])

    monkeypatch.setattr("dcgmm_tf.cluster_count.held_out_values", held_out)
    z, y = _blobs(n=300)
    pairs = ConstraintSet.from_labels(y, 200, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert choose_num_clusters(z, pairs, candidates=range(2, 5), seed=0).num_clusters == 3
    with pytest.warns(UserWarning, match="K=4 is the largest candidate"):
        count = choose_num_clusters(z, pairs, candidates=range(2, 5), seed=0, splits=2)
    assert count.num_clusters == 4 and count.tied == (4,) and count.rescored == (2, 3, 4)


@pytest.mark.parametrize("candidates", [[], [1, 2], [2, 5000], [2.5, 3]])
def test_bad_candidates_are_refused(candidates):
    z, y = _blobs(n=300)
    with pytest.raises(ValueError, match="candidate numbers of clusters must be integers"):
        choose_num_clusters(z, ConstraintSet.from_labels(y, 50, seed=0), candidates=candidates)


def test_pair_log_likelihood_against_numpy():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(4), 6), rng.dirichlet(np.ones(4), 6)
    must = np.array([True, False] * 3)
    flip = np.full(6, 0.1)
    same = (p * q).sum(1)
    expected = np.log(np.where(must, same * 0.9 + (1 - same) * 0.1, same * 0.1 + (1 - same) * 0.9))
    np.testing.assert_allclose(pair_log_likelihood(np.log(p), np.log(q), must, flip), expected, rtol=1e-10)


def test_log_responsibilities_are_the_gmm_posteriors_in_log_space():
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.normal(0, 1, (100, 3)), rng.normal(8, 1, (100, 3))])
    gmm = GaussianMixture(2, covariance_type="diag", random_state=0).fit(z)
    log_p = log_responsibilities(gmm, z)
    np.testing.assert_allclose(np.exp(log_p), gmm.predict_proba(z), atol=1e-12)
    far = np.array([[-60.0, -60.0, -60.0]])  # p(far blob) underflows to 0 in predict_proba, not here
    assert gmm.predict_proba(far).min() == 0 and np.isfinite(log_responsibilities(gmm, far)).all()
    assert log_responsibilities(gmm, far).min() < -1000
    with pytest.raises(ValueError, match="diagonal"):
        log_responsibilities(GaussianMixture(2).fit(z), z)


def test_the_one_standard_error_rule_compares_candidates_pair_by_pair():
    """A smaller K that scores a little lower on every pair is beaten for sure, however much the pairs' own scores
    spread; one that is lower on average by less than the differences' error is chosen."""
    spread = np.random.default_rng(0).normal(0, 1, 400)  # what every candidate shares
    steady = np.stack([spread - 0.01, spread])  # K = 2 below K = 3 on every pair
    assert one_standard_error_band(steady).tolist() == [1]
    mean_of_best, unpaired_error = spread.mean(), spread.std() / np.sqrt(400)
    assert steady[0].mean() >= mean_of_best - unpaired_error  # the unpaired error would have kept K = 2
    noisy = np.stack([spread + np.where(np.arange(400) % 2, 0.49, -0.51), spread])  # differences -0.01 +- 0.5
    assert one_standard_error_band(noisy).tolist() == [0, 1]  # a tie: the rule takes the first
    assert one_standard_error_band(np.stack([spread, spread - 1, spread - 0.001])).tolist() == [0]


def test_probes_hold_out_a_quarter_of_each_link_type():
    _, y = _blobs()
    pairs = ConstraintSet.from_labels(y, 400, seed=0)
    held = held_out_mask(pairs, seed=0)
    for mask in (pairs.must_link_mask, pairs.cannot_link_mask):
        assert held[mask].sum() == round(0.25 * mask.sum())
    assert not np.array_equal(held, held_out_mask(pairs, seed=1))
    assert held_out_mask(pairs.subset(pairs.must_link_mask), seed=0) is None  # one link type scores no probe
    assert held_out_mask(pairs.subset(np.arange(len(pairs)) < 40), seed=0) is None  # too few held out


def test_probes_train_the_choice_and_its_neighbours_and_keep_the_smallest_tie():
    count = ClusterCount(2, tuple(range(2, 8)), (0.0,) * 6, (0.0,) * 6, "pairs")
    assert probe_candidates(count) == (2, 3)
    assert probe_candidates(dataclasses.replace(count, num_clusters=5)) == (4, 5, 6)
    rng = np.random.default_rng(0)
    base = rng.normal(-1, 1, 200)
    # K = 4 is far under the others; K = 6 ties K = 5 within a paired standard error: the smaller wins
    noise = rng.normal(size=200)
    values = np.stack([base - 0.5, base + 0.01 * (noise - noise.mean()), base + 0.0005])
    probed = choose_by_probes(dataclasses.replace(count, num_clusters=5), (4, 5, 6), values)
    assert probed.num_clusters == 5 and probed.criterion == "probes" and probed.probed == (4, 5, 6)
    assert probed.tied == (5, 6)
    assert probed.probe_scores == pytest.approx(values.mean(axis=1).tolist())
    assert probed.scores == count.scores  # the embedding's scores are kept
