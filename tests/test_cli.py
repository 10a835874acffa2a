"""The runner's command line end to end on a small subset of the real Fashion-MNIST (the recipe itself is tested in
this process in test_recipe.py)."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import toy_npz

REPO = Path(__file__).resolve().parents[1]
FASHION = Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
COLUMNS = [
    "dataset",
    "method",
    "seed",
    "num_constraints",
    "q",
    "alpha",
    "epochs",
    "acc",
    "nmi",
    "ari",
    "constraint_satisfaction",
    "train_seconds",
]


def run_cli(tmp_path, *args):
    cmd = [
        sys.executable,
        "-m",
        "experiments.run",
        "--dataset=fashion",
        "--max_train_samples=800",
        "--max_test_samples=300",
        "--epochs=2",
        "--pretrain_epochs=0",
        "--num_constraints=300",
        "--eval_every=1",
        "--verbose=0",
        f"--output_dir={tmp_path / 'out'}",
        f"--cache_dir={tmp_path / 'cache'}",
        *args,
    ]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(not FASHION.exists(), reason="needs the Debian package dataset-fashion-mnist (CI installs it)")
def test_cli_writes_results_summary_history_and_model(tmp_path):
    proc = run_cli(tmp_path, "--seed=5")  # several runs (--runs) are tested in this process: test_recipe.py
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "out" / "results.csv")
    assert set(COLUMNS) <= set(rows.columns)
    assert list(rows["seed"]) == [5]
    assert (rows["dataset"] == "fashion_mnist").all() and (rows["method"] == "dcgmm").all()
    assert rows["num_constraints"].tolist() == [300] and (rows["alpha"] == 1e4).all()
    assert 300 < rows["training_pairs"].item() <= 3 * 300  # the default spreads each answer to nearest neighbours
    assert rows[["acc", "nmi", "ari", "constraint_satisfaction"]].notna().all().all()
    assert ((rows["acc"] > 0.1) & (rows["acc"] <= 1)).all()
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert summary.loc[0, "runs"] == 1 and summary.loc[0, "acc_mean"] == pytest.approx(rows["acc"].item())
    run_dir = tmp_path / "out" / "runs" / "dcgmm-fashion_mnist-seed5"
    history = pd.read_csv(run_dir / "history.csv")
    assert len(history) == 2 and {"loss", "reconstruction", "cluster_kl", "constraint", "test_acc"} <= set(history)
    assert (run_dir / "model.keras").exists() and (run_dir / "tensorboard").is_dir()
    for picture in ("history.png", "confusion.png"):  # a picture of every run
        assert (run_dir / picture).stat().st_size > 10_000
    assert len(list((tmp_path / "cache").glob("*.weights.h5"))) == 1


def test_the_runners_console_shows_phases_and_no_errors_nan_or_retracing(tmp_path):
    """A run prints each phase with its time, an epoch line without the test scores of epochs it does not evaluate,
    and no line that reads as an error (TensorFlow's C++ log) or a retracing warning."""
    data = toy_npz(tmp_path, 200)
    cmd = [sys.executable, "-m", "experiments.run", f"--dataset={data}", "--epochs=3", "--pretrain_epochs=1"]
    cmd += [
        "--pair_tuning_epochs=1",
        "--restart_every=0",
        "--num_constraints=100",
        "--num_clusters=3",
        "--eval_every=2",
    ]
    cmd += ["--latent_dim=2", "--batch_size=32", f"--output_dir={tmp_path / 'out'}", f"--cache_dir={tmp_path / 'c'}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    console = proc.stdout + proc.stderr
    for phase in ("pretraining", "tuning with the pairs", "the start (latent_class)", "training"):
        assert re.search(rf"\] {re.escape(phase)} done in \d+\.\d s", console), phase
    assert not [line for line in console.splitlines() if re.match(r"E\d{4} ", line)]
    assert "retracing" not in console
    epoch_lines = [line for line in console.splitlines() if re.match(r"\d+/\d+ - \S+ - \S+/step - ", line)]
    assert len(epoch_lines) == 1 + 3  # the pretraining's epoch and the training's three
    assert ["test_acc" in line for line in epoch_lines[1:]] == [False, True, True]  # evaluated every 2 and at the end
    assert "nan" not in " ".join(epoch_lines)
