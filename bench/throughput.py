r"""Training throughput and efficiency of DC-GMM's default Fashion-MNIST network (784-500-500-2000-10).

    nice -n 5 python -m bench.throughput                       # fp32, graph mode (the default)
    nice -n 5 python -m bench.throughput --jit_compile         # XLA
    nice -n 5 python -m bench.throughput --mixed_precision=bf16

Everything is timed in one process, in interleaved rounds, so that a busy (shared) machine slows all variants
alike; the ratios (efficiency, breakdown) are the robust numbers, the absolute ones depend on the load.

- reference: plain matmuls of exactly the shapes the training step multiplies (forward, and for the backward pass
  dW = X^T dY for every layer and dX = dY W^T for every layer but the first), nothing else.
- step: one full training step (``DCGMM.train_step`` in a ``tf.function``, like ``fit`` runs it) with
  :class:`dcgmm_tf.optimizers.FusedAdam`; ``step_keras_adam`` the same with ``keras.optimizers.Adam``;
  ``step_clipnorm`` with the runner's clipping (``global_clipnorm`` at ``--clipnorm``'s default, the gradients
  scaled only in a step over the limit), ``step_clipnorm_every_step`` with Keras' own, which multiplies them by the
  scale in every step.
- efficiency = (step matmul FLOP / step time) / (reference FLOP / reference time) = reference time / step time.
- breakdown: variants of the step (network forward only; forward + loss, with and without the pairwise term
  of a pair batch; forward + loss + gradient), the optimizer update alone (Keras Adam, FusedAdam), the input
  pipeline alone (one epoch of ``constrained_dataset``), and ``fit`` end to end on one epoch, from the
  pipeline and from one batch held in memory.
"""

from __future__ import annotations

import time

from absl import app, flags

from bench.common import machine, pair_batch, reference_matmuls, report, time_calls
from dcgmm_tf.runtime import set_threads

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch_size", 256, "Batch size.")
flags.DEFINE_integer("rounds", 12, "Interleaved timing rounds; the best (least disturbed) round counts.")
flags.DEFINE_integer("calls", 8, "Calls per variant and round.")
flags.DEFINE_boolean("jit_compile", False, "Compile the step variants with XLA.")
flags.DEFINE_enum("mixed_precision", "off", ["off", "bf16", "fp16"], "Keras mixed-precision policy.")
flags.DEFINE_integer("num_constraints", 6000, "Constraints drawn from the labels (for the pipeline and fit).")
flags.DEFINE_list("variants", [], "Time only these variants besides reference and step (default: all).")
flags.DEFINE_boolean("fit", True, "Also time the input pipeline and fit on one epoch of Fashion-MNIST.")
flags.DEFINE_integer("steps_per_execution", 1, "Training steps per compiled call in the fit timings.")
flags.DEFINE_integer("threads", 0, "TensorFlow intra- and inter-op threads (0: TensorFlow's default, all cores).")
flags.DEFINE_enum(
    "clock",
    "wall",
    ["wall", "cpu"],
    "wall: elapsed time; cpu: CPU time of the process (robust on a busy machine, use with --threads=1).",
)
flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")

