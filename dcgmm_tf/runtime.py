"""Process-wide TensorFlow settings: threads, op determinism, tf.distribute.

The mixed-precision policy of a run is not process-wide: :func:`dcgmm_tf.process_state.precision_policy` applies it
around the training, from Python and from the command line alike."""

from __future__ import annotations

import functools

import tensorflow as tf

from dcgmm_tf.config import RuntimeConfig
from dcgmm_tf.distribute import make_strategy


def set_threads(threads: int) -> None:
    """TensorFlow intra- and inter-op threads; 0 keeps TensorFlow's default (all cores). Call before any op runs."""
    if threads:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def configure(runtime: RuntimeConfig) -> tf.distribute.Strategy:
    """Applies ``runtime``'s threads and determinism to this process; returns the tf.distribute strategy of
    ``runtime.strategy``. Call once, before any other TensorFlow operation."""
    set_threads(runtime.threads)
    if runtime.deterministic:
        tf.config.experimental.enable_op_determinism()
    return distribution_strategy(runtime.strategy)


@functools.cache
def distribution_strategy(name: str) -> tf.distribute.Strategy:
    """The process's strategy of that name, created once (a multi-worker strategy must be created only once)."""
    return make_strategy(name)
