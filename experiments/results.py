"""Appending result rows to CSV files safely, reading back only the rows that are whole, and summarising them.

A results file may hold damaged lines (a writer killed mid-line on a full disk, a file copied half-way, a hand
edit): a line with the wrong number of fields, or a metric that is not a number, is reported with its line
number and never counted (neither in ``summary.csv`` nor as a finished run); the file's other rows are kept, and
new rows are appended intact. A file whose first line is not a header is refused: it was not written here.
"""

from __future__ import annotations

import csv
import fcntl
import io
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dcgmm_tf.storage import disk_full, exclusive, write_atomically

if TYPE_CHECKING:  # pandas is imported where needed: writers stay light
    import pandas as pd

METRICS = ("acc", "nmi", "ari", "constraint_satisfaction", "train_seconds")
NUMERIC = (*METRICS, "seed")  # columns whose values must parse as numbers (NaN included)
TEXT = ("config",)  # hex keys that may look like numbers ("012345678901"): kept as written
# Columns renamed since files were written: old name -> new name. Readers give old files the new names; rows
# appended to an old file go under its old names.
RENAMED = {"pretrain_acc": "start_acc", "num_pairs": "num_constraints"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _header(line: list[str], path: Path) -> list[str]:
    """The column names of a results file, or ValueError when its first line is not a header written here."""
    if not line or not all(_NAME.match(name) for name in line) or len(set(line)) != len(line):
        raise ValueError(
            f"{path} does not start with a header line of column names (it starts with "
            f"{','.join(line)[:60]!r}): it was not written by this program or is damaged; move it "
            "away or write to another --output_dir"
        )
    return line


def _problem(fields: list[str], header: list[str]) -> str | None:
    """Why a line is not a whole row of the table with ``header``, or None."""
    if len(fields) != len(header):
        return f"{len(fields)} fields where the header has {len(header)}"
    for name, value in zip(header, fields):
        if name in NUMERIC:
            try:
                float(value)
            except ValueError:
                return f"{name}={value[:20]!r} is not a number"
    return None


def valid_rows(path: str | os.PathLike) -> tuple[list[str], list[list[str]]]:
    """The header and the whole rows of a results CSV (each damaged line reported in one warning and left out);
    ``([], [])`` for a missing or empty file."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return [], []
    with open(path, newline="", errors="replace") as f:
        lines = list(csv.reader(line.replace("\0", "") for line in f))
    header, rows = _header(lines[0], path), []
    for number, fields in enumerate(lines[1:], start=2):
        problem = _problem(fields, header)
        if problem is None:
            rows.append(fields)
        elif fields:
            logging.warning("%s: line %d is damaged (%s); it is not counted", path, number, problem)
    return header, rows


def append_row(path: str | os.PathLike, row: dict) -> None:
    """Append ``row`` to the CSV at ``path`` under an exclusive lock, writing the header if the file is new.

    The row is written with a single ``write`` call on an ``O_APPEND`` descriptor and flushed to disk,
    so concurrent writers never interleave and a crash leaves at most the rows already written; the lock
    dies with its process. A process killed during the write can leave its row cut short (Linux ends a write
    early on a fatal signal): that last line, without its newline, is left alone, the next row starts on a new
    line, and :func:`valid_rows` leaves the cut line out. In an existing file the row follows the file's
    header: columns the file does not have are left out (with a warning) and columns the row does not have stay
    empty, so values never shift under the wrong column and the row is never lost.

    Raises:
      DiskFullError: When the disk is full: the file is cut back to its rows before the call, and the message holds
        the row's values.
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
            with open(path, newline="", errors="replace") as f:
                columns = _header(next(csv.reader(line.replace("\0", "") for line in f)), path)
            old_names = {new: old for old, new in RENAMED.items() if old in columns and new not in columns}
            row = {old_names.get(c, c): value for c, value in row.items()}
            dropped = [c for c in row if c not in columns]
            if dropped:
                logging.warning(
                    "%s has no column(s) %s: their values are not written (%s); use another --output_dir to keep them",
                    path,
                    dropped,
                    {c: row[c] for c in dropped},
                )
            if os.pread(fd, 1, size - 1) != b"\n":  # a partial line left by some other writer: start a new one
                buffer.write("\n")
        writer.writerow([row.get(c, "") for c in columns])
        data = buffer.getvalue().encode()
        try:
            done = 0
            while done < len(data):  # a write may take part of the bytes
                done += os.write(fd, data[done:])
            os.fsync(fd)
        except OSError as error:
            os.ftruncate(fd, size)  # no part of the row stays behind
            full = disk_full(error, path, f"it keeps the rows it had; this row was not written: {row}")
            if full is None:
                raise
            raise full from error
    finally:
        os.close(fd)


def require_columns(path: str | os.PathLike, columns: tuple[str, ...]) -> None:
    """Raises ValueError when the CSV at ``path`` exists with a header that lacks any of ``columns`` (a valid table
    of another kind, e.g. a summary.csv copied over a results.csv): rows appended to it would lose those values."""
    _check_columns(valid_rows(path)[0], columns, path)


def _check_columns(header: list[str], columns: tuple[str, ...], path: str | os.PathLike) -> None:
    missing = [c for c in columns if header and c not in header]
    if missing:
        raise ValueError(
            f"{path} has no column(s) {missing}: it is not a results file of the runners (a summary or "
            "another program's table?); move it away or write to another --output_dir"
        )


def has_row(path: str | os.PathLike, match: dict, required: tuple[str, ...] = ()) -> bool:
    """Whether the CSV at ``path`` holds a row whose columns equal ``match`` (compared as written); first, as
    :func:`require_columns`, raises ValueError when its header lacks any of the ``required`` columns (one read)."""
    header, rows = valid_rows(path)
    _check_columns(header, required, path)
    wanted = {k: str(v) for k, v in match.items()}
    return any(all(row.get(k) == v for k, v in wanted.items()) for row in (dict(zip(header, r)) for r in rows))


def write_csv_atomically(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Writes ``frame`` to ``path`` through a temporary file and a rename: readers never see a partial file."""
    write_atomically(path, lambda tmp: frame.to_csv(tmp, index=False))


def write_summary(
    path: str | os.PathLike,
    summary_path: str | os.PathLike,
    summarise: Callable[[pd.DataFrame], pd.DataFrame],
    renamed: dict[str, str] = RENAMED,
) -> pd.DataFrame:
    """Writes ``summarise(rows)`` of the results CSV at ``path`` to ``summary_path`` (atomically) and returns it,
    holding the lock ``<path>.lock`` from the reading to the rename: of several processes appending to one results
    file, the last to summarise has read every row appended before, so the summary counts them all. ``renamed``: as
    :func:`read_rows` takes it."""
    with exclusive(path):
        summary = summarise(read_rows(path, renamed))
        write_csv_atomically(summary, summary_path)
    return summary


def read_rows(path: str | os.PathLike, renamed: dict[str, str] = RENAMED) -> pd.DataFrame:
    """The whole rows of a results CSV as a frame (see ``valid_rows``; empty if the file does not exist), with the
    new names of renamed columns (``renamed``, old name -> new; :data:`RENAMED`, the runners' columns, by default)."""
    import pandas as pd

    header, rows = valid_rows(path)
    if not header:
        return pd.DataFrame()
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *rows])
    buffer.seek(0)
    return with_new_names(pd.read_csv(buffer, dtype={c: str for c in TEXT if c in header}), renamed)


def with_new_names(frame: pd.DataFrame, renamed: dict[str, str] = RENAMED) -> pd.DataFrame:
    """``frame`` with each renamed column (old name -> new) under its new name, where that name is not taken."""
    return frame.rename(columns={old: new for old, new in renamed.items() if new not in frame})


def summarise(
    rows: pd.DataFrame,
    keys: tuple[str, ...] = ("dataset", "method", "num_constraints", "q", "alpha", "epochs", "config"),
) -> pd.DataFrame:
    """Mean and standard deviation of each metric over the runs of each configuration (the ``keys`` present)."""
    present = [m for m in METRICS if m in rows]
    grouped = rows.groupby([k for k in keys if k in rows], dropna=False)[present]
    summary = grouped.agg(["mean", "std"])
    summary.columns = [f"{metric}_{stat}" for metric, stat in summary.columns]
    summary.insert(0, "runs", grouped.size())
    return summary.reset_index()
