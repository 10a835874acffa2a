"""Shared parts of the figure runners: method selection, sweeps of configurations, plots.

Each figure runner imports :mod:`experiments.run`, so every flag of run.py (``--epochs``,
``--max_train_samples``, ``--architecture``, ...) applies to it as well; its ``main`` builds the configs
(``run.configs``) and varies them with ``dataclasses.replace``. Results CSVs and PNGs go to ``--output_dir``
(default under ``docs/figures/``); per-run models and logs go to ``--work_dir``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from absl import flags

from dcgmm_tf.config import METHODS, RunConfig, RuntimeConfig
from dcgmm_tf.data import DataSplits
from dcgmm_tf.recipe import model_inputs, run_dir_of, subsets
from experiments import plots, results, run

if TYPE_CHECKING:
    import keras

FLAGS = flags.FLAGS
METRIC_LABELS = {"ari": "ARI", "acc": "Accuracy", "nmi": "NMI"}

REPO = Path(__file__).resolve().parents[1]

flags.DEFINE_string("work_dir", None, "Where per-run models and logs go (default: results/<figure>).")


def set_figure_defaults(figure: str) -> None:
    """Point run.py's --output_dir at docs/figures/<figure> (call before `app.run`)."""
    FLAGS.set_default("output_dir", str(REPO / "docs" / "figures" / figure))


def figure_configs(figure: str, flag_values: flags.FlagValues) -> tuple[RunConfig, RuntimeConfig, Path, int]:
    """A figure runner's settings from its parsed flags, with the process settings applied (threads, determinism:
    ``dcgmm_tf.runtime.configure``; call once, from ``main``): the run config, the runtime config whose
    output_dir is the work dir (--work_dir, or results/<figure>), the figure's output folder (--output_dir) and
    --runs."""
    from dcgmm_tf.runtime import configure

    config, runtime = run.configs(flag_values)
    configure(runtime)
    work_dir = Path(flag_values.work_dir) if flag_values.work_dir else REPO / "results" / figure
    return (config, dataclasses.replace(runtime, output_dir=str(work_dir)), Path(runtime.output_dir), flag_values.runs)


def available_methods(requested: Sequence[str]) -> list[str]:
    """The requested methods that the library trains; the others are skipped with a warning."""
    missing = [m for m in requested if m not in METHODS]
    if missing:
        logging.warning("method(s) %s not available (known: %s); skipping them", missing, METHODS)
    methods = [m for m in requested if m in METHODS]
    if not methods:
        raise ValueError(f"none of the methods {list(requested)} is available; known: {list(METHODS)}")
    return methods


def schedule_note(config: RunConfig, runs: int) -> str:
    """One line stating the training schedule, for plot titles and logs."""
    n = config.max_train_samples or "all"
    if config.method in ("sdec", "cidec"):
        return (
            f"{n} training samples, {config.layer_pretrain_epochs} epochs per layer + {config.finetune_epochs} "
            f"fine-tuning epochs of autoencoder pretraining, at most {config.epochs} clustering epochs"
        )
    return (
        f"{n} training samples, {config.pretrain_epochs} pretraining + {config.epochs} training epochs, "
        f"{runs} run(s), {config.architecture} networks"
    )


def sweep(
    configs: Sequence[RunConfig], data: DataSplits, runtime: RuntimeConfig, csv_path: Path, runs_per_config: int
) -> pd.DataFrame:
    """Runs every config for seeds ``config.seed`` .. + ``runs_per_config`` - 1, appending rows (with a
    ``schedule`` column) to ``csv_path``; finished runs are skipped (``experiments.runs``). Returns all rows."""
    for config in configs:
        for seed in range(config.seed, config.seed + runs_per_config):
            run.run_once(
                dataclasses.replace(config, seed=seed),
                data,
                runtime,
                csv_path,
                extra={"schedule": schedule_note(config, runs_per_config)},
            )
    return results.read_rows(csv_path)


def plot_metrics(rows: pd.DataFrame, x: str, xlabel: str, path: Path, title: str) -> None:
    """One panel per metric (ARI, accuracy, NMI): mean and standard deviation over seeds, one line per method.

    The title gets one more line per method stating its training schedule (the rows' `schedule` column).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(METRIC_LABELS), figsize=(4.2 * len(METRIC_LABELS), 3.4), squeeze=False)
    for ax, (metric, label) in zip(axes[0], METRIC_LABELS.items()):
        for method, group in rows.groupby("method", sort=True):
            stats = group.groupby(x)[metric].agg(["mean", "std"]).reset_index()
            ax.errorbar(
                stats[x],
                stats["mean"],
                yerr=stats["std"].fillna(0),
                marker="o",
                capsize=3,
                label=plots.METHOD_NAMES.get(method, method),
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    schedules = [
        f"{plots.METHOD_NAMES.get(m, m)}: {'; '.join(sorted(set(g['schedule'])))}"
        for m, g in rows.groupby("method", sort=True)
    ]
    fig.suptitle("\n".join([title, *schedules]), fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def training_sample_count(data: DataSplits, config: RunConfig) -> int:
    """N: the number of training samples the runs use (after max_train_samples)."""
    n = len(data.x_train)
    return min(n, config.max_train_samples) if config.max_train_samples else n


def image_grid(images: np.ndarray) -> np.ndarray:
    """Tile images [rows, cols, H, W, C] into one array [rows*H, cols*W, C]."""
    rows, cols, h, w, c = images.shape
    return images.transpose(0, 2, 1, 3, 4).reshape(rows * h, cols * w, c)


def trained_model(config: RunConfig, data: DataSplits, runtime: RuntimeConfig) -> keras.Model:
    """The model that `sweep` trained (and saved) for ``config``, loaded for inference."""
    return load_model(
        run_dir_of(config, data.name, runtime) / "model.keras",
        "delete the figure's results.csv (or that run's row) to train it again, or pass the --work_dir "
        "of the earlier run",
    )


def load_model(path: str | Path, remedy: str) -> keras.Model:
    """A saved model for inference, checked against its checksum; ``FileNotFoundError`` or ``ValueError`` naming
    the file, what is wrong and ``remedy`` when it is missing, damaged or unreadable."""
    import keras

    import dcgmm_tf  # noqa: F401  (registers the serializable classes)
    from dcgmm_tf.storage import read_checked

    if not Path(path).is_file():
        raise FileNotFoundError(f"no trained model at {path}; {remedy}")
    model, problem = read_checked(path, lambda p: keras.saving.load_model(p, compile=False))
    if problem is not None:
        raise ValueError(f"the trained model {path} is damaged: {problem}; {remedy}")
    return model


def test_split(config: RunConfig, data: DataSplits) -> tuple[np.ndarray, np.ndarray]:
    """The test inputs and labels a run of ``config`` was evaluated on (its max_test_samples subset)."""
    inputs = model_inputs(subsets(data, config), config)
    return inputs.x_test, inputs.y_test
