"""Process-wide state that one block of work sets and gives back after it: the seeds and the precision policy.

Two things in a training draw from process-wide random state rather than from a generator passed to them: Keras'
default initializers (each draws its seed from Python's ``random`` when the layer is made) and the shuffle of
``tf.data`` (its two seeds are TensorFlow's global seed and the op's). Neither can be given both parts of its
seed through a public API, and changing either changes every pretrained model and every results row. So the
library sets them for the block that needs them and restores the caller's state afterwards: a run's results
depend on its seed alone, and the caller's ``random``, NumPy and TensorFlow seeds are as they were.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context as tf_context

from dcgmm_tf.config import MIXED_PRECISION_POLICIES


@contextlib.contextmanager
def process_seeds(seed: int) -> Iterator[None]:
    """Python's, NumPy's and TensorFlow's global seeds set to ``seed`` inside the block, restored after it.

    Args:
      seed: The seed of the block.

    Yields:
      Nothing: the block runs with the seeds set.
    """
    python_state, numpy_state, tf_seed = random.getstate(), np.random.get_state(), tf_context.global_seed()
    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        tf.random.set_seed(tf_seed)


def python_generator() -> random.Random:
    """A generator that continues Python's global random stream from where it is now (without advancing it).

    Inside :func:`process_seeds`, the order of DEC's batches comes from here, so it is explicit and the same
    as when it was drawn from the global stream.
    """
    generator = random.Random()
    generator.setstate(random.getstate())
    return generator


@contextlib.contextmanager
def precision_policy(mixed_precision: str) -> Iterator[None]:
    """Keras' global dtype policy set to that of ``mixed_precision`` (off, bf16, fp16) inside the block."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(MIXED_PRECISION_POLICIES[mixed_precision])
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
