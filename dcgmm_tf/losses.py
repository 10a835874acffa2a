"""The terms of the negative Conditional ELBO (Lemma 2 of the paper), as pure functions.

Shapes: B samples, K clusters, D latent dimensions. Everything is computed in log space with
tensorflow-probability distributions, so no term can become infinite through log(0).

Per sample, with z ~ q(z|x) (SGVB, Appendix B.3) and gamma_k = p(k|z) (Eq. 7):

    reconstruction  = -log p(x|z)
    cluster_kl      = log q(z|x) - sum_k gamma_k [log p(z|k) + log pi_k - log gamma_k]
                    = log q(z|x) - logsumexp_k [log p(z|k) + log pi_k]
    constraint      = -(1/B) sum_i sum_{j != i} W_ij sum_k gamma_ik gamma_jk        (per batch)

(:func:`pair_log_likelihood_term` is an optional replacement of the last term, not the paper's.)

The second form of ``cluster_kl`` is an exact identity (gamma is the posterior of the mixture), and the
one the code evaluates: it never takes the log of a probability.
"""

from __future__ import annotations

import math

import tensorflow as tf
import tensorflow_probability as tfp

tfd = tfp.distributions

LIKELIHOODS = ("bernoulli", "gaussian")
# The Gaussian decoder's log-variance is clipped to [-bound, bound] (standard deviations of about 4.5e-5 to 2.2e4):
# a batch whose embedding samples fall far out (heavy-tailed inputs, an encoder variance not yet trained) can
# otherwise make the scale 0 or infinite and the loss NaN. Within the bound the loss and its gradient are unchanged.
DECODER_LOG_VAR_BOUND = 20.0


def reconstruction_nll(x: tf.Tensor, params: tf.Tensor, likelihood: str = "bernoulli") -> tf.Tensor:
    """-log p(x|z) per sample (Eq. 2), summed over all features.

    ``params`` are Bernoulli logits shaped like ``x``, or for ``"gaussian"`` the mean and log-variance
    concatenated along the last axis (the log-variance clipped to +-``DECODER_LOG_VAR_BOUND``).
    """
    x = tf.cast(x, tf.float32)
    params = tf.cast(params, tf.float32)
    if likelihood == "bernoulli":
        dist = tfd.Bernoulli(logits=params, dtype=tf.float32)
    elif likelihood == "gaussian":
        mean, log_var = tf.split(params, 2, axis=-1)
        log_var = tf.clip_by_value(log_var, -DECODER_LOG_VAR_BOUND, DECODER_LOG_VAR_BOUND)
        dist = tfd.Normal(loc=mean, scale=tf.exp(0.5 * log_var))
    else:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
    log_px = dist.log_prob(x)
    return -tf.reduce_sum(tf.reshape(log_px, [tf.shape(x)[0], -1]), axis=-1)


def component_log_likelihoods(z: tf.Tensor, means: tf.Tensor, variances: tf.Tensor) -> tf.Tensor:
    """Log p(z|k) = log N(z | mu_k, sigma_k^2 I) (Eq. 1) for every component: [..., D] -> [..., K]."""
    components = tfd.MultivariateNormalDiag(loc=means, scale_diag=tf.sqrt(variances))
    return components.log_prob(z[..., tf.newaxis, :])


def cluster_log_posterior(z: tf.Tensor, means: tf.Tensor, variances: tf.Tensor) -> tf.Tensor:
    """Log p(k|z) with uniform pi_k = 1/K (Eq. 7, Sec. 2.4): [..., D] -> [..., K]."""
    return tf.nn.log_softmax(component_log_likelihoods(z, means, variances), axis=-1)


def cluster_kl(
    z: tf.Tensor, z_mean: tf.Tensor, z_log_var: tf.Tensor, means: tf.Tensor, variances: tf.Tensor
) -> tf.Tensor:
    """Single-sample estimate of KL(q(z, c|x) || p(z, c)) per sample (Lemma 2, lines 1-2 minus the likelihood).

    Equals log q(z|x) - log sum_k pi_k p(z|k) with pi_k = 1/K.
    """
    num_clusters = tf.cast(tf.shape(means)[0], tf.float32)
    log_q = tfd.MultivariateNormalDiag(loc=z_mean, scale_diag=tf.exp(0.5 * z_log_var)).log_prob(z)
    log_p = tf.reduce_logsumexp(component_log_likelihoods(z, means, variances), axis=-1) - tf.math.log(num_clusters)
    return log_q - log_p


