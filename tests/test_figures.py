"""The figure runners end to end on a tiny image-folder data set, and their helpers."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from absl import flags
from absl.testing import flagsaver
from PIL import Image

from experiments import fig_common, fig_samples, run

REPO = Path(__file__).resolve().parents[1]
TINY = ["--image_size=8", "--epochs=1", "--pretrain_epochs=1", "--batch_size=16", "--pretrain_batch_size=16",
        "--verbose=0", "--eval_every=1"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A folder of 3 classes x 20 grayscale 8x8 images (class c lights up rows 3c-3c+1), and a work area."""
    root = tmp_path_factory.mktemp("figures")
    rng = np.random.default_rng(0)
    for c in range(3):
        (root / "shapes" / f"class{c}").mkdir(parents=True)
        for n in range(20):
            image = (rng.random((8, 8)) * 60).astype(np.uint8)
            image[3 * c:3 * c + 2] = 255
            Image.fromarray(image, "L").save(root / "shapes" / f"class{c}" / f"{n}.png")
    return root


def run_figure(module, root, name, *args):
    cmd = [sys.executable, "-m", f"experiments.{module}", f"--dataset={root / 'shapes'}",
           f"--output_dir={root / name}", f"--work_dir={root / (name + '_work')}", f"--cache_dir={root / 'cache'}",
           *TINY, *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_constraints_figure_sweeps_fractions_of_n(tiny):
    proc = run_figure("fig_constraints", tiny, "constraints", "--methods=dcgmm,nosuchmethod",
                      "--fractions=0.1,0.5")
    assert "nosuchmethod" in proc.stderr  # skipped with a warning
    rows = pd.read_csv(tiny / "constraints" / "results.csv")
    assert rows["num_constraints"].tolist() == [5, 24]  # N = 48 training images (80% of 60)
    assert (rows["method"] == "dcgmm").all() and rows[["acc", "nmi", "ari"]].notna().all().all()
    assert rows["schedule"].str.contains("1 pretraining \\+ 1 training epochs").all()
    assert (tiny / "constraints" / "constraints.png").stat().st_size > 10_000


def test_noise_figure_uses_the_paper_confidence(tiny):
    run_figure("fig_noise", tiny, "noise", "--methods=dcgmm", "--noise_levels=0.2", "--cidec_noise_penalties=")
    rows = pd.read_csv(tiny / "noise" / "results.csv")
    assert rows["q"].tolist() == [0.2] and rows["num_constraints"].tolist() == [48]
    assert rows["alpha"].iloc[0] == pytest.approx(1000 * math.log(0.8 / 0.2), rel=1e-5)
    assert (tiny / "noise" / "noise.png").exists()


def test_embedding_and_sample_figures_with_vgg_networks(tiny):
    vgg = ["--architecture=vgg", "--vgg_filters=4,8", "--num_constraints=40"]
    run_figure("fig_embeddings", tiny, "embeddings", *vgg)
    rows = pd.read_csv(tiny / "embeddings" / "results.csv")
    assert rows["method"].tolist() == ["vade", "dcgmm"] and rows["num_constraints"].tolist() == [0, 40]
    points = pd.read_csv(tiny / "embeddings" / "embeddings.csv")
    assert points.groupby("method").size().to_dict() == {"dcgmm": 12, "vade": 12}
    assert set(points["label"]) <= {0, 1, 2} and points[["pc1", "pc2"]].notna().all().all()
    assert (tiny / "embeddings" / "embeddings.png").exists()

    model = tiny / "embeddings_work" / "runs" / "dcgmm-shapes-seed0" / "model.keras"
    run_figure("fig_samples", tiny, "samples", *vgg, f"--model_path={model}", "--samples_per_cluster=3")
    clusters = pd.read_csv(tiny / "samples" / "clusters.csv")
    assert sorted(clusters["cluster"]) == [0, 1, 2] and clusters["test_samples"].sum() == 12
    with Image.open(tiny / "samples" / "samples.png") as image:
        assert image.size[0] > 100 and image.size[1] > 100


def test_image_grid_tiles_rows_and_columns():
    images = np.arange(2 * 3 * 2 * 2 * 1).reshape(2, 3, 2, 2, 1)
    grid = fig_common.image_grid(images)
    assert grid.shape == (4, 6, 1)
    np.testing.assert_array_equal(grid[2:4, 4:6], images[1, 2])
    np.testing.assert_array_equal(grid[0:2, 2:4], images[0, 1])


def test_cluster_table_matches_clusters_to_labels():
    clusters = np.array([2, 2, 2, 0, 0, 1, 1, 1, 1])
    labels = np.array([0, 0, 1, 1, 1, 2, 2, 2, 0])
    table = fig_samples.cluster_table(clusters, labels, 4)
    assert table["cluster"].tolist() == [2, 0, 1, 3]  # ordered by matched label
    assert table["matched_label"].tolist()[:3] == [0, 1, 2]
    np.testing.assert_allclose(table["purity"].tolist()[:3], [2 / 3, 1.0, 0.75])
    assert table["test_samples"].tolist() == [3, 2, 4, 0] and np.isnan(table["purity"].iloc[3])


def test_available_methods_keeps_known_ones():
    assert fig_common.available_methods(["vade", "nosuch", "dcgmm"]) == ["vade", "dcgmm"]
    with pytest.raises(ValueError, match="none of the methods"):
        fig_common.available_methods(["nosuch"])


def test_sweep_appends_rows_and_skips_settings_already_done(tmp_path, monkeypatch):
    calls = []

    def fake_run_once(data, seed, output_dir):
        calls.append((flags.FLAGS.method, flags.FLAGS.num_constraints, seed))
        return {"method": flags.FLAGS.method, "seed": seed, "num_constraints": flags.FLAGS.num_constraints,
                "q": flags.FLAGS.q, "epochs": flags.FLAGS.epochs, "ari": 0.5}

    monkeypatch.setattr(run, "run_once", fake_run_once)
    flags.FLAGS.mark_as_parsed()
    settings = [{"method": "dcgmm", "num_constraints": n} for n in (10, 20)]
    with flagsaver.flagsaver(output_dir=str(tmp_path), work_dir=str(tmp_path / "work"), runs=2, seed=3,
                             epochs=7, q=0.0, num_constraints=6000):
        rows = fig_common.sweep(None, settings, "test")
        assert calls == [("dcgmm", 10, 3), ("dcgmm", 10, 4), ("dcgmm", 20, 3), ("dcgmm", 20, 4)]
        assert flags.FLAGS.num_constraints == 6000  # restored
        fig_common.sweep(None, settings + [{"method": "dcgmm", "num_constraints": 30}], "test")
    assert calls[4:] == [("dcgmm", 30, 3), ("dcgmm", 30, 4)]
    assert len(rows) == 4 and len(pd.read_csv(tmp_path / "results.csv")) == 6
    assert rows["schedule"].str.contains("7 training epochs, 2 run").all()
