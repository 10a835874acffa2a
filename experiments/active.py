r"""Active constraint selection: learning curves, or the next pairs to ask a person about.

Simulated (the training labels answer), one curve per strategy and seed, appended to ``<output_dir>/curves.csv``
(a curve already there for the same settings is not run again) and drawn in ``<output_dir>/curves.png``; the pairs
each curve had answered at its end go to ``<output_dir>/answers/`` (see :func:`answers_path`), to train on with
``experiments.run --constraints_file``::

    python -m experiments.active --strategies=random,uncertain,explore --runs=3

For real use, train on your constraints and write the pairs to ask about (columns ``i,j`` and an empty ``weight``
column to fill with +1 for "same group" or -1 for "different"); read them back with ``--constraints_file`` and
``--alpha`` (the confidence of every answer)::

    python -m experiments.active --constraints_file=mine.csv --suggest_pairs=200 --output_pairs=ask.csv
    python -m experiments.run --constraints_file=answered.csv --alpha=10000

Every flag of ``experiments.run`` applies (``--epochs`` is the training of ``--suggest_pairs``; the curves
use ``--start_epochs`` and ``--round_epochs``).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from absl import app, flags

from dcgmm_tf.active_loop import ActiveSchedule
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments import run
from experiments.config_flags import config_from_flags, define_flags

if TYPE_CHECKING:
    import pandas as pd

FLAGS = flags.FLAGS
define_flags(ActiveSchedule)
flags.DEFINE_list(
    "strategies",
    ["anchor", "random", "uncertain", "explore", "consolidate", "disagree"],
    "Strategies of dcgmm_tf.pair_selection to compare (the first, anchor by default, is the one --suggest_pairs uses).",
)
flags.DEFINE_integer(
    "suggest_pairs",
    0,
    "Instead of the curves: train on the given constraints and write this "
    "many pairs to ask about to --output_pairs (with the first of --strategies).",
    lower_bound=0,
)
flags.DEFINE_string("output_pairs", None, "CSV written by --suggest_pairs.")

CURVE_COLUMNS = ("strategy", "seed", "num_pairs", "acc", "nmi", "ari")


def schedule_key(schedule: ActiveSchedule) -> str:
    """The identity of a schedule in the curves CSV."""
    from dcgmm_tf.config import settings_hash

    fields = dataclasses.asdict(schedule)
    if not fields["final_epochs"]:  # the key of curves written before the field existed
        del fields["final_epochs"]
    return settings_hash(
        {k: [str(v) for v in value] if isinstance(value, tuple) else value for k, value in fields.items()}
    )


def answers_path(output_dir: Path, strategy: str, seed: int, settings: dict[str, str]) -> Path:
    """The CSV (``i,j,weight``) of the pairs a curve had answered at its end: one per strategy, seed, configuration
    key and schedule key (``settings``), so that curves of other settings do not overwrite it."""
    return output_dir / "answers" / f"{strategy}-seed{seed}-{settings['config']}-{settings['schedule']}.csv"


def curves(
    config: RunConfig, runtime: RuntimeConfig, schedule: ActiveSchedule, strategies: Sequence[str], runs: int = 1
) -> pd.DataFrame:
    """The curves of ``strategies`` for seeds ``config.seed`` .. + ``runs`` - 1 into ``<output_dir>/curves.csv``
    (finished curves of the same settings are skipped), ``curves.png`` and the answered pairs of each curve
    (:func:`answers_path`); returns every curve of these settings."""
    from dcgmm_tf.active_loop import simulate
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.storage import write_atomically
    from experiments import plots, results

    output_dir = Path(runtime.output_dir)
    csv_path = output_dir / "curves.csv"
    results.require_columns(csv_path, CURVE_COLUMNS)
    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    settings = {"config": config.key(), "schedule": schedule_key(schedule)}
    last = schedule.budgets[-1]
    for r in range(runs):
        seed_config = dataclasses.replace(config, seed=config.seed + r)
        todo = [
            s
            for s in strategies
            if not results.has_row(csv_path, {"strategy": s, "seed": seed_config.seed, "num_pairs": last, **settings})
        ]
        if not todo:
            logging.info("seed %d: every curve is already in %s", seed_config.seed, csv_path)
            continue
        print(f"seed {seed_config.seed}: strategies {', '.join(todo)}", file=sys.stderr, flush=True)

        def report(curve: list[dict]) -> None:
            for row in curve:
                results.append_row(csv_path, {**row, **settings})

        def keep_answers(strategy: str, answers, seed: int = seed_config.seed) -> None:
            write_atomically(answers_path(output_dir, strategy, seed, settings), answers.to_csv)

        simulate(seed_config, data, todo, schedule, runtime, report, keep_answers)
    rows = results.read_rows(csv_path, renamed={})  # num_pairs: the pairs answered so far, kept as named
    if rows.empty:
        return rows
    rows = rows[(rows["config"] == settings["config"]) & (rows["schedule"] == settings["schedule"])]
    rows = rows.drop_duplicates(["strategy", "seed", "num_pairs"], keep="last")
    plots.plot_curves(
        rows,
        output_dir / "curves.png",
        f"{config.method} on {data.name}: active pair selection ({rows['seed'].nunique()} seeds)",
    )
    return rows


def suggest(config: RunConfig, runtime: RuntimeConfig, strategy: str, num_pairs: int, output: str) -> int:
    """Trains ``config`` on its constraints and writes the ``num_pairs`` pairs ``strategy`` asks about to
    ``output`` (``i,j,weight`` with the weight left empty); returns the number written."""
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.pair_selection import suggest_pairs
    from dcgmm_tf.recipe import prepare_run, run_dir_of, train_prepared, training_pairs
    from dcgmm_tf.storage import write_atomically

    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    run = prepare_run(config, data, run_dir=run_dir_of(config, data.name, runtime), spread=False)
    spread = training_pairs(config, run.inputs.x_train, run.constraints)
    trained = train_prepared(config, dataclasses.replace(run, constraints=spread), runtime)
    pairs = suggest_pairs(  # new to the answered pairs (a spread pair may be asked about)
        trained.model,
        run.inputs.x_train,
        run.constraints,
        num_pairs,
        strategy,
        seed=config.seed,
        batch_size=runtime.eval_batch_size,
    )
    text = "i,j,weight\n" + "".join(f"{i},{j},\n" for i, j in pairs)
    write_atomically(Path(output), lambda tmp: Path(tmp).write_text(text))
    return len(pairs)


def main(argv):
    del argv
    from dcgmm_tf.runtime import configure

    config, runtime = run.configs(FLAGS)
    schedule = config_from_flags(ActiveSchedule, FLAGS)
    configure(runtime)
    if FLAGS.suggest_pairs:
        if not FLAGS.output_pairs:
            raise ValueError("--suggest_pairs needs --output_pairs, the CSV to write the pairs to")
        written = suggest(config, runtime, FLAGS.strategies[0], FLAGS.suggest_pairs, FLAGS.output_pairs)
        print(
            f"{written} pairs to answer written to {FLAGS.output_pairs}: fill the weight column with +1 "
            f"(same group) or -1 (different), then train with --constraints_file and --alpha",
            file=sys.stdout,
        )
        return
    rows = curves(config, runtime, schedule, FLAGS.strategies, FLAGS.runs)
    print(
        rows.groupby(["strategy", "num_pairs"])[["acc", "nmi", "ari"]].agg(["mean", "std"]).to_string(), file=sys.stdout
    )


if __name__ == "__main__":
    FLAGS.set_default("output_dir", str(Path("results") / "active"))
    app.run(exit_on_user_error(main))
