"""Runs of configurations, each recorded as one row of a results CSV and never run twice."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.data import Dataset
from dcgmm_tf.training import train_and_evaluate
from experiments import results


def identity(config: RunConfig, data: Dataset) -> dict[str, Any]:
    """The columns that identify a finished run in a results CSV: data set, method, seed and configuration key."""
    return {"dataset": data.name, "method": config.method, "seed": config.seed, "config": config.key()}


def run_once(config: RunConfig, data: Dataset, runtime: RuntimeConfig, csv_path: str | Path,
             extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Trains and evaluates ``config`` on ``data`` and appends its row (plus ``extra`` columns) to ``csv_path``;
    returns the row, or None without running when the CSV already holds a row of this run (see ``identity``)."""
    done = identity(config, data)
    if results.has_row(csv_path, done):
        logging.info("skipped: %s is already in %s", done, csv_path)
        return None
    row, _ = train_and_evaluate(config, data, runtime)
    row.update(extra or {})
    results.append_row(csv_path, row)
    logging.info("%s", row)
    return row
