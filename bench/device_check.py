r"""Check a machine with a GPU in one command: placement, fp16 with loss scaling, XLA, step and epoch time.

    python -m bench.device_check                     # prints a table, appends JSON lines to bench/results/
    python -m bench.device_check --epoch_samples=60000 --timed_steps=200

Builds the paper's Fashion-MNIST-sized DC-GMM (784-500-500-2000-10, K = 10) on synthetic data in [0, 1] with
random constraints and runs four variants: float32 and fp16 mixed precision (Keras wraps the optimizer in a
LossScaleOptimizer; ``DCGMM.train_step`` scales the loss), each with XLA (``jit_compile``) off and on. For each it
reports the device the training step ran on and where the variables live, whether the loss is finite, the time
of one step (``--timed_steps`` steps after two warm-up steps, synchronised by reading the loss) and of one epoch
of ``fit`` over ``--epoch_samples`` samples through ``constrained_dataset``. Without a GPU it says so and runs the
variants on the CPU, so the check itself can be tried anywhere.
"""

from __future__ import annotations

import math
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch", 256, "Training batch size.", lower_bound=2)
flags.DEFINE_integer("timed_steps", 20, "Training steps timed per variant (after two warm-up steps).", lower_bound=1)
flags.DEFINE_integer(
    "epoch_samples", 10240, "Samples of the timed epoch of fit (the paper's data: 60000).", lower_bound=2
)
flags.DEFINE_string("output", "bench/results/device_check.jsonl", "Append the results as JSON lines here ('' none).")

PRECISIONS = {"fp32": "float32", "fp16": "mixed_float16"}


def gpu_names() -> list[str]:
    """The GPUs TensorFlow sees (empty without one)."""
    import tensorflow as tf

    return [device.name for device in tf.config.list_physical_devices("GPU")]


def run_variant(
    precision: str,
    xla: bool,
    batch: int,
    timed_steps: int,
    epoch_samples: int,
    input_dim: int = 784,
    hidden: tuple[int, ...] = (500, 500, 2000),
    seed: int = 0,
) -> dict:
    """One variant: placement, finiteness of the loss, seconds per step and per epoch (or the error it raised)."""
    import keras
    import numpy as np
    import tensorflow as tf

    from dcgmm_tf import DCGMM, ConstraintSet, MLPDecoder, MLPEncoder
    from dcgmm_tf.data import constrained_dataset
    from dcgmm_tf.optimizers import FusedAdam

    result = {"precision": precision, "xla": xla}
    keras.mixed_precision.set_global_policy(PRECISIONS[precision])
    try:
        keras.utils.set_random_seed(seed)
        rng = np.random.default_rng(seed)
        x = rng.random((epoch_samples, input_dim), dtype=np.float32)
        constraints = ConstraintSet.from_labels(rng.integers(0, 10, epoch_samples), epoch_samples // 10, seed=seed)
        model = DCGMM(
            (input_dim,),
            num_clusters=10,
            seed=seed,
            encoder=MLPEncoder(10, hidden, name="encoder"),
            decoder=MLPDecoder(input_dim, hidden[::-1], name="decoder"),
        )
        optimizer = FusedAdam(1e-3) if precision == "fp32" else keras.optimizers.Adam(1e-3)
        model.compile(optimizer=optimizer, jit_compile=xla)
        result["optimizer"] = type(model.optimizer).__name__
        data = constrained_dataset(x, constraints, batch_size=batch, seed=seed)
        batch_x, batch_w = next(iter(data))
        step = tf.function(model.train_step, jit_compile=xla)
        for _ in range(2):  # trace and warm up
            logs = step((batch_x, batch_w))
        start = time.perf_counter()
        for _ in range(timed_steps):
            logs = step((batch_x, batch_w))
        loss = float(logs["loss"])  # reading the value waits for the device
        result["step_ms"] = 1000 * (time.perf_counter() - start) / timed_steps
        result["loss_finite"] = math.isfinite(loss)
        result["step_device"] = logs["loss"].device
        result["variable_device"] = model.cluster_means.value.device
        start = time.perf_counter()
        history = model.fit(data, epochs=1, verbose=0, shuffle=False)
        result["epoch_s"] = time.perf_counter() - start
        result["epoch_loss_finite"] = math.isfinite(history.history["loss"][-1])
    except Exception as e:  # pylint: disable=broad-except  (a variant the device cannot run is a finding)
        result["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return result


def table(results: list[dict]) -> str:
    """The variants as a fixed-width text table."""
    lines = [f"{'precision':9} {'xla':5} {'step on':8} {'variables on':12} {'finite':6} {'step ms':>9} {'epoch s':>9}"]
    for r in results:
        if "error" in r:
            lines.append(f"{r['precision']:9} {str(r['xla']):5} failed: {r['error']}")
            continue
        finite = "yes" if r["loss_finite"] and r["epoch_loss_finite"] else "NO"
        step_on, variables_on = (r[k].rsplit("device:", 1)[-1] for k in ("step_device", "variable_device"))
        lines.append(
            f"{r['precision']:9} {str(r['xla']):5} {step_on:8} {variables_on:12} {finite:6} "
            f"{r['step_ms']:9.2f} {r['epoch_s']:9.2f}"
        )
    return "\n".join(lines)


def main(argv):
    del argv
    from bench.common import machine, report

    gpus = gpu_names()
    print(f"GPUs: {', '.join(gpus)}" if gpus else "no GPU: TensorFlow sees none; the variants run on the CPU")
    results = [
        run_variant(precision, xla, FLAGS.batch, FLAGS.timed_steps, FLAGS.epoch_samples)
        for precision in PRECISIONS
        for xla in (False, True)
    ]
    print(table(results))
    report(
        {
            "machine": machine(),
            "gpus": gpus,
            "batch": FLAGS.batch,
            "timed_steps": FLAGS.timed_steps,
            "epoch_samples": FLAGS.epoch_samples,
            "variants": results,
        },
        FLAGS.output or None,
    )


if __name__ == "__main__":
    app.run(main)
