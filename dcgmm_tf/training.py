"""The training recipe of every method, from a :class:`~dcgmm_tf.config.RunConfig` to a trained model.

``train(config, data, constraints)`` trains ``config.method`` on your own data and constraints::

    config = RunConfig(epochs=100, seed=0)
    data = load_dataset("fashion")
    constraints = make_constraints(config, data.y_train)
    trained = train(config, data, constraints, run_dir="runs/fashion")
    trained.model.predict(data.x_test).argmax(-1)

DC-GMM's recipe: cached autoencoder pretraining (:func:`pretrained_model`), the start of the mixture
(:func:`dcgmm_tf.pretraining.start_mixture`), then :func:`dcgmm_tf.fitting.fit_mixture`. This module is the one
place that translates a ``RunConfig`` (and a :class:`~dcgmm_tf.config.RuntimeConfig`) into the explicit
arguments of those library calls (:func:`fit_config`), and it applies the config's precision policy around the
whole training (:func:`precision_policy`), so a Python call trains as the command line does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import keras
import numpy as np

from dcgmm_tf import metrics
from dcgmm_tf.baselines.training import train_dec, train_pckmeans
from dcgmm_tf.callbacks import ClusteringMetrics, ClusterRestart
from dcgmm_tf.cluster_count import choose_num_clusters
from dcgmm_tf.cluster_init import LINK_START_STRATEGIES
from dcgmm_tf.config import MIXED_PRECISION_POLICIES, MIXTURE_METHODS, RunConfig, RuntimeConfig
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data import Dataset
from dcgmm_tf.fitting import FitSchedule, fit_mixture
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import VGGDecoder, VGGEncoder
from dcgmm_tf.prepared import PreparedRun, prepare_run
from dcgmm_tf.pretraining import pretrain_checked, start_mixture
from dcgmm_tf.runtime import distribution_strategy
from dcgmm_tf.storage import array_hash, settings_hash, write_atomically
from dcgmm_tf.trainer_base import TrainedModel, cache_folder, cache_note, predict_clusters


@contextlib.contextmanager
def precision_policy(mixed_precision: str) -> Iterator[None]:
    """Keras' global dtype policy set to that of ``mixed_precision`` (off, bf16, fp16) inside the block."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(MIXED_PRECISION_POLICIES[mixed_precision])
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def make_model(config: RunConfig, input_shape: tuple[int, ...], likelihood: str, num_clusters: int, seed: int) -> DCGMM:
    """The DC-GMM model of ``config`` (the paper's MLP, or the VGG-like networks) for samples of ``input_shape``."""
    networks = {}
    if config.architecture == "vgg":
        networks = {
            "encoder": VGGEncoder(config.latent_dim, list(config.vgg_filters), name="encoder"),
            "decoder": VGGDecoder(input_shape, list(config.vgg_filters), likelihood, name="decoder"),
        }
    return DCGMM(
        input_shape,
        num_clusters=num_clusters,
        latent_dim=config.latent_dim,
        likelihood=likelihood,
        kl_estimator=config.kl_estimator,
        seed=seed,
        pair_loss=config.pair_loss,
        **networks,
    )


def pretrained_model(
    build: Callable[[int], DCGMM],
    x: np.ndarray,
    *,
    seed: int,
    epochs: int,
    batch_size: int,
    name: str,
    cache_dir: Path | None,
    verbose: int | str = 0,
) -> DCGMM:
    """The model ``build(seed)`` after its (cached) autoencoder pretraining on ``x`` (checked already).

    The cache file in ``cache_dir`` (None: no cache) is named by ``name``, the seed and a hash of what the
    weights depend on.
    """
    # The one global seed of the recipe: Keras' default initializers and tf.data's shuffle of the pretraining draw
    # from the process's seeds (passing them explicitly would change every pretrained model, and the results).
    keras.utils.set_random_seed(seed)
    model = build(seed)
    model_config = model.get_config()  # what the pretrained weights depend on:
    settings = {k: model_config[k] for k in ("encoder", "decoder", "num_clusters", "min_variance", "seed")}
    settings.update(pretrain_epochs=epochs, pretrain_batch_size=batch_size, data=array_hash(x))
    file_name = f"pretrain-{name}-seed{seed}-{settings_hash(settings)}.weights.h5"
    cache = None if cache_dir is None else cache_dir / file_name
    cached = pretrain_checked(
        model, x, epochs=epochs, batch_size=batch_size, seed=seed, cache_path=cache, verbose=verbose
    )
    logging.info("pretrained weights %s", cache_note(cached, cache))
    return model


