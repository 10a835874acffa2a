"""The training recipe of every method, from a :class:`~dcgmm_tf.config.RunConfig` to a trained model.

``train(config, data, constraints)`` trains ``config.method`` on your own data and constraints::

    config = RunConfig(epochs=100, seed=0)
    data = load_dataset("fashion")
    constraints = make_constraints(config, data.y_train)
    trained = train(config, data, constraints, run_dir="runs/fashion")
    trained.model.predict(data.x_test).argmax(-1)

DC-GMM's recipe: the started model of :mod:`dcgmm_tf.starting` (cached autoencoder pretraining, the start of the
mixture), then :func:`dcgmm_tf.fitting.fit_mixture`. With :mod:`dcgmm_tf.starting`, this module is the one place
that translates a ``RunConfig`` (and a :class:`~dcgmm_tf.config.RuntimeConfig`) into the explicit arguments of
those library calls (:func:`fit_config`), and it applies the config's precision policy around the whole training
(:func:`dcgmm_tf.process_state.precision_policy`), so a Python call trains as the command line does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np

from dcgmm_tf import metrics
from dcgmm_tf.baselines.training import train_dec, train_pckmeans
from dcgmm_tf.callbacks import ClusteringMetrics, ClusterRestart
from dcgmm_tf.config import LINK_START_STRATEGIES, MIXTURE_METHODS, RunConfig, RuntimeConfig
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data import DataSplits
from dcgmm_tf.fitting import FitSchedule, fit_mixture
from dcgmm_tf.model import DCGMM
from dcgmm_tf.prepared import PreparedRun, prepare_run
from dcgmm_tf.process_state import precision_policy, process_seeds
from dcgmm_tf.runtime import distribution_strategy
from dcgmm_tf.starting import make_model, started_model, with_chosen_clusters
from dcgmm_tf.storage import write_atomically
from dcgmm_tf.trainer_base import TrainedModel, predict_clusters


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
                x,
                constraints,
                config.restart_every,
                config.cluster_init,
                config.init_components or None,
                config.seed,
                em_starts=config.init_em_starts,
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
        steps_per_execution=runtime.steps_per_execution or None,
        verbose=runtime.verbose,
        check_inputs=False,  # checked by prepare_run
    )


def train_dcgmm(
    config: RunConfig, run: PreparedRun, runtime: RuntimeConfig, callbacks: Sequence[keras.callbacks.Callback] = ()
) -> TrainedModel:
    """DC-GMM (VaDE without constraints): pretraining, the initial mixture, then ``config.epochs`` of C-ELBO
    (with ``callbacks`` after the recipe's own)."""
    if run.num_clusters == 0:
        x = run.inputs.x_train

        def probe_fit(model: DCGMM, pairs: ConstraintSet) -> dict[str, list]:  # a probe's training
            return fit_config(model, config, x, pairs, runtime, epochs=config.probe_epochs)

        run, pretrained = with_chosen_clusters(config, run, runtime, probe_fit)
    else:
        pretrained = None
    x_train, _, x_test, y_test = run.inputs
    model = started_model(config, run, runtime, pretrained)
    start_acc = float("nan")  # without a test split, nothing is scored
    if len(x_test):
        start_acc = metrics.cluster_accuracy(y_test, predict_clusters(model, x_test, runtime.eval_batch_size))
        logging.info("test ACC of the initial mixture: %.4f", start_acc)
    if runtime.strategy != "default":  # pretrained on one device, trained on the strategy's replicas
        with distribution_strategy(runtime.strategy).scope(), process_seeds(config.seed):
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
    data: DataSplits,
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
