"""The C-ELBO terms against an independent numpy computation on tiny tensors."""

import numpy as np
import pytest
import tensorflow as tf
from scipy.special import expit, logsumexp

from dcgmm_tf import losses


def _normal_logpdf(z, mean, var):
    return -0.5 * (np.log(2 * np.pi * var) + (z - mean) ** 2 / var)


@pytest.fixture
def tiny():
    rng = np.random.default_rng(0)
    b, k, d = 5, 3, 2
    return {
        "z": rng.normal(size=(b, d)).astype(np.float32),
        "z_mean": rng.normal(size=(b, d)).astype(np.float32),
        "z_log_var": rng.normal(scale=0.3, size=(b, d)).astype(np.float32),
        "means": rng.normal(scale=2, size=(k, d)).astype(np.float32),
        "variances": rng.uniform(0.3, 2.0, size=(k, d)).astype(np.float32),
    }


def _numpy_log_gamma(z, means, variances):
    log_pz_k = _normal_logpdf(z[:, None, :], means[None], variances[None]).sum(-1)  # [B, K]
    log_joint = log_pz_k + np.log(1.0 / len(means))
    return log_pz_k, log_joint - logsumexp(log_joint, axis=1, keepdims=True)


def test_bernoulli_reconstruction_matches_numpy():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(4, 6)).astype(np.float32)
    logits = rng.normal(scale=3, size=(4, 6)).astype(np.float32)
    p = expit(logits.astype(np.float64))
    expected = -(x * np.log(p) + (1 - x) * np.log(1 - p)).sum(1)
    np.testing.assert_allclose(losses.reconstruction_nll(x, logits, "bernoulli"), expected, rtol=1e-5)


def test_bernoulli_reconstruction_finite_for_saturated_logits():
    x = np.array([[0.0, 1.0, 0.5]], np.float32)
    logits = np.array([[1e4, -1e4, 3e4]], np.float32)
    value = losses.reconstruction_nll(x, logits, "bernoulli").numpy()
    assert np.all(np.isfinite(value)) and value[0] > 1e4


def test_gaussian_reconstruction_matches_numpy():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    mean, log_var = rng.normal(size=(2, 3, 4)).astype(np.float32)
    expected = -_normal_logpdf(x, mean, np.exp(log_var)).sum(1)
    params = np.concatenate([mean, log_var], axis=1)
    np.testing.assert_allclose(losses.reconstruction_nll(x, params, "gaussian"), expected, rtol=1e-5)


def test_gaussian_reconstruction_clips_an_extreme_log_variance():
    x = np.array([[0.5, -2.0]], np.float32)
    mean = np.array([[300.0, -400.0]], np.float32)
    bound = losses.DECODER_LOG_VAR_BOUND
    params = tf.Variable(np.concatenate([mean, [[-1e4, 1e4]]], axis=1).astype(np.float32))
    with tf.GradientTape() as tape:
        value = losses.reconstruction_nll(x, params, "gaussian")
    expected = -_normal_logpdf(x, mean, np.exp([[-bound, bound]])).sum(1)
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    assert np.all(np.isfinite(tape.gradient(value, params)))


def test_unknown_likelihood_rejected():
    with pytest.raises(ValueError, match="likelihood"):
        losses.reconstruction_nll(np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32), "poisson")


def test_cluster_log_posterior_matches_numpy(tiny):
    _, expected = _numpy_log_gamma(tiny["z"], tiny["means"], tiny["variances"])
    got = losses.cluster_log_posterior(tiny["z"], tiny["means"], tiny["variances"]).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_cluster_kl_matches_lemma2_expansion(tiny):
    """The logsumexp form equals the paper's sum_k gamma_k [log p(z|k) + log pi_k - log gamma_k] form."""
    z, mean, log_var = tiny["z"], tiny["z_mean"], tiny["z_log_var"]
    log_q = _normal_logpdf(z, mean, np.exp(log_var)).sum(1)
    log_pz_k, log_gamma = _numpy_log_gamma(z, tiny["means"], tiny["variances"])
    gamma = np.exp(log_gamma)
    k = len(tiny["means"])
    expected = log_q - (gamma * (log_pz_k + np.log(1.0 / k) - log_gamma)).sum(1)
    got = losses.cluster_kl(z, mean, log_var, tiny["means"], tiny["variances"]).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_cluster_kl_finite_far_from_every_cluster(tiny):
    z = np.full((1, 2), 1e3, np.float32)
    value = losses.cluster_kl(z, z, np.zeros((1, 2), np.float32), tiny["means"], tiny["variances"]).numpy()
    assert np.isfinite(value).all() and value[0] > 1e4


