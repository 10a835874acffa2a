"""Reference computations shared by the tests."""

import numpy as np


def dense_matrix(constraints) -> np.ndarray:
    """The full symmetric N x N matrix W of a (small) ConstraintSet, built the obvious way."""
    n = constraints.num_samples
    w = np.zeros((n, n), np.float32)
    w[constraints.i, constraints.j] = constraints.weight
    w[constraints.j, constraints.i] = constraints.weight
    return w
