"""The figure and Table 1 drivers end to end in this process on a tiny image-folder data set, and their helpers."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from dcgmm_tf import recipe
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.data import DataSplits
from dcgmm_tf.records import RunResult, TrainedModel
from experiments import fig_common, fig_constraints, fig_embeddings, fig_noise, fig_samples, table1


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A folder of 3 classes x 20 grayscale 8x8 images (class c lights up rows 3c-3c+1), and a work area."""
    root = tmp_path_factory.mktemp("figures")
    rng = np.random.default_rng(0)
    for c in range(3):
        (root / "shapes" / f"class{c}").mkdir(parents=True)
        for n in range(20):
            image = (rng.random((8, 8)) * 60).astype(np.uint8)
            image[3 * c : 3 * c + 2] = 255
            Image.fromarray(image, "L").save(root / "shapes" / f"class{c}" / f"{n}.png")
    return root


def settings(root, name, **changes):
    """The tiny run config on the image folder and a runtime config writing to <root>/<name>_work."""
    config = RunConfig(
        dataset=str(root / "shapes"),
        image_size=8,
        epochs=1,
        pretrain_epochs=1,
        pair_tuning_epochs=0,
        batch_size=16,
        pretrain_batch_size=16,
        **changes,
    )
    runtime = RuntimeConfig(
        deterministic=False,
        verbose=0,
        eval_every=1,
        output_dir=str(root / f"{name}_work"),
        cache_dir=str(root / "cache"),
    )
    return config, runtime


@pytest.mark.slow
def test_constraints_figure_sweeps_fractions_of_n(tiny, caplog):
    config, runtime = settings(tiny, "constraints")
    fig_constraints.constraints_figure(config, runtime, tiny / "constraints", 1, ["dcgmm", "nosuchmethod"], [0.1, 0.5])
    assert "nosuchmethod" in caplog.text  # skipped with a warning
    rows = pd.read_csv(tiny / "constraints" / "results.csv")
    assert rows["num_constraints"].tolist() == [5, 24]  # N = 48 training images (80% of 60)
    assert (rows["method"] == "dcgmm").all() and rows[["acc", "nmi", "ari"]].notna().all().all()
    assert (tiny / "constraints_work" / "runs" / "dcgmm-shapes-seed0" / "confusion.png").exists()
    assert rows["schedule"].str.contains("1 pretraining \\+ 1 training epochs").all()
    assert (tiny / "constraints" / "constraints.png").stat().st_size > 10_000


def test_noise_figure_uses_the_paper_confidence(tiny):
    config, runtime = settings(tiny, "noise")
    fig_noise.noise_figure(config, runtime, tiny / "noise", 1, ["dcgmm"], [0.2], 1.0)
    rows = pd.read_csv(tiny / "noise" / "results.csv")
    assert rows["q"].tolist() == [0.2] and rows["num_constraints"].tolist() == [48]
    assert rows["alpha"].iloc[0] == pytest.approx(1000 * math.log(0.8 / 0.2), rel=1e-5)
    assert (tiny / "noise" / "noise.png").exists()
    with pytest.raises(ValueError, match="one value per noise level"):
        fig_noise.noise_figure(config, runtime, tiny / "noise", 1, ["cidec"], [0.1, 0.2], 1.0, [0.01])


def test_noise_figure_gives_cidec_the_paper_penalty_on_its_must_links(tiny, monkeypatch):
    config, runtime = settings(tiny, "noise")
    planned = []

    class Planned(Exception):
        pass

    def sweep(configs, *args):
        planned.extend(configs)
        raise Planned  # the plan is what this test checks, not the training

    monkeypatch.setattr(fig_noise.fig_common, "sweep", sweep)
    with pytest.raises(Planned):
        fig_noise.noise_figure(config, runtime, tiny / "noise", 1, ["cidec"], [0.1, 0.3], 1.0, [0.01, 0.001])
    settings_seen = [(c.q, c.cidec_ml_penalty, c.cidec_cl_penalty) for c in planned]
    assert settings_seen == [(0.1, 0.01, config.cidec_cl_penalty), (0.3, 0.001, config.cidec_cl_penalty)]


