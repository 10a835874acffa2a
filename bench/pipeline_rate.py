r"""The training input pipeline alone: batches per second of ``constrained_dataset`` (no model).

    python -m bench.pipeline_rate                      # Fashion-MNIST's size: 60,000 x 784, 6,000 constraints
    python -m bench.pipeline_rate --layout=spread --epochs=5

Iterates ``--epochs`` epochs after one warm-up epoch and reports batches per second and milliseconds per batch
(the target for a GPU run: >= 5,000 batches/s, 0.2 ms a batch, hidden behind the step by prefetching), read as
``fit`` reads them: by a ``tf.function`` that takes the next element of the iterator inside the graph. Reading
them in a Python loop (``for batch in dataset``, reported too) adds the eager iterator's cost per element, which
``fit`` does not pay. Both read the epochs through one iterator of the repeated dataset; ``fit`` opens a new
iterator every epoch, whose first batch waits for the epoch's preparation unless it was made ahead. The third
figure reads each epoch with its own ``Dataset.reduce`` (a new iterator per epoch, back to back), as ``fit`` does.
The data are random in [0, 1] with constraints drawn from random labels; the cost does not
depend on the values.
"""

from __future__ import annotations

import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_samples", 60000, "Training samples.", lower_bound=2)
flags.DEFINE_integer("num_features", 784, "Features per sample.", lower_bound=1)
flags.DEFINE_integer("num_pairs", 6000, "Constraints.", lower_bound=0)
flags.DEFINE_integer("batch", 256, "Batch size.", lower_bound=2)
flags.DEFINE_enum("layout", "separate", ["separate", "spread"], "Where the constraint pairs go.")
flags.DEFINE_integer("epochs", 3, "Timed epochs (after one warm-up epoch).", lower_bound=1)
flags.DEFINE_string("output", None, "Append the result as one JSON line to this file.")


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf

    from bench.common import machine, report
    from dcgmm_tf import ConstraintSet
    from dcgmm_tf.data import constrained_dataset

    rng = np.random.default_rng(0)
    x = rng.random((FLAGS.num_samples, FLAGS.num_features), dtype=np.float32)
    constraints = ConstraintSet.from_labels(rng.integers(0, 10, FLAGS.num_samples), FLAGS.num_pairs, seed=0)
    dataset = constrained_dataset(x, constraints, batch_size=FLAGS.batch, seed=0, layout=FLAGS.layout)
    steps = int(dataset.cardinality())

    @tf.function
    def read(iterator, count):  # like Keras' train function: next() inside the graph, the result used
        total = tf.constant(0.0)
        for _ in tf.range(count):
            x_batch, w_batch = next(iterator)
            total += x_batch[0, 0] + w_batch[0, 0]
        return total

    iterator = iter(dataset.repeat())
    read(iterator, tf.constant(steps))  # warm-up epoch: traces the functions
    start = time.perf_counter()
    read(iterator, tf.constant(steps * FLAGS.epochs)).numpy()
    seconds = time.perf_counter() - start
    batches = steps * FLAGS.epochs
    start = time.perf_counter()
    for _ in range(FLAGS.epochs):
        for _ in dataset:
            pass
    python_seconds = time.perf_counter() - start

    @tf.function
    def read_epoch():  # a new iterator for the epoch, as fit opens one per epoch
        return dataset.reduce(tf.constant(0.0), lambda total, batch: total + batch[0][0, 0] + batch[1][0, 0])

    read_epoch()  # traces
    start = time.perf_counter()
    for _ in range(FLAGS.epochs):
        read_epoch().numpy()
    epoch_seconds = time.perf_counter() - start
    report(
        {
            "machine": machine(),
            "num_samples": FLAGS.num_samples,
            "num_pairs": FLAGS.num_pairs,
            "batch": FLAGS.batch,
            "layout": FLAGS.layout,
            "batches": batches,
            "batches_per_s": batches / seconds,
            "ms_per_batch": 1000 * seconds / batches,
            "python_loop_batches_per_s": batches / python_seconds,
            "epoch_by_epoch_batches_per_s": batches / epoch_seconds,
        },
        FLAGS.output,
    )


if __name__ == "__main__":
    app.run(main)
