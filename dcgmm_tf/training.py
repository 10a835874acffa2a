"""The training recipe of every method, from a :class:`~dcgmm_tf.config.RunConfig` to a trained model.

``train_and_evaluate(config, data)`` is what ``python -m experiments.run`` does for one seed: cut the data to the
configured subsets, draw the constraints, train, and score the test split. ``train(config, data, constraints)``
is the training alone, for your own data and constraints::

    config = RunConfig(epochs=100, seed=0)
    data = load_dataset("fashion")
    constraints = make_constraints(config, data.y_train)
    trained = train(config, data, constraints, run_dir="runs/fashion")
    trained.model.predict(data.x_test).argmax(-1)

DC-GMM's recipe: cached autoencoder pretraining, the initial mixture (``cluster_init``), Adam with the
staircase learning-rate decay and gradient clipping, restarts of the mixture, test metrics every
``eval_every`` epochs, a NaN guard that rolls back to the last good weights, and (with a ``run_dir``) a
history CSV, TensorBoard logs, a backup every epoch from which a killed run resumes, and the saved model.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import keras
import numpy as np

from dcgmm_tf import metrics, validation
from dcgmm_tf.baselines.training import train_dec, train_pckmeans
from dcgmm_tf.callbacks import ClusteringMetrics, ClusterRestart, NonFiniteLossGuard, TrainingBackup, trim_history
from dcgmm_tf.cluster_init import LINK_STRATEGIES, init_clusters
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data import Dataset, constrained_dataset
from dcgmm_tf.distribute import distributed_constrained_dataset
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import VGGDecoder, VGGEncoder
from dcgmm_tf.optimizers import FusedAdam
from dcgmm_tf.pretraining import cluster_prior_from_labels, pretrain
from dcgmm_tf.runtime import distribution_strategy
from dcgmm_tf.storage import array_hash, settings_hash, write_atomically
from dcgmm_tf.trainer_base import TrainedModel, cache_note, cache_path, predict_clusters


class Inputs(NamedTuple):
    """A data set's splits as the model takes them (images for convolutional networks)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def subsets(data: Dataset, config: RunConfig) -> Dataset:
    """``data`` cut to random subsets of ``config.max_train_samples`` / ``max_test_samples`` (drawn with the seed)."""
    rng = np.random.default_rng(config.seed)
    arrays = {}
    for split, limit in (("train", config.max_train_samples), ("test", config.max_test_samples)):
        x, y = getattr(data, f"x_{split}"), getattr(data, f"y_{split}")
        if 0 < limit < len(x):
            keep = np.sort(rng.choice(len(x), limit, replace=False))
            x, y = x[keep], y[keep]
        arrays.update({f"x_{split}": x, f"y_{split}": y})
    return dataclasses.replace(data, **arrays)


def model_inputs(data: Dataset, config: RunConfig) -> Inputs:
    """The splits of ``data`` shaped for ``config.architecture``."""
    shape = data.images if config.architecture == "vgg" else (lambda x: x)
    return Inputs(shape(data.x_train), data.y_train, shape(data.x_test), data.y_test)


def make_constraints(config: RunConfig, y_train: np.ndarray) -> ConstraintSet:
    """The run's constraints: none for VaDE, ``config.constraints_file`` (every |W| set to ``config.alpha`` when
    that is given, so a file of +1/-1 answers works), or drawn from the training labels."""
    if config.method == "vade":
        return ConstraintSet.empty(len(y_train))
    if config.constraints_file:
        read = ConstraintSet.from_csv(config.constraints_file, len(y_train))
        if config.alpha is None:
            return read
        return ConstraintSet(read.i, read.j, np.sign(read.weight) * config.alpha, read.num_samples)
    return ConstraintSet.from_labels(y_train, config.num_constraints, alpha=config.alpha, q=config.q,
                                     link_type=config.link_type, seed=config.seed,
                                     transitive_closure=config.transitive_closure)