def cluster_kl_analytic(
    log_gamma: tf.Tensor, z_mean: tf.Tensor, z_log_var: tf.Tensor, means: tf.Tensor, variances: tf.Tensor
) -> tf.Tensor:
    """KL(q(z, c|x) || p(z, c)) per sample with the Gaussian expectations over q(z|x) in closed form.

    The estimator of VaDE (Jiang et al. 2017, Eq. 17): gamma = p(k|z) is evaluated at a sample of z
    (``log_gamma``, [..., B, K]), while E_q[log p(z|k)] and the entropy of q(z|x) are exact:

        sum_k gamma_k (0.5 sum_d [log(2 pi s_kd) + (v_d + (m_d - mu_kd)^2) / s_kd] + log K + log gamma_k)
        - 0.5 sum_d log(2 pi e v_d)

    with q(z|x) = N(m, diag v) and p(z|k) = N(mu_k, diag s_k). Lower variance than :func:`cluster_kl`.
    """
    z_var = tf.exp(z_log_var)[..., tf.newaxis, :]  # [B, 1, D]
    cross_entropy = 0.5 * tf.reduce_sum(
        tf.math.log(2.0 * math.pi * variances) + (z_var + tf.square(z_mean[..., tf.newaxis, :] - means)) / variances,
        axis=-1,
    )  # [B, K]: -E_q log p(z|k)
    num_clusters = tf.cast(tf.shape(means)[0], tf.float32)
    gamma = tf.exp(log_gamma)
    entropy_q = 0.5 * tf.reduce_sum(math.log(2.0 * math.pi * math.e) + z_log_var, axis=-1)
    return tf.reduce_sum(gamma * (cross_entropy + tf.math.log(num_clusters) + log_gamma), axis=-1) - entropy_q


def pairwise_constraint_term(log_gamma: tf.Tensor, w: tf.Tensor) -> tf.Tensor:
    """Negative pairwise prior term of the C-ELBO on one batch (Sec. 2.4, Eq. 10).

    -(1/B) sum_{i != j} W_ij sum_k p(k|z_i) p(k|z_j), with ``log_gamma`` of shape [..., B, K] (leading
    axes, e.g. Monte Carlo samples, are averaged) and ``w`` the batch's [B, B] submatrix of W. Positive
    W (must-link) lowers the loss when i and j share a cluster, negative W (cannot-link) raises it.
    """
    gamma = tf.exp(log_gamma)
    same_cluster = tf.matmul(gamma, gamma, transpose_b=True)  # [..., B, B]: sum_k gamma_ik gamma_jk
    w = tf.cast(w, tf.float32)
    w_off_diagonal = w * (1.0 - tf.eye(tf.shape(w)[0], dtype=w.dtype))
    batch_size = tf.cast(tf.shape(w)[0], tf.float32)
    return -tf.reduce_mean(tf.reduce_sum(w_off_diagonal * same_cluster, axis=[-2, -1])) / batch_size


CONFIDENCE_UNIT = 1000.0  # |W_ij| = 1000 log((1 - q) / q): the paper's confidence of a link of noise level q


def log_complement(log_p: tf.Tensor) -> tf.Tensor:
    """log(1 - p_k) = logsumexp_{l != k} log p_l for a distribution given by its logs ``[..., K]``.

    Exact where p_k is close to 1 (no cancellation in 1 - p_k) and differentiable everywhere.
    """
    num_classes = tf.shape(log_p)[-1]
    others = tf.where(tf.eye(num_classes, dtype=tf.bool), -math.inf, log_p[..., tf.newaxis, :])  # [..., K, K]
    return tf.reduce_logsumexp(others, axis=-1)


