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

``fit_mixture`` (the library's training) reads another pipeline: ``epoch_row_dataset``, the same batches as rows
of indices and W entries, each made into ``(x, W)`` inside the training step (``DCGMM.batch_source``). Two more
figures measure it, epoch by epoch: its rows alone (``Dataset.reduce``, as above: what the step waits for), and
its rows made into the batches inside a ``tf.function`` with a new iterator per epoch (the pipeline plus the work
that moved into the step).
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
    from dcgmm_tf.data.pipeline import batch_from_row, epoch_row_dataset, host_tensor

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

    rows = epoch_row_dataset(len(x), constraints, steps, FLAGS.batch, 0, FLAGS.layout, 0)
    samples = host_tensor(x)

    @tf.function
    def read_rows():  # the rows alone, a new iterator per epoch
        return rows.reduce(tf.constant(0.0), lambda total, row: total + tf.cast(row["indices"][0], tf.float32))

    @tf.function
    def make_batches():  # the rows made into batches in the graph, as the training step does, new iterator
        iterator, total = iter(rows), tf.constant(0.0)
        for _ in tf.range(steps):
            x_batch, w_batch = batch_from_row(samples, next(iterator))
            total += x_batch[0, 0] + w_batch[0, 0]
        return total

    def epochs_seconds(read) -> float:
        read()  # traces
        start = time.perf_counter()
        for _ in range(FLAGS.epochs):
            read().numpy()
        return time.perf_counter() - start

    epoch_seconds = epochs_seconds(read_epoch)
    rows_seconds = epochs_seconds(read_rows)
    made_seconds = epochs_seconds(make_batches)
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
            "fit_rows_epoch_by_epoch_batches_per_s": batches / rows_seconds,
            "fit_rows_made_in_graph_batches_per_s": batches / made_seconds,
        },
        FLAGS.output,
    )


if __name__ == "__main__":
    app.run(main)
