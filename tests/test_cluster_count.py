"""Choosing K: the held-out pair likelihood on embeddings with a known number of groups, each link type alone,
no pairs, and bad candidates."""

import numpy as np
import pytest

from dcgmm_tf import ConstraintSet
from dcgmm_tf.cluster_count import choose_num_clusters, pair_log_likelihood


def _blobs(k=5, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.multinomial(n, np.linspace(1, 3, k) / np.linspace(1, 3, k).sum())  # unequal sizes
    y = np.repeat(np.arange(k), sizes)
    centres = rng.normal(0, 6, (k, 4))
    return centres[y] + rng.normal(0, 1, (n, 4)), y


@pytest.mark.parametrize("link_type", ["both", "must", "cannot"])
def test_the_pairs_choose_the_number_of_groups(link_type):
    z, y = _blobs()
    pairs = ConstraintSet.from_labels(y, 600, seed=0, link_type=link_type)
    count = choose_num_clusters(z, pairs, candidates=range(2, 11), seed=0)
    assert count.criterion == "pairs" and count.candidates == tuple(range(2, 11))
    assert abs(count.num_clusters - 5) <= 1, count


def test_without_pairs_the_bic_chooses():
    z, _ = _blobs()
    count = choose_num_clusters(z, ConstraintSet.empty(len(z)), candidates=range(2, 9))
    assert count.criterion == "bic" and count.num_clusters == 5


@pytest.mark.parametrize("candidates", [[], [1, 2], [2, 5000], [2.5, 3]])
def test_bad_candidates_are_refused(candidates):
    z, y = _blobs(n=300)
    with pytest.raises(ValueError, match="candidate numbers of clusters must be integers"):
        choose_num_clusters(z, ConstraintSet.from_labels(y, 50, seed=0), candidates=candidates)


def test_pair_log_likelihood_against_numpy():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(4), 6), rng.dirichlet(np.ones(4), 6)
    must = np.array([True, False] * 3)
    flip = np.full(6, 0.1)
    same = (p * q).sum(1)
    expected = np.log(np.where(must, same * 0.9 + (1 - same) * 0.1, same * 0.1 + (1 - same) * 0.9))
    np.testing.assert_allclose(pair_log_likelihood(p, q, must, flip), expected, rtol=1e-10)
