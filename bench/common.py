"""Helpers shared by the benchmarks."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from importlib import metadata


def machine() -> dict:
    """CPU, core count, current load, library versions and TensorFlow-related environment variables.

    The versions come from the installed packages' metadata, so that a process that only starts others (as
    ``bench.scale`` does, one process per N) need not import TensorFlow for them.
    """
    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    env = {k: os.environ[k] for k in ("TF_XLA_FLAGS", "XLA_FLAGS", "TF_ENABLE_ONEDNN_OPTS") if k in os.environ}
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_1min": os.getloadavg()[0],
        "tensorflow": metadata.version("tensorflow"),
        "keras": metadata.version("keras"),
        "python": platform.python_version(),
        **({"env": env} if env else {}),
    }


def report(result: dict, output: str | None) -> None:
    """Print ``result`` as JSON and, if ``output`` is given, append it to that file as one JSON line."""
    print(json.dumps(result, indent=1))
    if output:
        with open(output, "a") as f:
            f.write(json.dumps(result) + "\n")


def time_calls(fn: Callable, args: tuple, calls: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call of ``fn(*args)`` on ``clock`` (a tf.function: calls return when the work is done on CPU)."""
    start = clock()
    for _ in range(calls):
        fn(*args)
    return (clock() - start) / calls


def pair_batch(x_all, batch_size: int, seed: int = 0):
    """One training batch of ``x_all`` and the W of a pair batch as the "separate" layout builds it.

    B/2 must- or cannot-link pairs (sample i with sample i + B/2), W = +-1e4 on the pairs. Returns tensors (x, w).
    """
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    x = tf.constant(x_all[rng.choice(len(x_all), batch_size, replace=False)])
    w = np.zeros((batch_size, batch_size), np.float32)
    half = np.arange(batch_size // 2)
    w[half, half + batch_size // 2] = w[half + batch_size // 2, half] = rng.choice([-1e4, 1e4], batch_size // 2)
    return x, tf.constant(w)


def dense_shapes(model) -> list[tuple[int, int]]:
    """(fan_in, fan_out) of every Dense kernel of the encoder and decoder, in call order."""
    return [
        tuple(v.shape) for v in model.encoder.trainable_weights + model.decoder.trainable_weights if len(v.shape) == 2
    ]


def step_matmuls(shapes: list[tuple[int, int]], batch: int, first_input: tuple[int, int]) -> list[tuple]:
    """(m, k, n) of the matmuls of one training step: forward, dW for all layers, dX for all but ``first_input``."""
    out = []
    for fan_in, fan_out in shapes:
        out.append((batch, fan_in, fan_out))  # Y = X W
        out.append((fan_in, batch, fan_out))  # dW = X^T dY
        if (fan_in, fan_out) != first_input:
            out.append((batch, fan_out, fan_in))  # dX = dY W^T
    return out


def reference_matmuls(model, batch_size: int, dtype=None, jit_compile: bool = False):
    """The efficiency reference: plain matmuls of exactly the shapes one training step of ``model`` multiplies.

    Returns ``(fn, operands, flop)``: call ``fn(operands)`` to run them all once; ``flop`` is their FLOP count.
    """
    import tensorflow as tf

    shapes = dense_shapes(model)
    matmuls = step_matmuls(shapes, batch_size, shapes[0])
    flop = sum(2 * m * k * n for m, k, n in matmuls)
    dtype = dtype or tf.float32
    operands = [
        (tf.cast(tf.random.normal((m, k)), dtype), tf.cast(tf.random.normal((k, n)), dtype)) for m, k, n in matmuls
    ]

    @tf.function(jit_compile=jit_compile)
    def reference(operands):
        return [tf.matmul(a, b) for a, b in operands]

    return reference, operands, flop
