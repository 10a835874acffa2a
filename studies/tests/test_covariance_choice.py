"""The covariance-choice study, in-process on iris."""

import numpy as np
import pandas as pd
import pytest

from dcgmm_tf import ConstraintSet, metrics, starts
from dcgmm_tf.sizing import input_scaling
from studies import covariance_choice
from studies import your_data_bench as bench


def test_rows_per_set_seed_and_covariance_type():
    rows = pd.DataFrame(covariance_choice.covariance_rows(["iris"], [0], 30))
    assert sorted(rows.covariance) == ["diag", "full"] and (rows.half == "tuning").all()
    assert rows.ari.between(-1, 1).all() and np.isfinite(rows.heldout_loglik_per_sample).all()
    assert rows.pairs_respected.between(0, 30).all() and rows.pairs_respected.max() > 15
    x, y = bench.load_set("iris")
    offset, scale = input_scaling(x, "gaussian")
    x = (x - offset) / scale
    pairs = ConstraintSet.from_pairs(len(y), *bench.draw_pairs(y, 30, 0))
    at_choice = starts.input_gmm_fits(x, 3, 0, spread=scale, covariance_floor=starts.INPUT_GMM_CHOICE_FLOOR)
    for gmm, chooser, row in zip(starts.input_gmm_fits(x, 3, 0, spread=scale), at_choice, rows.itertuples()):
        assert row.covariance == gmm.covariance_type == chooser.covariance_type
        assert row.pairs_respected == pairs.satisfied(gmm.predict(x)).sum()
        assert row.ari == pytest.approx(metrics.ari(y, gmm.predict(x)))
        assert row.bic_per_sample == pytest.approx(chooser.bic(x) / len(x))  # the BIC that orders the types


def test_agreement_counts_the_criteria_that_prefer_the_better_type():
    rows = pd.DataFrame(
        {
            "dataset": ["a", "a", "b", "b", "c", "c"],
            "seed": 0,
            "covariance": ["diag", "full"] * 3,
            "ari": [0.2, 0.9, 0.8, 0.1, 0.5, 0.5],  # c: the same ARI, left out
            "bic_per_sample": [1.0, 2.0, 1.0, 2.0, 0.0, 0.0],
            "heldout_loglik_per_sample": [0.0, 1.0, 1.0, 0.0, 0.0, 0.0],  # both right
            "pairs_respected": [5, 5, 9, 3, 0, 0],  # a tie, b right
        }
    )
    assert covariance_choice.agreement(rows) == {
        "BIC": "1 of 2",  # a wrong, b right (lower is better)
        "held-out likelihood": "2 of 2",
        "pairs respected": "1 of 2",
        "pairs respected, then BIC": "1 of 2",  # a's tie goes to the BIC, which is wrong there
    }