POLICIES = {"off": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def _every_step_scaled():
    """FusedAdam with Keras' own global clipping (the next class after the library's mixin in its MRO), which
    multiplies the gradients by the scale in every step."""
    from dcgmm_tf.optimizers import FusedAdam
    from dcgmm_tf.shims import ScaleWhenClipping

    class EveryStepScaled(FusedAdam):
        def _clip_gradients(self, grads):
            return super(ScaleWhenClipping, self)._clip_gradients(grads)

    return EveryStepScaled


def now() -> float:
    """Seconds on the clock of --clock."""
    return time.process_time() if FLAGS.clock == "cpu" else time.perf_counter()


def main(argv):
    del argv
    import keras
    import numpy as np
    import tensorflow as tf

    from dcgmm_tf import DCGMM, ConstraintSet
    from dcgmm_tf.config import RunConfig
    from dcgmm_tf.data import constrained_dataset, load_dataset
    from dcgmm_tf.optimizers import FusedAdam

    EveryStepScaled = _every_step_scaled()
    set_threads(FLAGS.threads)
    keras.mixed_precision.set_global_policy(POLICIES[FLAGS.mixed_precision])
    keras.utils.set_random_seed(0)
    data = load_dataset("fashion")
    x_all, y_all = data.x_train.reshape(len(data.x_train), -1).astype(np.float32), data.y_train
    batch = FLAGS.batch_size
    model = DCGMM((784,), num_clusters=10, seed=0)
    model.compile(optimizer=FusedAdam(1e-3))
    keras_adam_model = DCGMM((784,), num_clusters=10, seed=0)
    keras_adam_model.set_weights(model.get_weights())
    keras_adam_model.compile(optimizer=keras.optimizers.Adam(1e-3))
    clipped = {}
    for name, optimizer_class in (("own", FusedAdam), ("keras", EveryStepScaled)):
        clipped[name] = DCGMM((784,), num_clusters=10, seed=0)
        clipped[name].set_weights(model.get_weights())
        clipped[name].compile(optimizer=optimizer_class(1e-3, global_clipnorm=RunConfig().clipnorm))
    x, w = pair_batch(x_all, batch)

    jit = FLAGS.jit_compile

    @tf.function(jit_compile=jit)
    def forward_network(x):
        z_mean, z_log_var = model.encoder(x, training=True)
        return model.decoder(z_mean, training=True)

    @tf.function(jit_compile=jit)
    def forward_loss(x, w):
        return model.compute_loss_terms(x, w, training=True)["loss"]

    @tf.function(jit_compile=jit)
    def forward_loss_without_pairwise(x):
        return model.compute_loss_terms(x, None, training=True)["loss"]

    @tf.function(jit_compile=jit)
    def gradient(x, w):
        with tf.GradientTape() as tape:
            loss = model.compute_loss_terms(x, w, training=True)["loss"]
        return tape.gradient(loss, model.trainable_variables)

    train_step = tf.function(model.train_step, jit_compile=jit)
    keras_adam_step = tf.function(keras_adam_model.train_step, jit_compile=jit)
    clipnorm_step = tf.function(clipped["own"].train_step, jit_compile=jit)
    clipnorm_every_step = tf.function(clipped["keras"].train_step, jit_compile=jit)
    # The optimizer update alone, on copies of the weights with fixed gradients.
    copies = {name: [keras.Variable(v.numpy()) for v in model.trainable_variables] for name in ("keras", "fused")}
    fixed_grads = [tf.random.normal(v.shape, stddev=1e-3) for v in model.trainable_variables]
    optimizers = {"keras": keras.optimizers.Adam(1e-3), "fused": FusedAdam(1e-3)}
    for name, optimizer in optimizers.items():
        optimizer.build(copies[name])

    @tf.function(jit_compile=jit)
    def apply_keras_adam():
        optimizers["keras"].apply(fixed_grads, copies["keras"])

    @tf.function(jit_compile=jit)
    def apply_fused_adam():
        optimizers["fused"].apply(fixed_grads, copies["fused"])

    compute_dtype = {"off": tf.float32, "bf16": tf.bfloat16, "fp16": tf.float16}[FLAGS.mixed_precision]
    reference, operands, step_flop = reference_matmuls(model, batch, compute_dtype, jit_compile=jit)

    variants = {
        "reference": (reference, (operands,)),
        "step": (train_step, ((x, w),)),
        "step_keras_adam": (keras_adam_step, ((x, w),)),
        "step_clipnorm": (clipnorm_step, ((x, w),)),
        "step_clipnorm_every_step": (clipnorm_every_step, ((x, w),)),
        "forward_network": (forward_network, (x,)),
        "forward_loss": (forward_loss, (x, w)),
        "forward_loss_without_pairwise": (forward_loss_without_pairwise, (x,)),
        "forward_loss_gradient": (gradient, (x, w)),
        "apply_keras_adam": (apply_keras_adam, ()),
        "apply_fused_adam": (apply_fused_adam, ()),
    }
    if FLAGS.variants:
        variants = {k: v for k, v in variants.items() if k in ("reference", "step", *FLAGS.variants)}
    for fn, args in variants.values():  # trace and warm up
        time_calls(fn, args, 3, now)
    times = {name: [] for name in variants}
    for _ in range(FLAGS.rounds):
        for name, (fn, args) in variants.items():
            times[name].append(time_calls(fn, args, FLAGS.calls, now))
    # On a shared machine other processes only ever add time: the fastest round is the least disturbed one.
    best = {name: float(np.min(t)) for name, t in times.items()}
    result = {
        "machine": machine(),
        "threads": FLAGS.threads,
        "clock": FLAGS.clock,
        "batch_size": batch,
        "jit_compile": jit,
        "mixed_precision": FLAGS.mixed_precision,
        "step_gflop": step_flop / 1e9,
        "ms": {k: round(1e3 * v, 3) for k, v in best.items()},
        "ms_median": {k: round(1e3 * float(np.median(t)), 3) for k, t in times.items()},
        "reference_gflops": step_flop / best["reference"] / 1e9,
        "step_gflops": step_flop / best["step"] / 1e9,
        "efficiency": best["reference"] / best["step"],
        "efficiency_median_of_rounds": float(np.median(np.array(times["reference"]) / np.array(times["step"]))),
        "samples_per_s_step": batch / best["step"],
    }

    if FLAGS.fit:
        constraints = ConstraintSet.from_labels(y_all, FLAGS.num_constraints, seed=0)
        dataset = constrained_dataset(x_all, constraints, batch_size=batch, seed=0)
        steps = int(dataset.cardinality())
        start = now()
        samples = sum(int(xb.shape[0]) for xb, _ in dataset)
        pipeline = now() - start
        model.compile(optimizer=FusedAdam(1e-3), jit_compile=jit, steps_per_execution=FLAGS.steps_per_execution)

        class EpochTimer(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.start = now()

            def on_epoch_end(self, epoch, logs=None):
                self.seconds = now() - self.start

        timer = EpochTimer()
        model.fit(dataset, epochs=2, verbose=0, callbacks=[timer])  # the second epoch is timed
        fit_seconds = timer.seconds
        # The same number of steps from tensors already in memory: fit without the generator pipeline.
        in_memory = tf.data.Dataset.from_tensors((x, w)).repeat(steps)
        model.fit(in_memory, epochs=2, verbose=0, callbacks=[timer])
        result.update(
            {
                "epoch_steps": steps,
                "epoch_samples": samples,
                "steps_per_execution": FLAGS.steps_per_execution,
                "ms": {
                    **result["ms"],
                    "pipeline_per_batch": round(1e3 * pipeline / steps, 3),
                    "fit_per_step": round(1e3 * fit_seconds / steps, 3),
                    "fit_in_memory_per_step": round(1e3 * timer.seconds / steps, 3),
                },
                "fit_epoch_s": fit_seconds,
                "samples_per_s_fit": samples / fit_seconds,
                "pipeline_share_of_fit_step": pipeline / fit_seconds,
            }
        )
    report(result, FLAGS.output)


if __name__ == "__main__":
    app.run(main)
