"""The Gaussian mixture of the inputs that a clustering implies, scored with the pairs: the C-ELBO's cluster and pair
terms with the identity for encoder.

Not the paper's. For posteriors q_i over the K clusters the score per sample is

    F(q, theta) = 1/N [ sum_i sum_k q_ik (log pi_k + log N(x_i | mu_k, Sigma_k) - log q_ik)
                        + 2 sum_(i,j) W_ij q_i . q_j ]

the cluster terms of the C-ELBO (Eq. 10) with the embedding z = x, and the pairs' term as in
:func:`dcgmm_tf.recipe.fit_loss` (each pair stored once). F is a lower bound on the log-likelihood of the data plus
the pairs' log prior. :func:`mixture_of_clusters` gives a clustering's mixture: the M-step from its clusters (each
sample's cluster taken as certain, so the clustering scored is the one returned; the covariances with a prior of
``PRIOR_SAMPLES`` pseudo-sample of the data's covariance, or of its variances for diagonal covariances, so that a
cluster of one or a few samples does not narrow onto them and lift the score), then the E-step with the pairs (the
posteriors of samples without pairs are the mixture's; those of samples in pairs a coordinate ascent, each the
softmax of its log joint plus the pull of its partners' posteriors, sweep after sweep). Clusterings of the same data
and pairs compare by the F of theirs (:func:`score_clusterings`, which can weigh the pairs less).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import linalg, sparse, special

from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.validation import check_matrix

COVARIANCE_TYPES = ("diag", "full")
PRIOR_SAMPLES = 1.0  # the covariances' prior: this many pseudo-samples with the data's covariance
SWEEPS = 5  # coordinate-ascent sweeps over the paired samples in the E-step
ROWS = 65_536  # samples whose [rows, F] differences are held at once


@dataclasses.dataclass(frozen=True)
class PairedMixture:
    """A fitted mixture: ``weights`` [K], ``means`` [K, F], ``covariances`` [K, F] ("diag") or [K, F, F]
    ("full"), the posteriors ``probabilities`` [N, K] of the training samples (with the pairs) and ``objective``,
    F per sample at them."""

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    covariance_type: str
    probabilities: np.ndarray
    objective: float

    def log_joint(self, x: np.ndarray) -> np.ndarray:
        """The log joint, log pi_k + log N(x_i | mu_k, Sigma_k), [N, K]."""
        return log_joint(x, self.weights, self.means, self.covariances, self.covariance_type)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """p(c | x) of new samples (which carry no pairs), [N, K]."""
        return np.exp(special.log_softmax(self.log_joint(x), axis=1))

    def with_pairs(self, x: np.ndarray, constraints: ConstraintSet) -> PairedMixture:
        """The same Gaussians with the training samples ``x``'s posteriors and F under other pairs: one E-step
        from ``probabilities``."""
        if constraints.num_samples != len(x) or len(x) != len(self.probabilities):
            raise ValueError(
                f"x ({len(x)} samples) and the pairs (over {constraints.num_samples}) must be the "
                f"{len(self.probabilities)} training samples"
            )
        joint, pairs = self.log_joint(x), _pair_matrix(constraints)
        q = e_step(joint, pairs, self.probabilities)
        return dataclasses.replace(self, probabilities=q, objective=objective(joint, q, pairs))


def log_joint(
    x: np.ndarray, weights: np.ndarray, means: np.ndarray, covariances: np.ndarray, covariance_type: str
) -> np.ndarray:
    """The log joint, log pi_k + log N(x_i | mu_k, Sigma_k), of every sample and cluster, [N, K]; ``ROWS``
    samples at a time."""
    num_features = x.shape[1]
    if covariance_type == "diag":
        factors = [1.0 / np.sqrt(c) for c in covariances]
        log_dets = [np.sum(np.log(c)) for c in covariances]
    else:
        factors = [linalg.cholesky(c, lower=True) for c in covariances]
        log_dets = [2.0 * np.sum(np.log(np.diag(f))) for f in factors]
    out = np.empty((len(x), len(weights)))
    for start in range(0, len(x), ROWS):
        rows = np.asarray(x[start : start + ROWS], np.float64)
        for k, (factor, log_det) in enumerate(zip(factors, log_dets, strict=True)):
            diff = rows - means[k]
            if covariance_type == "diag":
                mahalanobis = np.sum((diff * factor) ** 2, axis=1)
            else:
                mahalanobis = np.sum(linalg.solve_triangular(factor, diff.T, lower=True) ** 2, axis=0)
            out[start : start + ROWS, k] = np.log(weights[k]) - 0.5 * (
                num_features * np.log(2 * np.pi) + log_det + mahalanobis
            )
    return out


def m_step(
    x: np.ndarray, q: np.ndarray, covariance_type: str, prior: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Gaussian mixture for posteriors ``q`` [N, K]: weights, means and covariances (``ROWS`` samples at a
    time); each covariance is the scatter of its cluster plus ``PRIOR_SAMPLES`` times ``prior`` (the shape of one
    covariance: [F] or [F, F], :func:`covariance_prior`), over the cluster's weight plus ``PRIOR_SAMPLES``."""
    num_clusters, num_features = q.shape[1], x.shape[1]
    counts = q.sum(axis=0) + 10 * np.finfo(np.float64).eps
    sums = np.zeros((num_clusters, num_features))
    for start in range(0, len(x), ROWS):
        sums += q[start : start + ROWS].T @ np.asarray(x[start : start + ROWS], np.float64)
    means = sums / counts[:, None]
    shape = (num_clusters, num_features) if covariance_type == "diag" else (num_clusters, num_features, num_features)
    covariances = np.zeros(shape)
    for start in range(0, len(x), ROWS):
        rows, weights = np.asarray(x[start : start + ROWS], np.float64), q[start : start + ROWS]
        for k in range(num_clusters):
            diff = rows - means[k]
            if covariance_type == "diag":
                covariances[k] += weights[:, k] @ diff**2
            else:
                covariances[k] += (weights[:, k, None] * diff).T @ diff
    covariances += PRIOR_SAMPLES * prior
    covariances /= (counts + PRIOR_SAMPLES).reshape((-1,) + (1,) * (covariances.ndim - 1))
    return counts / counts.sum(), means, covariances


