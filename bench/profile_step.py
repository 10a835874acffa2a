r"""Where the training step's time goes, op by op, and how high its efficiency could go on this machine.

    nice -n 5 python -m bench.profile_step                # one thread (the default): op times add up to the step

Profiles ``--steps`` training steps of the default Fashion-MNIST network at batch 256 (the step of
``bench.throughput``) with ``tf.profiler`` and sums the executed ops into parts (:mod:`bench.op_profile`):
layer matmuls (forward with oneDNN's fused bias and ReLU, and backward), optimizer, the rest of the backward pass,
the rest of the forward pass (loss, sampling, metric trackers), and the time between ops (step time minus the sum
of op times: the executor's scheduling). With more than one thread ops overlap and the last part is not meaningful.

In the same process it times the reference matmuls (as ``bench.throughput``) and the memory bandwidth of one core
(NumPy ``a = b + c`` on arrays larger than the caches), and reports two ceilings of the efficiency:
reference / (layer matmuls + optimizer), reached only if everything else cost nothing, and
reference / (layer matmuls + the Adam update at full memory bandwidth: it reads the weights, both moments and the
gradient and writes back three of them, 28 bytes per parameter in fp32).
"""

from __future__ import annotations

from absl import app, flags

from bench.common import machine, pair_batch, reference_matmuls, report, time_calls
from dcgmm_tf.runtime import set_threads

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch_size", 256, "Batch size.")
flags.DEFINE_integer("steps", 20, "Profiled training steps.")
flags.DEFINE_integer("rounds", 10, "Timing rounds of the step and the reference; the best round counts.")
flags.DEFINE_integer("threads", 1, "TensorFlow intra- and inter-op threads (0: TensorFlow's default, all cores).")
flags.DEFINE_string("logdir", None, "Keep the profile here (open with TensorBoard's profile plugin); default: discard.")
flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")

ADAM_BYTES_PER_PARAMETER = 28  # read weight, m, v, gradient; write weight, m, v (fp32)


def memory_bandwidth(num_floats: int = 16_000_000, rounds: int = 10) -> float:
    """Bytes/s of ``a = b + c`` (read 2, write 1) in fp32 on arrays larger than the caches, one core."""
    import numpy as np

    a, b, c = (np.ones(num_floats, np.float32) for _ in range(3))
    return 12 * num_floats / min(time_calls(np.add, (b, c, a), 1) for _ in range(rounds))


def main(argv):
    del argv
    import keras
    import numpy as np
    import tensorflow as tf

    from bench.op_profile import parts, profile_op_times
    from dcgmm_tf import DCGMM
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.optimizers import FusedAdam

    set_threads(FLAGS.threads)
    keras.utils.set_random_seed(0)
    data = load_dataset("fashion")
    x, w = pair_batch(data.x_train.reshape(len(data.x_train), -1).astype(np.float32), FLAGS.batch_size)
    model = DCGMM((784,), num_clusters=10, seed=0)
    model.compile(optimizer=FusedAdam(1e-3))
    step = tf.function(model.train_step)
    reference, operands, flop = reference_matmuls(model, FLAGS.batch_size)
    for fn, args in ((step, ((x, w),)), (reference, (operands,))):
        time_calls(fn, args, 3)  # trace and warm up
    step_s, reference_s = float("inf"), float("inf")
    for _ in range(FLAGS.rounds):  # interleaved, so that a busy machine slows both alike
        step_s = min(step_s, time_calls(step, ((x, w),), 8))
        reference_s = min(reference_s, time_calls(reference, (operands,), 8))
    op_times = profile_op_times(step, ((x, w),), FLAGS.steps, FLAGS.logdir)
    by_part = parts(op_times, model.optimizer.name)
    by_part["between ops"] = step_s - sum(by_part.values())
    bandwidth = memory_bandwidth()
    adam_at_bandwidth = ADAM_BYTES_PER_PARAMETER * model.count_params() / bandwidth
    top = sorted(op_times.items(), key=lambda kv: -kv[1])[:15]
    result = {
        "machine": machine(),
        "threads": FLAGS.threads,
        "batch_size": FLAGS.batch_size,
        "steps": FLAGS.steps,
        "ms": {
            "reference": round(1e3 * reference_s, 3),
            "step": round(1e3 * step_s, 3),
            **{part: round(1e3 * s, 3) for part, s in by_part.items()},
        },
        "share_of_step": {part: round(s / step_s, 4) for part, s in by_part.items()},
        "top_ops_ms": [[f"{name}:{op_type}", round(1e3 * s, 3)] for (name, op_type), s in top],
        "efficiency": reference_s / step_s,
        "memory_bandwidth_gb_s": bandwidth / 1e9,
        "adam_at_bandwidth_ms": round(1e3 * adam_at_bandwidth, 3),
        "ceiling_matmuls_and_optimizer": reference_s / (by_part["layer matmuls"] + by_part["optimizer"]),
        "ceiling_matmuls_and_adam_at_bandwidth": reference_s / (by_part["layer matmuls"] + adam_at_bandwidth),
        "reference_gflops": flop / reference_s / 1e9,
    }
    report(result, FLAGS.output)


if __name__ == "__main__":
    app.run(main)