def labelled_subset(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Indices of ``per_class`` random samples of each class of ``y`` (all indices when 0); sorted."""
    if not per_class:
        return np.arange(len(y))
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < per_class:
        raise ValueError(f"init_labels_per_class={per_class} but class {classes[counts.argmin()]} has only "
                         f"{counts.min()} training samples")
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in classes]))


def make_model(config: RunConfig, data: Dataset, num_clusters: int, seed: int) -> DCGMM:
    """The DC-GMM model of ``config`` for ``data`` (the paper's MLP, or the VGG-like networks)."""
    input_shape = data.image_shape if config.architecture == "vgg" else (data.input_dim,)
    networks = {}
    if config.architecture == "vgg":
        networks = {"encoder": VGGEncoder(config.latent_dim, list(config.vgg_filters), name="encoder"),
                    "decoder": VGGDecoder(input_shape, list(config.vgg_filters), data.likelihood, name="decoder")}
    return DCGMM(input_shape, num_clusters=num_clusters, latent_dim=config.latent_dim, likelihood=data.likelihood,
                 kl_estimator=config.kl_estimator, seed=seed, **networks)


def pretrained_model(config: RunConfig, data: Dataset, x_train: np.ndarray, y_train: np.ndarray,
                     constraints: ConstraintSet, num_clusters: int, runtime: RuntimeConfig) -> DCGMM:
    """The model after (cached) pretraining and the initial mixture of ``config.cluster_init``."""
    seed = config.seed
    pretrain_seed = seed if config.pretrain_seed < 0 else config.pretrain_seed
    keras.utils.set_random_seed(pretrain_seed)  # initial weights and pretraining
    model = make_model(config, data, num_clusters, pretrain_seed)
    model_config = model.get_config()  # what the pretrained weights depend on:
    settings = {k: model_config[k] for k in ("encoder", "decoder", "num_clusters", "min_variance", "seed")}
    settings.update(pretrain_epochs=config.pretrain_epochs, pretrain_batch_size=config.pretrain_batch_size,
                    data=array_hash(x_train))
    cache = cache_path(runtime, f"pretrain-{data.name}-seed{pretrain_seed}-{settings_hash(settings)}.weights.h5")
    cached = pretrain(model, x_train, epochs=config.pretrain_epochs, batch_size=config.pretrain_batch_size,
                      seed=pretrain_seed, cache_path=cache, verbose=runtime.verbose)
    logging.info("pretrained weights %s", cache_note(cached, cache))
    if config.cluster_init in LINK_STRATEGIES and len(constraints) > 0:  # without links: pretrain's GMM
        init_clusters(model, x_train, constraints, config.cluster_init, config.init_components or None, seed)
        logging.info("mixture initialised by %s", config.cluster_init)
    elif config.cluster_init == "labels":
        labelled = labelled_subset(y_train, config.init_labels_per_class, seed)
        cluster_prior_from_labels(model, x_train[labelled], y_train[labelled])
        logging.info("mixture initialised from the labels of %d training samples", len(labelled))
    if pretrain_seed != seed:  # the training itself (sampling, batches) follows the run's seed
        keras.utils.set_random_seed(seed)
        pretrained = model
        model = make_model(config, data, num_clusters, seed)
        model.set_weights(pretrained.get_weights())
    return model


def train_dcgmm(config: RunConfig, data: Dataset, constraints: ConstraintSet, num_clusters: int,
                run_dir: Path | None, runtime: RuntimeConfig) -> TrainedModel:
    """DC-GMM (VaDE without constraints): pretraining, the initial mixture, then ``config.epochs`` of C-ELBO."""
    x_train, y_train, x_test, y_test = model_inputs(data, config)
    model = pretrained_model(config, data, x_train, y_train, constraints, num_clusters, runtime)
    start_acc = float("nan")  # without a test split (e.g. the estimator), nothing is scored
    if len(x_test):
        start_acc = metrics.cluster_accuracy(y_test, predict_clusters(model, x_test, runtime.eval_batch_size))
        logging.info("test ACC of the initial mixture: %.4f", start_acc)
    if runtime.strategy != "default":  # pretrained on one device, trained on the strategy's replicas
        with distribution_strategy(runtime.strategy).scope():
            replicated = make_model(config, data, num_clusters, config.seed)
        replicated.set_weights(model.get_weights())
        model = replicated
    history = fit_mixture(model, config, x_train, constraints, epochs=config.epochs, x_test=x_test, y_test=y_test,
                          run_dir=run_dir, runtime=runtime)
    if run_dir is not None:
        write_atomically(run_dir / "model.keras", model.save, checksum=True)
    return TrainedModel(model, history, start_acc)


def fit_mixture(model: DCGMM, config: RunConfig, x_train: np.ndarray, constraints: ConstraintSet, *, epochs: int,
                x_test: np.ndarray | None = None, y_test: np.ndarray | None = None, run_dir: Path | None = None,
                runtime: RuntimeConfig = RuntimeConfig(),
                extra: Sequence[keras.callbacks.Callback] = ()) -> dict[str, list]:
    """``epochs`` epochs of C-ELBO from ``model``'s current weights and mixture; returns the Keras history.

    A fresh optimizer (Adam, the staircase learning-rate decay and clipping of ``config``), restarts of the mixture
    every ``config.restarts`` epochs and after the last, the test metrics every ``runtime.eval_every`` epochs when
    ``x_test`` is given, the NaN guard, then the callbacks ``extra``. With a ``run_dir``: the history CSV,
    TensorBoard logs and a backup every epoch, from which a killed run of the same configuration resumes. Raises
    ``FloatingPointError`` when the loss became non-finite (the model then holds its last good weights).
    """
    strategy = distribution_strategy(runtime.strategy)

    def training_data(initial_epoch: int) -> tuple[Any, dict]:
        """The input of ``fit`` from ``initial_epoch`` on, and the extra arguments ``fit`` needs for it."""
        args = dict(batch_size=config.batch_size, seed=config.seed, layout=config.layout, initial_epoch=initial_epoch)
        if runtime.strategy == "default":
            return constrained_dataset(x_train, constraints, **args), {}
        dataset, steps = distributed_constrained_dataset(strategy, x_train, constraints, **args)
        return dataset, {"steps_per_epoch": steps}

    train_data, fit_args = training_data(0)
    steps_per_epoch = fit_args.get("steps_per_epoch") or int(train_data.cardinality())
    schedule = keras.optimizers.schedules.ExponentialDecay(
        config.learning_rate, decay_steps=config.lr_decay_epochs * steps_per_epoch, decay_rate=config.lr_decay,
        staircase=True)
    with strategy.scope():
        model.compile(optimizer=FusedAdam(schedule, global_clipnorm=config.clipnorm or None),
                      jit_compile=runtime.jit_compile, steps_per_execution=runtime.steps_per_execution)
        model.optimizer.build(model.trainable_variables)  # under the strategy, like the model's variables
    callbacks = []
    if config.restarts and len(constraints) > 0:
        callbacks.append(ClusterRestart(x_train, constraints, config.restarts, config.cluster_init,
                                        config.init_components or None, config.seed))
    guard = NonFiniteLossGuard(run_dir / "last_good.weights.h5" if run_dir else None)
    callbacks.append(guard)
    if x_test is not None and len(x_test):
        callbacks.append(ClusteringMetrics(x_test, y_test, every=runtime.eval_every,
                                           batch_size=runtime.eval_batch_size))
    initial_epoch = 0
    if run_dir is not None:
        # A killed run restarted with the same configuration resumes after its last finished epoch.
        backup = TrainingBackup(run_dir / f"backup-{config.key()}")
        initial_epoch = backup.restore(model)
        if initial_epoch:
            trim_history(run_dir / "history.csv", initial_epoch)
            train_data, fit_args = training_data(initial_epoch)
        callbacks += [keras.callbacks.CSVLogger(str(run_dir / "history.csv"), append=initial_epoch > 0),
                      keras.callbacks.TensorBoard(str(run_dir / "tensorboard")), backup]
    history = model.fit(train_data, epochs=epochs, initial_epoch=initial_epoch, callbacks=[*callbacks, *extra],
                        verbose=runtime.verbose, shuffle=False, **fit_args)
    guard.raise_if_stopped()
    return history.history


Trainer = Callable[..., TrainedModel]


# The trainer of each method; each takes (config, data, constraints, num_clusters, run_dir, runtime).
TRAINERS: dict[str, Trainer] = {"dcgmm": train_dcgmm, "vade": train_dcgmm, "pckmeans": train_pckmeans,
                                "sdec": train_dec, "cidec": train_dec}


def train(config: RunConfig, data: Dataset, constraints: ConstraintSet, *, num_clusters: int | None = None,
          run_dir: str | Path | None = None, runtime: RuntimeConfig = RuntimeConfig()) -> TrainedModel:
    """Trains ``config.method`` on ``data.x_train`` with ``constraints`` (indexing ``data.x_train``).

    ``num_clusters`` defaults to ``config.num_clusters`` or the number of classes; with a ``run_dir`` the run
    writes its history, logs, backups and model there (and resumes from a backup of the same configuration).
    The test split is scored during training (``eval_every``) unless it is empty; the labels of the training
    split are used only by ``cluster_init="labels"``.
    """
    num_clusters = num_clusters or config.num_clusters or data.num_classes
    validation.check_data(data.x_train, data.y_train, num_clusters=num_clusters, likelihood=data.likelihood,
                          name="x_train")
    if len(data.x_test):
        validation.check_data(data.x_test, data.y_test, likelihood=data.likelihood, name="x_test")
    if constraints.num_samples != len(data.x_train):
        raise ValueError(f"the constraints index {constraints.num_samples} samples but x_train holds "
                         f"{len(data.x_train)}")
    if run_dir is not None:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
    return TRAINERS[config.method](config, data, constraints, num_clusters, run_dir, runtime)


def run_dir_of(config: RunConfig, data_name: str, runtime: RuntimeConfig) -> Path:
    """Where a run keeps its history, logs, backups and model: ``<output_dir>/runs/<method>-<data>-seed<s>``."""
    return Path(runtime.output_dir) / "runs" / f"{config.method}-{data_name}-seed{config.seed}"


class RunResult(NamedTuple):
    """What a run gives: its results row (metrics, settings, ``train_seconds``, ``config`` = ``config.key()``),
    the trained model, and the test labels and predicted clusters the row's scores come from."""

    row: dict[str, Any]
    trained: TrainedModel
    y_test: np.ndarray
    test_clusters: np.ndarray


def train_and_evaluate(config: RunConfig, data: Dataset, runtime: RuntimeConfig = RuntimeConfig()) -> RunResult:
    """One run of ``config`` on ``data``: subsets, constraints, training, and the scores on the test split and
    the training constraints (NaN without constraints)."""
    keras.utils.set_random_seed(config.seed)
    num_clusters = config.num_clusters or data.num_classes
    data = subsets(data, config)
    for name, x, y in (("x_train", data.x_train, data.y_train), ("x_test", data.x_test, data.y_test)):
        validation.check_data(x, y, num_clusters=num_clusters, likelihood=data.likelihood, name=name)
    constraints = make_constraints(config, data.y_train)
    start = time.perf_counter()
    trained = train(config, data, constraints, num_clusters=num_clusters,
                    run_dir=run_dir_of(config, data.name, runtime), runtime=runtime)
    train_seconds = time.perf_counter() - start
    x_train, _, x_test, y_test = model_inputs(data, config)
    test_clusters = predict_clusters(trained.model, x_test, runtime.eval_batch_size)
    scores = metrics.clustering_scores(y_test, test_clusters)
    satisfaction = float("nan")
    if len(constraints):
        train_clusters = predict_clusters(trained.model, x_train, runtime.eval_batch_size)
        satisfaction = metrics.constraint_satisfaction(constraints, train_clusters)
    row = {"dataset": data.name, "method": config.method, "seed": config.seed, "num_constraints": len(constraints),
           "q": config.q, "alpha": float(np.abs(constraints.weight).max()) if len(constraints) else 0.0,
           "epochs": config.epochs, "acc": scores["acc"], "nmi": scores["nmi"], "ari": scores["ari"],
           "constraint_satisfaction": satisfaction, "pretrain_acc": trained.start_acc,
           "train_seconds": round(train_seconds, 1), "n_train": len(data.x_train), "n_test": len(data.x_test),
           "config": config.key()}
    return RunResult(row, trained, y_test, test_clusters)
