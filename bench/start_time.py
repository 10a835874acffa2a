r"""Wall time of each start strategy (``dcgmm_tf.cluster_init``) on Fashion-MNIST-sized embeddings.

    python -m bench.start_time                                   # 60,000 samples, 6,000 pairs, K = 10
    python -m bench.start_time --output=bench/results/start_time.jsonl

The embeddings are the first 10 principal components of the training images (what matters for the time is
N, D, K and K', not how the embeddings were learnt); the constraints are drawn from the labels. Each strategy
runs --repeats times; the median and the range are reported with the machine's description.
"""

from __future__ import annotations

import statistics
import time

from absl import app, flags

from bench import common

FLAGS = flags.FLAGS
flags.DEFINE_string("dataset", "fashion", "Data set (as in experiments.run).")
flags.DEFINE_integer("num_constraints", 6000, "Pairs drawn from the training labels.")
flags.DEFINE_integer("latent_dim", 10, "Dimension of the embeddings (principal components).")
flags.DEFINE_list("strategies", ["gmm", "merge", "latent_class"], "Start strategies to time.")
flags.DEFINE_integer("repeats", 3, "Timed runs per strategy.")
flags.DEFINE_string("output", None, "Append the result as one JSON line to this file.")


def main(argv):
    del argv
    import numpy as np
    from sklearn.decomposition import PCA

    from dcgmm_tf import ConstraintSet
    from dcgmm_tf.cluster_init import cluster_start, default_components
    from dcgmm_tf.data import load_dataset

    data = load_dataset(FLAGS.dataset)
    x = data.x_train.reshape(len(data.x_train), -1)
    z = PCA(FLAGS.latent_dim, random_state=0).fit_transform(x).astype(np.float32)
    constraints = ConstraintSet.from_labels(data.y_train, FLAGS.num_constraints, seed=0)
    result = {
        "benchmark": "start_time",
        "num_samples": len(z),
        "latent_dim": FLAGS.latent_dim,
        "num_clusters": data.num_classes,
        "num_constraints": len(constraints),
        "num_components": default_components(data.num_classes, len(z)),
        "machine": common.machine(),
    }
    for strategy in FLAGS.strategies:
        seconds = []
        for repeat in range(FLAGS.repeats):
            start = time.perf_counter()
            cluster_start(z, constraints, data.num_classes, strategy, seed=repeat)
            seconds.append(time.perf_counter() - start)
        result[strategy] = {
            "median_seconds": round(statistics.median(seconds), 2),
            "min_seconds": round(min(seconds), 2),
            "max_seconds": round(max(seconds), 2),
        }
        print(strategy, result[strategy], flush=True)
    common.report(result, FLAGS.output)


if __name__ == "__main__":
    app.run(main)