def feature_variance(x: np.ndarray) -> np.ndarray:
    """The variance of each feature of ``x`` [N, F] (``ROWS`` samples at a time), floored at a millionth of the
    largest."""
    total, squares = np.zeros(x.shape[1]), np.zeros(x.shape[1])
    for start in range(0, len(x), ROWS):
        rows = np.asarray(x[start : start + ROWS], np.float64)
        total += rows.sum(axis=0)
        squares += (rows**2).sum(axis=0)
    variance = np.maximum(squares / len(x) - (total / len(x)) ** 2, 0.0)
    return np.maximum(variance, 1e-6 * max(variance.max(), 1e-12))


def covariance_prior(x: np.ndarray, covariance_type: str) -> np.ndarray:
    """The covariances' prior for ``x`` [N, F]: its features' variances [F] (:func:`feature_variance`) for diagonal
    covariances; for full ones its covariance [F, F] (``ROWS`` samples at a time) plus a millionth of the largest
    variance on the diagonal, so that it is positive definite. A full prior shrinks each cluster's covariance
    towards the data's own, correlations included: a diagonal one would add variance across directions in which
    correlated features leave the data almost none."""
    if covariance_type == "diag":
        return feature_variance(x)
    num_features = x.shape[1]
    total, products = np.zeros(num_features), np.zeros((num_features, num_features))
    for start in range(0, len(x), ROWS):
        rows = np.asarray(x[start : start + ROWS], np.float64)
        total += rows.sum(axis=0)
        products += rows.T @ rows
    mean = total / len(x)
    covariance = products / len(x) - np.outer(mean, mean)
    covariance = (covariance + covariance.T) / 2
    return covariance + 1e-6 * max(np.diag(covariance).max(), 1e-12) * np.eye(num_features)


def _pair_matrix(constraints: ConstraintSet) -> sparse.csr_matrix:
    """The symmetric [N, N] sparse W (both orientations of each stored pair)."""
    n = constraints.num_samples
    w = constraints.weight.astype(np.float64)
    rows = np.concatenate([constraints.i, constraints.j])
    cols = np.concatenate([constraints.j, constraints.i])
    return sparse.csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))


def e_step(joint: np.ndarray, pairs: sparse.csr_matrix, q: np.ndarray, sweeps: int = SWEEPS) -> np.ndarray:
    """Posteriors that raise F for the log joint ``joint`` [N, K]: the plain mixture's for samples without pairs;
    for paired samples, ``sweeps`` coordinate-ascent sweeps from ``q``, q_i = softmax(joint_i + 2 sum_j W_ij q_j)."""
    out = np.exp(special.log_softmax(joint, axis=1))
    paired = np.flatnonzero(np.diff(pairs.indptr))
    if not len(paired):
        return out
    out[paired] = q[paired]
    for _ in range(sweeps):
        for i in paired:
            start, stop = pairs.indptr[i], pairs.indptr[i + 1]
            pull = 2.0 * pairs.data[start:stop] @ out[pairs.indices[start:stop]]
            out[i] = np.exp(special.log_softmax(joint[i] + pull))
    return out


