"""The fit loop of DC-GMM: epochs of C-ELBO from a model's current weights and mixture, with explicit arguments.

:func:`fit_mixture` takes the model, the training data, its constraints, a :class:`FitSchedule` (batches,
learning rate and its decay, clipping), the callbacks of the run (restarts, test metrics) and an optional run
folder; it needs no :class:`~dcgmm_tf.config.RunConfig` (``dcgmm_tf.recipe`` translates one into these
arguments). The optimizer is made by :func:`make_optimizer` from :func:`learning_rate_schedule`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from dcgmm_tf.callbacks import EpochProgress, NonFiniteLossGuard, TrainingBackup, trim_history
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data.pipeline import checked_inputs, epoch_dataset, epoch_row_dataset, steps_per_epoch
from dcgmm_tf.distribute import common_epoch, distributed_epoch_dataset, is_multi_worker
from dcgmm_tf.model import DCGMM
from dcgmm_tf.optimizers import FusedAdam


@dataclasses.dataclass(frozen=True)
class FitSchedule:
    """How :func:`fit_mixture` trains.

    Attributes:
      epochs: Epochs to train (counting those of a resumed run).
      batch_size: Batch size.
      seed: Seed of the batches (with the epoch number).
      layout: Where the constraint pairs go (see :func:`dcgmm_tf.data.epoch_batches`).
      learning_rate: Initial Adam learning rate.
      lr_decay: Factor of the staircase learning-rate decay.
      lr_decay_epochs: Epochs between two decays.
      lr_schedule: ``"staircase"`` (the paper's: times ``lr_decay`` every ``lr_decay_epochs``) or ``"cosine"``
        (not the paper's: a cosine from ``learning_rate`` down to 1 % of it at the last step of ``epochs``).
      clipnorm: Global gradient norm to clip each step's gradient to (0: no clipping).
    """

    epochs: int
    batch_size: int = 256
    seed: int = 0
    layout: str = "separate"
    learning_rate: float = 1e-3
    lr_decay: float = 0.9
    lr_decay_epochs: int = 20
    clipnorm: float = 300.0
    lr_schedule: str = "cosine"  # RunConfig's default; the estimator passes its own (dcgmm_tf.deep_fit.LR_SCHEDULE)


def learning_rate_schedule(
    schedule: FitSchedule, steps_per_epoch: int
) -> keras.optimizers.schedules.LearningRateSchedule:
    """The learning rate by step: ``learning_rate``, times ``lr_decay`` every ``lr_decay_epochs`` epochs, or with
    ``lr_schedule="cosine"`` a cosine from ``learning_rate`` to 1 % of it over ``epochs``."""
    if schedule.lr_schedule == "cosine":
        return keras.optimizers.schedules.CosineDecay(
            schedule.learning_rate, decay_steps=schedule.epochs * steps_per_epoch, alpha=0.01
        )
    return keras.optimizers.schedules.ExponentialDecay(
        schedule.learning_rate,
        decay_steps=schedule.lr_decay_epochs * steps_per_epoch,
        decay_rate=schedule.lr_decay,
        staircase=True,
    )


def make_optimizer(schedule: FitSchedule, steps_per_epoch: int) -> keras.optimizers.Optimizer:
    """Adam with the :func:`learning_rate_schedule` and the gradient clipping of ``schedule``."""
    return FusedAdam(learning_rate_schedule(schedule, steps_per_epoch), global_clipnorm=schedule.clipnorm or None)


STEPS_PER_CALL = 32
"""Training steps per compiled call when none is asked for (docs/performance.md, "The loop around the step")."""
SHORT_FIT_STEPS = 256
"""A fit of fewer steps runs one step per call when none is asked for: tracing Keras' multi-step loop (a
``while_loop`` around the step) costs about as much as 300 steps of the loop's overhead save (measured on tiny fits,
docs/performance.md)."""


def steps_per_call(total_steps: int, requested: int | None = None) -> int:
    """The training steps per compiled call of a fit of ``total_steps`` steps (epochs x steps per epoch).

    ``requested`` when given; otherwise :data:`STEPS_PER_CALL`, or one for a fit shorter than
    :data:`SHORT_FIT_STEPS`. The weights never depend on it (tested), only the time.
    """
    if requested is not None:
        if requested < 1:
            raise ValueError(f"steps_per_execution must be >= 1, got {requested}")
        return requested
    return 1 if total_steps < SHORT_FIT_STEPS else STEPS_PER_CALL


def distributed_steps_per_execution(steps: int, requested: int, multi_worker: bool) -> int:
    """The steps per compiled call under a tf.distribute strategy.

    A distributed dataset has no end, so a call of ``requested`` steps would run across an epoch's end whenever
    it does not divide the epoch's ``steps`` (every epoch would then train a whole number of calls, and the epoch
    ends that restarts, evaluation and backups wait for would drift from one device's). Under a strategy a call
    therefore takes the largest divisor of ``steps`` up to ``requested``; under several workers it takes one step,
    as a multi-step call fails in their collectives.

    Args:
      steps: Training steps per epoch.
      requested: The steps per call asked for.
      multi_worker: Whether the strategy spans several workers.

    Returns:
      The steps per call to use (logged when it differs from ``requested``).
    """
    chosen = 1 if multi_worker else max(d for d in range(1, min(requested, steps) + 1) if steps % d == 0)
    if chosen != requested:
        reason = (
            "a multi-step call fails in the collectives of several workers"
            if multi_worker
            else f"the largest divisor of the {steps} steps per epoch up to {requested}"
        )
        logging.info("steps_per_execution=%d under the strategy (%s)", chosen, reason)
    return chosen


def _unnamed(config: dict) -> dict:
    """An optimizer's configuration without its name (Keras numbers each new optimizer's)."""
    return {key: value for key, value in config.items() if key != "name"}


def _same_step(model: DCGMM, optimizer: keras.optimizers.Optimizer, steps_per_execution: int, other: bool) -> bool:
    """Whether ``model`` holds a compiled step that trains as a compile with ``optimizer`` and
    ``steps_per_execution`` would (``other``: a strategy or XLA, never reused)."""
    current = model.optimizer if model.compiled else None
    return (
        current is not None
        and not other
        and not model.jit_compile
        and model.train_function is not None
        and model.steps_per_execution == steps_per_execution
        and type(current) is type(optimizer)
        and _unnamed(current.get_config()) == _unnamed(optimizer.get_config())
    )


def fit_mixture(
    model: DCGMM,
    x: np.ndarray,
    constraints: ConstraintSet,
    schedule: FitSchedule,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    run_dir: Path | None = None,
    *,
    backup_name: str = "backup",
    strategy: tf.distribute.Strategy | None = None,
    jit_compile: bool = False,
    steps_per_execution: int | None = None,
    verbose: int | str = 2,
    check_inputs: bool = True,
    reuse_step: bool = False,
) -> dict[str, list]:
    """Trains ``model`` from its current weights and mixture for ``schedule.epochs`` epochs of C-ELBO.

    The model is compiled with a fresh :func:`make_optimizer`, or, with ``reuse_step``, keeps the step that an
    earlier ``fit_mixture`` of the same ``x``, steps and optimizer compiled, its optimizer put back to a fresh one's
    state (no new tracing; the same weights to the bit). Each epoch the ``callbacks`` run first (e.g. a
    :class:`~dcgmm_tf.callbacks.ClusterRestart`, then :class:`~dcgmm_tf.callbacks.ClusteringMetrics`), then a
    :class:`~dcgmm_tf.callbacks.NonFiniteLossGuard` that rolls back to the last good weights.

    Args:
      model: The model, built (under ``strategy``'s scope when one is given).
      x: The training data.
      constraints: The constraints, indexing the rows of ``x``.
      schedule: The batches, learning rate and clipping.
      callbacks: Keras callbacks, run before the guard and the files.
      run_dir: With a folder: the history CSV, TensorBoard logs and a backup every epoch in
        ``<run_dir>/<backup_name>``, from which a killed run resumes.
      backup_name: The backup folder's name; it must belong to one configuration.
      strategy: The tf.distribute strategy whose replicas train (None: one device, no strategy).
      jit_compile: Compile the training step with XLA.
      steps_per_execution: Training steps per compiled call (None: :func:`steps_per_call`'s choice). Off a
        strategy and XLA, an epoch of at most that many steps is one call, and all epochs read one iterator.
      verbose: Keras verbosity.
      check_inputs: Check ``x`` and ``constraints`` (:func:`dcgmm_tf.data.pipeline.checked_inputs`); off for
        inputs checked already, as the library's runs do (:func:`dcgmm_tf.recipe.prepare_run`, the estimator's
        ``fit``), so each input is checked once per run.
      reuse_step: Keep ``model``'s compiled step where it was compiled by a fit of this ``x`` (the same array: the
        step holds the data it was traced with), the same steps per epoch and call, and an optimizer of the same
        configuration; without a strategy or XLA only.

    Returns:
      The Keras history.

    Raises:
      FloatingPointError: When the loss became non-finite (the model then holds its last good weights).
    """
    distributed, strategy = strategy is not None, strategy or tf.distribute.get_strategy()
    if check_inputs:
        x, constraints, steps = checked_inputs(x, constraints, schedule.batch_size, schedule.layout)
    else:
        steps = steps_per_epoch(len(x), constraints, schedule.batch_size, schedule.layout)
    steps_per_execution = steps_per_call(steps * schedule.epochs, steps_per_execution)
    if distributed:
        steps_per_execution = distributed_steps_per_execution(steps, steps_per_execution, is_multi_worker(strategy))
    # An epoch that fits in one call (the estimator's on small data) is one call, and all epochs read one iterator.
    one_iterator = not (distributed or jit_compile) and steps <= steps_per_execution
    if one_iterator:
        steps_per_execution = steps
    with strategy.scope():
        optimizer = make_optimizer(schedule, steps)
        reuse = reuse_step and _same_step(model, optimizer, steps_per_execution, distributed or jit_compile)
        if not reuse:
            model.compile(optimizer=optimizer, jit_compile=jit_compile, steps_per_execution=steps_per_execution)
        (optimizer if reuse else model.optimizer).build(model.trainable_variables)  # under the strategy, as the model's
    if reuse:  # no step taken: Adam's moments and step count as a new optimizer's
        for variable, fresh in zip(model.optimizer.variables, optimizer.variables, strict=True):
            variable.assign(fresh)
    guard = NonFiniteLossGuard(run_dir / "last_good.weights.h5" if run_dir else None)
    callbacks = [*callbacks, guard]
    initial_epoch = 0
    if run_dir is not None:
        # A killed run restarted with the same configuration resumes after its last finished epoch.
        if distributed and is_multi_worker(strategy):  # workers killed together resume from one epoch
            backup = TrainingBackup(run_dir / backup_name, keep=2)
            initial_epoch = backup.restore(model, lambda epochs: common_epoch(strategy, epochs, schedule.epochs))
        else:
            backup = TrainingBackup(run_dir / backup_name)
            initial_epoch = backup.restore(model)
        if initial_epoch:
            trim_history(run_dir / "history.csv", initial_epoch)
        callbacks += [
            keras.callbacks.CSVLogger(str(run_dir / "history.csv"), append=initial_epoch > 0),
            keras.callbacks.TensorBoard(str(run_dir / "tensorboard")),
            backup,
        ]
    callbacks.append(EpochProgress())
    args = (schedule.batch_size, schedule.seed, schedule.layout, initial_epoch)
    # A dataset that runs on across epochs needs fit to be told where each epoch ends.
    fit_args = {"steps_per_epoch": steps} if distributed or one_iterator else {}
    source = contextlib.nullcontext()
    if distributed:
        data = distributed_epoch_dataset(strategy, x, constraints, *args)
    elif jit_compile:  # an XLA step would take the whole captured x to its device: tf.data makes the batches
        data = epoch_dataset(x, constraints, steps, *args)
    else:  # the step makes each batch itself, on the host: the input pipeline only slices the epoch's rows
        epochs = schedule.epochs if one_iterator else None
        data = epoch_row_dataset(len(x), constraints, steps, *args, epochs=epochs, pairs=len(constraints) > 0)
        source = model.batch_source(x)
    with source:
        history = model.fit(
            data,
            epochs=schedule.epochs,
            initial_epoch=initial_epoch,
            callbacks=callbacks,
            verbose=verbose,
            shuffle=False,
            **fit_args,
        )
    guard.raise_if_stopped()
    return history.history
