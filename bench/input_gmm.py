r"""The input GMM's cost: :func:`dcgmm_tf.starts.input_gmm` on Gaussian clusters whose features have unequal spreads.

    python -m bench.input_gmm                                        # 20,000 x 50 and 25,000 x 100, K = 10
    python -m bench.input_gmm --output=bench/results/input_gmm.jsonl

``num_clusters`` Gaussian clusters (centres 3 apart per feature in expectation, unit noise), each feature then
multiplied by a spread drawn from 0.1 to 10 and the whole standardised as the estimator does; the spreads are passed
as ``spread``, so that EM also runs at the features' original spread. Reported: seconds per size, with the
estimator's two floors (the type chosen by fits at ``INPUT_GMM_CHOICE_FLOOR``, the clusters fitted at
``INPUT_GMM_COVARIANCE_FLOOR``) and with one floor (``choice_floor=covariance_floor``), and the covariance type
chosen.
"""

from __future__ import annotations

import time

from absl import app, flags

from bench.common import machine, report

FLAGS = flags.FLAGS


def _define_flags() -> None:
    """The flags, defined when it runs as a program (importing it, as the tests do, defines none: ``--output``
    would clash with the other benchmarks' in one process)."""
    flags.DEFINE_list("sizes", ["20000x50", "25000x100"], "Rows x features of each timed input.")
    flags.DEFINE_integer("num_clusters", 10, "Clusters K.")
    flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")


def measure(num_samples: int, num_features: int, num_clusters: int) -> dict:
    """Seconds of one input GMM with the estimator's two floors and with one, and the covariance type chosen."""
    import numpy as np

    from dcgmm_tf import starts

    rng = np.random.default_rng(0)
    labels = rng.integers(0, num_clusters, num_samples)
    centres = 3.0 * rng.normal(size=(num_clusters, num_features))
    spread = 10.0 ** rng.uniform(-1, 1, num_features)
    raw = (centres[labels] + rng.normal(size=(num_samples, num_features))) * spread
    scale = raw.std(0)
    x = (raw - raw.mean(0)) / scale
    result = {}
    for name, choice_floor in (
        ("two floors", starts.INPUT_GMM_CHOICE_FLOOR),
        ("one floor", starts.INPUT_GMM_COVARIANCE_FLOOR),
    ):
        start = time.perf_counter()
        gmm = starts.input_gmm(x, num_clusters, seed=0, spread=scale, choice_floor=choice_floor)
        result[name] = {"seconds": round(time.perf_counter() - start, 2), "covariance": gmm.covariance_type}
    return result


def main(argv: list[str]) -> None:
    del argv
    for size in FLAGS.sizes:
        rows, features = (int(n) for n in size.split("x"))
        result = measure(rows, features, FLAGS.num_clusters)
        sizes = {"num_samples": rows, "num_features": features, "num_clusters": FLAGS.num_clusters}
        report({"bench": "input_gmm", **sizes, **result, "machine": machine()}, FLAGS.output)


if __name__ == "__main__":
    _define_flags()
    app.run(main)
