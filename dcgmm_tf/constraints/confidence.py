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
