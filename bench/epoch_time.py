r"""Wall time of every epoch of ``fit`` on Fashion-MNIST, with tf.data's autotuning off (the library's pipelines)
and on.

    python -m bench.epoch_time                    # 12 epochs each; takes ~3 minutes on an idle 2-core machine

Trains the default network on the runner's data (the full training split, 6,000 constraints) for ``--epochs``
epochs per setting, a fresh model each, in a plain loop that like ``fit`` opens one data iterator per epoch and
closes it at the end; reports every epoch's wall milliseconds per step and the time spent closing its iterator.
With autotuning on, some iterators take ~5 s to close while the CPU sits idle;
``dcgmm_tf.data.pipeline.prefetch_without_autotune`` avoids it. Wall clock: run it on an otherwise idle machine.
"""

from __future__ import annotations

import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("epochs", 12, "Epochs per setting.")
flags.DEFINE_list("autotune", ["off", "on"], "Settings of tf.data autotuning to time, in this order.")
flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")


def main(argv):
    del argv
    import keras
    import numpy as np
    import tensorflow as tf

    from bench.common import machine, report
    from dcgmm_tf import DCGMM, ConstraintSet
    from dcgmm_tf.data import constrained_dataset, load_dataset
    from dcgmm_tf.optimizers import FusedAdam

    data = load_dataset("fashion")
    x = data.x_train.reshape(len(data.x_train), -1).astype(np.float32)
    constraints = ConstraintSet.from_labels(data.y_train, 6000, seed=0)
    result = {"machine": machine(), "epochs": FLAGS.epochs}
    for setting in FLAGS.autotune:
        dataset = constrained_dataset(x, constraints, batch_size=256, seed=0)
        options = tf.data.Options()
        options.autotune.enabled = setting == "on"
        dataset = dataset.with_options(options)
        steps = int(dataset.cardinality())
        keras.utils.set_random_seed(0)
        model = DCGMM((784,), num_clusters=10, seed=0)
        model.compile(optimizer=FusedAdam(1e-3))
        step = tf.function(model.train_step)
        per_step_ms, close_s = [], []
        for _ in range(FLAGS.epochs):  # fit's loop: a new iterator per epoch, closed at its end
            start = time.perf_counter()
            iterator = iter(dataset)
            for batch in iterator:
                step(batch)
            closing = time.perf_counter()
            del iterator
            end = time.perf_counter()
            per_step_ms.append(round(1e3 * (end - start) / steps, 2))
            close_s.append(round(end - closing, 3))
        result[f"autotune_{setting}"] = {
            "ms_per_step": per_step_ms,
            "iterator_close_s": close_s,
            "mean_ms_per_step_after_first": float(np.mean(per_step_ms[1:])),
            "epochs_with_close_over_1s": sum(s > 1 for s in close_s),
        }
    report(result, FLAGS.output)


if __name__ == "__main__":
    app.run(main)