def pretraining_seed(config: RunConfig) -> int:
    """The seed of the pretraining: ``config.pretrain_seed``, or the run's seed when it is -1."""
    return config.seed if config.pretrain_seed < 0 else config.pretrain_seed


def with_chosen_clusters(config: RunConfig, run: PreparedRun, runtime: RuntimeConfig) -> PreparedRun:
    """``run`` with K chosen from its pairs on the pretrained embedding (``config.num_clusters=0``).

    The autoencoder is pretrained as for a 2-cluster model (cached like any pretraining), K is chosen in
    :data:`dcgmm_tf.cluster_count.DEFAULT_CANDIDATES` by :func:`dcgmm_tf.cluster_count.choose_num_clusters`, and
    the run then trains as one with ``num_clusters=K`` would.
    """
    model = pretrained_model(
        functools.partial(make_model, config, run.inputs.x_train.shape[1:], run.data.likelihood, 2),
        run.inputs.x_train,
        seed=pretraining_seed(config),
        epochs=config.pretrain_epochs,
        batch_size=config.pretrain_batch_size,
        name=run.data.name,
        cache_dir=cache_folder(runtime),
        verbose=runtime.verbose,
    )
    count = choose_num_clusters(model.embed(run.inputs.x_train), run.constraints, seed=config.seed)
    logging.info("K chosen from the pairs: %d (%s)", count.num_clusters, count.criterion)
    return dataclasses.replace(run, num_clusters=count.num_clusters)


def started_model(config: RunConfig, run: PreparedRun, runtime: RuntimeConfig) -> DCGMM:
    """The model of ``config`` after pretraining and the start of ``config.cluster_init`` on ``run``."""
    seed = config.seed
    pretrain_seed = pretraining_seed(config)
    x_train, y_train = run.inputs.x_train, run.inputs.y_train
    build = functools.partial(make_model, config, x_train.shape[1:], run.data.likelihood, run.num_clusters)
    model = pretrained_model(
        build,
        x_train,
        seed=pretrain_seed,
        epochs=config.pretrain_epochs,
        batch_size=config.pretrain_batch_size,
        name=run.data.name,
        cache_dir=cache_folder(runtime),
        verbose=runtime.verbose,
    )
    start_mixture(
        model,
        x_train,
        config.cluster_init,
        run.constraints,
        labels=y_train,
        labels_per_class=config.init_labels_per_class,
        num_components=config.init_components or None,
        seed=seed,
        gmm_seed=pretrain_seed,
    )
    if pretrain_seed != seed:  # the training itself (sampling, batches) follows the run's seed
        pretrained = model
        model = build(seed)
        model.set_weights(pretrained.get_weights())
    return model


