r"""Train and evaluate DC-GMM (or VaDE, or a Table 1 baseline) and append one results row per run.

    python -m experiments.run --dataset=fashion --num_constraints=6000 --runs=3

The flags are the fields of ``dcgmm_tf.config.RunConfig`` (what decides the results) and ``RuntimeConfig``
(threads, paths, output), plus ``--runs``: run r uses seed ``--seed`` + r. A run whose row (data set, method,
seed, configuration key) is already in ``<output_dir>/results.csv`` is skipped; a killed run resumes from its
backup. ``<output_dir>/summary.csv`` gets the mean and standard deviation over the runs of each configuration.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from absl import app, flags

from dcgmm_tf.config import PROTOCOLS, RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments import results
from experiments.config_flags import config_from_flags, define_flags

if TYPE_CHECKING:
    import pandas as pd

    from dcgmm_tf.data import DataSplits
    from dcgmm_tf.records import RunResult

FLAGS = flags.FLAGS
define_flags(RunConfig)
define_flags(RuntimeConfig)
flags.DEFINE_integer("runs", 1, "Number of runs; run r uses seed --seed + r.", lower_bound=1)
flags.DEFINE_enum(
    "protocol",
    "default",
    list(PROTOCOLS),
    "Named settings under the other flags: default (this library's recipe), paper (the paper's protocol: float32, gmm "
    "start, 10 pretraining and 500 epochs, staircase decay), variant (not the paper's: the log-likelihood pair term on "
    "scaled HOG features, 20 epochs, float32); see dcgmm_tf.config.PROTOCOLS. A flag given on the command line wins "
    "over the protocol.",
)


def configs(flag_values: flags.FlagValues, protocol: str = "") -> tuple[RunConfig, RuntimeConfig]:
    """The run and runtime configs of the parsed flags: the values of ``protocol`` (default: ``--protocol``), then
    the flags given."""
    values = PROTOCOLS[protocol or flag_values.protocol]
    base = {k: v for k, v in values.items() if not flag_values[k].present}
    return config_from_flags(RunConfig, flag_values, **base), config_from_flags(RuntimeConfig, flag_values)


def run(config: RunConfig, runtime: RuntimeConfig, runs: int = 1) -> pd.DataFrame:
    """Runs seeds ``config.seed`` .. + ``runs`` - 1 into ``<output_dir>/results.csv`` (finished ones are skipped),
    writes ``summary.csv`` beside it and returns the summary. Process-wide settings (threads, determinism)
    are ``main``'s: see ``dcgmm_tf.runtime.configure``."""
    from dcgmm_tf.data import load_dataset

    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    csv_path = Path(runtime.output_dir) / "results.csv"
    for r in range(runs):
        print(f"run {r + 1}/{runs}: seed {config.seed + r}", file=sys.stderr, flush=True)
        run_once(dataclasses.replace(config, seed=config.seed + r), data, runtime, csv_path)
    return results.write_summary(csv_path, Path(runtime.output_dir) / "summary.csv", results.summarise)


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
    It holds ``<run dir>.lock`` meanwhile, so that of two processes given the same run and folder one trains and
    the other then skips. ``callbacks`` is passed on to :func:`~dcgmm_tf.recipe.train_and_evaluate`."""
    done = identity(config, data)
    if results.has_row(csv_path, done, required=("dataset", "method", "seed")):  # before anything is written
        logging.info("skipped: %s is already in %s", done, csv_path)
        return None
    from dcgmm_tf.recipe import run_dir_of, train_and_evaluate
    from dcgmm_tf.storage import exclusive

    # One process at a time trains a run folder: a second one started on the same folder waits, then skips.
    with exclusive(run_dir_of(config, data.name, runtime)):
        if results.has_row(csv_path, done):
            logging.info("skipped: %s was finished by another process meanwhile", done)
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
        f"{row['method']} on {row['dataset']}, seed {row['seed']}, {row['num_constraints']} constraints: "
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


def main(argv):
    del argv
    from dcgmm_tf.runtime import configure

    config, runtime = configs(FLAGS)
    configure(runtime)
    print(run(config, runtime, FLAGS.runs).to_string(index=False), file=sys.stdout)


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
