"""Shared parts of the figure runners: method selection, sweeps over run.py's `run_once`, plots.

Each figure runner imports :mod:`experiments.run`, so every training flag of run.py (``--epochs``,
``--max_train_samples``, ``--architecture``, ...) applies to it as well. Results CSVs and PNGs go to
``--output_dir`` (default under ``docs/figures/``); per-run models and logs go to ``--work_dir``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
from absl import flags, logging

from experiments import results, run

FLAGS = flags.FLAGS
METRIC_LABELS = {"ari": "ARI", "acc": "Accuracy", "nmi": "NMI"}
METHOD_NAMES = {"dcgmm": "DC-GMM", "vade": "VaDE", "cidec": "C-IDEC", "sdec": "SDEC", "pckmeans": "PCKMeans"}

flags.DEFINE_string("work_dir", None, "Where per-run models and logs go (default: results/<figure>).")


def set_figure_defaults(figure: str) -> None:
    """Point run.py's --output_dir at docs/figures/<figure> (call before `app.run`)."""
    FLAGS.set_default("output_dir", str(run.REPO / "docs" / "figures" / figure))


def work_dir(figure: str) -> Path:
    """Where the runs of `figure` keep their models and logs: --work_dir, or results/<figure>."""
    return Path(FLAGS.work_dir) if FLAGS.work_dir else run.REPO / "results" / figure


def available_methods(requested: Sequence[str]) -> list[str]:
    """The requested methods that run.py's --method knows; the others are skipped with a warning."""
    known = FLAGS["method"].parser.enum_values
    missing = [m for m in requested if m not in known]
    if missing:
        logging.warning("method(s) %s not available in experiments/run.py (known: %s); skipping them",
                        missing, known)
    methods = [m for m in requested if m in known]
    if not methods:
        raise ValueError(f"none of the methods {list(requested)} is available; known: {known}")
    return methods


@contextlib.contextmanager
def flag_values(**values) -> Iterator[None]:
    """Temporarily set run.py flags."""
    saved = {name: FLAGS[name].value for name in values}
    try:
        for name, value in values.items():
            FLAGS[name].value = value
        yield
    finally:
        for name, value in saved.items():
            FLAGS[name].value = value


def schedule_note() -> str:
    """One line stating the training schedule, for plot titles and logs."""
    n = FLAGS.max_train_samples or "all"
    if FLAGS.method in ("sdec", "cidec"):
        return (f"{n} training samples, {FLAGS.layer_pretrain_epochs} epochs per layer + {FLAGS.finetune_epochs} "
                f"fine-tuning epochs of autoencoder pretraining, at most {FLAGS.epochs} clustering epochs")
    return (f"{n} training samples, {FLAGS.pretrain_epochs} pretraining + {FLAGS.epochs} training epochs, "
            f"{FLAGS.runs} run(s), {FLAGS.architecture} networks")


def sweep(data, settings: Sequence[dict], figure: str) -> pd.DataFrame:
    """Run `run.run_once` for every flag setting and seed, appending rows to <output_dir>/results.csv.

    Rows already in the CSV (same method, seed, number of constraints, q and epochs) are not run again, so
    an interrupted sweep resumes; delete the CSV to start over. Returns all rows of the CSV.
    """
    csv_path = Path(FLAGS.output_dir) / "results.csv"
    keys = ("method", "seed", "num_constraints", "q", "epochs")
    for setting in settings:
        for seed in range(FLAGS.seed, FLAGS.seed + FLAGS.runs):
            with flag_values(**setting):
                done = results.read_rows(csv_path)
                expected = {"method": FLAGS.method, "seed": seed, "q": FLAGS.q, "epochs": FLAGS.epochs,
                            "num_constraints": 0 if FLAGS.method == "vade" else FLAGS.num_constraints}
                if len(done) and (done[list(keys)] == pd.Series(expected)[list(keys)]).all(axis=1).any():
                    logging.info("skipping %s (already in %s)", expected, csv_path)
                    continue
                row = run.run_once(data, seed, work_dir(figure))
                row["schedule"] = schedule_note()
            results.append_row(csv_path, row)
            logging.info("%s", row)
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
            ax.errorbar(stats[x], stats["mean"], yerr=stats["std"].fillna(0), marker="o", capsize=3,
                        label=METHOD_NAMES.get(method, method))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    schedules = [f"{METHOD_NAMES.get(m, m)}: {'; '.join(sorted(set(g['schedule'])))}"
                 for m, g in rows.groupby("method", sort=True)]
    fig.suptitle("\n".join([title, *schedules]), fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def training_sample_count(data) -> int:
    """N: the number of training samples the runs use (after --max_train_samples)."""
    n = len(data.x_train)
    return min(n, FLAGS.max_train_samples) if FLAGS.max_train_samples else n


def image_grid(images: np.ndarray) -> np.ndarray:
    """Tile images [rows, cols, H, W, C] into one array [rows*H, cols*W, C]."""
    rows, cols, h, w, c = images.shape
    return images.transpose(0, 2, 1, 3, 4).reshape(rows * h, cols * w, c)


def trained_model(data, method: str, seed: int, figure: str):
    """The model that `sweep` trained (and run.py saved) for `method` and `seed`."""
    import keras

    import dcgmm_tf  # noqa: F401  (registers the serializable classes)

    path = work_dir(figure) / "runs" / f"{method}-{data.name}-seed{seed}" / "model.keras"
    if not path.is_file():
        raise FileNotFoundError(f"no trained model at {path}; delete {FLAGS.output_dir}/results.csv to retrain "
                                "or pass the --work_dir of the earlier run")
    return keras.saving.load_model(path, compile=False)  # inference only


def test_split(data, seed: int):
    """The test inputs and labels a run with `seed` was evaluated on (run.py's --max_test_samples subset)."""
    _, _, x_test, y_test = run._subsets(data, seed)  # pylint: disable=protected-access
    return x_test, y_test
