"""Runs of configurations, each recorded as one row of a results CSV and never run twice."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.data import DataSplits
from dcgmm_tf.evaluation import RunResult, train_and_evaluate
from dcgmm_tf.prepared import run_dir_of
from experiments import results


def identity(config: RunConfig, data: DataSplits) -> dict[str, Any]:
    """The columns that identify a finished run in a results CSV: data set, method, seed and configuration key."""
    return {"dataset": data.name, "method": config.method, "seed": config.seed, "config": config.key()}


def run_once(
    config: RunConfig,
    data: DataSplits,
    runtime: RuntimeConfig,
    csv_path: str | Path,
    extra: dict[str, Any] | None = None,
    callbacks: Callable | None = None,
) -> dict[str, Any] | None:
    """Trains and evaluates ``config`` on ``data`` and appends its row (plus ``extra`` columns) to ``csv_path``;
    returns the row, or None without running when the CSV already holds a row of this run (see ``identity``).
    ``callbacks`` is passed on to :func:`~dcgmm_tf.evaluation.train_and_evaluate`."""
    done = identity(config, data)
    if results.has_row(csv_path, done, required=("dataset", "method", "seed")):
        logging.info("skipped: %s is already in %s", done, csv_path)
        return None
    result = train_and_evaluate(config, data, runtime, callbacks)
    row = {**result.row, **(extra or {})}
    results.append_row(csv_path, row)
    logging.info("%s", row)
    plot_run(result, data, run_dir_of(config, data.name, runtime))
    return row


def plot_run(result: RunResult, data: DataSplits, run_dir: Path) -> None:
    """``history.png`` (each loss term and the test ACC/NMI/ARI by epoch) and ``confusion.png`` (the test
    confusion matrix after the Hungarian matching, with the data set's class names) in ``run_dir``."""
    import pandas as pd

    from dcgmm_tf.metrics import matched_confusion
    from experiments import plots

    run_dir.mkdir(parents=True, exist_ok=True)
    row = result.row
    title = (
        f"{row['method']} on {row['dataset']}, seed {row['seed']}, {row['num_pairs']} constraints: "
        f"test ACC {row['acc']:.3f}, NMI {row['nmi']:.3f}, ARI {row['ari']:.3f}"
    )
    history = pd.DataFrame(result.trained.history)
    history_csv = run_dir / "history.csv"  # the whole run, also when it was resumed
    if history_csv.is_file():
        try:
            history = pd.read_csv(history_csv)
        except (ValueError, UnicodeDecodeError) as e:  # pandas' ParserError is a ValueError
            logging.warning("the history %s is unreadable (%s); plotting this process's epochs only", history_csv, e)
    plots.plot_history(history, run_dir / "history.png", title)
    matrix, classes, clusters = matched_confusion(result.y_test, result.test_clusters)
    plots.plot_confusion(matrix, [data.class_name(int(c)) for c in classes], clusters, run_dir / "confusion.png", title)
