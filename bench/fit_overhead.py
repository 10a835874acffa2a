r"""What ``fit`` costs per step beyond the training step itself: Keras' loop, the callbacks, the syncs.

    python -m bench.fit_overhead                                  # steps_per_execution 1 and 32
    python -m bench.fit_overhead --steps_per_execution=1,8,32,128 --output=bench/results/fit_overhead.jsonl

A small DC-GMM (784-64-10, so that a step costs about a millisecond and the loop around it shows) is trained on
random data in [0, 1] with random constraints, through ``dcgmm_tf.fitting.fit_mixture`` (the recipe's ``fit``:
its pipeline, optimizer and NaN guard; no evaluation, no restarts) with each ``steps_per_execution``, and, as
the reference, by a ``tf.function`` that runs one epoch of ``train_step`` over the same pipeline in one call.
The variants run in interleaved rounds (a busy machine slows them alike); per variant the median epoch over
the rounds counts, the first epoch of every ``fit`` (tracing) excluded. Overhead per step = (``fit`` epoch -
reference epoch) / steps per epoch. The target of the GPU issue: < 0.3 ms.
"""

from __future__ import annotations

import statistics
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("steps_per_execution", ["1", "32"], "Values of RuntimeConfig.steps_per_execution to time.")
flags.DEFINE_integer("num_samples", 20480, "Training samples.", lower_bound=2)
flags.DEFINE_integer("num_pairs", 2000, "Constraints.", lower_bound=0)
flags.DEFINE_integer("epochs", 4, "Epochs of each fit (the first is not timed).", lower_bound=2)
flags.DEFINE_integer("rounds", 3, "Interleaved rounds.", lower_bound=1)
flags.DEFINE_string("output", None, "Append the result as one JSON line to this file.")


def main(argv):
    del argv
    import keras
    import numpy as np
    import tensorflow as tf

    from bench.common import machine, report
    from dcgmm_tf import DCGMM, ConstraintSet, MLPDecoder, MLPEncoder
    from dcgmm_tf.data import constrained_dataset
    from dcgmm_tf.fitting import FitSchedule, fit_mixture

    rng = np.random.default_rng(0)
    x = rng.random((FLAGS.num_samples, 784), dtype=np.float32)
    constraints = ConstraintSet.from_labels(rng.integers(0, 10, FLAGS.num_samples), FLAGS.num_pairs, seed=0)
    schedule = FitSchedule(FLAGS.epochs)
    keras.utils.set_random_seed(0)
    model = DCGMM(
        (784,),
        num_clusters=10,
        seed=0,
        encoder=MLPEncoder(10, (64,), name="encoder"),
        decoder=MLPDecoder(784, (64,), name="decoder"),
    )
    dataset = constrained_dataset(x, constraints, batch_size=schedule.batch_size)
    steps = int(dataset.cardinality())

    @tf.function
    def epoch_in_graph(iterator):
        for _ in tf.range(steps):
            model.train_step(next(iterator))

    class EpochTimer(keras.callbacks.Callback):
        """Wall time of every epoch after the first (which traces)."""

        def __init__(self):
            super().__init__()
            self.seconds, self.start = [], 0.0

        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            if epoch:
                self.seconds.append(time.perf_counter() - self.start)

    variants = [int(s) for s in FLAGS.steps_per_execution]
    epochs: dict[str, list[float]] = {"reference": [], **{f"fit_spe{s}": [] for s in variants}}
    for _ in range(FLAGS.rounds):
        for spe in variants:
            timer = EpochTimer()
            fit_mixture(model, x, constraints, schedule, [timer], verbose=0, steps_per_execution=spe)
            epochs[f"fit_spe{spe}"] += timer.seconds
        iterator = iter(dataset.repeat())
        epoch_in_graph(iterator)  # traces
        for _ in range(FLAGS.epochs - 1):
            start = time.perf_counter()
            epoch_in_graph(iterator)
            epochs["reference"].append(time.perf_counter() - start)
    median = {name: statistics.median(seconds) for name, seconds in epochs.items()}
    step_ms = 1000 * median["reference"] / steps
    overhead_ms = {
        name: 1000 * (seconds - median["reference"]) / steps for name, seconds in median.items() if name != "reference"
    }
    print(f"{steps} steps per epoch; reference step {step_ms:.3f} ms")
    for name, ms in overhead_ms.items():
        print(f"{name}: epoch {median[name]:.3f} s, overhead {ms:.3f} ms per step")
    report(
        {
            "machine": machine(),
            "num_samples": FLAGS.num_samples,
            "num_pairs": FLAGS.num_pairs,
            "steps_per_epoch": steps,
            "rounds": FLAGS.rounds,
            "reference_step_ms": step_ms,
            "epoch_s": median,
            "overhead_ms_per_step": overhead_ms,
        },
        FLAGS.output,
    )


if __name__ == "__main__":
    app.run(main)
