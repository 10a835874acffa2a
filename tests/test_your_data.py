"""experiments.your_data on the tiny schedule: its parts give one row per fit.

The runner defines its own ``--output_dir``, ``--cache_dir`` and ``--epochs``, which clash with the other runners'
flags in one process, so it runs in its own process here.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def run_python(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python *args`` in the repository, its output captured."""
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_small_part_from_the_flags_writes_a_row_per_fit(tmp_path):
    proc = run_python(
        "-m", "experiments.your_data", "--part=small", "--tiny", "--seeds=0", "--pairs=40", f"--output_dir={tmp_path}"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
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
    code = (
        "import json; from pathlib import Path; from experiments import your_data; "
        f"rows = your_data.num_clusters([0], ['blobs'], ['both', 'must'], True, Path({str(tmp_path)!r}), "
        "your_data.tiny_schedule(2, 0), candidates=range(4, 9)); print(json.dumps(rows))"
    )
    proc = run_python("-c", code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    chosen = pd.DataFrame(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert chosen["link_type"].tolist() == ["both", "must"] and (chosen["true_k"] == 6).all()
    assert chosen["chosen_k"].between(4, 8).all()
    both = chosen.iloc[0]
    assert 0 < both["acc_true_k"] <= 1 and 0 < both["acc_chosen"] <= 1
    assert np.isnan(chosen.iloc[1].get("acc_true_k", np.nan))  # trained with both link types only


def test_an_unknown_part_is_refused_by_the_flag():
    proc = run_python("-m", "experiments.your_data", "--part=nosuch", timeout=300)
    assert proc.returncode == 1 and "--part" in proc.stderr and "Traceback" not in proc.stderr
