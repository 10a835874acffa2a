"""Appending result rows to CSV files safely and summarising them."""

from __future__ import annotations

import csv
import fcntl
import io
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where needed: writers stay light
    import pandas as pd

METRICS = ("acc", "nmi", "ari", "constraint_satisfaction", "train_seconds")


def append_row(path: str | os.PathLike, row: dict) -> None:
    """Append ``row`` to the CSV at ``path`` under an exclusive lock, writing the header if the file is new.

    The row is written with a single ``write`` call on an ``O_APPEND`` descriptor and flushed to disk,
    so concurrent writers never interleave and a crash leaves at most the rows already written; the lock
    dies with its process. A last line without its newline (from another writer) is left alone and the
    row starts on a new line. In an existing file the row follows the file's header: columns the file does
    not have are left out (with a warning) and columns the row does not have stay empty, so values never
    shift under the wrong column and the row is never lost.
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
            dropped = [c for c in row if c not in columns]
            if dropped:
                logging.warning("%s has no column(s) %s: their values are not written (%s); use another "
                                "--output_dir to keep them", path, dropped, {c: row[c] for c in dropped})
            if os.pread(fd, 1, size - 1) != b"\n":  # a partial line left by some other writer: start a new one
                buffer.write("\n")
        writer.writerow([row.get(c, "") for c in columns])
        os.write(fd, buffer.getvalue().encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def has_row(path: str | os.PathLike, match: dict) -> bool:
    """Whether the CSV at ``path`` holds a row whose columns equal ``match`` (compared as written)."""
    path = Path(path)
    if not path.exists():
        return False
    wanted = {k: str(v) for k, v in match.items()}
    with open(path, newline="") as f:
        return any(all(row.get(k) == v for k, v in wanted.items()) for row in csv.DictReader(f))


def write_csv_atomically(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Writes ``frame`` to ``path`` through a temporary file and a rename: readers never see a partial file."""
    from dcgmm_tf.storage import write_atomically  # here: appending rows stays free of TensorFlow

    write_atomically(path, lambda tmp: frame.to_csv(tmp, index=False))


def read_rows(path: str | os.PathLike) -> pd.DataFrame:
    """The rows of a results CSV (an empty frame if the file does not exist)."""
    import pandas as pd

    path = Path(path)
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def summarise(rows: pd.DataFrame, keys: tuple[str, ...] = ("dataset", "method", "num_constraints", "q", "alpha",
                                                              "epochs", "config")) -> pd.DataFrame:
    """Mean and standard deviation of each metric over the runs of each configuration (the ``keys`` present)."""
    present = [m for m in METRICS if m in rows]
    grouped = rows.groupby([k for k in keys if k in rows], dropna=False)[present]
    summary = grouped.agg(["mean", "std"])
    summary.columns = [f"{metric}_{stat}" for metric, stat in summary.columns]
    summary.insert(0, "runs", grouped.size())
    return summary.reset_index()
