"""The process's settings and state: threads, op determinism, tf.distribute, the seeds and precision policy that one
block of work sets and gives back, and the cache folder.

Two things in a training draw from process-wide random state rather than from a generator passed to them: Keras'
default initializers (each draws its seed from Python's ``random`` when the layer is made) and the shuffle of
``tf.data`` (its two seeds are TensorFlow's global seed and the op's). Neither can be given both parts of its
seed through a public API, and changing either changes every pretrained model and every results row. So the
library sets them for the block that needs them and restores the caller's state afterwards (:func:`process_seeds`):
a run's results depend on its seed alone, and the caller's ``random``, NumPy and TensorFlow seeds are as they were.
The mixed-precision policy of a run is not process-wide either: :func:`precision_policy` applies it around the
training, from Python and from the command line alike, with "auto" made concrete for this machine
(:func:`resolved_precision`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context as tf_context

from dcgmm_tf.config import MIXED_PRECISION_POLICIES, RuntimeConfig
from dcgmm_tf.data.paths import REPO_DATA_DIR
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


class _RetracingWarningFilter(logging.Filter):
    """Drops TensorFlow's "triggered tf.function retracing" warning; lets every other record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "triggered tf.function retracing" not in record.getMessage()


@contextlib.contextmanager
def no_retracing_warning() -> Iterator[None]:
    """TensorFlow's warning that a tf.function retraced, held back inside the block (other log lines pass).

    Each model the library makes traces its predict function once. TensorFlow counts those traces against the one
    piece of Keras code they share, so after a few fits in one process (a grid search, a benchmark) it warns of
    retracing although no function traced twice.

    Yields:
      Nothing: the block runs with the filter on TensorFlow's logger.
    """
    logger, quiet = logging.getLogger("tensorflow"), _RetracingWarningFilter()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


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


BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  # Linux's names of the CPU features that multiply bf16 in hardware


@functools.cache
def cpu_has_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU multiplies bf16 in hardware (AMX-BF16 or AVX512-BF16), by the flags that Linux lists in
    ``cpuinfo``; False where that file cannot be read (other systems)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    flags = {f for line in text.splitlines() if line.startswith("flags") for f in line.partition(":")[2].split()}
    return any(flag in flags for flag in BF16_CPU_FLAGS)


def resolved_precision(mixed_precision: str) -> str:
    """``mixed_precision`` (auto, off, bf16, fp16) with "auto" made concrete: "bf16" on a CPU that multiplies bf16 in
    hardware (:func:`cpu_has_bf16`) when TensorFlow sees no GPU, else "off": oneDNN has no bf16 matmul for a CPU
    without those units (an AVX2 CPU, say), and on a GPU the 16-bit type is the user's choice (docs/performance.md)."""
    if mixed_precision != "auto":
        return mixed_precision
    return "bf16" if cpu_has_bf16() and not tf.config.list_physical_devices("GPU") else "off"


@contextlib.contextmanager
def precision_policy(mixed_precision: str) -> Iterator[None]:
    """Keras' global dtype policy set to that of ``mixed_precision`` (auto, off, bf16, fp16; "auto" as
    :func:`resolved_precision` makes it) inside the block."""
    previous = keras.mixed_precision.global_policy()
    precision = resolved_precision(mixed_precision)
    if mixed_precision == "auto":
        logging.info("mixed precision auto: %s on this machine", precision)
    keras.mixed_precision.set_global_policy(MIXED_PRECISION_POLICIES[precision])
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def cache_folder(runtime: RuntimeConfig) -> Path | None:
    """``runtime.cache_dir`` (default ``data/cache`` of the repository); None when ``runtime.cache`` is off."""
    if not runtime.cache:
        return None
    return Path(runtime.cache_dir) if runtime.cache_dir else REPO_DATA_DIR / "cache"


def cache_path(runtime: RuntimeConfig, name: str) -> Path | None:
    """The cache file ``name`` in :func:`cache_folder`; None when ``runtime.cache`` is off."""
    folder = cache_folder(runtime)
    return None if folder is None else folder / name


def cache_note(cached: bool, path: Path | None) -> str:
    """Where pretrained weights came from, for the log."""
    return f"loaded from {path}" if cached else f"saved to {path}" if path else "not cached"
