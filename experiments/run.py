r"""Train and evaluate DC-GMM (or VaDE) and append one results row per run.

    python -m experiments.run --dataset=fashion --num_constraints=6000 --runs=3
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import time
from pathlib import Path

from absl import app, flags, logging

FLAGS = flags.FLAGS

flags.DEFINE_string("dataset", "fashion", "fashion, mnist, reuters, stl10, utkface_gender, utkface_ethnicity, a "
                    "path to an .npz file, or an image folder / file,label CSV (see data/README.md).")
flags.DEFINE_enum("method", "dcgmm", ["dcgmm", "vade", "pckmeans", "sdec", "cidec"],
                  "dcgmm, vade (= dcgmm without constraints), or a Table 1 baseline: pckmeans, sdec, cidec.")
flags.DEFINE_integer("num_constraints", 6000, "Number of random pairwise constraints drawn from the labels.")
flags.DEFINE_float("alpha", None, "Constraint confidence |W_ij|; default 1e4, or 1000*log((1-q)/q) when q > 0.")
flags.DEFINE_float("q", 0.0, "Constraint noise: probability of flipping each link, in [0, 0.5).")
flags.DEFINE_enum("link_type", "both", ["both", "must", "cannot"], "Which links to draw.")
flags.DEFINE_boolean("transitive_closure", False, "Close noise-free constraints transitively.")
flags.DEFINE_string("constraints_file", None, "CSV with columns i,j,weight indexing the training split.")
flags.DEFINE_integer("runs", 1, "Number of runs; run r uses seed + r.")
flags.DEFINE_integer("seed", 0, "Seed of the first run (data subset, constraints, initialisation).")
flags.DEFINE_integer("epochs", 100, "Training epochs (the paper: 1000 for MNIST, 500 otherwise; see the README for "
                     "100 from the default start); for sdec/cidec the maximum clustering epochs, for pckmeans the "
                     "maximum iterations.")
flags.DEFINE_integer("pretrain_epochs", 10, "Autoencoder pretraining epochs.")
flags.DEFINE_integer("pretrain_batch_size", 256, "Autoencoder pretraining batch size.")
flags.DEFINE_enum("cluster_init", "latent_class", ["gmm", "merge", "latent_class", "labels"],
                  "Initial mixture (dcgmm, vade): gmm (the paper's protocol: a diagonal GMM on the pretrained "
                  "embeddings), merge or latent_class (--init_components GMM components grouped by the constraints, "
                  "see dcgmm_tf.cluster_init; without constraints the same as gmm), or labels (class means/variances "
                  "of the embeddings of labelled training samples: all of them as a diagnostic, a few per class with "
                  "--init_labels_per_class as a semi-supervised start; see docs/reproduction.md).")
flags.DEFINE_integer("init_labels_per_class", 0, "With --cluster_init=labels: use this many labelled training "
                     "samples per class (drawn with the seed; 0: all).")
flags.DEFINE_integer("init_components", 0, "With --cluster_init=merge or latent_class: number K' of GMM components "
                     "that the constraints group into K clusters (0: 10 K, at most one per 50 training samples).")
flags.DEFINE_integer("restart_every", 10, "With --cluster_init=merge or latent_class and constraints: restart the "
                     "mixture by the same strategy on the current embeddings every this many epochs and after the "
                     "last (0: never).")
flags.DEFINE_integer("pretrain_seed", -1, "Seed of the pretraining (initial weights, autoencoder, GMM); -1: the run's "
                     "seed. Fixing it starts every run from the same pretrained model, as the paper's code does.")
flags.DEFINE_integer("batch_size", 256, "Training batch size.")
flags.DEFINE_float("learning_rate", 1e-3, "Initial Adam learning rate.")
flags.DEFINE_float("lr_decay", 0.9, "Learning-rate decay factor.")
flags.DEFINE_integer("lr_decay_epochs", 20, "Epochs between learning-rate decays.")
flags.DEFINE_enum("layout", "separate", ["separate", "spread"],
                  "Where constraint pairs go: extra batches of B/2 pairs (paper) or spread over all batches.")
flags.DEFINE_float("clipnorm", 300.0, "Clip each step's gradient to this global norm (0: no clipping); see README.")
flags.DEFINE_enum("kl_estimator", "sample", ["sample", "analytic"],
                  "Cluster KL estimator: closed-form Gaussian expectations (VaDE) or single-sample SGVB.")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: all cores).")
flags.DEFINE_integer("latent_dim", 10, "Latent dimension D.")
flags.DEFINE_enum("architecture", "mlp", ["mlp", "vgg"],
                  "Networks: the paper's MLP, or the appendix's VGG-like conv nets (image data sets only).")
flags.DEFINE_list("vgg_filters", ["32", "64"],
                  "Filters of the VGG blocks (paper: 32,64 for 64x64x1 frames, 64,128 for faces).")
flags.DEFINE_integer("num_clusters", 0, "Number of clusters K (0: the number of classes).")
flags.DEFINE_integer("max_train_samples", 0, "Use a random subset of the training split (0: all).")
flags.DEFINE_integer("max_test_samples", 0, "Use a random subset of the test split (0: all).")
flags.DEFINE_integer("eval_every", 10, "Evaluate test ACC/NMI/ARI every this many epochs (logged to history).")
flags.DEFINE_string("data_dir", None, "Directory searched first for data files.")
flags.DEFINE_integer("image_size", 64, "Side of the square images of UTKFace and of image-folder data sets.")
flags.DEFINE_string("output_dir", "results", "Where results.csv, summary.csv and per-run logs go.")
flags.DEFINE_string("cache_dir", None, "Pretrained-weights cache (default: <repo>/data/cache).")
flags.DEFINE_integer("verbose", 2, "Keras verbosity: 0 silent, 1 progress bar, 2 one line per epoch.")
flags.DEFINE_float("pckmeans_weight", 1.0, "pckmeans: penalty per violated constraint (squared-distance units).")
flags.DEFINE_integer("layer_pretrain_epochs", 50, "sdec/cidec: denoising-autoencoder epochs per layer (paper: 50).")
flags.DEFINE_integer("finetune_epochs", 100, "sdec/cidec: autoencoder fine-tuning epochs (paper: 100).")
flags.DEFINE_float("dec_tol", 1e-3, "sdec/cidec: stop when fewer than this share of assignments change.")
flags.DEFINE_float("sdec_lambda", 1e-5, "sdec: weight of the pairwise distance loss.")
flags.DEFINE_float("cidec_gamma", 0.1, "cidec: weight of the clustering KL next to the reconstruction (IDEC).")
flags.DEFINE_float("cidec_ml_penalty", 0.1, "cidec: weight of the must-link loss.")
flags.DEFINE_float("cidec_cl_penalty", 1.0, "cidec: weight of the cannot-link loss.")
flags.DEFINE_boolean("deterministic", True, "TensorFlow op determinism: the same --seed on the same machine gives "
                     "the same results row.")
flags.DEFINE_boolean("jit_compile", False, "Compile the training step with XLA (needs --nodeterministic).")
flags.DEFINE_enum("mixed_precision", "off", ["off", "bf16", "fp16"],
                  "Mixed precision: bf16 (CPUs with AVX512-BF16/AMX, TPUs), fp16 (GPUs, with loss scaling); "
                  "variables and losses stay float32.")
flags.DEFINE_integer("eval_batch_size", 1024, "Batch size of predictions (test metrics, results).")
flags.DEFINE_enum("strategy", "default", ["default", "mirrored", "multiworker"],
                  "tf.distribute: one device, all local GPUs (MirroredStrategy) or several machines "
                  "(MultiWorkerMirroredStrategy, cluster from TF_CONFIG); see docs/distributed.md.")

# Bad flag values stop the program before anything runs, with this message (absl prints it, no traceback).
for _name, _check, _rule in (
        ("epochs", lambda v: v >= 1, "at least 1"), ("batch_size", lambda v: v >= 2, "at least 2"),
        ("runs", lambda v: v >= 1, "at least 1"), ("pretrain_epochs", lambda v: v >= 0, "at least 0"),
        ("pretrain_batch_size", lambda v: v >= 1, "at least 1"), ("num_constraints", lambda v: v >= 0, "at least 0"),
        ("pretrain_seed", lambda v: v >= -1, "-1 (the run's seed) or a seed >= 0"),
        ("init_labels_per_class", lambda v: v == 0 or v >= 2, "0 (all labels) or at least 2"),
        ("q", lambda v: 0 <= v < 0.5, "in [0, 0.5): the probability that a constraint is wrong"),
        ("alpha", lambda v: v is None or 0 < v < float("inf"), "a finite number > 0 (or unset for the default)"),
        ("learning_rate", lambda v: v > 0, "> 0"), ("lr_decay", lambda v: 0 < v <= 1, "in (0, 1]"),
        ("lr_decay_epochs", lambda v: v >= 1, "at least 1"), ("clipnorm", lambda v: v >= 0, "at least 0"),
        ("threads", lambda v: v >= 0, "at least 0"), ("latent_dim", lambda v: v >= 1, "at least 1"),
        ("num_clusters", lambda v: v == 0 or v >= 2, "0 (the number of classes) or at least 2"),
        ("max_train_samples", lambda v: v >= 0, "at least 0"), ("max_test_samples", lambda v: v >= 0, "at least 0"),
        ("eval_every", lambda v: v >= 1, "at least 1"),
        ("init_components", lambda v: v == 0 or v >= 2, "0 (automatic) or at least 2"),
        ("restart_every", lambda v: v >= 0, "at least 0"), ("eval_batch_size", lambda v: v >= 1, "at least 1")):
    flags.register_validator(_name, _check, message=f"--{_name} must be {_rule}.")
flags.register_multi_flags_validator(
    ["jit_compile", "deterministic"], lambda f: not (f["jit_compile"] and f["deterministic"]),
    message="--jit_compile needs --nodeterministic: XLA has no deterministic mode.")
for _name in ("cluster_init", "restart_every", "init_components"):  # the baselines have no mixture to start
    flags.register_multi_flags_validator(
        [_name, "method"], lambda f, name=_name: f["method"] in ("dcgmm", "vade") or not FLAGS[name].present,
        message=f"--{_name} applies to --method=dcgmm or vade only.")
flags.register_multi_flags_validator(  # the default applies to merge / latent_class only; a given value must fit
    ["restart_every", "cluster_init"],
    lambda f: (not (f["restart_every"] and FLAGS["restart_every"].present)
               or f["cluster_init"] in ("merge", "latent_class")),
    message="--restart_every needs --cluster_init=merge or latent_class (or --restart_every=0).")
flags.register_multi_flags_validator(
    ["init_labels_per_class", "cluster_init"], lambda f: not f["init_labels_per_class"] or f["cluster_init"] == "labels",
    message="--init_labels_per_class needs --cluster_init=labels.")
flags.register_multi_flags_validator(
    ["constraints_file", "max_train_samples"], lambda f: not (f["constraints_file"] and f["max_train_samples"]),
    message="--constraints_file indexes the whole training split: it cannot be combined with --max_train_samples.")

# Flags that do not change a run's results; all others make up its configuration (see config_key).
NOT_CONFIG_FLAGS = ("seed", "runs", "output_dir", "cache_dir", "data_dir", "verbose", "threads", "eval_every",
                    "deterministic", "jit_compile", "eval_batch_size", "strategy")

REPO = Path(__file__).resolve().parents[1]


def config_key() -> str:
    """Hash of the run.py flags that define a run's configuration (all but NOT_CONFIG_FLAGS)."""
    from experiments import results

    module = FLAGS.find_module_defining_flag("dataset")
    return results.config_key({f.name: f.value for f in FLAGS.get_flags_for_module(module)
                               if f.name not in NOT_CONFIG_FLAGS})


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