@pytest.mark.slow
def test_embedding_and_sample_figures_with_vgg_networks(tiny):
    config, runtime = settings(tiny, "embeddings", architecture="vgg", vgg_filters=(4, 8), num_constraints=40)
    fig_embeddings.embeddings_figure(config, runtime, tiny / "embeddings", 1, ["vade", "dcgmm"])
    rows = pd.read_csv(tiny / "embeddings" / "results.csv")
    assert rows["method"].tolist() == ["vade", "dcgmm"] and rows["num_constraints"].tolist() == [0, 40]
    points = pd.read_csv(tiny / "embeddings" / "embeddings.csv")
    assert points.groupby("method").size().to_dict() == {"dcgmm": 12, "vade": 12}
    assert set(points["label"]) <= {0, 1, 2} and points[["pc1", "pc2"]].notna().all().all()
    assert (tiny / "embeddings" / "embeddings.png").exists()

    model = tiny / "embeddings_work" / "runs" / "dcgmm-shapes-seed0" / "model.keras"
    fig_samples.samples_figure(config, runtime, tiny / "samples", 1, str(model), samples_per_cluster=3)
    clusters = pd.read_csv(tiny / "samples" / "clusters.csv")
    assert sorted(clusters["cluster"]) == [0, 1, 2] and clusters["test_samples"].sum() == 12
    with Image.open(tiny / "samples" / "samples.png") as image:
        assert image.size[0] > 100 and image.size[1] > 100


@pytest.mark.slow
def test_table1_runs_each_method_with_its_overrides_and_joins_the_paper(tiny):
    config, runtime = settings(tiny, "table1", num_constraints=20)
    runtime = dataclasses.replace(runtime, output_dir=str(tiny / "table1"))
    method_configs = {
        "pckmeans": dataclasses.replace(config, method="pckmeans", epochs=3),
        "dcgmm": dataclasses.replace(config, epochs=2),
    }
    table = table1.table1(method_configs, runtime, [str(tiny / "shapes")], 2)
    rows = pd.read_csv(tiny / "table1" / "results.csv")
    assert rows[["method", "seed", "epochs"]].values.tolist() == [
        ["pckmeans", 0, 3],
        ["dcgmm", 0, 2],
        ["pckmeans", 1, 3],
        ["dcgmm", 1, 2],
    ]
    assert table["runs"].tolist() == [2] * 6 and table["measured"].str.contains("±").all()
    assert "| shapes | ACC |" in (tiny / "table1" / "table1.md").read_text()
    assert (tiny / "table1" / "table1.png").stat().st_size > 10_000
    again = table1.table1(method_configs, runtime, [str(tiny / "shapes")], 2, table_only=True)
    pd.testing.assert_frame_equal(again, table)
    assert len(pd.read_csv(tiny / "table1" / "results.csv")) == 4  # nothing ran again


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


def test_sweep_appends_rows_and_skips_configs_already_done(tmp_path, monkeypatch):
    calls = []

    def fake_train_and_evaluate(config, data, runtime, callbacks=None):
        calls.append((config.method, config.num_constraints, config.seed))
        row = {
            "dataset": data.name,
            "method": config.method,
            "seed": config.seed,
            "acc": 0.5,
            "nmi": 0.5,
            "num_constraints": config.num_constraints,
            "q": config.q,
            "epochs": config.epochs,
            "ari": 0.5,
            "config": config.key(),
        }
        return RunResult(row, TrainedModel(None, {}, np.nan), np.array([0, 1]), np.array([0, 1]))

    monkeypatch.setattr(recipe, "train_and_evaluate", fake_train_and_evaluate)
    data = DataSplits(
        np.zeros((4, 2), np.float32), np.arange(4), np.zeros((2, 2), np.float32), np.arange(2), "d", "bernoulli"
    )
    configs = [RunConfig(seed=3, epochs=7, num_constraints=n) for n in (10, 20)]
    runtime = RuntimeConfig(output_dir=str(tmp_path / "work"))
    rows = fig_common.sweep(configs, data, runtime, tmp_path / "results.csv", 2)
    assert calls == [("dcgmm", 10, 3), ("dcgmm", 10, 4), ("dcgmm", 20, 3), ("dcgmm", 20, 4)]
    fig_common.sweep(
        configs + [RunConfig(seed=3, epochs=7, num_constraints=30)], data, runtime, tmp_path / "results.csv", 2
    )
    assert calls[4:] == [("dcgmm", 30, 3), ("dcgmm", 30, 4)]
    assert len(rows) == 4 and len(pd.read_csv(tmp_path / "results.csv")) == 6
    assert rows["schedule"].str.contains("7 training epochs, 2 run").all()
