r"""Train and evaluate DC-GMM (or VaDE) and append one results row per run.

    python -m experiments.run --dataset=fashion --num_constraints=6000 --runs=3
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from absl import app, flags, logging

FLAGS = flags.FLAGS

flags.DEFINE_string("dataset", "fashion", "Data set name (fashion, mnist) or path to an .npz file.")
flags.DEFINE_enum("method", "dcgmm", ["dcgmm", "vade"], "dcgmm, or vade (= dcgmm without constraints).")
flags.DEFINE_integer("num_constraints", 6000, "Number of random pairwise constraints drawn from the labels.")
flags.DEFINE_float("alpha", None, "Constraint confidence |W_ij|; default 1e4, or 1000*log((1-q)/q) when q > 0.")
flags.DEFINE_float("q", 0.0, "Constraint noise: probability of flipping each link, in [0, 0.5).")
flags.DEFINE_enum("link_type", "both", ["both", "must", "cannot"], "Which links to draw.")
flags.DEFINE_boolean("transitive_closure", False, "Close noise-free constraints transitively.")
flags.DEFINE_string("constraints_file", None, "CSV with columns i,j,weight indexing the training split.")
flags.DEFINE_integer("runs", 1, "Number of runs; run r uses seed + r.")
flags.DEFINE_integer("seed", 0, "Seed of the first run (data subset, constraints, initialisation).")
flags.DEFINE_integer("epochs", 500, "Training epochs (paper: 1000 for MNIST, 500 otherwise).")
flags.DEFINE_integer("pretrain_epochs", 10, "Autoencoder pretraining epochs.")
flags.DEFINE_integer("pretrain_batch_size", 256, "Autoencoder pretraining batch size.")
flags.DEFINE_integer("batch_size", 256, "Training batch size.")
flags.DEFINE_float("learning_rate", 1e-3, "Initial Adam learning rate.")
flags.DEFINE_float("lr_decay", 0.9, "Learning-rate decay factor.")
flags.DEFINE_integer("lr_decay_epochs", 20, "Epochs between learning-rate decays.")
flags.DEFINE_enum("layout", "separate", ["separate", "spread"],
                  "Where constraint pairs go: extra batches of B/2 pairs (paper) or spread over all batches.")
flags.DEFINE_float("clipnorm", 0.0, "Clip each step's gradient to this global norm (0: no clipping).")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: all cores).")
flags.DEFINE_integer("latent_dim", 10, "Latent dimension D.")
flags.DEFINE_integer("num_clusters", 0, "Number of clusters K (0: the number of classes).")
flags.DEFINE_integer("max_train_samples", 0, "Use a random subset of the training split (0: all).")
flags.DEFINE_integer("max_test_samples", 0, "Use a random subset of the test split (0: all).")
flags.DEFINE_integer("eval_every", 10, "Evaluate test ACC/NMI/ARI every this many epochs (logged to history).")
flags.DEFINE_string("data_dir", None, "Directory searched first for data files.")
flags.DEFINE_string("output_dir", "results", "Where results.csv, summary.csv and per-run logs go.")
flags.DEFINE_string("cache_dir", None, "Pretrained-weights cache (default: <repo>/data/cache).")
flags.DEFINE_integer("verbose", 2, "Keras verbosity: 0 silent, 1 progress bar, 2 one line per epoch.")

REPO = Path(__file__).resolve().parents[1]


def make_constraints(y_train, seed: int):
    """The constraint set of one run: from --constraints_file, or drawn from the training labels."""
    from dcgmm_tf import ConstraintSet

    if FLAGS.method == "vade":
        return ConstraintSet.empty(len(y_train))
    if FLAGS.constraints_file:
        return ConstraintSet.from_csv(FLAGS.constraints_file, len(y_train))
    return ConstraintSet.from_labels(y_train, FLAGS.num_constraints, alpha=FLAGS.alpha, q=FLAGS.q,
                                     link_type=FLAGS.link_type, seed=seed,
                                     transitive_closure=FLAGS.transitive_closure)


def make_model(data, input_shape, num_clusters: int, seed: int):
    """The DC-GMM model of the flags (default network: the paper's MLP)."""
    from dcgmm_tf import DCGMM

    return DCGMM(input_shape, num_clusters=num_clusters, latent_dim=FLAGS.latent_dim,
                 likelihood=data.likelihood, seed=seed)


def train_dcgmm(data, splits, constraints, num_clusters: int, seed: int, run_dir: Path):
    """Pretrain (cached), then train DC-GMM; returns the model and the pretrained GMM's test accuracy."""
    import keras

    from dcgmm_tf import metrics, pretrain
    from dcgmm_tf.callbacks import ClusteringMetrics
    from dcgmm_tf.data import constrained_dataset

    x_train, _, x_test, y_test = splits
    model = make_model(data, x_train.shape[1:], num_clusters, seed)
    architecture = {"model": model.get_config(), "pretrain_epochs": FLAGS.pretrain_epochs,
                    "pretrain_batch_size": FLAGS.pretrain_batch_size, "n": len(x_train)}
    key = hashlib.sha1(json.dumps(architecture, sort_keys=True, default=str).encode()).hexdigest()[:12]
    cache_dir = Path(FLAGS.cache_dir) if FLAGS.cache_dir else REPO / "data" / "cache"
    cache = cache_dir / f"pretrain-{data.name}-seed{seed}-{key}.weights.h5"
    cached = pretrain(model, x_train, epochs=FLAGS.pretrain_epochs, batch_size=FLAGS.pretrain_batch_size,
                      seed=seed, cache_path=cache, verbose=FLAGS.verbose)
    logging.info("pretrained weights %s %s", "loaded from" if cached else "saved to", cache)
    pretrain_acc = metrics.cluster_accuracy(y_test, model.predict(x_test, batch_size=1024, verbose=0).argmax(-1))
    logging.info("test ACC of the pretrained GMM: %.4f", pretrain_acc)

    train_data = constrained_dataset(x_train, constraints, batch_size=FLAGS.batch_size, seed=seed,
                                     layout=FLAGS.layout)
    steps_per_epoch = int(train_data.cardinality())
    schedule = keras.optimizers.schedules.ExponentialDecay(
        FLAGS.learning_rate, decay_steps=FLAGS.lr_decay_epochs * steps_per_epoch, decay_rate=FLAGS.lr_decay,
        staircase=True)
    model.compile(optimizer=keras.optimizers.Adam(schedule, global_clipnorm=FLAGS.clipnorm or None))
    callbacks = [ClusteringMetrics(x_test, y_test, every=FLAGS.eval_every),
                 keras.callbacks.CSVLogger(str(run_dir / "history.csv")),
                 keras.callbacks.TensorBoard(str(run_dir / "tensorboard"))]
    model.fit(train_data, epochs=FLAGS.epochs, callbacks=callbacks, verbose=FLAGS.verbose, shuffle=False)
    model.save(run_dir / "model.keras")
    return model, pretrain_acc


def run_once(data, seed: int, output_dir: Path) -> dict:
    """One run of --method (constraints, training, evaluation on the test split); returns the results row."""
    import keras
    import numpy as np

    from dcgmm_tf import metrics

    keras.utils.set_random_seed(seed)
    splits = _subsets(data, seed)
    x_train, y_train, x_test, y_test = splits
    num_clusters = FLAGS.num_clusters or data.num_classes
    constraints = make_constraints(y_train, seed)
    run_dir = output_dir / "runs" / f"{FLAGS.method}-{data.name}-seed{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    model, pretrain_acc = train_dcgmm(data, splits, constraints, num_clusters, seed, run_dir)
    train_seconds = time.perf_counter() - start

    y_pred = model.predict(x_test, batch_size=1024, verbose=0).argmax(-1)
    scores = metrics.clustering_scores(y_test, y_pred)
    satisfaction = (metrics.constraint_satisfaction(
        constraints, model.predict(x_train, batch_size=1024, verbose=0).argmax(-1)) if len(constraints) else
                    float("nan"))
    return {"dataset": data.name, "method": FLAGS.method, "seed": seed, "num_constraints": len(constraints),
            "q": FLAGS.q, "alpha": (float(np.abs(constraints.weight).max()) if len(constraints) else 0.0),
            "epochs": FLAGS.epochs, "acc": scores["acc"], "nmi": scores["nmi"], "ari": scores["ari"],
            "constraint_satisfaction": satisfaction, "pretrain_acc": pretrain_acc,
            "train_seconds": round(train_seconds, 1), "n_train": len(x_train), "n_test": len(x_test)}


def _subsets(data, seed: int):
    """The training and test arrays, each cut to a random subset when --max_*_samples is set."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for x, y, limit in ((data.x_train, data.y_train, FLAGS.max_train_samples),
                        (data.x_test, data.y_test, FLAGS.max_test_samples)):
        if 0 < limit < len(x):
            keep = np.sort(rng.choice(len(x), limit, replace=False))
            x, y = x[keep], y[keep]
        out += [x, y]
    return out


def main(argv):
    del argv
    from dcgmm_tf.data import load_dataset
    from experiments import results

    if FLAGS.threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    output_dir = Path(FLAGS.output_dir)
    data = load_dataset(FLAGS.dataset, FLAGS.data_dir)
    for r in range(FLAGS.runs):
        row = run_once(data, FLAGS.seed + r, output_dir)
        results.append_row(output_dir / "results.csv", row)
        logging.info("run %d/%d: %s", r + 1, FLAGS.runs, row)
    summary = results.summarise(results.read_rows(output_dir / "results.csv"))
    summary.to_csv(output_dir / "summary.csv", index=False)
    print(summary.to_string(index=False), file=sys.stdout)


if __name__ == "__main__":
    app.run(main)
