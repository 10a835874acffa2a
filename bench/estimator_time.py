r"""The estimator's time on small data: ``DCGMMClustering`` with its defaults, fitted once per case.

    python -m bench.estimator_time                                    # both cases, all cores
    python -m bench.estimator_time --cases=table --output=bench/results/estimator_time.jsonl

The cases: ``digits``, scikit-learn's 1,797 digits (64 pixels in [0, 1], K = 10) with 1,500 random pairs answered
from the labels at the paper's confidence (``ConstraintSet.from_labels(y, 1500, alpha=1e4, seed=0)``); ``table``,
1,000 x 20 Gaussian blobs (``make_blobs(1000, 20, centers=5, cluster_std=4, random_state=0)``, K = 5) without pairs.
Reported per case: the wall seconds of ``fit`` (the import of TensorFlow not counted), the ARI of ``labels_``, the
schedule, the epochs the kept start's fit ran, the network's widths and the start kept. ``random_state`` is 0
throughout.
"""

from __future__ import annotations

import time

from absl import app, flags

from bench.common import machine, report

FLAGS = flags.FLAGS
CASES = ("digits", "table")


def _define_flags() -> None:
    """The flags, defined when it runs as a program (importing it, as the tests do, defines none: ``--output``
    would clash with the other benchmarks' in one process)."""
    flags.DEFINE_list("cases", list(CASES), f"Cases to time, of {CASES}.")
    flags.DEFINE_integer("threads", 0, "TensorFlow intra- and inter-op threads (0: TensorFlow's default, all cores).")
    flags.DEFINE_string("output", None, "Append the results as one JSON line per case to this file.")


def case_data(case: str):
    """``(x, y, constraints or None)`` of a case of :data:`CASES`."""
    import numpy as np
    from sklearn.datasets import load_digits, make_blobs

    from dcgmm_tf import ConstraintSet

    if case == "digits":
        x, y = load_digits(return_X_y=True)
        return x / 16.0, y, ConstraintSet.from_labels(y, 1500, alpha=1e4, seed=0)
    if case == "table":
        x, y = make_blobs(1000, 20, centers=5, cluster_std=4.0, random_state=0)
        return x.astype(np.float32), y, None
    raise ValueError(f"case must be one of {CASES}, got {case!r}")


def measure(case: str, **params) -> dict:
    """Seconds and ARI of one ``DCGMMClustering(n_clusters=K, random_state=0, **params).fit`` on ``case``."""
    import numpy as np
    from sklearn.metrics import adjusted_rand_score

    from dcgmm_tf.estimator import DCGMMClustering

    x, y, constraints = case_data(case)
    estimator = DCGMMClustering(n_clusters=len(np.unique(y)), random_state=0, **params)
    start = time.perf_counter()
    estimator.fit(x, constraints=constraints)
    seconds = time.perf_counter() - start
    schedule = estimator.schedule_
    return {
        "case": case,
        "num_samples": len(x),
        "num_features": x.shape[1],
        "num_pairs": 0 if constraints is None else len(constraints),
        "seconds": round(seconds, 2),
        "ari": round(float(adjusted_rand_score(y, estimator.labels_)), 4),
        "epochs": schedule.epochs,
        "epochs_run": len(estimator.history_["loss"]),  # of the kept start's fit, which may stop early
        "pretrain_epochs": schedule.pretrain_epochs,
        "batch_size": schedule.batch_size,
        "hidden_units": list(estimator.hidden_units_),
        "start": estimator.start_,
    }


def main(argv: list[str]) -> None:
    del argv
    from dcgmm_tf.runtime import set_threads

    set_threads(FLAGS.threads)
    for case in FLAGS.cases:
        result = {"bench": "estimator_time", **measure(case), "threads": FLAGS.threads, "machine": machine()}
        report(result, FLAGS.output)


if __name__ == "__main__":
    _define_flags()
    app.run(main)
