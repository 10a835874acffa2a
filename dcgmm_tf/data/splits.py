"""Seeded random train/test splits for data sets that ship without one."""

from __future__ import annotations

import numpy as np


def random_split(
    x: np.ndarray, y: np.ndarray, test_fraction: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test), with round(test_fraction * N) test samples (at least 1 of each)."""
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"need at least 2 samples with one label each, got {len(x)} and {len(y)}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = min(max(int(round(test_fraction * len(x))), 1), len(x) - 1)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]
