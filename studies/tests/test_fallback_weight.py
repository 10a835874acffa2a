"""The fallback-weight study, in-process on iris with tiny fits."""

import numpy as np
import pandas as pd
import pytest

from studies import fallback_weight
from studies import your_data_bench as bench


def test_a_row_per_fit_with_the_ari_of_each_scale():
    rows = pd.DataFrame(fallback_weight.fallback_rows(["iris"], [0], [30], bench.TINY_PARAMS))
    assert len(rows) == 1 and rows.half.item() == "tuning" and rows.num_pairs.item() == 30
    scales = [f"scale {scale:g}" for scale in fallback_weight.SCALES]
    scales += [f"rate {rate:g}" for rate in fallback_weight.RATES]
    assert rows[["deep", *scales]].apply(lambda column: column.between(-1, 1)).all(axis=None)
    means = fallback_weight.mean_by_scale(rows)
    assert means.loc[("tuning", 30), "fits"] == 1
    np.testing.assert_allclose(means.loc[("tuning", 30), scales], rows[scales].iloc[0])


def test_the_bernoulli_sets_are_refused():
    assert "digits" not in fallback_weight.SETS and "docstrings" in fallback_weight.SETS
    with pytest.raises(ValueError, match="modelled with the bernoulli likelihood"):
        fallback_weight.fallback_rows(["digits"], [0], [30], {**bench.TINY_PARAMS, "input_start": False})
