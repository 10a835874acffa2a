r"""Fig. 2 (and Appendix Fig. A.1): ARI, accuracy and NMI against the number of constraints, 0.1N to N.

    python -m experiments.fig_constraints --dataset=fashion --methods=dcgmm,cidec

Writes results.csv and constraints.png to --output_dir (default docs/figures/constraints). Methods that
the library does not offer are skipped with a warning.
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
from experiments import fig_common

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "methods", ["dcgmm", "cidec"], "Methods to compare (run.py --method values).", allow_override=True
)  # a flag of several runners; one process runs one of them
flags.DEFINE_list(
    "fractions",
    ["0.1", "0.25", "0.5", "0.75", "1.0"],
    "Numbers of constraints as fractions of N, the number of training samples.",
)

FIGURE = "constraints"


def constraints_figure(
    config: RunConfig,
    runtime: RuntimeConfig,
    output_dir: Path,
    runs: int,
    methods: Sequence[str],
    fractions: Sequence[float],
) -> pd.DataFrame:
    """Runs ``methods`` with each fraction of N constraints (``runs`` seeds each; finished runs are skipped), plots
    ``<output_dir>/constraints.png`` and returns the rows of ``config.epochs``."""
    from dcgmm_tf.data import load_dataset

    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    n = fig_common.training_sample_count(data, config)
    configs = [
        dataclasses.replace(config, method=method, num_constraints=int(round(f * n)), q=0.0)
        for method in fig_common.available_methods(methods)
        for f in fractions
    ]
    rows = fig_common.sweep(configs, data, runtime, output_dir / "results.csv", runs)
    rows = rows[rows["epochs"] == config.epochs]
    fig_common.plot_metrics(
        rows,
        "num_constraints",
        f"number of constraints (N = {n})",
        output_dir / f"{FIGURE}.png",
        f"{data.name}: clustering vs number of constraints",
    )
    return rows


def main(argv):
    del argv
    config, runtime, output_dir, runs = fig_common.figure_configs(FIGURE, FLAGS)
    rows = constraints_figure(config, runtime, output_dir, runs, FLAGS.methods, [float(f) for f in FLAGS.fractions])
    print(rows.groupby(["method", "num_constraints"])[["acc", "nmi", "ari"]].mean().to_string(), file=sys.stdout)


if __name__ == "__main__":
    fig_common.set_figure_defaults(FIGURE)
    app.run(exit_on_user_error(main))
