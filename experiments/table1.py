r"""Run the Table 1 grid (data sets x methods x runs) and write it next to the paper's values.

    python -m experiments.table1 --datasets=mnist,fashion --methods=vade,pckmeans,sdec,cidec,dcgmm,dcgmm@paper \
        --runs=3 --output_dir=docs/results/table1 --overrides=dcgmm.runs=10,dcgmm@paper.epochs=50,sdec.epochs=30

Every flag of ``experiments.run`` applies to all methods; ``--overrides`` sets a flag for one method only, and
``METHOD.runs`` its number of runs. A method named ``METHOD@PROTOCOL`` runs under that protocol's settings (e.g.
``dcgmm@paper``, the paper's protocol, beside ``dcgmm`` under the default recipe); two entries of one method must
differ in their pairs, noise or epochs, by which their rows are told apart. Each cell's config is run.py's config
with the method (and protocol) and its overrides replaced. A run whose row is already in
``<output_dir>/results.csv`` is skipped (the rule of ``experiments.runs``: data set, method, seed and
configuration key), so an interrupted grid resumes. The table shows the rows that match a cell on RUN_KEY
(data set, method, seed, number of constraints, q, epochs), so rows written earlier by ``experiments.run`` or
under older defaults join it with ``--table_only``. Writes ``table1.csv`` (long format), ``table1.md`` (side
by side, with the command, and the paper's data sets that were not run) and ``table1.png`` (bars) there.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from absl import app, flags

from dcgmm_tf.config import PROTOCOLS, RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments import config_flags, plots, run

FLAGS = flags.FLAGS

flags.DEFINE_list("datasets", ["fashion"], "Data sets of the grid.")
flags.DEFINE_list(
    "methods",
    ["vade", "pckmeans", "sdec", "cidec", "dcgmm"],
    "Methods of the grid, each METHOD or METHOD@PROTOCOL (run under that protocol, e.g. dcgmm@paper).",
    allow_override=True,
)  # a flag of several runners; one process runs one of them
flags.DEFINE_list(
    "overrides", [], "Per-method flag values, as method.flag=value (e.g. sdec.epochs=30); method.runs=N its runs."
)
flags.DEFINE_boolean("table_only", False, "Only write the table from the finished runs; run nothing.")
PAPER_TABLE = Path(__file__).with_name("paper_table1.csv")
flags.DEFINE_string("paper_table", str(PAPER_TABLE), "The paper's Table 1 (columns dataset, metric, one per method).")

PAPER_DATASETS = {"mnist": "mnist", "fashion_mnist": "fashion", "reuters": "reuters", "stl10": "stl10"}
NOT_RUN = "not run: no copy of the data set was reachable where this table was made"
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


def entry_method(entry: str) -> tuple[str, str]:
    """``"dcgmm@paper"`` -> ``("dcgmm", "paper")``; ``"vade"`` -> ``("vade", "")``."""
    method, _, protocol = entry.partition("@")
    return method, protocol


def entry_label(entry: str) -> str:
    """The name of a Table 1 entry: the method's, with its protocol (``DC-GMM (paper)``)."""
    method, protocol = entry_method(entry)
    name = plots.METHOD_NAMES.get(method, method)
    return f"{name} ({protocol})" if protocol else name