def labelled_subset(y, per_class: int, seed: int):
    """Indices of ``per_class`` random samples of each class of ``y`` (all indices when 0); sorted."""
    import numpy as np

    if not per_class:
        return np.arange(len(y))
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < per_class:
        raise ValueError(f"--init_labels_per_class={per_class} but class {classes[counts.argmin()]} has only "
                         f"{counts.min()} training samples")
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in classes]))


def make_model(data, input_shape, num_clusters: int, seed: int):
    """The DC-GMM model of the flags (default network: the paper's MLP)."""
    from dcgmm_tf import DCGMM
    from dcgmm_tf.networks import VGGDecoder, VGGEncoder

    networks = {}
    if FLAGS.architecture == "vgg":
        filters = [int(f) for f in FLAGS.vgg_filters]
        networks = {"encoder": VGGEncoder(FLAGS.latent_dim, filters, name="encoder"),
                    "decoder": VGGDecoder(input_shape, filters, data.likelihood, name="decoder")}
    return DCGMM(input_shape, num_clusters=num_clusters, latent_dim=FLAGS.latent_dim,
                 likelihood=data.likelihood, kl_estimator=FLAGS.kl_estimator, seed=seed, **networks)


def train_dcgmm(data, splits, constraints, num_clusters: int, seed: int, run_dir: Path):
    """Pretrain (cached), then train DC-GMM; returns the model and the initial mixture's test accuracy."""
    import keras
    import numpy as np

    from dcgmm_tf import metrics, pretrain
    from dcgmm_tf.callbacks import (ClusterRestart, ClusteringMetrics, NonFiniteLossGuard, TrainingBackup,
                                    save_atomically, trim_history)
    from dcgmm_tf.cluster_init import LINK_STRATEGIES, init_clusters
    from dcgmm_tf.data import constrained_dataset
    from dcgmm_tf.distribute import distributed_constrained_dataset
    from dcgmm_tf.optimizers import FusedAdam
    from dcgmm_tf.pretraining import cluster_prior_from_labels

    x_train, y_train, x_test, y_test = splits
    pretrain_seed = seed if FLAGS.pretrain_seed < 0 else FLAGS.pretrain_seed
    keras.utils.set_random_seed(pretrain_seed)  # initial weights and pretraining
    model = make_model(data, x_train.shape[1:], num_clusters, pretrain_seed)
    config = model.get_config()  # what the pretrained weights depend on:
    architecture = {k: config[k] for k in ("encoder", "decoder", "num_clusters", "min_variance", "seed")}
    architecture.update(pretrain_epochs=FLAGS.pretrain_epochs, pretrain_batch_size=FLAGS.pretrain_batch_size,
                        data=hashlib.sha1(np.ascontiguousarray(x_train).tobytes()).hexdigest())
    key = hashlib.sha1(json.dumps(architecture, sort_keys=True, default=str).encode()).hexdigest()[:12]
    cache_dir = Path(FLAGS.cache_dir) if FLAGS.cache_dir else REPO / "data" / "cache"
    cache = cache_dir / f"pretrain-{data.name}-seed{pretrain_seed}-{key}.weights.h5"
    cached = pretrain(model, x_train, epochs=FLAGS.pretrain_epochs, batch_size=FLAGS.pretrain_batch_size,
                      seed=pretrain_seed, cache_path=cache, verbose=FLAGS.verbose)
    logging.info("pretrained weights %s %s", "loaded from" if cached else "saved to", cache)
    regroup = FLAGS.cluster_init in LINK_STRATEGIES and len(constraints) > 0  # without links: pretrain's GMM
    if regroup:
        init_clusters(model, x_train, constraints, FLAGS.cluster_init, FLAGS.init_components or None, seed)
        logging.info("mixture initialised by %s", FLAGS.cluster_init)
    elif FLAGS.cluster_init == "labels":
        labelled = labelled_subset(y_train, FLAGS.init_labels_per_class, seed)
        cluster_prior_from_labels(model, x_train[labelled], y_train[labelled])
        logging.info("mixture initialised from the labels of %d training samples", len(labelled))
    if pretrain_seed != seed:  # the training itself (sampling, batches) follows the run's seed
        keras.utils.set_random_seed(seed)
        pretrained = model
        model = make_model(data, x_train.shape[1:], num_clusters, seed)
        model.set_weights(pretrained.get_weights())
    pretrain_acc = metrics.cluster_accuracy(
        y_test, model.predict(x_test, batch_size=FLAGS.eval_batch_size, verbose=0).argmax(-1))
    logging.info("test ACC of the initial mixture: %.4f", pretrain_acc)
    strategy = distribution_strategy()
    if FLAGS.strategy != "default":  # pretrained on one device, trained on the strategy's replicas
        with strategy.scope():
            replicated = make_model(data, x_train.shape[1:], num_clusters, seed)
        replicated.set_weights(model.get_weights())
        model = replicated

    train_data = constrained_dataset(x_train, constraints, batch_size=FLAGS.batch_size, seed=seed,
                                     layout=FLAGS.layout)
    steps_per_epoch = int(train_data.cardinality())
    schedule = keras.optimizers.schedules.ExponentialDecay(
        FLAGS.learning_rate, decay_steps=FLAGS.lr_decay_epochs * steps_per_epoch, decay_rate=FLAGS.lr_decay,
        staircase=True)
    with strategy.scope():
        model.compile(optimizer=FusedAdam(schedule, global_clipnorm=FLAGS.clipnorm or None),
                      jit_compile=FLAGS.jit_compile)
        model.optimizer.build(model.trainable_variables)  # under the strategy, like the model's variables
    # A killed run restarted with the same flags resumes after its last finished epoch.
    backup = TrainingBackup(run_dir / f"backup-{config_key()}")
    initial_epoch = backup.restore(model)
    if initial_epoch:
        trim_history(run_dir / "history.csv", initial_epoch)
        train_data = constrained_dataset(x_train, constraints, batch_size=FLAGS.batch_size, seed=seed,
                                         layout=FLAGS.layout, initial_epoch=initial_epoch)
    fit_steps = {}
    if FLAGS.strategy != "default":
        train_data, steps = distributed_constrained_dataset(strategy, x_train, constraints, batch_size=FLAGS.batch_size,
                                                            seed=seed, layout=FLAGS.layout, initial_epoch=initial_epoch)
        fit_steps = {"steps_per_epoch": steps}
    guard = NonFiniteLossGuard(run_dir / "last_good.weights.h5")
    restarts = []
    if regroup and FLAGS.restart_every:
        restarts = [ClusterRestart(x_train, constraints, FLAGS.restart_every, FLAGS.cluster_init,
                                   FLAGS.init_components or None, seed)]
    callbacks = [*restarts, guard,
                 ClusteringMetrics(x_test, y_test, every=FLAGS.eval_every, batch_size=FLAGS.eval_batch_size),
                 keras.callbacks.CSVLogger(str(run_dir / "history.csv"), append=initial_epoch > 0),
                 keras.callbacks.TensorBoard(str(run_dir / "tensorboard")), backup]
    model.fit(train_data, epochs=FLAGS.epochs, initial_epoch=initial_epoch, callbacks=callbacks,
              verbose=FLAGS.verbose, shuffle=False, **fit_steps)
    guard.raise_if_stopped()
    save_atomically(run_dir / "model.keras", model.save)
    return model, pretrain_acc


