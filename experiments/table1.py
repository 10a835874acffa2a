r"""Run the Table 1 grid (data sets x methods x runs) and write it next to the paper's values.

    python -m experiments.table1 --datasets=fashion --methods=vade,pckmeans,sdec,cidec,dcgmm --runs=3 \
        --output_dir=docs/results/table1 --overrides=pckmeans.epochs=100,sdec.epochs=30

Every flag of ``experiments.run`` applies to all methods; ``--overrides`` sets a flag for one method only.
A run whose row is already in ``<output_dir>/results.csv`` is skipped, so an interrupted grid resumes; rows
match on RUN_KEY (not on the ``config`` hash of all run.py flags, which changes whenever an unrelated default
changes), so rows written by ``experiments.run`` count too. Writes ``table1.csv`` (long format) and
``table1.md`` (side by side) there.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pandas as pd
from absl import app, flags, logging

from experiments import run

FLAGS = flags.FLAGS

flags.DEFINE_list("datasets", ["fashion"], "Data sets of the grid.")
flags.DEFINE_list("methods", ["vade", "pckmeans", "sdec", "cidec", "dcgmm"], "Methods of the grid.")
flags.DEFINE_list("overrides", [], "Per-method flag values, as method.flag=value (e.g. sdec.epochs=30).")
flags.DEFINE_boolean("table_only", False, "Only write the table from the finished runs; run nothing.")
flags.DEFINE_string("paper_table", str(Path(__file__).with_name("paper_table1.csv")),
                    "The paper's Table 1 (columns dataset, metric, one per method).")

PAPER_COLUMNS = {"vade": "VaDE", "pckmeans": "PCKmeans", "sdec": "SDEC", "cidec": "C-IDEC", "dcgmm": "DC-GMM"}
PAPER_DATASETS = {"mnist": "mnist", "fashion_mnist": "fashion", "reuters": "reuters", "stl10": "stl10"}
TABLE_METRICS = ("acc", "nmi", "ari")
RUN_KEY = ("dataset", "method", "seed", "num_constraints", "q", "epochs")


def parse_overrides(entries: list[str]) -> dict[str, dict[str, str]]:
    """``["sdec.epochs=30"]`` -> ``{"sdec": {"epochs": "30"}}``."""
    out: dict[str, dict[str, str]] = {}
    for entry in entries:
        target, sep, value = entry.partition("=")
        method, dot, name = target.partition(".")
        if not (sep and dot and method and name):
            raise ValueError(f"override {entry!r} is not of the form method.flag=value")
        out.setdefault(method, {})[name] = value
    return out


@contextlib.contextmanager
def flag_values(values: dict[str, str]):
    """Temporarily parse ``values`` into their flags."""
    saved = {name: FLAGS[name].value for name in values}
    try:
        for name, value in values.items():
            FLAGS[name].parse(value)
        yield
    finally:
        for name, value in saved.items():
            FLAGS[name].value = value


def format_cell(values: pd.Series) -> str:
    """Mean +- standard deviation in percent, as the paper prints it."""
    values = 100 * values.dropna()
    if values.empty:
        return ""
    return f"{values.mean():.1f}±{values.std():.1f}" if len(values) > 1 else f"{values.mean():.1f}"


def make_table(rows: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Long table: data set, method, metric, runs, measured mean and std (%), formatted cell, paper value."""
    records = []
    for (dataset, method), group in rows.groupby(["dataset", "method"], sort=False):
        paper_rows = paper[paper["dataset"] == PAPER_DATASETS.get(dataset, dataset)].set_index("metric")
        for metric in TABLE_METRICS:
            column = PAPER_COLUMNS.get(method)
            paper_value = (paper_rows.at[metric, column]
                           if column in paper_rows and metric in paper_rows.index else "")
            records.append({"dataset": dataset, "method": method, "metric": metric, "runs": len(group),
                            "mean": 100 * group[metric].mean(), "std": 100 * group[metric].std(),
                            "measured": format_cell(group[metric]),
                            "paper": "" if pd.isna(paper_value) else paper_value,
                            "epochs": int(group["epochs"].iloc[0]),
                            "train_seconds": group["train_seconds"].mean()})
    return pd.DataFrame(records)


def to_markdown(table: pd.DataFrame) -> str:
    """Side-by-side Markdown: one row per data set and metric, measured and paper columns per method."""
    methods = list(dict.fromkeys(table["method"]))
    header = ["Dataset", "Metric"] + [f"{PAPER_COLUMNS.get(m, m)} {w}" for m in methods for w in ("ours", "paper")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (dataset, metric), group in table.groupby(["dataset", "metric"], sort=False):
        cells = group.set_index("method")
        row = [dataset, metric.upper()]
        for m in methods:
            row += [cells.at[m, "measured"], cells.at[m, "paper"]] if m in cells.index else ["", ""]
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    lines += ["", "| Method | Runs | Epochs (max) | Mean wall time per run (s) |", "|---|---|---|---|"]
    for (dataset, method), group in table.groupby(["dataset", "method"], sort=False):
        first = group.iloc[0]
        lines.append(f"| {dataset} {PAPER_COLUMNS.get(method, method)} | {first['runs']} | {first['epochs']} | "
                     f"{first['train_seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv):
    del argv
    from dcgmm_tf.data import load_dataset
    from experiments import results

    overrides = parse_overrides(FLAGS.overrides)
    unknown = set(overrides) - set(FLAGS.methods)
    if unknown:
        raise app.UsageError(f"overrides for methods not in --methods: {sorted(unknown)}")
    output_dir = Path(FLAGS.output_dir)
    path = output_dir / "results.csv"
    wanted = []
    for name in FLAGS.datasets:
        data = load_dataset(name, FLAGS.data_dir, image_size=FLAGS.image_size)
        for seed in range(FLAGS.seed, FLAGS.seed + FLAGS.runs):
            for method in FLAGS.methods:
                with flag_values({"method": method, **overrides.get(method, {})}):
                    num_constraints = 0 if method == "vade" else FLAGS.num_constraints
                    key = dict(zip(RUN_KEY, (data.name, method, seed, num_constraints, FLAGS.q, FLAGS.epochs)))
                    wanted.append(key)
                    if FLAGS.table_only or results.has_row(path, key):
                        continue
                    row = {**run.run_once(data, seed, output_dir), "config": run.config_key()}
                    results.append_row(path, row)
                    logging.info("%s: %s", key, row)
    rows = results.read_rows(path)
    if rows.empty:
        raise app.UsageError(f"no finished runs in {path}")
    keys = pd.DataFrame(wanted)
    table = make_table(keys.merge(rows.drop_duplicates(list(RUN_KEY)), on=list(RUN_KEY)),
                       pd.read_csv(FLAGS.paper_table, dtype=str, keep_default_na=False).replace("", pd.NA))
    table.to_csv(output_dir / "table1.csv", index=False)
    (output_dir / "table1.md").write_text(to_markdown(table))
    print(to_markdown(table), file=sys.stdout)


if __name__ == "__main__":
    app.run(main)