def test_pairwise_term_matches_double_loop(tiny):
    _, log_gamma = _numpy_log_gamma(tiny["z"], tiny["means"], tiny["variances"])
    gamma = np.exp(log_gamma)
    b = len(gamma)
    rng = np.random.default_rng(3)
    w = rng.normal(scale=100, size=(b, b))
    w = (w + w.T).astype(np.float32)
    np.fill_diagonal(w, 7.0)  # the diagonal must be ignored
    expected = -sum(w[i, j] * gamma[i] @ gamma[j] for i in range(b) for j in range(b) if i != j) / b
    got = losses.pairwise_constraint_term(log_gamma.astype(np.float32), w).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_pairwise_term_sign_and_symmetry():
    together = np.log(np.array([[0.98, 0.01, 0.01], [0.98, 0.01, 0.01]], np.float32))
    apart = np.log(np.array([[0.98, 0.01, 0.01], [0.01, 0.98, 0.01]], np.float32))
    must = np.array([[0, 1e4], [1e4, 0]], np.float32)
    cannot = -must

    def term(lg, w):
        return float(losses.pairwise_constraint_term(lg, w))

    # A must-link is rewarded (lower loss) when the pair shares a cluster; a cannot-link is penalised.
    assert term(together, must) < term(apart, must)
    assert term(together, cannot) > term(apart, cannot)
    assert term(together, must) == pytest.approx(-term(together, cannot))
    # Swapping the two samples changes nothing.
    assert term(apart[::-1].copy(), must) == pytest.approx(term(apart, must))


def test_pairwise_term_zero_without_constraints(tiny):
    _, log_gamma = _numpy_log_gamma(tiny["z"], tiny["means"], tiny["variances"])
    assert float(losses.pairwise_constraint_term(log_gamma.astype(np.float32), np.zeros((5, 5), np.float32))) == 0.0


def test_pairwise_term_averages_monte_carlo_samples(tiny):
    _, log_gamma = _numpy_log_gamma(tiny["z"], tiny["means"], tiny["variances"])
    _, log_gamma2 = _numpy_log_gamma(tiny["z"] + 1.0, tiny["means"], tiny["variances"])
    w = np.ones((5, 5), np.float32)
    stacked = np.stack([log_gamma, log_gamma2]).astype(np.float32)
    expected = 0.5 * (
        float(losses.pairwise_constraint_term(log_gamma.astype(np.float32), w))
        + float(losses.pairwise_constraint_term(log_gamma2.astype(np.float32), w))
    )
    assert float(losses.pairwise_constraint_term(stacked, w)) == pytest.approx(expected, rel=1e-5)


def test_analytic_cluster_kl_matches_numpy(tiny):
    z, mean, log_var = tiny["z"], tiny["z_mean"], tiny["z_log_var"]
    means, variances = tiny["means"], tiny["variances"]
    _, log_gamma = _numpy_log_gamma(z, means, variances)
    gamma = np.exp(log_gamma)
    v = np.exp(log_var)
    cross = 0.5 * (
        np.log(2 * np.pi * variances)[None] + (v[:, None] + (mean[:, None] - means[None]) ** 2) / variances[None]
    ).sum(-1)
    entropy = 0.5 * np.log(2 * np.pi * np.e * v).sum(-1)
    expected = (gamma * (cross + np.log(len(means)) + log_gamma)).sum(-1) - entropy
    got = losses.cluster_kl_analytic(log_gamma.astype(np.float32), mean, log_var, means, variances).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_analytic_and_sampled_cluster_kl_agree_for_a_point_mass(tiny):
    """With q(z|x) almost a point mass at m, E_q[log q] = log q(m) - D/2 and z = m: the two estimators differ by D/2."""
    mean, means, variances = tiny["z_mean"], tiny["means"], tiny["variances"]
    log_var = np.full_like(mean, -12.0)
    log_gamma = losses.cluster_log_posterior(mean, means, variances)
    analytic = losses.cluster_kl_analytic(log_gamma, mean, log_var, means, variances).numpy()
    sampled = losses.cluster_kl(mean, mean, log_var, means, variances).numpy()
    np.testing.assert_allclose(analytic, sampled - mean.shape[1] / 2, rtol=1e-4, atol=1e-3)


def _numpy_pair_log_likelihood_term(log_gamma, w):
    gamma = np.exp(log_gamma.astype(np.float64))
    b = len(gamma)
    total = 0.0
    for i in range(b):
        for j in range(b):
            if i == j or w[i, j] == 0:
                continue
            s = gamma[i] @ gamma[j]
            eps = 1.0 / (1.0 + np.exp(abs(w[i, j]) / 1000.0))
            total += np.log((1 - eps) * s + eps * (1 - s)) if w[i, j] > 0 else np.log(eps * s + (1 - eps) * (1 - s))
    return -1000.0 * total / b