def make_table(rows: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Long table: data set, entry (the method, or ``METHOD@PROTOCOL`` from an ``entry`` column), metric, runs,
    measured mean and std (%), formatted cell, paper value (the method's, whatever the protocol)."""
    records = []
    rows = rows if "entry" in rows else rows.assign(entry=rows["method"])
    for (dataset, method), group in rows.groupby(["dataset", "entry"], sort=False):
        paper_rows = paper[paper["dataset"] == PAPER_DATASETS.get(dataset, dataset)].set_index("metric")
        for metric in TABLE_METRICS:
            column = plots.METHOD_NAMES.get(entry_method(method)[0])
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


def to_markdown(table: pd.DataFrame, not_run: Sequence[str] = (), command: str = "") -> str:
    """Side-by-side Markdown: one row per data set and metric, measured and paper columns per entry; then each
    entry's runs, epochs and time, the paper's data sets ``not_run``, and the ``command`` that made the table."""
    methods = list(dict.fromkeys(table["method"]))
    header = ["Dataset", "Metric"] + [f"{entry_label(m)} {w}" for m in methods for w in ("ours", "paper")]
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
            f"| {dataset} {entry_label(method)} | {first['runs']} | {first['epochs']} | {first['train_seconds']:.0f} |"
        )
    if not_run:
        lines += ["", *(f"- {name}: {NOT_RUN}." for name in not_run)]
    if command:
        lines += ["", f"Made by `{command}`."]
    return "\n".join(lines) + "\n"


def table1(
    method_configs: dict[str, RunConfig],
    runtime: RuntimeConfig,
    datasets: Sequence[str],
    runs_per_cell: int | dict[str, int],
    table_only: bool = False,
    paper_table: str | Path = PAPER_TABLE,
    command: str = "",
) -> pd.DataFrame:
    """Runs every data set x seed x entry (each entry's config, its seed the first one; finished runs are skipped)
    unless ``table_only``, then writes ``table1.csv``, ``table1.md`` and ``table1.png`` to ``runtime.output_dir``
    next to the paper's values and returns the long table.

    Args:
      method_configs: Entry name (a method, or ``METHOD@PROTOCOL``) -> its config.
      runtime: Where the rows go (``output_dir``) and the data come from.
      datasets: The data sets of the grid.
      runs_per_cell: Runs of every entry, or entry -> runs (an entry not in it: 1).
      table_only: Run nothing; write the table of the finished runs.
      paper_table: The paper's Table 1 (CSV).
      command: The command line, written under the table.

    Raises:
      ValueError: When two entries of one method have equal pairs, noise and epochs (their rows could not be told
        apart), or no run has finished.
    """
    from dcgmm_tf.data import load_dataset
    from experiments import results, run

    told = [(c.method, c.num_constraints, c.q, c.epochs) for c in method_configs.values()]
    if len(set(told)) < len(told):
        raise ValueError("two entries of one method need other pairs, noise or epochs: their rows look alike")
    runs = runs_per_cell if isinstance(runs_per_cell, dict) else dict.fromkeys(method_configs, runs_per_cell)
    path = Path(runtime.output_dir) / "results.csv"
    wanted, measured = [], set()
    first = next(iter(method_configs.values()))
    for name in datasets:
        data = load_dataset(name, runtime.data_dir, image_size=first.image_size)
        measured.add(PAPER_DATASETS.get(data.name, data.name))
        for r in range(max(runs.values())):
            for entry, config in method_configs.items():
                if r >= runs.get(entry, 1):
                    continue
                config = dataclasses.replace(config, dataset=name, seed=config.seed + r)
                num_constraints = 0 if config.method == "vade" else config.num_constraints
                key = (data.name, config.method, config.seed, num_constraints, config.q, config.epochs)
                wanted.append({**dict(zip(RUN_KEY, key)), "entry": entry})
                if not table_only:
                    run.run_once(config, data, runtime, path)
    rows = results.read_rows(path)
    if rows.empty:
        raise ValueError(f"no finished runs in {path}")
    paper = pd.read_csv(paper_table, dtype=str, keep_default_na=False).replace("", pd.NA)
    table = make_table(
        pd.DataFrame(wanted).merge(rows.drop_duplicates(list(RUN_KEY)), on=list(RUN_KEY)),
        paper.rename(columns={"PCKmeans": "PCKMeans"}),  # the spelling of older tables
    )
    not_run = [name for name in dict.fromkeys(paper["dataset"]) if name not in measured]
    table.to_csv(Path(runtime.output_dir) / "table1.csv", index=False)
    (Path(runtime.output_dir) / "table1.md").write_text(to_markdown(table, not_run, command))
    plots.plot_table(
        table,
        Path(runtime.output_dir) / "table1.png",
        f"Table 1: measured (mean ± std over runs) and the paper's values; {path}",
        {entry: entry_label(entry) for entry in method_configs},
    )
    return table


def entry_configs(
    flag_values: flags.FlagValues, entries: Sequence[str], overrides: dict[str, dict[str, str]]
) -> tuple[dict[str, RunConfig], dict[str, int]]:
    """Each entry's config (run.py's, under the entry's protocol if it names one, with the method and the entry's
    overrides) and runs (its ``runs`` override, else ``--runs``)."""
    configs, runs = {}, {}
    for entry in entries:
        method, protocol = entry_method(entry)
        if protocol and protocol not in PROTOCOLS:
            raise ValueError(f"{entry}: protocol must be one of {list(PROTOCOLS)}, got {protocol!r}")
        texts = dict(overrides.get(entry, {}))
        runs[entry] = int(texts.pop("runs", flag_values.runs))
        config, _ = run.configs(flag_values, protocol)
        configs[entry] = config_flags.replaced(config, flag_values, method=method, **texts)
    return configs, runs


def main(argv):
    del argv  # absl's remainder; the command written is the whole line, less --table_only (which runs nothing)
    from dcgmm_tf.runtime import configure

    _, runtime = run.configs(FLAGS)
    overrides = parse_overrides(FLAGS.overrides)
    unknown = set(overrides) - set(FLAGS.methods)
    if unknown:
        raise ValueError(f"--overrides for methods not in --methods: {sorted(unknown)}")
    method_configs, runs = entry_configs(FLAGS, FLAGS.methods, overrides)
    configure(runtime)
    command = " ".join(["python -m experiments.table1", *(a for a in sys.argv[1:] if a != "--table_only")])
    table1(method_configs, runtime, FLAGS.datasets, runs, FLAGS.table_only, FLAGS.paper_table, command)
    print((Path(runtime.output_dir) / "table1.md").read_text(), end="")  # the table as written


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
