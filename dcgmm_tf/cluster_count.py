"""Choosing the number of clusters K from the pairs and the data (``n_clusters="auto"``, ``--num_clusters=0``).

With pairs, a quarter of them is held out. The embeddings are mapped by the link metric of the other pairs
(:func:`dcgmm_tf.cluster_init.link_metric`), a diagonal GMM with K components is fitted for each candidate K, and
K is scored by the mean log-likelihood of the held-out links under the GMM's cluster probabilities (a link is
kept with probability sum_k p(k|x_i) p(k|x_j), up to the flip rate its confidence implies). Too few clusters break
held-out cannot-links, too many break held-out must-links. Scores within a tie of the best (one standard error,
or ``TOLERANCE`` of the candidates' score range if more) count as the best, and of those the choice is the
smallest K, or the largest with must-links only: must-links alone cannot tell K from fewer clusters, cannot-links
alone K from more. Without pairs the BIC of a diagonal GMM on the embeddings decides; it follows the embedding's
modes rather than the classes (see docs/your-data.md for the numbers).

A latent class model of the pairs over a fine GMM (the start's :func:`dcgmm_tf.cluster_init.fit_latent_classes`)
was tried first: its classes each hold 1/K of the data, so unequal clusters pushed its choice off (4 for 5 blobs of
sizes 1:3, 2 with must-links only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp
from sklearn.mixture import GaussianMixture

from dcgmm_tf.cluster_init import link_metric
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.constraints.confidence import flip_probability

DEFAULT_CANDIDATES = tuple(range(2, 31))
TOLERANCE = 0.05  # share of the candidates' score range counted as a tie with the best (at least one error)


@dataclasses.dataclass(frozen=True)
class ClusterCount:
    """The chosen K and the score of every candidate.

    Attributes:
      num_clusters: The chosen K.
      candidates: The candidate values of K.
      scores: Per candidate the mean held-out pair log-likelihood (with pairs, higher is better) or minus the
        BIC per sample (without pairs).
      errors: The standard error of each score (zero without pairs).
      criterion: ``"pairs"`` or ``"bic"``.
    """

    num_clusters: int
    candidates: tuple[int, ...]
    scores: tuple[float, ...]
    errors: tuple[float, ...]
    criterion: str


def check_candidates(candidates: Sequence[int], num_samples: int) -> tuple[int, ...]:
    """The candidates as a sorted tuple; raises ``ValueError`` unless they are integers in [2, num_samples]."""
    candidates = list(candidates)
    integral = all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in candidates)
    values = tuple(sorted({int(k) for k in candidates})) if integral else ()
    if not values or values[0] < 2 or values[-1] > num_samples:
        raise ValueError(
            f"the candidate numbers of clusters must be integers in [2, {num_samples}] (the number of samples), "
            f"got {list(candidates)}"
        )
    return values


def pair_log_likelihood(probabilities_i: np.ndarray, probabilities_j: np.ndarray, must: np.ndarray, flip: np.ndarray):
    """Log-likelihood of each observed link given both ends' class probabilities [P, K] and the flip rates.

    p(same) = sum_k p(k | i) p(k | j); a must-link has likelihood p(same) (1 - f) + (1 - p(same)) f, a cannot-link
    the complement; computed in log space from the log probabilities' logsumexp.
    """
    log_same = logsumexp(np.log(probabilities_i) + np.log(probabilities_j), axis=1)
    log_diff = np.log(-np.expm1(np.minimum(log_same, -1e-12)))
    log_ok, log_wrong = np.log1p(-flip), np.log(flip)
    same_term = np.logaddexp(log_same + log_ok, log_diff + log_wrong)  # observed as a must-link
    diff_term = np.logaddexp(log_same + log_wrong, log_diff + log_ok)
    return np.where(must, same_term, diff_term)


def choose_num_clusters(
    z: np.ndarray,
    constraints: ConstraintSet,
    candidates: Sequence[int] = DEFAULT_CANDIDATES,
    *,
    seed: int = 0,
    holdout: float = 0.25,
    n_init: int = 3,
) -> ClusterCount:
    """Chooses K for embeddings ``z`` [N, D] and their constraints (see the module's docstring).

    Args:
      z: The embeddings, e.g. of the pretrained autoencoder.
      constraints: The pairs (may be empty: the BIC decides).
      candidates: The values of K to choose from, each in [2, N].
      seed: Seed of the GMMs, the pair split and the latent class model's starts.
      holdout: Share of the pairs held out to score each K.
      n_init: Random starts of the latent class model per K.

    Returns:
      The chosen K with every candidate's score.

    Raises:
      ValueError: On candidates outside [2, N], a holdout outside (0, 1) or non-finite embeddings.
    """
    z = np.asarray(z, np.float64)
    if z.ndim != 2 or not np.isfinite(z).all():
        raise ValueError(f"embeddings must be a finite [N, D] array, got shape {z.shape}")
    candidates = check_candidates(candidates, len(z))
    if not 0 < holdout < 1:
        raise ValueError(f"holdout must be in (0, 1), got {holdout}")
    if len(constraints) < 2:
        return _by_bic(z, candidates, seed)
    rng = np.random.default_rng(seed)
    held = np.zeros(len(constraints), bool)
    for mask in (constraints.must_link_mask, constraints.cannot_link_mask):  # each link type split alike
        index = np.flatnonzero(mask)
        held[rng.choice(index, int(round(holdout * len(index))), replace=False)] = True
    if held.all() or not held.any():
        return _by_bic(z, candidates, seed)
    mapped = z @ link_metric(z, constraints.subset(~held))
    flip = flip_probability(constraints.weight[held])
    i, j, must = constraints.i[held], constraints.j[held], constraints.must_link_mask[held]
    scores, errors = [], []
    for k in candidates:
        gmm = GaussianMixture(k, covariance_type="diag", random_state=seed, n_init=n_init).fit(mapped)
        probabilities = np.clip(gmm.predict_proba(mapped), 1e-12, None)
        values = pair_log_likelihood(probabilities[i], probabilities[j], must, flip)
        scores.append(float(values.mean()))
        errors.append(float(values.std() / np.sqrt(len(values))))
    best = int(np.argmax(scores))
    tolerance = max(errors[best], TOLERANCE * (scores[best] - min(scores)))
    near = [n for n, s in enumerate(scores) if s >= scores[best] - tolerance]
    has_must, has_cannot = must.any(), (~must).any()
    chosen = max(near) if has_must and not has_cannot else min(near)
    return ClusterCount(candidates[chosen], candidates, tuple(scores), tuple(errors), "pairs")


def _by_bic(z: np.ndarray, candidates: tuple[int, ...], seed: int) -> ClusterCount:
    scores = []
    for k in candidates:
        gmm = GaussianMixture(k, covariance_type="diag", random_state=seed).fit(z)
        scores.append(-gmm.bic(z) / len(z))
    best = int(np.argmax(scores))
    return ClusterCount(candidates[best], candidates, tuple(scores), (0.0,) * len(scores), "bic")
