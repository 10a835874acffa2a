r"""Figs. 4 and 5: 2-D PCA of the test embeddings mu(x), coloured by true label, VaDE next to DC-GMM.

    python -m experiments.fig_embeddings --dataset=fashion --num_constraints=6000
    python -m experiments.fig_embeddings --dataset=utkface_gender --architecture=vgg --vgg_filters=64,128 \
        --latent_dim=50 --constraint_fraction=2 --epochs=1000 --lr_decay_epochs=50

Trains VaDE (no constraints) and DC-GMM (--num_constraints) with run.py's flags, embeds the test split
with each, and projects each embedding on its own first two principal components. Writes results.csv,
embeddings.csv (method, pc1, pc2, label, cluster) and embeddings.png to --output_dir (default
docs/figures/embeddings).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from absl import app, flags
from sklearn.decomposition import PCA

from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments import fig_common, plots

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "methods", ["vade", "dcgmm"], "Methods whose embeddings are shown, left to right.", allow_override=True
)  # a flag of several runners; one process runs one of them
flags.DEFINE_float(
    "constraint_fraction",
    0.0,
    "If > 0, DC-GMM gets this many constraints per training sample (faces: 2, i.e. 2N) instead of --num_constraints.",
    allow_override=True,
)

FIGURE = "embeddings"


def project(model, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first two principal components of the embeddings mu(x), and the predicted clusters."""
    z = model.embed(x)
    clusters = model.predict(x, batch_size=1024, verbose=0).argmax(-1)
    return PCA(n_components=2).fit_transform(z), clusters


def plot(frame: pd.DataFrame, scores: pd.DataFrame, path: Path, title: str) -> None:
    """One scatter panel per method of ``frame``'s embedding projections (columns pc1, pc2, label, method), coloured
    by label and titled with that method's last scores, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(frame["method"]))
    fig, axes = plt.subplots(1, len(methods), figsize=(4.6 * len(methods), 4.4), squeeze=False)
    for ax, method in zip(axes[0], methods):
        part = frame[frame["method"] == method]
        points = ax.scatter(part["pc1"], part["pc2"], c=part["label"], cmap="tab10", s=3, alpha=0.6, rasterized=True)
        score = scores[scores["method"] == method].iloc[-1]
        ax.set_title(
            f"{plots.METHOD_NAMES.get(method, method)}: ACC {score['acc']:.2f}, NMI {score['nmi']:.2f}, "
            f"ARI {score['ari']:.2f}",
            fontsize=9,
        )
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    handles, labels = points.legend_elements()
    fig.legend(handles, labels, title="label", loc="center right", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.92, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def embeddings_figure(
    config: RunConfig,
    runtime: RuntimeConfig,
    output_dir: Path,
    runs: int,
    methods: Sequence[str],
    constraint_fraction: float = 0.0,
) -> pd.DataFrame:
    """Trains each method (``constraint_fraction`` N constraints if > 0), writes ``embeddings.csv`` and
    ``embeddings.png`` of the test split of ``config.seed`` to ``output_dir``; returns that seed's rows."""
    from dcgmm_tf.data import load_dataset

    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    methods = fig_common.available_methods(methods)
    if constraint_fraction > 0:
        n = fig_common.training_sample_count(data, config)
        config = dataclasses.replace(config, num_constraints=int(round(constraint_fraction * n)))
    configs = [dataclasses.replace(config, method=m) for m in methods]
    rows = fig_common.sweep(configs, data, runtime, output_dir / "results.csv", runs)
    x_test, y_test = fig_common.test_split(config, data)
    frames = []
    for method_config in configs:
        coords, clusters = project(fig_common.trained_model(method_config, data, runtime), x_test)
        frames.append(
            pd.DataFrame(
                {
                    "method": method_config.method,
                    "pc1": coords[:, 0],
                    "pc2": coords[:, 1],
                    "label": y_test,
                    "cluster": clusters,
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame.to_csv(output_dir / "embeddings.csv", index=False, float_format="%.5g")
    scores = rows[(rows["seed"] == config.seed) & (rows["epochs"] == config.epochs)]
    plot(
        frame,
        scores,
        output_dir / f"{FIGURE}.png",
        f"{data.name}: PCA of the test embeddings ({len(x_test)} samples, DC-GMM with "
        f"{config.num_constraints} constraints)\n{fig_common.schedule_note(config, runs)}",
    )
    return scores


def main(argv):
    del argv
    config, runtime, output_dir, runs = fig_common.figure_configs(FIGURE, FLAGS)
    scores = embeddings_figure(config, runtime, output_dir, runs, FLAGS.methods, FLAGS.constraint_fraction)
    print(scores[["method", "num_constraints", "acc", "nmi", "ari"]].to_string(index=False))


if __name__ == "__main__":
    fig_common.set_figure_defaults(FIGURE)
    app.run(exit_on_user_error(main))
