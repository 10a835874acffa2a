"""log_sum_exp: SciPy's and scikit-learn's log sum exp, bit for bit."""

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._array_api import _logsumexp

from dcgmm_tf.log_space import log_sum_exp


def test_log_sum_exp_is_scipys_logsumexp_bit_for_bit():
    rng = np.random.default_rng(0)
    log_theta = np.log(rng.dirichlet(np.ones(7), 50))
    masked = np.where(np.eye(7, dtype=bool), -np.inf, log_theta[:, None, :])  # as in the EM: -inf on a diagonal
    tied = np.repeat(rng.normal(size=(40, 1)), 4, axis=1)  # every row one value four times
    cases = [
        (rng.normal(scale=30, size=(6000, 10)), 1),
        (log_theta, 1),
        (log_theta, 0),
        (masked, 2),
        (tied, 1),
        (np.full((3, 1, 1), -np.inf), 2),  # K = 1: nothing but the excluded class
    ]
    for a, axis in cases:
        expected = logsumexp(a, axis=axis, keepdims=True)
        got = log_sum_exp(a, axis)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)  # equal values, -inf where scipy has -inf
        assert got.tobytes() == expected.tobytes()


def test_log_sum_exp_is_scikit_learns_logsumexp_bit_for_bit():
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 30.0, (500, 40))
    a[::7, 3] = a[::7, 5] = a[::7].max(axis=1) + 1.0  # tied largest terms
    a[1::5, :10] = -np.inf
    a[2] = -np.inf  # a row of -inf gives -inf
    a[3] = 0.0  # all tied
    expected = _logsumexp(a, axis=1)
    assert np.isneginf(expected[2])
    np.testing.assert_array_equal(log_sum_exp(a, 1)[:, 0], expected)
    assert log_sum_exp(a, 1)[:, 0].tobytes() == expected.tobytes()
