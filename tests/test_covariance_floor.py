"""The covariance-floor study, in-process on iris."""

import numpy as np
import pandas as pd
import pytest

from dcgmm_tf import metrics, starts
from dcgmm_tf.estimator import input_scaling
from experiments import covariance_floor
from experiments import your_data_bench as bench


def test_rows_per_set_seed_and_floor_score_the_estimators_input_gmm():
    rows = pd.DataFrame(covariance_floor.floor_rows(["iris"], [0], [1e-6, 10.0]))
    assert list(rows.floor) == [1e-6, 10.0] and (rows.half == "tuning").all()
    x, y = bench.load_set("iris")
    offset, scale = input_scaling(x, "gaussian")
    x = (x - offset) / scale
    default = starts.input_gmm(x, 3, 0, spread=scale)  # the estimator's floor
    assert rows.covariance[0] == default.covariance_type
    assert rows.ari[0] == pytest.approx(metrics.ari(y, default.predict(x)))
    assert rows.smallest_cluster[0] == np.bincount(default.predict(x)).min() and (rows.features == 4).all()
    assert rows.ari[0] > 0.8 and rows.ari[1] < rows.ari[0]  # a floor of 10 variances blurs iris's classes
    means = covariance_floor.mean_by_floor(rows)
    assert list(means.columns) == [1e-6, 10.0] and means.loc["tuning", 1e-6] == pytest.approx(rows.ari[0])
