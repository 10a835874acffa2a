"""Appending result rows to CSV files safely and summarising them."""

from __future__ import annotations

import csv
import fcntl
import io
import os
from pathlib import Path

import pandas as pd

METRICS = ("acc", "nmi", "ari", "constraint_satisfaction", "train_seconds")


def append_row(path: str | os.PathLike, row: dict) -> None:
    """Append ``row`` to the CSV at ``path`` under an exclusive lock, writing the header if the file is new.

    The row is written with a single ``write`` call on an ``O_APPEND`` descriptor and flushed to disk,
    so concurrent writers never interleave and a crash leaves at most the rows already written.
    New columns are not allowed in an existing file: they would shift the values under the old header.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        if size == 0:
            columns = list(row)
            writer.writerow(columns)
        else:
            with open(path, newline="") as f:
                columns = next(csv.reader(f))
            if set(columns) != set(row):
                raise ValueError(f"{path} has columns {columns}, the new row has {list(row)}; "
                                 "write to another --output_dir")
        writer.writerow([row[c] for c in columns])
        os.write(fd, buffer.getvalue().encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read_rows(path: str | os.PathLike) -> pd.DataFrame:
    """The rows of a results CSV (an empty frame if the file does not exist)."""
    path = Path(path)
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def summarise(rows: pd.DataFrame, keys: tuple[str, ...] = ("dataset", "method", "num_constraints", "q", "alpha",
                                                              "epochs")) -> pd.DataFrame:
    """Mean and standard deviation of each metric over the runs of each configuration."""
    present = [m for m in METRICS if m in rows]
    grouped = rows.groupby(list(keys), dropna=False)[present]
    summary = grouped.agg(["mean", "std"])
    summary.columns = [f"{metric}_{stat}" for metric, stat in summary.columns]
    summary.insert(0, "runs", grouped.size())
    return summary.reset_index()
