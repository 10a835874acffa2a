"""The input-space mixture a clustering implies: its maths against numpy and scipy, the pairs' pull, the score."""

import numpy as np
import pytest
from scipy import special, stats

from dcgmm_tf import paired_mixture
from dcgmm_tf.constraints import ConstraintSet


def blobs(n=90, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    centres = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 1.0], [0.0, 5.0, -2.0]])
    return centres[y] + rng.normal(0, [1.0, 0.5, 0.8], (n, 3)), y


def no_pairs(n):
    return ConstraintSet([], [], [], n)


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_log_joint_is_the_log_weight_plus_the_gaussian_log_density(kind, monkeypatch):
    x, _ = blobs()
    rng = np.random.default_rng(1)
    weights, means = np.array([0.2, 0.5, 0.3]), rng.normal(size=(3, 3))
    if kind == "diag":
        covariances = rng.uniform(0.5, 2.0, (3, 3))
        dense = [np.diag(c) for c in covariances]
    else:
        a = rng.normal(size=(3, 3, 3))
        covariances = a @ a.transpose(0, 2, 1) + np.eye(3)
        dense = list(covariances)
    expected = np.stack(
        [np.log(w) + stats.multivariate_normal(m, c).logpdf(x) for w, m, c in zip(weights, means, dense)], axis=1
    )
    np.testing.assert_allclose(paired_mixture.log_joint(x, weights, means, covariances, kind), expected, rtol=1e-10)
    monkeypatch.setattr(paired_mixture, "ROWS", 7)  # in chunks of rows: the same values
    np.testing.assert_allclose(paired_mixture.log_joint(x, weights, means, covariances, kind), expected, rtol=1e-10)


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_m_step_is_the_weighted_gaussian_fit_with_a_prior_of_one_sample(kind, monkeypatch):
    x, _ = blobs()
    q = special.softmax(np.random.default_rng(2).normal(size=(len(x), 3)), axis=1)
    full_prior = np.array([[1.0, 0.3, 0.0], [0.3, 2.0, -0.2], [0.0, -0.2, 0.5]])
    prior = np.diag(full_prior) if kind == "diag" else full_prior
    monkeypatch.setattr(paired_mixture, "ROWS", 16)
    weights, means, covariances = paired_mixture.m_step(x, q, kind, prior)
    np.testing.assert_allclose(weights, q.mean(0))
    for k in range(3):
        mean = np.average(x, axis=0, weights=q[:, k])
        scatter = np.cov(x.T, aweights=q[:, k], bias=True) * q[:, k].sum()
        cov = (scatter + (np.diag(prior) if kind == "diag" else prior)) / (q[:, k].sum() + 1.0)
        np.testing.assert_allclose(means[k], mean)
        np.testing.assert_allclose(covariances[k], np.diag(cov) if kind == "diag" else cov, rtol=1e-10)


def test_the_covariance_prior_is_the_datas_variance_or_covariance(monkeypatch):
    x, _ = blobs()
    x = np.column_stack([x, 2 * x[:, 0] - x[:, 1]])  # a fourth feature in the span of two others
    monkeypatch.setattr(paired_mixture, "ROWS", 16)
    np.testing.assert_allclose(paired_mixture.covariance_prior(x, "diag"), x.var(0), rtol=1e-10)
    full = paired_mixture.covariance_prior(x, "full")
    ridge = 1e-6 * x.var(0).max() * np.eye(4)
    np.testing.assert_allclose(full, np.cov(x.T, bias=True) + ridge, rtol=1e-9, atol=1e-12)
    assert np.linalg.eigvalsh(full).min() > 0  # positive definite though the data's covariance is singular


def test_the_pairs_term_of_the_score_is_twice_the_weighted_agreement_of_each_stored_pair():
    x, y = blobs()
    q = special.softmax(np.random.default_rng(3).normal(size=(len(x), 3)), axis=1)
    pairs = ConstraintSet([0, 1, 5], [3, 2, 9], [2.0, -1.5, 0.5], len(x))
    joint = paired_mixture.log_joint(x, *paired_mixture.m_step(x, q, "diag", x.var(0)), "diag")
    with_pairs = paired_mixture.objective(joint, q, paired_mixture._pair_matrix(pairs))
    without = paired_mixture.objective(joint, q, paired_mixture._pair_matrix(no_pairs(len(x))))
    expected = 2 * sum(w * q[i] @ q[j] for i, j, w in zip(pairs.i, pairs.j, pairs.weight)) / len(x)
    np.testing.assert_allclose(with_pairs - without, expected, rtol=1e-6)
    cluster_terms = np.sum(q * joint) - np.sum(q * np.log(q))
    np.testing.assert_allclose(without, cluster_terms / len(x))


def test_the_e_step_follows_hard_pairs_and_leaves_the_others_to_the_mixture():
    x, y = blobs()
    q = np.eye(3)[y]
    joint = paired_mixture.log_joint(x, *paired_mixture.m_step(x, q, "diag", x.var(0)), "diag")
    # 0 and 1 are in different blobs: a must-link joins them; 3 and 6 share one: a cannot-link parts them.
    pairs = paired_mixture._pair_matrix(ConstraintSet([0, 3], [1, 6], [1e4, -1e4], len(x)))
    out = paired_mixture.e_step(joint, pairs, q)
    assert out[0].argmax() == out[1].argmax() and out[3].argmax() != out[6].argmax()
    free = np.setdiff1d(np.arange(len(x)), [0, 1, 3, 6])
    np.testing.assert_allclose(out[free], special.softmax(joint[free], axis=1))


