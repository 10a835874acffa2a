r"""Run the Table 1 grid (data sets x methods x runs) and write it next to the paper's values.

    python -m experiments.table1 --datasets=fashion --methods=vade,pckmeans,sdec,cidec,dcgmm --runs=3 \
        --output_dir=docs/results/table1 --overrides=pckmeans.epochs=100,sdec.epochs=30

Every flag of ``experiments.run`` applies to all methods; ``--overrides`` sets a flag for one method only.
Each cell's config is run.py's config with the method and its overrides replaced. A run whose row is already in
``<output_dir>/results.csv`` is skipped (the rule of ``experiments.runs``: data set, method, seed and
configuration key), so an interrupted grid resumes. The table shows the rows that match a cell on RUN_KEY
(data set, method, seed, number of constraints, q, epochs), so rows written earlier by ``experiments.run`` or
under older defaults join it with ``--table_only``. Writes ``table1.csv`` (long format), ``table1.md`` (side
by side) and ``table1.png`` (bars) there.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from absl import app, flags

from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments import config_flags, plots, run

FLAGS = flags.FLAGS

flags.DEFINE_list("datasets", ["fashion"], "Data sets of the grid.")
flags.DEFINE_list(
    "methods", ["vade", "pckmeans", "sdec", "cidec", "dcgmm"], "Methods of the grid.", allow_override=True
)  # a flag of several runners; one process runs one of them
flags.DEFINE_list("overrides", [], "Per-method flag values, as method.flag=value (e.g. sdec.epochs=30).")
flags.DEFINE_boolean("table_only", False, "Only write the table from the finished runs; run nothing.")
PAPER_TABLE = Path(__file__).with_name("paper_table1.csv")
flags.DEFINE_string("paper_table", str(PAPER_TABLE), "The paper's Table 1 (columns dataset, metric, one per method).")

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
            column = plots.METHOD_NAMES.get(method)
            paper_value = paper_rows.at[metric, column] if column in paper_rows and metric in paper_rows.index else ""
            records.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "metric": metric,
                    "runs": len(group),
                    "mean": 100 * group[metric].mean(),
                    "std": 100 * group[metric].std(),
                    "measured": format_cell(group[metric]),
                    "paper": "" if pd.isna(paper_value) else paper_value,
                    "epochs": int(group["epochs"].iloc[0]),
                    "train_seconds": group["train_seconds"].mean(),
                }
            )
    return pd.DataFrame(records)


def to_markdown(table: pd.DataFrame) -> str:
    """Side-by-side Markdown: one row per data set and metric, measured and paper columns per method."""
    methods = list(dict.fromkeys(table["method"]))
    header = ["Dataset", "Metric"] + [f"{plots.METHOD_NAMES.get(m, m)} {w}" for m in methods for w in ("ours", "paper")]
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
        lines.append(
            f"| {dataset} {plots.METHOD_NAMES.get(method, method)} | {first['runs']} | {first['epochs']} | "
            f"{first['train_seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def table1(
    method_configs: dict[str, RunConfig],
    runtime: RuntimeConfig,
    datasets: Sequence[str],
    runs_per_cell: int,
    table_only: bool = False,
    paper_table: str | Path = PAPER_TABLE,
) -> pd.DataFrame:
    """Runs every data set x seed x method (each method's config, its seed the first one; finished runs are
    skipped) unless ``table_only``, then writes ``table1.csv`` and ``table1.md`` to ``runtime.output_dir`` next to
    the paper's values and returns the long table."""
    from dcgmm_tf.data import load_dataset
    from experiments import results, run

    path = Path(runtime.output_dir) / "results.csv"
    first = next(iter(method_configs.values()))
    wanted = []
    for name in datasets:
        data = load_dataset(name, runtime.data_dir, image_size=first.image_size)
        for seed in range(first.seed, first.seed + runs_per_cell):
            for method, method_config in method_configs.items():
                method_config = dataclasses.replace(method_config, dataset=name, seed=seed)
                num_constraints = 0 if method == "vade" else method_config.num_constraints
                wanted.append(
                    dict(
                        zip(RUN_KEY, (data.name, method, seed, num_constraints, method_config.q, method_config.epochs))
                    )
                )
                if not table_only:
                    run.run_once(method_config, data, runtime, path)
    rows = results.read_rows(path)
    if rows.empty:
        raise ValueError(f"no finished runs in {path}")
    keys = pd.DataFrame(wanted)
    paper = pd.read_csv(paper_table, dtype=str, keep_default_na=False).replace("", pd.NA)
    table = make_table(
        keys.merge(rows.drop_duplicates(list(RUN_KEY)), on=list(RUN_KEY)),
        paper.rename(columns={"PCKmeans": "PCKMeans"}),
    )  # the spelling of older tables
    table.to_csv(Path(runtime.output_dir) / "table1.csv", index=False)
    (Path(runtime.output_dir) / "table1.md").write_text(to_markdown(table))
    plots.plot_table(
        table,
        Path(runtime.output_dir) / "table1.png",
        f"Table 1: measured (mean ± std over runs) and the paper's values; {path}",
        plots.METHOD_NAMES,
    )
    return table


def main(argv):
    del argv
    from dcgmm_tf.runtime import configure

    config, runtime = run.configs(FLAGS)
    overrides = parse_overrides(FLAGS.overrides)
    unknown = set(overrides) - set(FLAGS.methods)
    if unknown:
        raise ValueError(f"--overrides for methods not in --methods: {sorted(unknown)}")
    method_configs = {
        method: config_flags.replaced(config, FLAGS, method=method, **overrides.get(method, {}))
        for method in FLAGS.methods
    }
    configure(runtime)
    table = table1(method_configs, runtime, FLAGS.datasets, FLAGS.runs, FLAGS.table_only, FLAGS.paper_table)
    print(to_markdown(table), file=sys.stdout)


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
