r"""How large a floor the input GMM should add to its variances: its clusters' ARI at each floor, on both halves.

    python -m studies.covariance_floor --output_dir=studies/results/your_data_bench --seeds=0,1,2

For every set of the benchmark that the estimator models with the Gaussian likelihood
(:data:`studies.your_data_bench.GAUSSIAN_SETS`; ``--datasets`` for fewer), every seed and every floor of
``--floors``, the estimator's input GMM without pairs (:func:`dcgmm_tf.starts.input_gmm` with that
``covariance_floor``, on the set scaled as the estimator scales it) gets a row for each of two floors of the fits
that choose its covariance type (``choice_floor``): the same floor, and the estimator's
(:data:`dcgmm_tf.starts.INPUT_GMM_CHOICE_FLOOR`); one row where they are equal. A row gives the covariance type
chosen, the ARI of the clusters against the labels, and the samples in the smallest cluster against the number of
features (a full covariance of a cluster of at most F samples is singular but for the floor). Without pairs this GMM
is what the estimator returns wherever its fallback prefers the input. The floors are in units of the scaled
features' variance; scikit-learn's ``GaussianMixture``, as the benchmark's baseline runs it, adds its fixed
``reg_covar`` (1e-6) to the variances of the features in their own units, a floor that changes with them. The rows
go to ``<output_dir>/covariance_floor.csv``; printed is the mean ARI per half, choice floor and floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from absl import app, flags, logging

from experiments import results
from studies import your_data_bench as bench

FLAGS = flags.FLAGS

FLOORS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)  # the second is the estimator's (starts.INPUT_GMM_COVARIANCE_FLOOR)
SAME = "same"  # the type chosen by fits at the floor itself


def floor_rows(names: Sequence[str], seeds: Sequence[int], floors: Sequence[float] = FLOORS) -> list[dict]:
    """One row per set, seed, floor and choice floor (see the module's docstring)."""
    from sklearn.metrics import adjusted_rand_score

    from dcgmm_tf import starts
    from dcgmm_tf.sizing import input_scaling

    rows = []
    for name, (x, y) in bench.benchmark_sets(names).items():
        offset, scale = input_scaling(x, "gaussian")
        x, k = (x - offset) / scale, len(np.unique(y))
        for seed in seeds:
            for floor in floors:
                for choice_floor in dict.fromkeys([floor, starts.INPUT_GMM_CHOICE_FLOOR]):
                    gmm = starts.input_gmm(x, k, seed, spread=scale, covariance_floor=floor, choice_floor=choice_floor)
                    row = {"dataset": name, "half": bench.HALVES[name], "seed": seed, "floor": floor}
                    labels = starts.assign(gmm, x)
                    row.update(choice_floor=choice_floor, covariance=gmm.covariance_type)
                    row.update(ari=float(adjusted_rand_score(y, labels)))
                    row.update(smallest_cluster=int(np.bincount(labels, minlength=k).min()), features=x.shape[1])
                    rows.append(row)
                    logging.info("%s", row)
    return rows


def mean_by_floor(rows: pd.DataFrame, choice_floor: float | str) -> pd.DataFrame:
    """Mean ARI per half (rows) and floor (columns), over sets and seeds, of the GMMs whose type the fits at
    ``choice_floor`` chose, or those at the floor itself (:data:`SAME`)."""
    chosen = rows.choice_floor == (rows.floor if choice_floor == SAME else choice_floor)
    return rows[chosen].pivot_table(index="half", columns="floor", values="ari", aggfunc="mean")


def _define_flags() -> None:
    flags.DEFINE_string("output_dir", "results/your_data_bench", "Folder of covariance_floor.csv.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the GMMs.")
    flags.DEFINE_list("floors", [f"{floor:g}" for floor in FLOORS], "Floors on the scaled features' variances.")
    bench.define_sets_flag(bench.GAUSSIAN_SETS, bench.GAUSSIAN_SETS, "The sets")


def main(argv: list[str]) -> None:
    del argv
    floors = [float(floor) for floor in FLAGS.floors]
    rows = pd.DataFrame(floor_rows(FLAGS.datasets, [int(s) for s in FLAGS.seeds], floors))
    results.write_csv_atomically(rows, Path(FLAGS.output_dir) / "covariance_floor.csv")
    from dcgmm_tf.starts import INPUT_GMM_CHOICE_FLOOR

    for choice_floor in (SAME, INPUT_GMM_CHOICE_FLOOR):
        print(f"the covariance type chosen at {'the floor' if choice_floor == SAME else f'{choice_floor:g}'}:")
        print(mean_by_floor(rows, choice_floor).round(4).to_string())


if __name__ == "__main__":
    _define_flags()
    app.run(main)
