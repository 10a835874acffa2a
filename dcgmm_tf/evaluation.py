"""One run of a configuration, scored: what ``python -m experiments.run`` does for one seed.

``train_and_evaluate(config, data)`` prepares the run (:func:`dcgmm_tf.prepared.prepare_run`: subsets,
constraints, K, run folder), trains it (:func:`dcgmm_tf.training.train_prepared`) and scores the test split and
the training constraints into one results row (:func:`results_row`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import keras
import numpy as np

from dcgmm_tf import metrics
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.data import DataSplits
from dcgmm_tf.prepared import PreparedRun, prepare_run, run_dir_of
from dcgmm_tf.trainer_base import TrainedModel, predict_clusters
from dcgmm_tf.training import train_prepared


class RunResult(NamedTuple):
    """What a run gives.

    Attributes:
      row: Its results row (see :func:`results_row`).
      trained: The trained model.
      y_test: The test labels the row's scores come from.
      test_clusters: The predicted cluster of each test sample.
    """

    row: dict[str, Any]
    trained: TrainedModel
    y_test: np.ndarray
    test_clusters: np.ndarray


def results_row(
    config: RunConfig,
    run: PreparedRun,
    trained: TrainedModel,
    test_clusters: np.ndarray,
    train_seconds: float,
    runtime: RuntimeConfig,
) -> dict[str, Any]:
    """The results row of a trained run: its scores on the test split, the satisfaction of the training
    constraints (NaN without constraints), ``start_acc`` (the test ACC of the initial clustering), ``num_pairs``
    (the pairs answered) and ``training_pairs`` (the constraints it trained with: the answers and, with
    ``spread_neighbours``, their spread copies), its settings, ``train_seconds`` and ``config`` (``config.key()``);
    with ``num_clusters=0`` also ``chosen_k``, the K chosen from the pairs.
    """
    constraints = run.constraints
    scores = metrics.clustering_scores(run.inputs.y_test, test_clusters)
    chosen = {"chosen_k": trained.model.num_clusters} if config.num_clusters == 0 else {}
    satisfaction = float("nan")
    if len(constraints):
        train_clusters = predict_clusters(trained.model, run.inputs.x_train, runtime.eval_batch_size)
        satisfaction = metrics.constraint_satisfaction(constraints, train_clusters)
    return {
        "dataset": run.data.name,
        "method": config.method,
        "seed": config.seed,
        "num_pairs": len(run.answers),
        "training_pairs": len(constraints),
        "q": config.q,
        "alpha": float(np.abs(constraints.weight).max()) if len(constraints) else 0.0,
        "epochs": config.epochs,
        "acc": scores["acc"],
        "nmi": scores["nmi"],
        "ari": scores["ari"],
        "constraint_satisfaction": satisfaction,
        "start_acc": trained.start_acc,
        "train_seconds": round(train_seconds, 1),
        "n_train": len(run.data.x_train),
        "n_test": len(run.data.x_test),
        "config": config.key(),
        **chosen,
    }


def train_and_evaluate(
    config: RunConfig,
    data: DataSplits,
    runtime: RuntimeConfig = RuntimeConfig(),
    callbacks: Callable[[PreparedRun], Sequence[keras.callbacks.Callback]] | None = None,
) -> RunResult:
    """One run of ``config`` on ``data``: the prepared run, its training, and its results row. ``callbacks``,
    given the prepared run, makes extra callbacks for the training (dcgmm and vade)."""
    run = prepare_run(config, data, run_dir=run_dir_of(config, data.name, runtime))
    start = time.perf_counter()
    trained = train_prepared(config, run, runtime, callbacks(run) if callbacks else ())
    train_seconds = time.perf_counter() - start
    test_clusters = trained.test_clusters  # scored after the last epoch already, or not
    if test_clusters is None:
        test_clusters = predict_clusters(trained.model, run.inputs.x_test, runtime.eval_batch_size)
    row = results_row(config, run, trained, test_clusters, train_seconds, runtime)
    return RunResult(row, trained, run.inputs.y_test, test_clusters)
