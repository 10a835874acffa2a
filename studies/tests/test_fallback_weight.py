"""The fallback-weight study, in-process on iris with tiny fits."""

import numpy as np
import pandas as pd
import pytest

from dcgmm_tf import ConstraintSet, metrics
from studies import fallback_weight
from studies import your_data_bench as bench


def test_a_row_per_fit_with_the_ari_of_each_scale():
    rows = pd.DataFrame(fallback_weight.fallback_rows(["iris"], [0], [30], bench.TINY_PARAMS))
    assert len(rows) == 1 and rows.half.item() == "tuning" and rows.num_pairs.item() == 30
    scales = list(fallback_weight.SHARES)
    assert list(rows.columns) == ["dataset", "half", "seed", "num_pairs", "deep", *scales]
    means = fallback_weight.mean_by_scale(rows)
    assert means.loc[("tuning", 30), "fits"] == 1
    np.testing.assert_allclose(means.loc[("tuning", 30), scales], rows[scales].iloc[0])


@pytest.mark.parametrize("truth", ["deep", "input"])
def test_each_share_returns_the_clustering_that_explains_the_data(truth):
    """The true classes against a random clustering: whichever of the two holds them, every share returns it (the
    input's as its mixture's posteriors, which may move a few samples)."""
    x, y = bench.load_set("iris")
    pairs = ConstraintSet.from_pairs(len(y), *bench.draw_pairs(y, 30, 0))
    noise = np.random.default_rng(0).integers(0, 3, len(y))
    clusterings = {"deep": y, "input": noise} if truth == "deep" else {"deep": noise, "input": y}
    row = fallback_weight.ari_by_scale(x, y, pairs, clusterings, "full")
    assert row["deep"] == metrics.ari(y, clusterings["deep"]) and (row["deep"] == 1.0) == (truth == "deep")
    assert all(row[share] == 1.0 if truth == "deep" else row[share] > 0.8 for share in fallback_weight.SHARES), row


def test_the_bernoulli_sets_are_refused():
    assert "digits" not in fallback_weight.SETS and "docstrings" in fallback_weight.SETS
    with pytest.raises(ValueError, match="modelled with the bernoulli likelihood"):
        fallback_weight.fallback_rows(["digits"], [0], [30], {**bench.TINY_PARAMS, "input_start": False})
