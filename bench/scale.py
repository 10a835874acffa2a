r"""The default recipe's cost against N: pretraining, the start, training epochs, one restart and prediction.

    python -m bench.scale --sizes=10000,100000,1000000      # a table, and JSON lines in bench/results/scale.jsonl

Synthetic 784-d data in [0, 1] (10 blobs, float32, made in chunks), N / 10 random pairs from the blobs, the paper's
network and the runner's defaults (batch 256, latent-class start). Each N runs in its own process, so that its peak
resident memory (``ru_maxrss``) is its own; the data alone is N x 784 x 4 bytes. Parts, in seconds:

- ``pretrain``: ``--pretrain_epochs`` of autoencoder pretraining (per epoch in ``pretrain_epoch``);
- ``start``: the latent-class start of the mixture (embedding, over-clustering, latent class model);
- ``epoch``: the median time of ``--epochs`` training epochs without restarts (the first one includes tracing);
- ``restart``: one restart of the mixture (the start again, from the trained model);
- ``predict``: cluster posteriors of all N samples (``DCGMM.cluster_probabilities``, as the library's results).

Memory: ``framework_gb`` is the peak before the data exists (TensorFlow, the model); ``peak_gb`` the peak of the
whole recipe, and ``peak_after`` the peak after each part, so the part that sets it shows; ``peak_over_data`` is
(``peak_gb`` - ``framework_gb``) / ``data_gb``, the data itself included (the goal: at most 3).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import numpy as np
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("sizes", ["10000", "100000", "1000000"], "Numbers of samples N.")
flags.DEFINE_integer("pretrain_epochs", 1, "Pretraining epochs.", lower_bound=1)
flags.DEFINE_integer("epochs", 3, "Training epochs (their median time is the epoch time).", lower_bound=1)
flags.DEFINE_integer("one", 0, "Measure this N in this process and print one JSON line (used by the runner).")
flags.DEFINE_string("output", "bench/results/scale.jsonl", "Append the results as JSON lines here ('' none).")

DIM, CLUSTERS = 784, 10


def blobs(n: int, seed: int = 0, chunk: int = 100_000) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples of 10 blobs in [0, 1]^784 (float32, made ``chunk`` rows at a time) and their blob labels."""
    rng = np.random.default_rng(seed)
    centers = rng.random((CLUSTERS, DIM), dtype=np.float32)
    labels = rng.integers(0, CLUSTERS, n)
    x = np.empty((n, DIM), np.float32)
    for start in range(0, n, chunk):
        part = slice(start, min(n, start + chunk))
        noise = rng.standard_normal((part.stop - start, DIM), dtype=np.float32)
        np.clip(centers[labels[part]] + 0.15 * noise, 0.0, 1.0, out=x[part])
    return x, labels


def timed(function, spent: dict, part: str):
    """``function``, adding the seconds of each call to ``spent[part]``."""

    def wrapper(*args, **kwargs):
        clock = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[part] += time.perf_counter() - clock

    return wrapper


