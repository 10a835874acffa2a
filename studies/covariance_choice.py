r"""Which covariance type of the input GMM finds the classes, and which criterion tells it without the labels.

    python -m studies.covariance_choice --output_dir=studies/results/your_data_bench --seeds=0,1,2 --pairs=100

For every set of the benchmark's tuning half that the estimator models with the Gaussian likelihood
(:data:`SETS`; ``--datasets`` for others), every seed and both covariance types, the estimator's GMM of that type
(:func:`dcgmm_tf.starts.input_gmm_fits`, on the set scaled as the estimator scales it) gets a row: its ARI against
the labels and three label-free criteria, the BIC per sample (that of the type's fit at the floor that chooses the
type, ``dcgmm_tf.starts.INPUT_GMM_CHOICE_FLOOR``, which the estimator compares), the log-likelihood per sample on
held-out folds
(each fold scored by the GMMs fitted to the others), and the summed confidence of ``--pairs`` random answered
pairs (the benchmark's draw for that seed) that its clusters respect (:func:`dcgmm_tf.starts.pair_agreement`). The
rows go to ``<output_dir>/covariance_choice.csv``; printed is, per criterion, on how many (set, seed) it prefers the
type of the higher ARI.
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

# The tuning half's sets with the Gaussian likelihood: the choice was made here.
SETS = tuple(name for name in bench.GAUSSIAN_SETS if bench.HALVES[name] == "tuning")
FOLDS = 5
# criterion -> its key per fit, larger preferred (a tuple compares its second entry on a tie of the first); the last
# is the estimator's rule (dcgmm_tf.starts.input_gmm)
CRITERIA = {
    "BIC": lambda fit: -fit.bic_per_sample,
    "held-out likelihood": lambda fit: fit.heldout_loglik_per_sample,
    "pairs respected": lambda fit: fit.pairs_respected,
    "pairs respected, then BIC": lambda fit: (fit.pairs_respected, -fit.bic_per_sample),
}


def covariance_rows(names: Sequence[str], seeds: Sequence[int], num_pairs: int) -> list[dict]:
    """One row per set, seed and covariance type (see the module's docstring)."""
    from sklearn.metrics import adjusted_rand_score
    from sklearn.model_selection import KFold

    from dcgmm_tf import starts
    from dcgmm_tf.constraints import ConstraintSet
    from dcgmm_tf.sizing import input_scaling

    rows = []
    for name, (x, y) in bench.benchmark_sets(names).items():
        offset, scale = input_scaling(x, "gaussian")
        x, k = (x - offset) / scale, len(np.unique(y))
        for seed in seeds:
            ml, cl = bench.draw_pairs(y, num_pairs, seed)
            pairs = ConstraintSet.from_pairs(len(x), ml=ml, cl=cl)
            fits = {gmm.covariance_type: gmm for gmm in starts.input_gmm_fits(x, k, seed, spread=scale)}
            at_choice = starts.input_gmm_fits(x, k, seed, spread=scale, covariance_floor=starts.INPUT_GMM_CHOICE_FLOOR)
            bic = {gmm.covariance_type: gmm.bic(x) / len(x) for gmm in at_choice}
            heldout = dict.fromkeys(fits, 0.0)
            for train, test in KFold(FOLDS, shuffle=True, random_state=seed).split(x):
                for gmm in starts.input_gmm_fits(x[train], k, seed, spread=scale):
                    heldout[gmm.covariance_type] += gmm.score(x[test]) * len(test) / len(x)
            for kind, gmm in fits.items():
                rows.append(
                    {
                        "dataset": name,
                        "half": bench.HALVES[name],
                        "seed": seed,
                        "covariance": kind,
                        "ari": float(adjusted_rand_score(y, gmm.predict(x))),
                        "bic_per_sample": bic[kind],
                        "heldout_loglik_per_sample": heldout[kind],
                        "num_pairs": num_pairs,
                        "pairs_respected": starts.pair_agreement(gmm, x, pairs) / np.abs(pairs.weight).max(),
                    }
                )
            logging.info("%s seed %d: %s", name, seed, rows[-len(fits) :])
    return rows


def agreement(rows: pd.DataFrame) -> dict[str, str]:
    """Per criterion of :data:`CRITERIA`: on how many (set, seed) whose two types differ in ARI it prefers the type of
    the higher ARI (a tie counts as not)."""
    cases = [group.set_index("covariance") for _, group in rows.groupby(["dataset", "seed"])]
    cases = [case for case in cases if case.ari["diag"] != case.ari["full"]]
    counts = {}
    for name, key in CRITERIA.items():
        right = 0
        for case in cases:
            better, worse = (case.loc[kind] for kind in case.ari.sort_values(ascending=False).index)
            right += key(better) > key(worse)
        counts[name] = f"{right} of {len(cases)}"
    return counts


def _define_flags() -> None:
    flags.DEFINE_string("output_dir", "results/your_data_bench", "Folder of covariance_choice.csv.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the pairs' draw and of the GMMs.")
    flags.DEFINE_integer("pairs", 100, "Random pairs answered from the labels.", lower_bound=1)
    bench.define_sets_flag(bench.SETS, SETS, "The sets")


def main(argv: list[str]) -> None:
    del argv
    rows = pd.DataFrame(covariance_rows(FLAGS.datasets, [int(s) for s in FLAGS.seeds], FLAGS.pairs))
    results.write_csv_atomically(rows, Path(FLAGS.output_dir) / "covariance_choice.csv")
    print(rows.round(3).to_string(index=False))
    for column, count in agreement(rows).items():
        print(f"{column} prefers the covariance type of the higher ARI on {count}")


if __name__ == "__main__":
    _define_flags()
    app.run(main)
