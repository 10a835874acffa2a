"""studies.standardised_images: image sets standardised as a table, the estimator against k-means."""

import numpy as np
import pytest


def test_the_sets_are_standardised_pixels_and_a_tiny_fit_takes_the_image_path():
    from studies.standardised_images import compare, standardised_sets

    (name, x, y), *_ = standardised_sets(["digits"])
    assert name == "digits" and x.shape == (1797, 64) and len(np.unique(y)) == 10
    np.testing.assert_allclose(x.mean(axis=0), 0, atol=1e-9)
    tiny = {"epochs": 1, "pretrain_epochs": 1, "hidden_units": (16,), "input_start": False}
    row = compare(x[:300], y[:300], seed=0, likelihood="auto", params=tiny)
    assert row["likelihood_used"] == "bernoulli" and row["chosen"] == "deep"  # not the Gaussian path's fallback
    assert row["kmeans_ari"] > 0.3  # k-means finds the digits in the standardised pixels
    with pytest.raises(ValueError, match="unknown set 'faces'"):
        next(standardised_sets(["faces"]))
