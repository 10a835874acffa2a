"""studies.your_data on the tiny schedule: its parts give one row per fit.

The parts run in the test's process (``studies.your_data_parts``); the runner's own flags (``--output_dir``,
``--cache_dir`` and ``--epochs`` clash with the other runners' in one process) are checked in a process of their
own, which stops at the flags before TensorFlow is imported.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from studies import your_data_parts

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_small_part_writes_a_row_per_fit(tmp_path):
    rows = your_data_parts.small([0], 40, {**your_data_parts.tiny_schedule(2, 0), "pretrain_epochs": 0})
    your_data_parts.write_rows(rows, tmp_path, "small")
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
    your_data_parts.write_rows(rows.head(1).to_dict("records"), tmp_path, "small")  # appended, one header
    assert len(pd.read_csv(tmp_path / "small.csv")) == 5


@pytest.mark.slow
def test_num_clusters_part_chooses_and_trains_at_both_k(tmp_path):
    rows = your_data_parts.num_clusters(
        [0], ["blobs"], ["both", "must"], True, tmp_path, your_data_parts.tiny_schedule(2, 0), candidates=range(5, 8)
    )
    chosen = pd.DataFrame(rows)
    assert chosen["link_type"].tolist() == ["both", "must"] and (chosen["true_k"] == 6).all()
    assert chosen["chosen_k"].between(5, 7).all()
    ties = [[int(k) for k in tied.split()] for tied in chosen["tied_k"]]  # the choice is one of the K that tie
    assert all(k in tied and set(tied) <= {5, 6, 7} for k, tied in zip(chosen["chosen_k"], ties))
    both = chosen.iloc[0]
    assert 0 < both["acc_true_k"] <= 1 and 0 < both["acc_chosen"] <= 1
    assert 5 <= both["probe_k"] <= 7 and both["probe_scores"] == ""  # the "auto" fit, without probes by default
    assert np.isnan(chosen.iloc[1].get("acc_true_k", np.nan))  # trained with both link types only


@pytest.mark.parametrize(
    "flag", ["--part=nosuch", "--probe_epochs=some", "--pair_tuning_epochs=-1", "--choice_tuning_epochs=x"]
)
def test_a_bad_flag_is_refused_by_the_flag(flag):
    proc = subprocess.run(
        [sys.executable, "-m", "studies.your_data", flag],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    name = flag.split("=")[0]
    assert proc.returncode == 1 and name in proc.stderr and "Traceback" not in proc.stderr
    assert "tensorflow" not in proc.stderr.lower()  # refused at the flags, before the library is imported