def test_pair_log_likelihood_matches_numpy(tiny):
    _, log_gamma = _numpy_log_gamma(tiny["z"], tiny["means"], tiny["variances"])
    rng = np.random.default_rng(4)
    w = np.where(rng.random((5, 5)) < 0.5, 0.0, rng.choice([-1e4, -1386.0, 700.0, 1e4], size=(5, 5)))
    w = np.triu(w, 1)
    w = (w + w.T).astype(np.float32)
    np.fill_diagonal(w, 5.0)  # the diagonal must be ignored
    got = losses.pair_log_likelihood_term(log_gamma.astype(np.float32), w).numpy()
    np.testing.assert_allclose(got, _numpy_pair_log_likelihood_term(log_gamma, w), rtol=1e-4)
    assert float(losses.pair_log_likelihood_term(log_gamma.astype(np.float32), np.zeros((5, 5), np.float32))) == 0.0


def test_log_complement_exact_near_one():
    log_p = np.log(np.array([[1 - 1e-7, 5e-8, 5e-8]], np.float64)).astype(np.float32)
    got = losses.log_complement(log_p).numpy()
    assert got[0, 0] == pytest.approx(np.log(1e-7), rel=1e-4)  # 1 - p in float32 would give log(1.2e-7) or -inf
    np.testing.assert_allclose(got[0, 1:], 0.0, atol=1e-6)


def test_pair_likelihood_pulls_a_confidently_violated_must_link():
    """On a must-link whose two samples sit confidently in different clusters, the paper's gradient (through the
    logits of p(k|z)) is about zero, the likelihood's is not."""
    import tensorflow as tf

    logits = tf.Variable([[12.0, 0.0, 0.0], [0.0, 12.0, 0.0]])
    must = np.array([[0, 1e4], [1e4, 0]], np.float32)

    def grad_norm(term):
        with tf.GradientTape() as tape:
            value = term(tf.nn.log_softmax(logits), must)
        return float(tf.norm(tape.gradient(value, logits)))

    paper, likelihood = grad_norm(losses.pairwise_constraint_term), grad_norm(losses.pair_log_likelihood_term)
    assert paper < 0.5
    assert likelihood > 1e3 * max(paper, 1e-6)
    assert likelihood > 100.0


def test_embedding_pair_term_matches_numpy():
    rng = np.random.default_rng(7)
    z_i, z_j = rng.normal(size=(2, 6, 3)).astype(np.float32)
    must = np.array([1, 0, 1, 0, 0, 1], np.float32)
    strength = np.array([1.0, 0.5, 0.5, 1.0, 0.25, 1.0], np.float32)
    scale = 1.7
    d = np.linalg.norm(z_i.astype(np.float64) - z_j, axis=1) / scale
    per_pair = np.where(must > 0, d**2, np.maximum(1 - d, 0) ** 2)
    expected = np.sum(strength * per_pair) / strength.sum()
    got = losses.embedding_pair_term(z_i, z_j, must, strength, scale).numpy()
    assert got == pytest.approx(expected, rel=1e-5)
    # a cannot-link already farther apart than the scale costs nothing; a must-link at one point costs nothing
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    far = losses.embedding_pair_term(z_i[:1], z_i[:1] + 2 * scale, zero, one, scale)
    same = losses.embedding_pair_term(z_i[:1], z_i[:1], one, one, scale)
    assert float(far) == 0.0 and float(same) == 0.0


def test_batch_embedding_pair_term_matches_numpy():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(6, 3)).astype(np.float32)
    w = np.zeros((6, 6), np.float32)
    for i, j, v in [(0, 1, 4.0), (2, 3, -4.0), (4, 5, 2.0)]:
        w[i, j] = w[j, i] = v
    distances = np.linalg.norm(z[:, None].astype(np.float64) - z[None], axis=-1)
    scale = distances[~np.eye(6, dtype=bool)].mean()
    rows, cols = np.nonzero(w)
    d = distances[rows, cols] / scale
    per_pair = np.where(w[rows, cols] > 0, d**2, np.maximum(1 - d, 0) ** 2)
    strength = np.abs(w[rows, cols]) / np.abs(w).max()
    expected = np.sum(strength * per_pair) / strength.sum()
    assert float(losses.batch_embedding_pair_term(z, w)) == pytest.approx(expected, rel=1e-5)
    assert float(losses.batch_embedding_pair_term(z, np.zeros_like(w))) == 0.0
    # the unit is the batch's own: scaling the embedding changes nothing
    assert float(losses.batch_embedding_pair_term(3 * z, w)) == pytest.approx(expected, rel=1e-5)
