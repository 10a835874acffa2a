r"""Appendix (generated faces): per cluster, the decoded cluster mean and samples from the cluster.

    python -m experiments.fig_samples --dataset=fashion --num_constraints=6000
    python -m experiments.fig_samples --dataset=fashion --model_path=results/embeddings/runs/.../model.keras

Row k shows E[x | z = mu_k] and then E[x | z] for z ~ N(mu_k, sigma_k^2). Clusters are ordered by the true
label they match best on the test split (Hungarian matching). Trains DC-GMM with run.py's flags unless
--model_path names a saved model. Writes clusters.csv (cluster, matched label, test samples, purity),
results.csv when it trains, and samples.png to --output_dir (default docs/figures/samples).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
from absl import app, flags
from scipy.optimize import linear_sum_assignment

from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments import fig_common

FLAGS = flags.FLAGS
flags.DEFINE_string("model_path", None, "A saved DC-GMM (.keras) to draw from instead of training one.")
flags.DEFINE_integer("samples_per_cluster", 8, "Generated samples per cluster (columns after the mean).")

FIGURE = "samples"


def cluster_table(clusters: np.ndarray, labels: np.ndarray, num_clusters: int) -> pd.DataFrame:
    """Per cluster: the true label matched to it (Hungarian), its test-sample count and its purity."""
    num_labels = int(max(labels.max() + 1, num_clusters))
    counts = np.zeros((num_clusters, num_labels), np.int64)
    np.add.at(counts, (clusters, labels), 1)
    rows, cols = linear_sum_assignment(-counts)
    matched = dict(zip(rows, cols))
    sizes = counts.sum(1)
    table = pd.DataFrame(
        {
            "cluster": np.arange(num_clusters),
            "matched_label": [matched[k] for k in range(num_clusters)],
            "test_samples": sizes,
            "purity": np.where(sizes > 0, counts.max(1) / np.maximum(sizes, 1), np.nan),
        }
    )
    return table.sort_values("matched_label", kind="stable").reset_index(drop=True)


def generate(model, clusters: np.ndarray, samples_per_cluster: int, image_shape, seed: int) -> np.ndarray:
    """Images [len(clusters), 1 + samples_per_cluster, H, W, C]: the decoded mean, then samples."""
    rows = []
    for k in clusters:
        mean = np.asarray(model.decode_mean(model.cluster_means[int(k)][None]))
        samples = model.sample(int(k), samples_per_cluster, seed=seed + int(k))
        rows.append(np.concatenate([mean, samples]).reshape(-1, *image_shape))
    return np.clip(np.stack(rows), 0.0, 1.0)


def plot(images: np.ndarray, table: pd.DataFrame, path: Path, title: str) -> None:
    """A grid of ``images`` [K, 1 + samples, H, W, C], one row per cluster (its mean first, then its samples),
    each row named by ``table``'s cluster, matched label and purity, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = fig_common.image_grid(images)
    rows, cols, h, w, c = images.shape
    fig, ax = plt.subplots(figsize=(0.8 * cols + 1.6, 0.8 * rows + 0.8))
    ax.imshow(grid[..., 0] if c == 1 else grid, cmap="gray" if c == 1 else None, vmin=0, vmax=1)
    ax.set_xticks([w / 2, w * (cols + 1) / 2], ["cluster mean", "samples from the cluster"], fontsize=8)
    ax.set_yticks(
        [h * (r + 0.5) for r in range(rows)],
        [
            f"cluster {k}: label {m} ({p:.0%})" if size else f"cluster {k}: empty on test"
            for k, m, p, size in zip(table["cluster"], table["matched_label"], table["purity"], table["test_samples"])
        ],
        fontsize=7,
    )
    ax.axvline(w - 0.5, color="red", linewidth=1)
    ax.set_title(title, fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def samples_figure(
    config: RunConfig,
    runtime: RuntimeConfig,
    output_dir: Path,
    runs: int,
    model_path: str | None = None,
    samples_per_cluster: int = 8,
) -> pd.DataFrame:
    """Draws the cluster means and samples of the DC-GMM of ``model_path`` (or of one trained with ``config``) into
    ``<output_dir>/samples.png``; writes and returns the cluster table (matched label, size, purity)."""
    from dcgmm_tf.data import load_dataset

    config = dataclasses.replace(config, method="dcgmm")
    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    if data.image_shape is None:
        raise ValueError(f"{data.name} holds feature vectors, not images: there is nothing to draw")
    if model_path:
        model = fig_common.load_model(model_path, "pass a model.keras that run.py saved")
        source = f"model {model_path}"
    else:
        fig_common.sweep([config], data, runtime, output_dir / "results.csv", runs)
        model = fig_common.trained_model(config, data, runtime)
        source = fig_common.schedule_note(config, runs)
    x_test, y_test = fig_common.test_split(config, data)
    if model.sample_shape != x_test.shape[1:]:
        x_test = x_test.reshape(len(x_test), *model.sample_shape)
    clusters = model.predict(x_test, batch_size=runtime.eval_batch_size, verbose=0).argmax(-1)
    table = cluster_table(clusters, y_test, model.num_clusters)
    output_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(output_dir / "clusters.csv", index=False, float_format="%.4f")
    images = generate(model, table["cluster"].to_numpy(), samples_per_cluster, data.image_shape, config.seed)
    plot(images, table, output_dir / f"{FIGURE}.png", f"{data.name}: DC-GMM cluster means and samples\n{source}")
    return table


def main(argv):
    del argv
    config, runtime, output_dir, runs = fig_common.figure_configs(FIGURE, FLAGS)
    table = samples_figure(config, runtime, output_dir, runs, FLAGS.model_path, FLAGS.samples_per_cluster)
    print(table.to_string(index=False))


if __name__ == "__main__":
    fig_common.set_figure_defaults(FIGURE)
    app.run(exit_on_user_error(main))
