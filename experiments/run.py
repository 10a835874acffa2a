r"""Train and evaluate DC-GMM (or VaDE, or a Table 1 baseline) and append one results row per run.

    python -m experiments.run --dataset=fashion --num_pairs=6000 --runs=3

The flags are the fields of ``dcgmm_tf.config.RunConfig`` (what decides the results) and ``RuntimeConfig``
(threads, paths, output), plus ``--runs``: run r uses seed ``--seed`` + r. A run whose row (data set, method,
seed, configuration key) is already in ``<output_dir>/results.csv`` is skipped; a killed run resumes from its
backup. ``<output_dir>/summary.csv`` gets the mean and standard deviation over the runs of each configuration.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from absl import app, flags

from dcgmm_tf.config import PROTOCOLS, RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments.config_flags import config_from_flags, define_flags

FLAGS = flags.FLAGS
define_flags(RunConfig)
define_flags(RuntimeConfig)
flags.DEFINE_integer("runs", 1, "Number of runs; run r uses seed --seed + r.", lower_bound=1)
flags.DEFINE_enum(
    "protocol",
    "default",
    list(PROTOCOLS),
    "Named settings under the other flags: default (this library's recipe), paper (the paper's protocol: gmm start, "
    "10 pretraining and 500 epochs, staircase decay), variant (not the paper's: the log-likelihood pair term on "
    "scaled HOG features, 20 epochs); see dcgmm_tf.config.PROTOCOLS. A flag given on the command line wins over "
    "the protocol.",
)


def configs(flag_values: flags.FlagValues) -> tuple[RunConfig, RuntimeConfig]:
    """The run and runtime configs of the parsed flags: ``--protocol``'s values, then the flags given."""
    protocol = {k: v for k, v in PROTOCOLS[flag_values.protocol].items() if not flag_values[k].present}
    return config_from_flags(RunConfig, flag_values, **protocol), config_from_flags(RuntimeConfig, flag_values)


def run(config: RunConfig, runtime: RuntimeConfig, runs: int = 1):
    """Runs seeds ``config.seed`` .. + ``runs`` - 1 into ``<output_dir>/results.csv`` (finished ones are skipped),
    writes ``summary.csv`` beside it and returns the summary. Process-wide settings (threads, determinism)
    are ``main``'s: see ``dcgmm_tf.runtime.configure``."""
    from dcgmm_tf.data import load_dataset
    from experiments import results
    from experiments import runs as run_rows

    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    csv_path = Path(runtime.output_dir) / "results.csv"
    for r in range(runs):
        print(f"run {r + 1}/{runs}: seed {config.seed + r}", file=sys.stderr, flush=True)
        run_rows.run_once(dataclasses.replace(config, seed=config.seed + r), data, runtime, csv_path)
    summary = results.summarise(results.read_rows(csv_path))
    results.write_csv_atomically(summary, Path(runtime.output_dir) / "summary.csv")
    return summary


def main(argv):
    del argv
    from dcgmm_tf.runtime import configure

    config, runtime = configs(FLAGS)
    configure(runtime)
    print(run(config, runtime, FLAGS.runs).to_string(index=False), file=sys.stdout)


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
