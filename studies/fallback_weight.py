r"""How much the pairs should weigh in the score of the estimator's input fallback.

    python -m studies.fallback_weight --output_dir=studies/results/your_data_bench --seeds=0,1,2 --pairs=100,500

For every set of the benchmark that the estimator models with the Gaussian likelihood (:data:`SETS`;
``--datasets`` for fewer), every seed and every count of ``--pairs``, the estimator is fitted with its defaults and
the benchmark's pairs for that seed, as ``studies.your_data_bench`` fits it. Its two clusterings, the deep
model's (``start_labels_[start_]``) and that of its input GMM (:func:`dcgmm_tf.starts.input_gmm`, fitted again), are
then scored as the fallback scores them (:func:`dcgmm_tf.fallback.choose`) with the pairs' weights
times each of :data:`SCALES`, and times each of :data:`RATES` times the pairs per sample (the estimator's own
share, :func:`dcgmm_tf.fallback.pair_scale`, is ``PAIR_RATE`` times it); the row records the ARI
of what each returns. The rows go to ``<output_dir>/fallback_weight.csv``; printed is the mean ARI per half, count of
pairs and share.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from absl import app, flags, logging

from experiments import results
from studies import your_data_bench as bench

if TYPE_CHECKING:
    from dcgmm_tf.constraints import ConstraintSet

FLAGS = flags.FLAGS

SETS = bench.GAUSSIAN_SETS
# Scales of the pairs' weights in the score; for the estimator's sure answers (weight 1e4): 0, 1, 10, 30, ... 1e4.
SCALES = (0.0, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 1.0)
# Shares in proportion to the pairs per sample: the scale is the rate times the pairs over the samples (at most 1).
RATES = (0.005, 0.01, 0.02, 0.03, 0.05)
SHARES = (*(f"scale {scale:g}" for scale in SCALES), *(f"rate {rate:g}" for rate in RATES))  # their columns


def fallback_rows(
    names: Sequence[str], seeds: Sequence[int], pair_counts: Sequence[int], params: dict | None = None
) -> list[dict]:
    """One row per set, seed and count of pairs (see the module's docstring); ``params`` go to the estimator."""
    from dcgmm_tf import DCGMMClustering, starts
    from dcgmm_tf.constraints import ConstraintSet

    rows = []
    for name, (x, y) in bench.benchmark_sets(names).items():
        k = len(np.unique(y))
        for num_pairs in pair_counts:
            for seed in seeds:
                ml, cl = bench.draw_pairs(y, num_pairs, seed)
                est = DCGMMClustering(n_clusters=k, random_state=seed, **(params or {})).fit(x, ml=ml, cl=cl)
                if est.likelihood_ != "gaussian":
                    raise ValueError(f"{name} is modelled with the {est.likelihood_} likelihood: no fallback")
                xs, answers = est._scaled(x), ConstraintSet.from_pairs(len(x), ml=ml, cl=cl)
                gmm = starts.input_gmm(xs, k, seed, spread=est.scale_, constraints=answers)
                clusterings = {"deep": est.start_labels_[est.start_], "input": starts.assign(gmm, xs)}
                row = {"dataset": name, "half": bench.HALVES[name], "seed": seed, "num_pairs": num_pairs}
                row.update(ari_by_scale(xs, y, est.constraints_, clusterings, gmm.covariance_type))
                rows.append(row)
                logging.info("%s", row)
    return rows


def ari_by_scale(
    x: np.ndarray, y: np.ndarray, constraints: ConstraintSet, clusterings: dict[str, np.ndarray], covariance_type: str
) -> dict[str, float]:
    """The ARI of the deep model's clusters ("deep"), and of what the fallback returns with the pairs' weights times
    each of :data:`SCALES` and each of :data:`RATES` times the pairs per sample in its score, for the scaled input
    ``x`` [N, F], labels ``y`` and the pairs trained on."""
    from sklearn.metrics import adjusted_rand_score

    from dcgmm_tf.fallback import choose, pair_scale

    k = len(np.unique(y))
    row = {"deep": adjusted_rand_score(y, clusterings["deep"])}
    scales = [*SCALES, *(pair_scale(len(constraints), len(x), rate) for rate in RATES)]
    for name, scale in zip(SHARES, scales, strict=True):
        chosen, _, mixture = choose(x, constraints, clusterings, k, covariance_type, scale)
        labels = mixture.probabilities.argmax(-1) if chosen == "input" else clusterings["deep"]
        row[name] = adjusted_rand_score(y, labels)
    return row


def mean_by_scale(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean ARI per half, count of pairs and scale (and of the deep model alone), with the number of fits."""
    columns = ["deep", *SHARES]
    means = rows.groupby(["half", "num_pairs"])[columns].mean()
    means.insert(0, "fits", rows.groupby(["half", "num_pairs"]).size())
    return means


def _define_flags() -> None:
    flags.DEFINE_string("output_dir", "results/your_data_bench", "Folder of fallback_weight.csv.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the pairs' draw and of the estimator.")
    flags.DEFINE_list("pairs", ["100", "500"], "Counts of random pairs answered from the labels.")
    bench.define_sets_flag(SETS, SETS, "The sets")


def main(argv: list[str]) -> None:
    del argv
    counts = [int(count) for count in FLAGS.pairs]
    rows = pd.DataFrame(fallback_rows(FLAGS.datasets, [int(s) for s in FLAGS.seeds], counts))
    results.write_csv_atomically(rows, Path(FLAGS.output_dir) / "fallback_weight.csv")
    print(mean_by_scale(rows).round(4).to_string())


if __name__ == "__main__":
    _define_flags()
    app.run(main)