def train_pckmeans(data, splits, constraints, num_clusters: int, seed: int, run_dir: Path):
    """PCKmeans on the raw features, as in the paper; returns the fitted model and NaN (no pretraining)."""
    import pandas as pd

    from dcgmm_tf.baselines import PCKMeans

    model = PCKMeans(num_clusters, weight=FLAGS.pckmeans_weight, max_iter=FLAGS.epochs, seed=seed)
    model.fit(splits[0], constraints)
    pd.DataFrame(model.history_).to_csv(run_dir / "history.csv", index=False)
    logging.info("PCKmeans: %d iterations, converged: %s", model.n_iter_, model.converged_)
    return model, float("nan")


def train_dec_baseline(data, splits, constraints, num_clusters: int, seed: int, run_dir: Path):
    """Layer-wise pretraining of the stacked autoencoder (cached per seed, so sdec and cidec share it), k-means
    centres, then SDEC or C-IDEC; returns the model and the test ACC of the k-means initialisation."""
    import keras
    import pandas as pd

    from dcgmm_tf import metrics
    from dcgmm_tf.baselines import CIDEC, SDEC, StackedAutoencoder, pretrain_layerwise

    x_train, _, x_test, y_test = splits
    autoencoder = StackedAutoencoder(x_train.shape[-1], FLAGS.latent_dim, name="autoencoder")
    settings = {"model": autoencoder.get_config(), "layer_epochs": FLAGS.layer_pretrain_epochs,
                "finetune_epochs": FLAGS.finetune_epochs, "batch_size": FLAGS.pretrain_batch_size, "n": len(x_train)}
    key = hashlib.sha1(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:12]
    cache_dir = Path(FLAGS.cache_dir) if FLAGS.cache_dir else REPO / "data" / "cache"
    cache = cache_dir / f"dec-pretrain-{data.name}-seed{seed}-{key}.weights.h5"
    cached = pretrain_layerwise(autoencoder, x_train, layer_epochs=FLAGS.layer_pretrain_epochs,
                                finetune_epochs=FLAGS.finetune_epochs, batch_size=FLAGS.pretrain_batch_size,
                                seed=seed, cache_path=cache, verbose=FLAGS.verbose)
    logging.info("pretrained autoencoder %s %s", "loaded from" if cached else "saved to", cache)
    if FLAGS.method == "sdec":  # DEC's optimiser
        model = SDEC(autoencoder.encoder, num_clusters, pair_weight=FLAGS.sdec_lambda, name="sdec")
        optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
    else:  # IDEC's optimiser
        model = CIDEC(autoencoder.encoder, autoencoder.decoder, num_clusters, gamma=FLAGS.cidec_gamma,
                      ml_penalty=FLAGS.cidec_ml_penalty, cl_penalty=FLAGS.cidec_cl_penalty, name="cidec")
        optimizer = keras.optimizers.Adam(FLAGS.learning_rate)
    model.compile(optimizer=optimizer)
    model.initialize_centers(x_train, seed=seed)
    pretrain_acc = metrics.cluster_accuracy(y_test, _clusters(model, x_test))
    logging.info("test ACC of k-means on the pretrained embedding: %.4f", pretrain_acc)

    def evaluate(epoch: int, log: dict) -> None:
        if epoch % FLAGS.eval_every == 0:
            log.update({f"test_{k}": v for k, v in metrics.clustering_scores(y_test, _clusters(model, x_test)).items()})
        logging.info("epoch %d: %s", epoch, log)

    history = model.fit_clusters(x_train, constraints, FLAGS.epochs, batch_size=FLAGS.batch_size, tol=FLAGS.dec_tol,
                                 seed=seed, callback=evaluate)
    pd.DataFrame(history).to_csv(run_dir / "history.csv", index=False)
    model.save_weights(run_dir / "model.weights.h5")
    return model, pretrain_acc


