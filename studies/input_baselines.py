r"""What the input alone gives: k-means and a diagonal GMM on a data set's input features, scored on its test split.

    python -m studies.input_baselines --dataset=fashion --input_features=hog_scaled --output_dir=results/input

Each method is fitted on the training split (no pairs, no labels) with ``--seed`` and predicts the test split, as
DC-GMM's rows are scored; ``results.csv`` gets one row per method (ACC, NMI, ARI), so a reader can tell how much of a
row the features give and how much the model and the pairs add.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from absl import app, flags

from dcgmm_tf.config import INPUT_FEATURES
from dcgmm_tf.validation import exit_on_user_error

FLAGS = flags.FLAGS


def input_baselines(x_train: np.ndarray, x_test: np.ndarray, num_clusters: int, seed: int, n_init: int) -> dict:
    """The test-split clusters of k-means and of a diagonal GMM fitted on ``x_train``, and each fit's seconds."""
    from sklearn.cluster import KMeans
    from sklearn.mixture import GaussianMixture

    found = {}
    for name, method in (
        ("kmeans", KMeans(num_clusters, n_init=n_init, random_state=seed)),
        ("gmm_diag", GaussianMixture(num_clusters, covariance_type="diag", n_init=n_init, random_state=seed)),
    ):
        start = time.perf_counter()
        method.fit(x_train)
        found[name] = (method.predict(x_test), time.perf_counter() - start)
        print(f"{name}: fitted in {found[name][1]:.0f} s", file=sys.stderr, flush=True)
    return found


def main(argv):
    del argv
    import pandas as pd

    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.data.features import with_input_features
    from dcgmm_tf.metrics import clustering_scores

    data = with_input_features(load_dataset(FLAGS.dataset, FLAGS.data_dir), FLAGS.input_features)
    found = input_baselines(data.x_train, data.x_test, data.num_classes, FLAGS.seed, FLAGS.n_init)
    rows = [
        {
            "dataset": data.name,
            "input_features": FLAGS.input_features,
            "method": name,
            "seed": FLAGS.seed,
            **clustering_scores(data.y_test, clusters),
            "fit_seconds": round(seconds, 1),
        }
        for name, (clusters, seconds) in found.items()
    ]
    output = Path(FLAGS.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(output / "results.csv", index=False)
    print(pd.DataFrame(rows).to_string(index=False), file=sys.stdout)


def define_flags() -> None:
    """The runner's flags; defined when it runs as a program only, so that tests import it beside other runners."""
    flags.DEFINE_string("dataset", "fashion", "A data set name or file, as for experiments.run.")
    flags.DEFINE_enum("input_features", "hog_scaled", list(INPUT_FEATURES), "What the methods read of each image.")
    flags.DEFINE_integer("seed", 0, "Seed of k-means' and the GMM's starts.", lower_bound=0)
    flags.DEFINE_integer("n_init", 10, "Starts of k-means and of the GMM (the best is kept).", lower_bound=1)
    flags.DEFINE_string("output_dir", "results/input_baselines", "Where results.csv is written.")
    flags.DEFINE_string("data_dir", None, "Where the data files are searched first.")


if __name__ == "__main__":
    define_flags()
    app.run(exit_on_user_error(main))