def objective(joint: np.ndarray, q: np.ndarray, pairs: sparse.csr_matrix) -> float:
    """F per sample (see the module's docstring) of posteriors ``q`` under the log joint ``joint``."""
    cluster_terms = np.sum(q * joint) - np.sum(special.xlogy(q, q))
    pair_term = np.sum(q * (pairs @ q))  # both orientations: 2 sum over the stored pairs
    return float((cluster_terms + pair_term) / len(q))


def _check(
    x: np.ndarray, labels: np.ndarray, num_clusters: int, constraints: ConstraintSet, covariance_type: str
) -> np.ndarray:
    x = check_matrix(x, "x")
    if labels.shape != (len(x),) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be an integer array of shape ({len(x)},), got {labels.dtype} {labels.shape}")
    if len(labels) and (labels.min() < 0 or labels.max() >= num_clusters):
        raise ValueError(f"labels must be in [0, num_clusters={num_clusters}), got {labels.min()}..{labels.max()}")
    if constraints.num_samples != len(x):
        raise ValueError(f"the pairs are over {constraints.num_samples} samples, x has {len(x)}")
    if covariance_type not in COVARIANCE_TYPES:
        raise ValueError(f"covariance_type must be one of {list(COVARIANCE_TYPES)}, got {covariance_type!r}")
    return x


def mixture_of_clusters(
    x: np.ndarray, constraints: ConstraintSet, labels: np.ndarray, num_clusters: int, covariance_type: str
) -> PairedMixture:
    """The mixture the clustering ``labels`` [N] (of ``num_clusters``) implies: one M-step from its clusters and one
    E-step with the pairs, scored by F; clusterings of the same ``x`` and pairs compare by it."""
    labels = np.asarray(labels)
    x = _check(x, labels, num_clusters, constraints, covariance_type)
    return _mixture(x, constraints, labels, num_clusters, covariance_type, covariance_prior(x, covariance_type))


def _mixture(
    x: np.ndarray,
    constraints: ConstraintSet,
    labels: np.ndarray,
    num_clusters: int,
    covariance_type: str,
    prior: np.ndarray,
) -> PairedMixture:
    """:func:`mixture_of_clusters` of checked inputs, with ``x``'s covariance prior given."""
    q = np.eye(num_clusters)[labels]
    pairs = _pair_matrix(constraints)
    params = m_step(x, q, covariance_type, prior)
    joint = log_joint(x, *params, covariance_type)
    q = e_step(joint, pairs, q)
    return PairedMixture(*params, covariance_type, q, objective(joint, q, pairs))


def score_clusterings(
    x: np.ndarray,
    constraints: ConstraintSet,
    clusterings: dict[str, np.ndarray],
    num_clusters: int,
    covariance_type: str,
    pair_scale: float = 1.0,
) -> dict[str, PairedMixture]:
    """Each clustering's mixture (:func:`mixture_of_clusters`), by name, with the pairs' weights times ``pair_scale``
    in its E-step and F (0: the data alone). At their training weight the pairs' term mostly counts the training
    answers a clustering holds, so a clustering trained to hold them and one fitted without them compare by more
    than that only with the pairs weighed less."""
    if not (np.isfinite(pair_scale) and pair_scale >= 0):
        raise ValueError(f"pair_scale must be a finite number >= 0, got {pair_scale!r}")
    scaled = ConstraintSet.empty(constraints.num_samples)  # pair_scale 0: the data alone
    if pair_scale > 0:
        scaled = ConstraintSet(constraints.i, constraints.j, constraints.weight * pair_scale, constraints.num_samples)
    labelled = {name: np.asarray(labels) for name, labels in clusterings.items()}
    if not labelled:
        return {}
    for labels in labelled.values():
        x = _check(x, labels, num_clusters, scaled, covariance_type)
    prior = covariance_prior(x, covariance_type)  # of x alone: once for every clustering
    return {
        name: _mixture(x, scaled, labels, num_clusters, covariance_type, prior) for name, labels in labelled.items()
    }
