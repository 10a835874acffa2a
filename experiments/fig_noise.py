r"""Fig. 3 (and Appendix Fig. A.2): clustering with noisy constraints, q in {0.1, 0.2, 0.3}.

    python -m experiments.fig_noise --dataset=fashion --methods=dcgmm,cidec

N constraints (N = training samples), each link flipped with probability q. DC-GMM uses the confidence
|W_ij| = 1000 log((1-q)/q) (run.py's default for q > 0; --alpha overrides it); C-IDEC the paper's
penalty weights 0.01, 0.005 and 0.001 on its must-link term (--cidec_noise_penalties), the cannot-link term at
--cidec_cl_penalty. Writes results.csv and noise.png to
--output_dir (default docs/figures/noise).
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
flags.DEFINE_list("noise_levels", ["0.1", "0.2", "0.3"], "Values of q, the probability of flipping a link.")
flags.DEFINE_float(
    "constraint_fraction", 1.0, "Number of constraints as a fraction of N (paper: 1).", allow_override=True
)
flags.DEFINE_list(
    "cidec_noise_penalties",
    ["0.01", "0.005", "0.001"],
    "C-IDEC's must-link penalty for each noise level (the paper's grid-searched values; the cannot-link "
    "penalty stays --cidec_cl_penalty); empty: run.py's --cidec_ml_penalty.",
)

FIGURE = "noise"


def noise_figure(
    config: RunConfig,
    runtime: RuntimeConfig,
    output_dir: Path,
    runs: int,
    methods: Sequence[str],
    noise_levels: Sequence[float],
    constraint_fraction: float,
    cidec_penalties: Sequence[float] = (),
) -> pd.DataFrame:
    """Runs ``methods`` with ``constraint_fraction`` N constraints at each noise level (C-IDEC with the penalty of
    that level, if given), plots ``<output_dir>/noise.png`` and returns the rows of this setting."""
    from dcgmm_tf.data import load_dataset

    if cidec_penalties and len(cidec_penalties) != len(noise_levels):
        raise ValueError(
            f"--cidec_noise_penalties needs one value per noise level, got {list(cidec_penalties)} for "
            f"{list(noise_levels)}"
        )
    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    num_constraints = int(round(constraint_fraction * fig_common.training_sample_count(data, config)))
    configs = []
    for method in fig_common.available_methods(methods):
        for level, q in enumerate(noise_levels):
            setting = {"method": method, "num_constraints": num_constraints, "q": q}
            if method == "cidec" and cidec_penalties:
                setting.update(cidec_ml_penalty=cidec_penalties[level])
            configs.append(dataclasses.replace(config, **setting))
    rows = fig_common.sweep(configs, data, runtime, output_dir / "results.csv", runs)
    rows = rows[(rows["epochs"] == config.epochs) & (rows["num_constraints"] == num_constraints)]
    fig_common.plot_metrics(
        rows, "q", "noise level q", output_dir / f"{FIGURE}.png", f"{data.name}: {num_constraints} noisy constraints"
    )
    return rows


def main(argv):
    del argv
    config, runtime, output_dir, runs = fig_common.figure_configs(FIGURE, FLAGS)
    rows = noise_figure(
        config,
        runtime,
        output_dir,
        runs,
        FLAGS.methods,
        [float(q) for q in FLAGS.noise_levels],
        FLAGS.constraint_fraction,
        [float(p) for p in FLAGS.cidec_noise_penalties],
    )
    print(rows.groupby(["method", "q"])[["acc", "nmi", "ari", "alpha"]].mean().to_string(), file=sys.stdout)


if __name__ == "__main__":
    fig_common.set_figure_defaults(FIGURE)
    app.run(exit_on_user_error(main))
