"""The suite's workers share the cores: each runs TensorFlow's ops on its share of them.

With two pytest workers on two cores, TensorFlow's default (a thread per core in each worker) gives four busy
threads on two cores, which only wait for each other. Set before TensorFlow runs an op; the runners that tests
start as subprocesses keep their own settings.
"""

import os

import tensorflow as tf

WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
tf.config.threading.set_intra_op_parallelism_threads(max(1, (os.cpu_count() or 1) // WORKERS))
