"""Constraint files: CSV with a header line naming the columns `i`, `j` and `weight`.

`i` and `j` index samples of the training split and `weight` is `W_ij` (> 0
must-link, < 0 cannot-link). Reading reports invalid input with its line number.
"""

from __future__ import annotations

import csv
import math
import os

import numpy as np

CSV_COLUMNS = ("i", "j", "weight")


def read_pairs(path: str | os.PathLike, num_samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reads a constraint file as `(i, j, weight)` arrays (int64, int64, float64), in file order.

    Implements `ConstraintSet.from_csv` (rules and errors documented there); duplicate pairs are left to the caller.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Constraint file not found: {path}")
    rows_i, rows_j, rows_w = [], [], []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path} is empty; expected a header line 'i,j,weight'.")
        header = [name.strip() for name in header]
        missing = [c for c in CSV_COLUMNS if c not in header]
        if missing:
            raise ValueError(
                f"{path}, line 1: header {header} lacks column(s) {missing}; expected a header line 'i,j,weight'."
            )
        columns = [header.index(c) for c in CSV_COLUMNS]
        for row in reader:
            if not any(field.strip() for field in row):
                continue
            where = f"{path}, line {reader.line_num}"
            values = []
            for name, column in zip(CSV_COLUMNS, columns):
                if column >= len(row) or not row[column].strip():
                    raise ValueError(f"{where}: missing value for '{name}'.")
                values.append(row[column].strip())
            i = _parse_index(values[0], "i", num_samples, where)
            j = _parse_index(values[1], "j", num_samples, where)
            if i == j:
                raise ValueError(f"{where}: i == j == {i}; a sample cannot be linked to itself.")
            try:
                w = float(values[2])
            except ValueError:
                raise ValueError(f"{where}: weight {values[2]!r} is not a number.") from None
            if not math.isfinite(w) or w == 0:
                raise ValueError(
                    f"{where}: weight {values[2]!r} must be finite and non-zero (> 0 must-link, < 0 cannot-link)."
                )
            rows_i.append(i)
            rows_j.append(j)
            rows_w.append(w)
    return (
        np.asarray(rows_i, np.int64),
        np.asarray(rows_j, np.int64),
        np.asarray(rows_w, np.float64),
    )


def write_pairs(path: str | os.PathLike, i: np.ndarray, j: np.ndarray, weight: np.ndarray) -> None:
    """Writes pairs to a file readable by :func:`read_pairs` (weights as float32, `%.9g`)."""
    table = np.empty(len(weight), dtype=[("i", "i8"), ("j", "i8"), ("w", "f4")])
    table["i"], table["j"], table["w"] = i, j, weight
    np.savetxt(
        path,
        table,
        fmt=["%d", "%d", "%.9g"],
        delimiter=",",
        header=",".join(CSV_COLUMNS),
        comments="",
    )


def _parse_index(text: str, name: str, num_samples: int, where: str) -> int:
    """Parses a sample index from a CSV field, with a clear error message."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{where}: {name}={text!r} is not a number.") from None
        if not (math.isfinite(number) and number.is_integer()):
            raise ValueError(f"{where}: {name}={text!r} is not an integer.") from None
        value = int(number)
    if value < 0:
        raise ValueError(f"{where}: {name}={value} is negative.")
    if value >= num_samples:
        raise ValueError(
            f"{where}: {name}={value} is out of range; indices must be < "
            f"num_samples={num_samples} (the training split size)."
        )
    return value
