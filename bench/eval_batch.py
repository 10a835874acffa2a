r"""Evaluation cost against ``--eval_batch_size``: ``predict`` of p(c|x) on the 10,000 Fashion-MNIST test images.

    nice -n 5 python -m bench.eval_batch

This is what ``ClusteringMetrics`` (every ``--eval_every`` epochs) and the final scoring run. Reports the best of
``--repeats`` timings per batch size, in CPU seconds of the process with one TensorFlow thread (robust on a shared
machine, comparable with ``bench.throughput --threads=1 --clock=cpu``).
"""

from __future__ import annotations

import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("batch_sizes", ["256", "1024", "4096", "10000"], "Evaluation batch sizes.")
flags.DEFINE_integer("repeats", 5, "Timings per batch size.")
flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")


def main(argv):
    del argv
    import numpy as np

    from bench.common import machine, report
    from dcgmm_tf import DCGMM
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.runtime import set_threads

    set_threads(1)
    data = load_dataset("fashion")
    x_test = data.x_test.reshape(len(data.x_test), -1).astype(np.float32)
    model = DCGMM((784,), num_clusters=10, seed=0)
    result = {"machine": machine(), "threads": 1, "clock": "cpu", "samples": len(x_test), "seconds": {}}
    for batch_size in (int(b) for b in FLAGS.batch_sizes):
        model.predict(x_test[:batch_size], batch_size=batch_size, verbose=0)  # trace
        times = []
        for _ in range(FLAGS.repeats):
            start = time.process_time()
            model.predict(x_test, batch_size=batch_size, verbose=0)
            times.append(time.process_time() - start)
        result["seconds"][batch_size] = round(min(times), 3)
    report(result, FLAGS.output)


if __name__ == "__main__":
    app.run(main)