def test_a_clustering_scores_its_mixtures_log_likelihood_and_the_truth_beats_a_random_one():
    x, y = blobs(300)
    own = paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), y, 3, "full")
    # Without pairs the E-step's posteriors make the bound tight: F is the mean log-likelihood of the M-step's mixture.
    joint = own.log_joint(x)
    np.testing.assert_allclose(own.objective, special.logsumexp(joint, axis=1).mean(), rtol=1e-10)
    np.testing.assert_allclose(own.probabilities, own.predict_proba(x))
    shuffled = np.random.default_rng(0).integers(0, 3, len(x))
    assert paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), shuffled, 3, "full").objective < own.objective - 1


def test_a_cluster_of_one_sample_keeps_a_broad_gaussian():
    """Without the prior a singleton's Gaussian would narrow onto its sample (variance 0) and its log density there
    grow without bound, lifting the score of any clustering with such a cluster; one pseudo-sample of the data's
    variance (or covariance) leaves it half of that."""
    x, y = blobs(300)
    singleton = y.copy()
    singleton[singleton == 2] = 1
    singleton[0] = 2  # two blobs merged, a third cluster of one sample
    mixture = paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), singleton, 3, "diag")
    np.testing.assert_allclose(mixture.covariances[2], x.var(0) / 2, rtol=1e-6)
    assert np.isfinite(mixture.objective)
    full = paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), singleton, 3, "full")
    np.testing.assert_allclose(full.covariances[2], np.cov(x.T, bias=True) / 2, rtol=1e-5)  # correlations kept
    assert np.isfinite(full.objective)


def test_mixture_of_clusters_checks_its_inputs():
    x, y = blobs()
    with pytest.raises(ValueError, match="covariance_type must be one of"):
        paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), y, 3, "spherical")
    with pytest.raises(ValueError, match="labels must be an integer array"):
        paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), y[:10], 3, "diag")
    with pytest.raises(ValueError, match=r"labels must be in \[0, num_clusters=2\)"):
        paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), y, 2, "diag")
    with pytest.raises(ValueError, match="the pairs are over 5 samples"):
        paired_mixture.mixture_of_clusters(x, no_pairs(5), y, 3, "diag")
    with pytest.raises(ValueError, match="finite"):
        paired_mixture.mixture_of_clusters(np.full_like(x, np.nan), no_pairs(len(x)), y, 3, "diag")


def test_with_pairs_keeps_the_gaussians_and_takes_the_posteriors_of_other_pairs():
    x, y = blobs(300)
    broken = ConstraintSet(np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 1)[:20], np.full(20, 1e4), len(x))
    free = paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), y, 3, "diag")
    paired = free.with_pairs(x, broken)
    np.testing.assert_array_equal(paired.means, free.means)
    np.testing.assert_array_equal(paired.covariances, free.covariances)
    alone, mended = free.probabilities.argmax(1), paired.probabilities.argmax(1)
    assert np.sum(alone[broken.i] != alone[broken.j]) >= 10  # the mixture alone leaves most pairs apart ...
    np.testing.assert_array_equal(mended[broken.i], mended[broken.j])  # ... the hard pairs join them
    pairs = paired_mixture._pair_matrix(broken)
    assert paired.objective == paired_mixture.objective(free.log_joint(x), paired.probabilities, pairs)
    np.testing.assert_allclose(free.with_pairs(x, no_pairs(len(x))).probabilities, free.probabilities)
    with pytest.raises(ValueError, match="must be the 300 training samples"):
        free.with_pairs(x[:10], no_pairs(10))


def test_score_clusterings_weighs_the_pairs_by_the_scale():
    x, y = blobs(300)
    broken = ConstraintSet(np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 1)[:20], np.full(20, 1e4), len(x))
    shuffled = np.random.default_rng(0).integers(0, 3, len(x))
    clusterings = {"truth": y, "shuffled": shuffled}

    def objectives(scale):
        scored = paired_mixture.score_clusterings(x, broken, clusterings, 3, "diag", scale)
        return {name: mixture.objective for name, mixture in scored.items()}

    for name, labels in clusterings.items():
        assert (
            objectives(0.0)[name]
            == paired_mixture.mixture_of_clusters(x, no_pairs(len(x)), labels, 3, "diag").objective
        )
        assert objectives(1.0)[name] == paired_mixture.mixture_of_clusters(x, broken, labels, 3, "diag").objective
    weighed = ConstraintSet(broken.i, broken.j, broken.weight * 3e-3, len(x))
    assert objectives(3e-3)["truth"] == paired_mixture.mixture_of_clusters(x, weighed, y, 3, "diag").objective
    with pytest.raises(ValueError, match="pair_scale must be a finite number >= 0"):
        objectives(-1.0)