def _clusters(model, x):
    """Cluster of each row of ``x``: a PCKMeans prediction, or the argmax of a Keras model's output."""
    from dcgmm_tf.baselines import PCKMeans

    if isinstance(model, PCKMeans):
        return model.predict(x)
    return model.predict(x, batch_size=FLAGS.eval_batch_size, verbose=0).argmax(-1)


def run_once(data, seed: int, output_dir: Path) -> dict:
    """One run of --method (constraints, training, evaluation on the test split); returns the results row."""
    import keras
    import numpy as np

    from dcgmm_tf import metrics, validation

    keras.utils.set_random_seed(seed)
    splits = _subsets(data, seed)
    x_train, y_train, x_test, y_test = splits
    num_clusters = FLAGS.num_clusters or data.num_classes
    for name, x, y in (("x_train", x_train, y_train), ("x_test", x_test, y_test)):
        validation.check_data(x, y, num_clusters=num_clusters, likelihood=data.likelihood, name=name)
    constraints = make_constraints(y_train, seed)
    run_dir = output_dir / "runs" / f"{FLAGS.method}-{data.name}-seed{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    train = {"pckmeans": train_pckmeans, "sdec": train_dec_baseline, "cidec": train_dec_baseline}.get(
        FLAGS.method, train_dcgmm)
    model, pretrain_acc = train(data, splits, constraints, num_clusters, seed, run_dir)
    train_seconds = time.perf_counter() - start

    y_pred = _clusters(model, x_test)
    scores = metrics.clustering_scores(y_test, y_pred)
    satisfaction = (metrics.constraint_satisfaction(constraints, _clusters(model, x_train)) if len(constraints) else
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
        if FLAGS.architecture == "vgg":
            x = data.images(x)
        out += [x, y]
    return out


@functools.cache
def distribution_strategy():
    """The tf.distribute strategy of --strategy; main creates it first (before any other TF operation)."""
    from dcgmm_tf.distribute import make_strategy

    return make_strategy(FLAGS.strategy)


def main(argv):
    del argv
    from dcgmm_tf.data import load_dataset
    from experiments import results

    if FLAGS.threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    if FLAGS.deterministic:
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    import keras

    keras.mixed_precision.set_global_policy(
        {"off": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}[FLAGS.mixed_precision])
    distribution_strategy()
    output_dir = Path(FLAGS.output_dir)
    data = load_dataset(FLAGS.dataset, FLAGS.data_dir, image_size=FLAGS.image_size)
    config = config_key()
    for r in range(FLAGS.runs):
        done = {"method": FLAGS.method, "dataset": data.name, "seed": FLAGS.seed + r, "config": config}
        if results.has_row(output_dir / "results.csv", done):
            logging.info("run %d/%d: skipped, %s is already in %s", r + 1, FLAGS.runs, done,
                         output_dir / "results.csv")
            continue
        row = {**run_once(data, FLAGS.seed + r, output_dir), "config": config}
        results.append_row(output_dir / "results.csv", row)
        logging.info("run %d/%d: %s", r + 1, FLAGS.runs, row)
    summary = results.summarise(results.read_rows(output_dir / "results.csv"))
    results.write_csv_atomically(summary, output_dir / "summary.csv")
    print(summary.to_string(index=False), file=sys.stdout)


def cli(argv):
    """``main``, reporting bad input as one line on stderr with exit status 1 (no traceback)."""
    from dcgmm_tf.validation import exit_on_user_error

    return exit_on_user_error(main)(argv)


if __name__ == "__main__":
    app.run(cli)
