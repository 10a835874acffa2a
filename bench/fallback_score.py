r"""The fallback's score at scale: one clustering's mixture scored with its pairs (what ``input_fallback`` does
twice per fit), per covariance type.

    python -m bench.fallback_score                                   # 1,000,000 samples, 10 features, K = 10
    python -m bench.fallback_score --num_samples=100000 --output=bench/results/fallback_score.jsonl

Gaussian clusters (``num_clusters`` centres, unit noise) and ``num_pairs`` pairs answered from their labels
(``ConstraintSet.from_labels``); the true clustering is scored by :func:`dcgmm_tf.paired_mixture.score_clusterings`
with the pairs at the estimator's share of their weight (:func:`dcgmm_tf.fallback.pair_scale`). Reported: seconds
per covariance type, and the process's peak resident memory (``ru_maxrss``) before scoring (the libraries,
TensorFlow among them, and the data) and after; and the score (``objective``) of the true clustering per covariance
type.
"""

from __future__ import annotations

import resource
import time
from typing import Any

from absl import app, flags

from bench.common import machine, report

FLAGS = flags.FLAGS


def _define_flags() -> None:
    """The flags, defined when it runs as a program (importing it, as the tests do, defines none: ``--output``
    would clash with the other benchmarks' in one process)."""
    flags.DEFINE_integer("num_samples", 1_000_000, "Samples scored.")
    flags.DEFINE_integer("num_features", 10, "Features of the input.")
    flags.DEFINE_integer("num_clusters", 10, "Clusters K.")
    flags.DEFINE_integer("num_pairs", 10_000, "Pairs answered from the labels.")
    flags.DEFINE_list("covariance_types", ["diag", "full"], "Covariance types of the scored mixture.")
    flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")


def measure(
    num_samples: int, num_features: int, num_clusters: int, num_pairs: int, covariance_types: list[str]
) -> dict:
    """Seconds to score one clustering per covariance type, its score, and the peak resident memory in MB before
    scoring and after."""
    from dcgmm_tf import paired_mixture
    from dcgmm_tf.constraints import ConstraintSet
    from dcgmm_tf.fallback import pair_scale

    x, labels, pairs = clusters(num_samples, num_features, num_clusters, num_pairs)
    before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    small = ConstraintSet.from_labels(labels[:1000], 10, seed=0)
    seconds, objectives = {}, {}
    scale = pair_scale(len(pairs), num_samples)
    for kind in covariance_types:  # a small call first: the timed one pays no first-call costs
        paired_mixture.score_clusterings(x[:1000], small, {"truth": labels[:1000]}, num_clusters, kind)
        start = time.perf_counter()
        scored = paired_mixture.score_clusterings(x, pairs, {"truth": labels}, num_clusters, kind, scale)
        seconds[kind] = round(time.perf_counter() - start, 2)
        objectives[kind] = float(scored["truth"].objective)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "seconds": seconds,
        "objective": objectives,
        "peak_rss_mb_before": round(before_mb),
        "peak_rss_mb": round(peak_mb),
    }


def clusters(num_samples: int, num_features: int, num_clusters: int, num_pairs: int) -> tuple[Any, Any, Any]:
    """The scored data: ``num_clusters`` Gaussian clusters (centres of spread 3, unit noise) of ``num_samples`` rows,
    their labels and ``num_pairs`` pairs answered from them, all drawn from seed 0."""
    import numpy as np

    from dcgmm_tf.constraints import ConstraintSet

    rng = np.random.default_rng(0)
    labels = rng.integers(0, num_clusters, num_samples)
    centres = 3.0 * rng.normal(size=(num_clusters, num_features))
    x = centres[labels] + rng.normal(size=(num_samples, num_features))
    return x, labels, ConstraintSet.from_labels(labels, num_pairs, seed=0)


def main(argv: list[str]) -> None:
    del argv
    sizes = {
        "num_samples": FLAGS.num_samples,
        "num_features": FLAGS.num_features,
        "num_clusters": FLAGS.num_clusters,
        "num_pairs": FLAGS.num_pairs,
    }
    result = measure(**sizes, covariance_types=FLAGS.covariance_types)
    report({"bench": "fallback_score", **sizes, **result, "machine": machine()}, FLAGS.output)


if __name__ == "__main__":
    _define_flags()
    app.run(main)