def pair_log_likelihood_term(log_gamma: tf.Tensor, w: tf.Tensor) -> tf.Tensor:
    """Negative log-likelihood of the batch's links (a departure from the paper: ``pair_loss="likelihood"``).

    A link between i and j is observed as a must-link when the two samples share a cluster, flipped with the
    probability eps_ij = 1 / (1 + exp(|W_ij| / 1000)) that its confidence stands for (the inverse of the paper's
    |W| = 1000 log((1 - q) / q)). With s_ij = sum_k p(k|z_i) p(k|z_j):

        log P(must-link)   = log((1 - eps) s + eps (1 - s))
        log P(cannot-link) = log(eps s + (1 - eps) (1 - s))

    and the term is -(1000 / B) sum_{i != j, W_ij != 0} log P(link_ij), the meta-classification likelihood of Hsu
    et al. (ICLR 2019) with the paper's noise model. Unlike the paper's -W s, whose gradient vanishes like
    p (1 - p) once two confidently assigned samples disagree, its gradient there grows like 1 / (s + eps).
    Everything is in log space: log s and log(1 - s) are log-sum-exps of log p(k|z).

    Args:
        log_gamma: log p(k|z), shape [..., B, K] (leading axes, e.g. Monte Carlo samples, are averaged).
        w: the batch's [B, B] block of W; only its non-zero off-diagonal entries count.

    Returns:
        The scalar term (0 when the block holds no link).
    """
    w = tf.cast(w, tf.float32)
    batch_size = tf.shape(w)[0]
    w = w * (1.0 - tf.eye(batch_size, dtype=w.dtype))
    pairs = tf.where(tf.not_equal(w, 0.0))  # [P, 2], each link in both orders, as in the paper's sum
    weight = tf.gather_nd(w, pairs)
    log_gamma_i = tf.gather(log_gamma, pairs[:, 0], axis=-2)  # [..., P, K]
    log_gamma_j = tf.gather(log_gamma, pairs[:, 1], axis=-2)
    log_same = tf.reduce_logsumexp(log_gamma_i + log_gamma_j, axis=-1)  # log s_ij
    log_differ = tf.reduce_logsumexp(log_gamma_i + log_complement(log_gamma_j), axis=-1)  # log(1 - s_ij)
    logit = tf.abs(weight) / CONFIDENCE_UNIT
    log_keep, log_flip = -tf.nn.softplus(-logit), -tf.nn.softplus(logit)  # log(1 - eps), log eps
    must = weight > 0
    log_holds = tf.where(must, log_same, log_differ)  # the observed relation is true
    log_fails = tf.where(must, log_differ, log_same)
    log_likelihood = tf.reduce_logsumexp(tf.stack([log_keep + log_holds, log_flip + log_fails]), axis=0)
    total = tf.reduce_mean(tf.reduce_sum(log_likelihood, axis=-1))
    return -CONFIDENCE_UNIT * total / tf.cast(batch_size, tf.float32)


def embedding_pair_term(
    z_i: tf.Tensor, z_j: tf.Tensor, must: tf.Tensor, strength: tf.Tensor, scale: float
) -> tf.Tensor:
    """Contrastive loss of pairs on the embedding (not the paper's: the autoencoder's pair tuning).

    With d = ||z_i - z_j|| / scale, a must-link costs d^2 and a cannot-link relu(1 - d)^2 (pulled together, pushed
    beyond ``scale``); the mean over the pairs weighted by ``strength``.

    Args:
        z_i: Embeddings of the pairs' first ends, [P, D].
        z_j: Embeddings of the second ends, [P, D].
        must: 1 for a must-link, 0 for a cannot-link, [P].
        strength: Each pair's weight, [P] (not all zero).
        scale: The distance counted as far apart.

    Returns:
        The scalar loss.
    """
    d = tf.norm(tf.cast(z_i, tf.float32) - tf.cast(z_j, tf.float32), axis=1) / scale  # float32 under mixed precision
    per_pair = must * d**2 + (1 - must) * tf.nn.relu(1 - d) ** 2
    return tf.reduce_sum(strength * per_pair) / tf.reduce_sum(strength)


def batch_embedding_pair_term(z: tf.Tensor, w: tf.Tensor) -> tf.Tensor:
    """:func:`embedding_pair_term` on the links of a batch's [B, B] block ``w`` of W, for embeddings ``z`` [B, D].

    The unit of distance is the batch's mean distance between its samples (held constant in the gradient), so the
    term does not favour shrinking or growing the embedding; a link's strength is its |W_ij| relative to the
    block's largest. 0 when the block holds no link.
    """
    z = tf.cast(z, tf.float32)
    w = tf.cast(w, tf.float32)
    size = tf.shape(w)[0]
    off_diagonal = 1.0 - tf.eye(size, dtype=w.dtype)
    w = w * off_diagonal
    squared = tf.reduce_sum(tf.square(z[:, None, :] - z[None, :, :]), axis=-1)
    distances = tf.sqrt(tf.maximum(squared, 1e-12)) * off_diagonal
    scale = tf.stop_gradient(tf.reduce_sum(distances) / tf.maximum(tf.reduce_sum(off_diagonal), 1.0))
    pairs = tf.where(tf.not_equal(w, 0.0))
    weight = tf.gather_nd(w, pairs)
    z_i, z_j = tf.gather(z, pairs[:, 0]), tf.gather(z, pairs[:, 1])
    strength = tf.abs(weight) / tf.maximum(tf.reduce_max(tf.abs(weight)), 1e-30)
    must = tf.cast(weight > 0, tf.float32)
    term = embedding_pair_term(z_i, z_j, must, strength, scale)
    return tf.where(tf.size(weight) > 0, term, 0.0)
