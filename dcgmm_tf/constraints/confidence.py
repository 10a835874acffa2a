"""Constraint confidence `|W_ij|` and the noise level `q` it stands for (inverse maps)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def default_alpha(q: float) -> float:
    """Returns the constraint confidence used in the paper for noise level `q`.

    `alpha = 1000 * log((1 - q) / q)` for noisy constraints and `1e4` when the
    constraints are noise-free (`q == 0`).

    Args:
      q: Probability that a constraint is wrong, in `[0, 0.5)`.

    Raises:
      ValueError: If `q` is outside `[0, 0.5)`.
    """
    q = float(q)
    if not 0.0 <= q < 0.5:
        raise ValueError(
            f"Noise level q must be in [0, 0.5), got {q}. With q >= 0.5 the "
            "constraints carry no (or inverted) information."
        )
    if q == 0.0:
        return 1e4
    return 1000.0 * math.log((1.0 - q) / q)


def flip_probability(weight: Any) -> np.ndarray:
    """Probability that a link is wrong given its confidence: the inverse of :func:`default_alpha`.

    ``q = 1 / (1 + exp(|W_ij| / 1000))``, so ``|W_ij| = 1000 * log((1 - q) / q)``; computed in log space
    (``|W_ij| = 1e4`` gives 4.5e-5).
    """
    return np.exp(-np.logaddexp(0.0, np.abs(np.asarray(weight, np.float64)) / 1000.0))


def link_log_probabilities(must: np.ndarray, flip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The noise model of a link: log p(link observed | same cluster) and log p(link observed | different clusters).

    A link is observed as a must-link when its two samples share a cluster, flipped with probability ``flip``: a
    must-link has probabilities (1 - flip, flip), a cannot-link (flip, 1 - flip). A flip of 0 (a certain answer) has
    the log -inf, as it should.

    Args:
      must: True for a must-link, False for a cannot-link, [P].
      flip: Each link's flip probability (:func:`flip_probability`), [P].

    Returns:
      The two logs, each [P].
    """
    with np.errstate(divide="ignore"):
        log_flip = np.log(flip)
    log_keep = np.log1p(-flip)
    return np.where(must, log_keep, log_flip), np.where(must, log_flip, log_keep)


def link_log_likelihood(
    if_same: np.ndarray, if_different: np.ndarray, log_same: np.ndarray, log_different: np.ndarray
) -> np.ndarray:
    """Log-likelihood of an observed link: log(p(obs | same) P(same) + p(obs | different) P(different)).

    The numpy form of the pair term of :func:`dcgmm_tf.losses.pair_log_likelihood_term` (which stays in TensorFlow:
    it is differentiated inside the training step), for the choice of K and the latent class start.

    Args:
      if_same: log p(obs | same cluster), from :func:`link_log_probabilities`; broadcast against the others.
      if_different: log p(obs | different clusters).
      log_same: log P(same cluster) of the link's two samples (or of a sample and a class).
      log_different: log P(different clusters), its complement.

    Returns:
      The log-likelihood, in the broadcast shape.
    """
    return np.logaddexp(if_same + log_same, if_different + log_different)
