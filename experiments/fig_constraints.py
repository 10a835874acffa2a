r"""Fig. 2 (and Appendix Fig. A.1): ARI, accuracy and NMI against the number of constraints, 0.1N to N.

    python -m experiments.fig_constraints --dataset=fashion --methods=dcgmm,cidec

Writes results.csv and constraints.png to --output_dir (default docs/figures/constraints). Methods that
experiments/run.py does not offer (yet) are skipped with a warning.
"""

from __future__ import annotations

import sys
from pathlib import Path

from absl import app, flags

from experiments import fig_common

FLAGS = flags.FLAGS
flags.DEFINE_list("methods", ["dcgmm", "cidec"], "Methods to compare (run.py --method values).")
flags.DEFINE_list("fractions", ["0.1", "0.25", "0.5", "0.75", "1.0"],
                  "Numbers of constraints as fractions of N, the number of training samples.")

FIGURE = "constraints"


def main(argv):
    del argv
    from dcgmm_tf.data import load_dataset

    data = load_dataset(FLAGS.dataset, FLAGS.data_dir, image_size=FLAGS.image_size)
    n = fig_common.training_sample_count(data)
    settings = [{"method": method, "num_constraints": int(round(float(f) * n)), "q": 0.0}
                for method in fig_common.available_methods(FLAGS.methods) for f in FLAGS.fractions]
    rows = fig_common.sweep(data, settings, FIGURE)
    rows = rows[rows["epochs"] == FLAGS.epochs]
    fig_common.plot_metrics(rows, "num_constraints", f"number of constraints (N = {n})",
                            Path(FLAGS.output_dir) / f"{FIGURE}.png",
                            f"{data.name}: clustering vs number of constraints")
    print(rows.groupby(["method", "num_constraints"])[["acc", "nmi", "ari"]].mean().to_string(), file=sys.stdout)


if __name__ == "__main__":
    fig_common.set_figure_defaults(FIGURE)
    app.run(main)
