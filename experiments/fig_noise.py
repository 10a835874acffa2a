r"""Fig. 3 (and Appendix Fig. A.2): clustering with noisy constraints, q in {0.1, 0.2, 0.3}.

    python -m experiments.fig_noise --dataset=fashion --methods=dcgmm,cidec

N constraints (N = training samples), each link flipped with probability q. DC-GMM uses the confidence
|W_ij| = 1000 log((1-q)/q) (run.py's default for q > 0; --alpha overrides it); C-IDEC the paper's
penalty weights 0.01, 0.005 and 0.001 (--cidec_noise_penalties). Writes results.csv and noise.png to
--output_dir (default docs/figures/noise).
"""

from __future__ import annotations

import sys
from pathlib import Path

from absl import app, flags

from experiments import fig_common

FLAGS = flags.FLAGS
flags.DEFINE_list("methods", ["dcgmm", "cidec"], "Methods to compare (run.py --method values).")
flags.DEFINE_list("noise_levels", ["0.1", "0.2", "0.3"], "Values of q, the probability of flipping a link.")
flags.DEFINE_float("constraint_fraction", 1.0, "Number of constraints as a fraction of N (paper: 1).")
flags.DEFINE_list("cidec_noise_penalties", ["0.01", "0.005", "0.001"],
                  "C-IDEC's must-link and cannot-link penalty for each noise level (the paper's grid-searched "
                  "values); empty: run.py's --cidec_ml_penalty and --cidec_cl_penalty.")

FIGURE = "noise"


def main(argv):
    del argv
    from dcgmm_tf.data import load_dataset

    data = load_dataset(FLAGS.dataset, FLAGS.data_dir, image_size=FLAGS.image_size)
    n = fig_common.training_sample_count(data)
    num_constraints = int(round(FLAGS.constraint_fraction * n))
    penalties = [float(p) for p in FLAGS.cidec_noise_penalties]
    if penalties and len(penalties) != len(FLAGS.noise_levels):
        raise ValueError(f"--cidec_noise_penalties needs one value per noise level, got {penalties} for "
                         f"{FLAGS.noise_levels}")
    settings = []
    for method in fig_common.available_methods(FLAGS.methods):
        for n, q in enumerate(FLAGS.noise_levels):
            setting = {"method": method, "num_constraints": num_constraints, "q": float(q)}
            if method == "cidec" and penalties:
                setting.update(cidec_ml_penalty=penalties[n], cidec_cl_penalty=penalties[n])
            settings.append(setting)
    rows = fig_common.sweep(data, settings, FIGURE)
    rows = rows[(rows["epochs"] == FLAGS.epochs) & (rows["num_constraints"] == num_constraints)]
    fig_common.plot_metrics(rows, "q", "noise level q", Path(FLAGS.output_dir) / f"{FIGURE}.png",
                            f"{data.name}: {num_constraints} noisy constraints")
    print(rows.groupby(["method", "q"])[["acc", "nmi", "ari", "alpha"]].mean().to_string(), file=sys.stdout)


if __name__ == "__main__":
    fig_common.set_figure_defaults(FIGURE)
    app.run(main)