def peak_memory_gb() -> float:
    """The peak resident memory of this process so far, in GB (Linux reports ``ru_maxrss`` in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def measure(n: int, pretrain_epochs: int, epochs: int) -> dict:
    """The seconds of each part and the peak memory of the recipe on ``n`` samples (see the module docstring)."""
    import keras

    from dcgmm_tf import ConstraintSet, starts
    from dcgmm_tf.config import RunConfig
    from dcgmm_tf.fitting import FitSchedule, fit_mixture
    from dcgmm_tf.pretraining import pretrain, start_mixture
    from dcgmm_tf.recipe import make_model

    class EpochClock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    config = RunConfig()
    model = make_model(config, (DIM,), "bernoulli", CLUSTERS, 0)
    model(np.zeros((2, DIM), np.float32))
    framework = peak_memory_gb()
    x, labels = blobs(n)
    constraints = ConstraintSet.from_labels(labels, n // 10, seed=0)
    result = {"n": n, "pairs": len(constraints), "data_gb": round(x.nbytes / 1e9, 3)}
    peaks = {"data": peak_memory_gb()}
    clock = time.perf_counter()
    pretrain(model, x, epochs=pretrain_epochs, batch_size=config.pretrain_batch_size, seed=0, verbose=0)
    result["pretrain"] = time.perf_counter() - clock
    result["pretrain_epoch"] = result["pretrain"] / pretrain_epochs
    peaks["pretrain"] = peak_memory_gb()
    clock = time.perf_counter()
    start_mixture(model, x, config.cluster_init, constraints, seed=0)
    result["start"] = time.perf_counter() - clock
    peaks["start"] = peak_memory_gb()
    seconds: list[float] = []
    fit_mixture(model, x, constraints, FitSchedule(epochs, batch_size=config.batch_size), [EpochClock()], verbose=0)
    result["epoch"] = float(np.median(seconds))
    result["epochs"] = [round(s, 2) for s in seconds]
    peaks["epochs"] = peak_memory_gb()
    parts = {"restart_gmm": "_fit_gmm", "restart_em": "fit_latent_classes"}  # timed apart inside the restart
    spent = dict.fromkeys(parts, 0.0)
    for part, name in parts.items():
        setattr(starts, name, timed(getattr(starts, name), spent, part))
    clock = time.perf_counter()
    starts.init_clusters(model, x, constraints, config.cluster_init, None, 1)
    result["restart"] = time.perf_counter() - clock
    result.update(spent)  # the rest of the restart: embedding, p(c|x), the link metric, responsibilities, moments
    peaks["restart"] = peak_memory_gb()
    clock = time.perf_counter()
    model.cluster_probabilities(x)
    result["predict"] = time.perf_counter() - clock
    peaks["predict"] = peak_memory_gb()
    result["framework_gb"] = round(framework, 3)
    result["peak_gb"] = round(peaks["predict"], 3)
    result["peak_after"] = {part: round(gb, 3) for part, gb in peaks.items()}
    result["peak_over_data"] = round((result["peak_gb"] - framework) / result["data_gb"], 2)
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}


def main(argv):
    del argv
    if FLAGS.one:
        print(json.dumps(measure(FLAGS.one, FLAGS.pretrain_epochs, FLAGS.epochs)))
        return
    from bench.common import machine

    rows = []
    for size in FLAGS.sizes:
        command = [
            sys.executable,
            "-m",
            "bench.scale",
            f"--one={int(size)}",
            f"--pretrain_epochs={FLAGS.pretrain_epochs}",
            f"--epochs={FLAGS.epochs}",
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"N = {size} failed:\n{done.stderr[-3000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    base = rows[0]
    print(
        f"{'N':>9} {'pairs':>8} {'pretrain/ep':>11} {'start':>7} {'epoch':>7} {'ep/N vs first':>13} "
        f"{'restart':>8} {'of it GMM':>9} {'of it EM':>8} {'predict':>8} {'peak GB':>8} {'framework':>9} "
        f"{'(peak-fw)/data':>15}"
    )
    for row in rows:
        linear = (row["epoch"] / row["n"]) / (base["epoch"] / base["n"])
        print(
            f"{row['n']:>9} {row['pairs']:>8} {row['pretrain_epoch']:>11} {row['start']:>7} {row['epoch']:>7} "
            f"{linear:>13.2f} {row['restart']:>8} {row['restart_gmm']:>9} {row['restart_em']:>8} {row['predict']:>8} "
            f"{row['peak_gb']:>8} {row['framework_gb']:>9} {row['peak_over_data']:>15}"
        )
    if FLAGS.output:
        info = machine()
        with open(FLAGS.output, "a") as f:
            for row in rows:
                f.write(json.dumps({"bench": "scale", **info, **row}) + "\n")


if __name__ == "__main__":
    app.run(main)
