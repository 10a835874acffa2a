"""The covariance-floor study, in-process on iris."""

import numpy as np
import pandas as pd
import pytest

from dcgmm_tf import metrics, starts
from dcgmm_tf.sizing import input_scaling
from studies import covariance_floor
from studies import your_data_bench as bench


def test_rows_per_set_seed_floor_and_choice_floor_score_the_estimators_input_gmm():
    choice = starts.INPUT_GMM_CHOICE_FLOOR
    rows = pd.DataFrame(covariance_floor.floor_rows(["iris"], [0], [choice, 10.0]))
    assert list(rows.floor) == [choice, 10.0, 10.0] and list(rows.choice_floor) == [choice, 10.0, choice]
    assert (rows.half == "tuning").all()
    x, y = bench.load_set("iris")
    offset, scale = input_scaling(x, "gaussian")
    x = (x - offset) / scale
    for row in rows.itertuples():
        gmm = starts.input_gmm(x, 3, 0, spread=scale, covariance_floor=row.floor, choice_floor=row.choice_floor)
        assert row.covariance == gmm.covariance_type
        assert row.ari == pytest.approx(metrics.ari(y, gmm.predict(x)))
        assert row.smallest_cluster == np.bincount(gmm.predict(x), minlength=3).min() and row.features == 4
    assert rows.ari[0] > 0.8 and rows.ari[1] < rows.ari[0]  # a floor of 10 variances blurs iris's classes
    same, at_choice = (covariance_floor.mean_by_floor(rows, c) for c in (covariance_floor.SAME, choice))
    assert list(same.columns) == list(at_choice.columns) == [choice, 10.0]
    assert same.loc["tuning", choice] == at_choice.loc["tuning", choice] == pytest.approx(rows.ari[0])
    assert same.loc["tuning", 10.0] == pytest.approx(rows.ari[1])
    assert at_choice.loc["tuning", 10.0] == pytest.approx(rows.ari[2])
