"""Process-wide TensorFlow settings: threads, op determinism, the mixed-precision policy, tf.distribute."""

from __future__ import annotations

import functools

import keras
import tensorflow as tf

from dcgmm_tf.config import MIXED_PRECISION_POLICIES, RunConfig, RuntimeConfig
from dcgmm_tf.distribute import make_strategy


def set_threads(threads: int) -> None:
    """TensorFlow intra- and inter-op threads; 0 keeps TensorFlow's default (all cores). Call before any op runs."""
    if threads:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def configure(config: RunConfig, runtime: RuntimeConfig) -> tf.distribute.Strategy:
    """Applies ``runtime``'s threads and determinism and ``config``'s precision policy to this process; returns the
    tf.distribute strategy of ``runtime.strategy``. Call once, before any other TensorFlow operation."""
    set_threads(runtime.threads)
    if runtime.deterministic:
        tf.config.experimental.enable_op_determinism()
    keras.mixed_precision.set_global_policy(MIXED_PRECISION_POLICIES[config.mixed_precision])
    return distribution_strategy(runtime.strategy)


@functools.cache
def distribution_strategy(name: str) -> tf.distribute.Strategy:
    """The process's strategy of that name, created once (a multi-worker strategy must be created only once)."""
    return make_strategy(name)
