r"""Image sets standardised as a table, without pairs: the estimator against k-means on the same features.

    python -m studies.standardised_images --datasets=mnist_2000,digits --seeds=0 --likelihoods=auto,gaussian \
        --output_dir=studies/results/standardised_images

Each set's pixels are standardised feature by feature (scikit-learn's ``StandardScaler``), as tables are usually
given to a clusterer: ``mnist_2000`` is 2,000 MNIST training images drawn with seed 0 (a set the benchmark does not
hold; the files as ``experiments.run`` finds them), ``digits`` scikit-learn's 1,797. For each set, seed and
``likelihood`` (``"auto"``, the default, or a likelihood forced) ``results.csv`` gets one row: the estimator's ARI
against the classes, K the number of classes, no pairs, and k-means' (10 starts, the same seed) on the same features.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from absl import app, flags

from dcgmm_tf.validation import exit_on_user_error

FLAGS = flags.FLAGS
SETS = ("mnist_2000", "digits")
MNIST_ROWS = 2000


def standardised_sets(
    names: Sequence[str], data_dir: str | None = None
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(name, X standardised feature by feature as float64, labels) of each set in ``names``."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    from dcgmm_tf.data.mnist import load_mnist

    for name in names:
        if name == "digits":
            x, y = load_digits(return_X_y=True)
        elif name == "mnist_2000":
            data = load_mnist("mnist", data_dir, download=False)
            rows = np.random.default_rng(0).choice(len(data.x_train), MNIST_ROWS, replace=False)
            x, y = data.x_train[rows].reshape(MNIST_ROWS, -1), data.y_train[rows]
        else:
            raise ValueError(f"unknown set {name!r}; the sets are {', '.join(SETS)}")
        yield name, StandardScaler().fit_transform(np.asarray(x, np.float64)), np.asarray(y)


def compare(x: np.ndarray, y: np.ndarray, seed: int, likelihood: str, params: dict | None = None) -> dict:
    """The estimator (``likelihood``, ``params`` beside its defaults) and k-means, both at K = the classes of ``y``
    and ``seed``, without pairs: their ARI, what the estimator chose and its seconds; a fit whose loss became
    non-finite gets ARI NaN and the error as its note."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from dcgmm_tf import DCGMMClustering

    k = len(np.unique(y))
    kmeans = KMeans(k, n_init=10, random_state=seed).fit_predict(x)
    kmeans_ari = adjusted_rand_score(y, kmeans)
    row = dict(likelihood=likelihood, likelihood_used="", ari=float("nan"), kmeans_ari=kmeans_ari, chosen="", start="")
    start = time.perf_counter()
    try:
        est = DCGMMClustering(k, random_state=seed, likelihood=likelihood, **(params or {})).fit(x)
    except FloatingPointError as error:  # a diverged fit is a result: its row says so
        return {**row, "seconds": round(time.perf_counter() - start, 1), "note": str(error)}
    row.update(likelihood_used=est.likelihood_, ari=adjusted_rand_score(y, est.labels_), chosen=est.chosen_)
    return {**row, "start": est.start_, "seconds": round(time.perf_counter() - start, 1), "note": ""}


def main(argv: list[str]) -> None:
    del argv
    from experiments.results import append_row

    output = Path(FLAGS.output_dir) / "results.csv"
    for name, x, y in standardised_sets(FLAGS.datasets, FLAGS.data_dir):
        for seed in (int(s) for s in FLAGS.seeds):
            for likelihood in FLAGS.likelihoods:
                row = {"dataset": name, "n_samples": len(x), "n_features": x.shape[1], "seed": seed}
                row.update(compare(x, y, seed, likelihood))
                append_row(output, row)
                print(row, flush=True)


def define_flags() -> None:
    """The study's flags; defined when it runs as a program only, so that tests import it beside other runners."""
    flags.DEFINE_list("datasets", list(SETS), f"Sets among {', '.join(SETS)}.")
    flags.DEFINE_list("seeds", ["0"], "Seeds of the estimator and k-means.")
    flags.DEFINE_list("likelihoods", ["auto", "gaussian"], "The estimator's likelihood parameter, one row each.")
    flags.DEFINE_string("output_dir", "results/standardised_images", "Where results.csv gets its rows.")
    flags.DEFINE_string("data_dir", None, "Where the MNIST files are searched first.")


if __name__ == "__main__":
    define_flags()
    app.run(exit_on_user_error(main))
