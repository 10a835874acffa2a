"""experiments.your_data in this process, on the tiny schedule: its parts give one row per fit."""

import numpy as np
import pandas as pd
import pytest
from absl import flags

from experiments import your_data


def test_small_part_from_the_flags_writes_a_row_per_fit(tmp_path):
    values = flags.FLAGS
    values.unparse_flags()
    try:
        values(["your_data", "--part=small", "--tiny", "--seeds=0", "--pairs=40", f"--output_dir={tmp_path}"])
        your_data.main([])
    finally:
        values.unparse_flags()
    rows = pd.read_csv(tmp_path / "small.csv")
    assert rows[["dataset", "pairs"]].values.tolist() == [
        ["wine", 0],
        ["wine", 40],
        ["breast_cancer", 0],
        ["breast_cancer", 40],
    ]
    assert (rows["epochs"] == 2).all() and (rows["batch_size"] == 32).all()  # the tiny schedule, not the defaults
    assert rows["ari"].between(-1, 1).all() and (rows["kmeans_ari"] > 0.5).all()
    assert rows["clusters_used"].between(1, 3).all()


def test_num_clusters_part_chooses_and_trains_at_both_k(tmp_path):
    tiny = your_data.tiny_schedule(2, 0)
    chosen = pd.DataFrame(
        your_data.num_clusters([0], ["blobs"], ["both", "must"], True, tmp_path, tiny, candidates=range(4, 9))
    )
    assert chosen["link_type"].tolist() == ["both", "must"] and (chosen["true_k"] == 6).all()
    assert chosen["chosen_k"].between(4, 8).all()
    both = chosen.iloc[0]
    assert 0 < both["acc_true_k"] <= 1 and 0 < both["acc_chosen"] <= 1
    assert np.isnan(chosen.iloc[1].get("acc_true_k", np.nan))  # trained with both link types only


def test_an_unknown_part_is_refused_by_the_flag():
    values = flags.FLAGS
    values.unparse_flags()
    try:
        with pytest.raises(flags.IllegalFlagValueError):
            values(["your_data", "--part=nosuch"])
    finally:
        values.unparse_flags()