def fit_config(
    model: DCGMM,
    config: RunConfig,
    x: np.ndarray,
    constraints: ConstraintSet,
    runtime: RuntimeConfig,
    *,
    epochs: int,
    run_dir: Path | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> dict[str, list]:
    """:func:`dcgmm_tf.fitting.fit_mixture` with the arguments of ``config`` and ``runtime``: ``epochs`` epochs,
    restarts every ``config.restart_every`` epochs (the strategies that use links, with constraints), then
    ``callbacks``."""
    schedule = FitSchedule(
        epochs,
        batch_size=config.batch_size,
        seed=config.seed,
        layout=config.layout,
        learning_rate=config.learning_rate,
        lr_decay=config.lr_decay,
        lr_decay_epochs=config.lr_decay_epochs,
        clipnorm=config.clipnorm,
        lr_schedule=config.lr_schedule,
    )
    run_callbacks = []
    if config.cluster_init in LINK_START_STRATEGIES and config.restart_every and len(constraints) > 0:
        run_callbacks.append(
            ClusterRestart(
                x, constraints, config.restart_every, config.cluster_init, config.init_components or None, config.seed
            )
        )
    strategy = None if runtime.strategy == "default" else distribution_strategy(runtime.strategy)
    return fit_mixture(
        model,
        x,
        constraints,
        schedule,
        [*run_callbacks, *callbacks],
        run_dir,
        backup_name=f"backup-{config.key()}",
        strategy=strategy,
        jit_compile=runtime.jit_compile,
        steps_per_execution=runtime.steps_per_execution,
        verbose=runtime.verbose,
    )


def train_dcgmm(
    config: RunConfig, run: PreparedRun, runtime: RuntimeConfig, callbacks: Sequence[keras.callbacks.Callback] = ()
) -> TrainedModel:
    """DC-GMM (VaDE without constraints): pretraining, the initial mixture, then ``config.epochs`` of C-ELBO
    (with ``callbacks`` after the recipe's own)."""
    if run.num_clusters == 0:
        run = with_chosen_clusters(config, run, runtime)
    x_train, _, x_test, y_test = run.inputs
    model = started_model(config, run, runtime)
    start_acc = float("nan")  # without a test split, nothing is scored
    if len(x_test):
        start_acc = metrics.cluster_accuracy(y_test, predict_clusters(model, x_test, runtime.eval_batch_size))
        logging.info("test ACC of the initial mixture: %.4f", start_acc)
    if runtime.strategy != "default":  # pretrained on one device, trained on the strategy's replicas
        with distribution_strategy(runtime.strategy).scope():
            replicated = make_model(config, x_train.shape[1:], run.data.likelihood, run.num_clusters, config.seed)
        replicated.set_weights(model.get_weights())
        model = replicated
    scores = []  # the test metrics every runtime.eval_every epochs and after the last
    if len(x_test):
        scores.append(ClusteringMetrics(x_test, y_test, every=runtime.eval_every, batch_size=runtime.eval_batch_size))
    history = fit_config(
        model,
        config,
        x_train,
        run.constraints,
        runtime,
        epochs=config.epochs,
        run_dir=run.run_dir,
        callbacks=[*scores, *callbacks],
    )
    if run.run_dir is not None:
        write_atomically(run.run_dir / "model.keras", model.save, checksum=True)
    return TrainedModel(model, history, start_acc, scores[0].clusters if scores else None)


Trainer = Callable[[RunConfig, PreparedRun, RuntimeConfig], TrainedModel]

# The trainer of each method.
TRAINERS: dict[str, Trainer] = {
    "dcgmm": train_dcgmm,
    "vade": train_dcgmm,
    "pckmeans": train_pckmeans,
    "sdec": train_dec,
    "cidec": train_dec,
}


def train_prepared(
    config: RunConfig,
    run: PreparedRun,
    runtime: RuntimeConfig = RuntimeConfig(),
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> TrainedModel:
    """Trains ``config.method`` on the prepared ``run``, under the precision policy of ``config``; ``callbacks``
    (dcgmm and vade only) join the training's own."""
    if callbacks and config.method not in MIXTURE_METHODS:
        raise ValueError(f"callbacks apply to {MIXTURE_METHODS} only, not {config.method}")
    with precision_policy(config.mixed_precision):
        if callbacks:
            return train_dcgmm(config, run, runtime, callbacks)
        return TRAINERS[config.method](config, run, runtime)


def train(
    config: RunConfig,
    data: Dataset,
    constraints: ConstraintSet,
    *,
    num_clusters: int | None = None,
    run_dir: str | Path | None = None,
    runtime: RuntimeConfig = RuntimeConfig(),
) -> TrainedModel:
    """Trains ``config.method`` on ``data.x_train`` with ``constraints`` (indexing ``data.x_train``).

    ``num_clusters`` defaults to ``config.num_clusters`` or the number of classes; with a ``run_dir`` the run
    writes its history, logs, backups and model there (and resumes from a backup of the same configuration).
    The test split is scored during training (``eval_every``) unless it is empty; the labels of the training
    split are used only by ``cluster_init="labels"``. The data is used as given (no subsets).
    """
    run = prepare_run(
        config, data, constraints=constraints, num_clusters=num_clusters, run_dir=run_dir, use_subsets=False
    )
    return train_prepared(config, run, runtime)
