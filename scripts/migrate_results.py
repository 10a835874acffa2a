"""Bring the configuration keys of results files written before keys carried a version to ``RunConfig.key()``.

    python scripts/migrate_results.py docs/results [FOLDER_OR_CSV ...] [--dry_run]

A key of version 1 is a bare 12-digit hash of the run's settings, from which the settings at the value that gave
the behaviour from before they existed, and those that did not act on the run, were left out (``V1_OMITTED``,
``V1_APPLIES``, ``V1_VALUES`` below). Such a hash cannot be read back, so each one is looked for among the configs
of the named protocols and the older recipes (``BASES``) with the row's data set, method, pairs, noise, alpha and
epochs and up to two other settings changed (``CHANGES``). A key found becomes the found config's key of this
version; a key not found (rows of an earlier library, whose settings no config of this one reproduces) is kept,
marked ``v1-``, so that no run of this version is taken for theirs (and looked for again by a later run of the
script). Every CSV with a ``config`` column in the
given folders (results, summaries, curves) is rewritten in place, atomically, its other cells as they were; keys
that carry a version already are left alone, so the script can run twice. Prints each key's fate.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pandas as pd  # noqa: E402

from dcgmm_tf.config import PROTOCOLS, UNHASHED_VALUES, RunConfig, fields_hash  # noqa: E402
from dcgmm_tf.storage import write_atomically  # noqa: E402
from experiments.results import with_new_names  # noqa: E402

# Version 1 left a setting out of the hash while it had the value of the behaviour from before it existed ...
V1_OMITTED = {
    "input_features": "pixels",
    "spread_neighbours": 0,
    "spread_weight": 0.5,
    "pair_loss": "paper",
    "embedding_pair_weight": 0.0,
    "pair_tuning_epochs": 0,
    "pair_tuning_weight": 100.0,
    "init_em_starts": 10,
    "lr_schedule": "staircase",
    "choice_weights": "fitted",
    "choice_splits": 1,
    "choice_rule": "one_se",
    "probe_epochs": 0,
    **UNHASHED_VALUES,  # fields that version 2 itself hashes only off their old behaviour's value
}
# ... or where it did not act on the run ...
V1_APPLIES = {
    "init_em_starts": lambda config: config.method == "dcgmm" and config.cluster_init == "latent_class",
    **{name: lambda config: config.num_clusters == 0 for name in ("choice_weights", "choice_splits", "choice_rule")},
}
# ... and hashed num_clusters under its earlier numbering.
V1_VALUES = {"num_clusters": {-1: 0, 0: "choose"}}

# The recipes older rows were made with (docs/findings.md), beside the named protocols; all of them in float32, with
# Keras' Adam before the training.
BASES = {
    name: {"mixed_precision": "off", "fused_adam": False, **base}
    for name, base in {
        **PROTOCOLS,
        "older": {
            "pretrain_epochs": 10,
            "init_em_starts": 10,
            "pair_tuning_epochs": 0,
            "epochs": 100,
            "restart_every": 10,
            "lr_schedule": "staircase",
            "spread_neighbours": 0,
        },
        "40+30": {
            "pretrain_epochs": 40,
            "pair_tuning_epochs": 0,
            "epochs": 30,
            "restart_every": 10,
            "init_em_starts": 10,
        },
    }.items()
}
# The settings a row's flags may have changed from a base, at most two at a time.
CHANGES = {
    "spread_neighbours": (0, 1),
    "pair_loss": ("likelihood", "paper"),
    "init_em_starts": (3, 10),
    "input_features": ("hog", "hog_scaled", "pixels"),
    "pair_tuning_epochs": (0, 5),
    "lr_schedule": ("cosine", "staircase"),
    "cluster_init": ("gmm", "latent_class", "kmeans", "merge"),
    "restart_every": (0, 5, 10),
    "pretrain_epochs": (10, 15, 40),
    "layout": ("spread",),
    "kl_estimator": ("analytic",),
    "mixed_precision": ("bf16",),
    "clipnorm": (0.0,),
    "layer_pretrain_epochs": (5,),
    "finetune_epochs": (15,),
}
DATASET_FLAGS = {"fashion_mnist": ("fashion", "fashion_mnist")}  # a row's data set name -> the flags naming it
DEFAULT_ALPHA = 10000.0  # the alpha column of rows whose alpha was left to the default (None)


def key_v1(config: RunConfig) -> str:
    """The key that version 1 gave ``config``."""
    fields = {
        name: V1_VALUES.get(name, {}).get(value, value)
        for name, value in dataclasses.asdict(config).items()
        if name != "seed"
        and not (name in V1_OMITTED and value == V1_OMITTED[name])
        and V1_APPLIES.get(name, lambda config: True)(config)
    }
    return fields_hash(fields)


def key_version(key: str) -> str:
    """The version a key was written under: ``"2"`` for ``v2-...``; ``"1"`` for ``v1-...`` and for a bare hash."""
    return key.split("-")[0].removeprefix("v") if "-" in key else "1"


def _changes() -> list[dict]:
    singles = [{}] + [{name: value} for name, values in CHANGES.items() for value in values]
    return [{**a, **b} for a, b in itertools.combinations_with_replacement(singles, 2)]


def find_config(key: str, row: pd.Series) -> RunConfig | None:
    """The config of version 1 key ``key`` among the bases with ``row``'s columns (as text) and up to two changes,
    or None."""
    columns = {"method": row["method"], "num_constraints": int(row["num_constraints"]), "q": float(row["q"])}
    columns["epochs"] = int(row["epochs"])
    if float(row["alpha"]) != DEFAULT_ALPHA:
        columns["alpha"] = float(row["alpha"])
    for dataset, base, change in itertools.product(
        DATASET_FLAGS.get(row["dataset"], (row["dataset"],)), BASES.values(), _changes()
    ):
        try:
            config = RunConfig(**{**base, **change, **columns, "dataset": dataset})
        except ValueError:  # not a valid combination
            continue
        if key_v1(config) == key:
            return config
    return None


def key_map(frames: list[pd.DataFrame]) -> dict[str, str]:
    """Old key -> new key for every version 1 key in ``frames`` (results tables with the rows' columns)."""
    mapping = {}
    for frame in frames:
        for key, rows in frame.groupby("config"):
            if key in mapping or key_version(key) != "1":
                continue
            bare = key.removeprefix("v1-")
            config = find_config(bare, rows.iloc[0])
            mapping[key] = config.key() if config is not None else f"v1-{bare}"
    return mapping


def _versioned(key: str, mapping: dict[str, str]) -> str:
    if key in mapping:
        return mapping[key]
    return key if "-" in key or not key else f"v1-{key}"


def _read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _write_rows(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="Folders (searched recursively) or CSV files.")
    parser.add_argument("--dry_run", action="store_true", help="Print the keys' fate; write nothing.")
    args = parser.parse_args(argv)
    files = sorted({f for p in args.paths for f in ([p] if p.suffix == ".csv" else p.rglob("*.csv"))})
    tables = {f: _read_rows(f) for f in files}
    tables = {f: lines for f, lines in tables.items() if lines and "config" in lines[0]}
    rows = [with_new_names(pd.DataFrame(t[1:], columns=t[0])) for f, t in tables.items() if f.name == "results.csv"]
    mapping = key_map([t for t in rows if {"dataset", "method", "q", "alpha", "epochs"} <= set(t.columns)])
    for old, new in sorted(mapping.items()):
        if old == new:
            continue
        print(f"{old} -> {new}{'  (no config of this version gives it)' if new.startswith('v1-') else ''}")
    for path, lines in tables.items():
        column = lines[0].index("config")
        new = [row[:column] + [_versioned(row[column], mapping)] + row[column + 1 :] for row in lines[1:]]
        changed = sum(a != b for a, b in zip(lines[1:], new))
        print(f"{path}: {changed} of {len(new)} row(s) {'would change' if args.dry_run else 'changed'}")
        if changed and not args.dry_run:
            write_atomically(path, lambda tmp, rows=[lines[0], *new]: _write_rows(tmp, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
