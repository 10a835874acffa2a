"""The active-learning loop, with the training labels standing in for the person who answers.

Per seed: pretraining and the start of ``config`` with ``start_pairs`` random pairs, ``start_epochs`` of training
(kept in the cache folder, so that a strategy added later starts from the same model);
then, for every strategy from that same model, rounds of "suggest the pairs up to the next budget -> answer them
from the labels -> ``round_epochs`` more epochs from the current weights (ending with a restart of the mixture)",
each scored on the test split. Used by ``python -m experiments.active``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np

from dcgmm_tf import metrics, pair_selection
from dcgmm_tf.config import RunConfig, RuntimeConfig, check_fields, setting, settings_hash
from dcgmm_tf.constraints import ConstraintSet, default_alpha
from dcgmm_tf.data import DataSplits
from dcgmm_tf.model import DCGMM
from dcgmm_tf.pretraining import load_cached_weights, save_cached_weights
from dcgmm_tf.recipe import fit_config, prepare_run, started_model, training_pairs
from dcgmm_tf.records import PreparedRun, predict_clusters
from dcgmm_tf.runtime import cache_path, precision_policy
from dcgmm_tf.storage import array_hash, exclusive


@dataclasses.dataclass(frozen=True)
class ActiveSchedule:
    """How many pairs the person has answered when: ``start_pairs`` random pairs and ``start_epochs`` of training,
    then one round per budget (the total number of pairs after it), each with ``round_epochs`` of training."""

    start_pairs: int = setting(500, "Random pairs answered before the first round.", lower=1)
    budgets: tuple[int, ...] = setting(
        (1000, 2000, 3000, 4000, 6000), "Pairs answered after each round (increasing, above start_pairs)."
    )
    start_epochs: int = setting(30, "Epochs of training with the start_pairs before the first round.", lower=1)
    round_epochs: int = setting(
        5, "Epochs of training after each round's answers (ending with a restart of the mixture).", lower=1
    )
    final_epochs: int = setting(
        0,
        "Epochs of training after the last round, without new pairs (one more row), "
        "e.g. to compare a small budget with a larger one at equal training.",
        lower=0,
    )

    def __post_init__(self):
        check_fields(self)
        object.__setattr__(self, "budgets", tuple(int(b) for b in self.budgets))
        steps = (self.start_pairs, *self.budgets)
        if not self.budgets or any(b <= a for a, b in zip(steps, steps[1:])):
            raise ValueError(
                f"budgets must be one or more numbers of pairs, increasing from start_pairs="
                f"{self.start_pairs}, got {list(self.budgets)}"
            )


def _scores(model, x_test: np.ndarray, y_test: np.ndarray, batch_size: int) -> dict[str, float]:
    return metrics.clustering_scores(y_test, predict_clusters(model, x_test, batch_size))


def trained_start(
    config: RunConfig,
    run: PreparedRun,
    runtime: RuntimeConfig,
    epochs: int,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> DCGMM:
    """The model every strategy of the seed starts from: pretraining and the start of ``config`` on ``run`` (its
    constraints: the pairs answered before the first round), then ``epochs`` of training. Kept in the cache folder
    (keyed by the settings, the data and the answered pairs), so a strategy or a labelling session added later
    starts from the same model; ``callbacks`` see the training when it is not in the cache."""
    model = started_model(config, run, runtime)
    settings = {
        "config": config.key(),
        "seed": config.seed,
        "start_pairs": len(run.constraints),
        "pairs": array_hash(np.stack([run.constraints.i, run.constraints.j, run.constraints.weight.view(np.int32)])),
        "start_epochs": epochs,
        "data": array_hash(run.inputs.x_train),
    }
    cache = cache_path(runtime, f"active-start-{run.data.name}-seed{config.seed}-{settings_hash(settings)}.weights.h5")
    with exclusive(cache):  # the start is shared by every strategy of the seed, also across processes
        if not load_cached_weights(model, cache):
            fit_config(model, config, run.inputs.x_train, run.constraints, runtime, epochs=epochs, callbacks=callbacks)
            save_cached_weights(model, cache)
    return model


def round_pairs(
    model: DCGMM,
    config: RunConfig,
    x_train: np.ndarray,
    constraints: ConstraintSet,
    num_pairs: int,
    strategy: str,
    number: int,
    runtime: RuntimeConfig,
) -> np.ndarray:
    """The ``num_pairs`` pairs ``strategy`` asks about in round ``number`` (1, 2, ...), from the current model."""
    return pair_selection.suggest_pairs(
        model,
        x_train,
        constraints,
        num_pairs,
        strategy,
        seed=1000 * config.seed + number,
        batch_size=runtime.eval_batch_size,
    )


def train_round(
    model: DCGMM,
    config: RunConfig,
    x_train: np.ndarray,
    constraints: ConstraintSet,
    runtime: RuntimeConfig,
    number: int,
    epochs: int,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> None:
    """Round ``number``'s training: ``epochs`` more epochs of ``model`` from its current weights on ``constraints``
    (ending with a restart of the mixture), with the noise of the seed ``config.seed + number``."""
    # The noise of the round follows its seed alone: curves do not depend on the strategies run before
    # them in the process, nor on whether the start came from the cache.
    model.reseed(config.seed + number)
    fit_config(
        model,
        dataclasses.replace(config, seed=config.seed + number),
        x_train,
        constraints,
        runtime,
        epochs=epochs,
        callbacks=callbacks,
    )


def simulate(
    config: RunConfig,
    data: DataSplits,
    strategies: Sequence[str],
    schedule: ActiveSchedule = ActiveSchedule(),
    runtime: RuntimeConfig = RuntimeConfig(),
    report: Callable[[list[dict[str, Any]]], None] = lambda rows: None,
    keep_answers: Callable[[str, ConstraintSet], None] = lambda strategy, answers: None,
) -> list[dict[str, Any]]:
    """The learning curves of ``strategies`` (see :mod:`dcgmm_tf.pair_selection`) for the seed ``config.seed``.

    Each curve is a list of rows (``strategy, seed, num_pairs, acc, nmi, ari, must_links, epochs, seconds``), the
    first at ``start_pairs`` (the shared start), then one per budget; ``report`` gets each curve as soon as it is
    complete, and ``keep_answers`` the strategy's name and the pairs answered by its last round (the start's random
    pairs included, without their spread copies) just before. Returns all rows. The answers carry the confidence
    ``config.alpha`` (default 1e4) and are never wrong.
    """
    for strategy in strategies:
        if strategy not in pair_selection.SELECTION_STRATEGIES:
            raise ValueError(f"strategy must be one of {pair_selection.SELECTION_STRATEGIES}, got {strategy!r}")
    if config.method != "dcgmm":
        raise ValueError(f"active selection needs method dcgmm, got {config.method}")
    weight = config.alpha or default_alpha(0.0)
    clock = time.perf_counter()
    run = prepare_run(
        config,
        data,
        constraints=lambda y: ConstraintSet.from_labels(y, schedule.start_pairs, alpha=weight, seed=config.seed),
        spread=False,  # the budgets count answered pairs; each round spreads what has been answered
    )
    with precision_policy(config.mixed_precision):
        return _curves(config, run, strategies, schedule, runtime, report, keep_answers, weight, clock)


def _curves(
    config: RunConfig,
    run: PreparedRun,
    strategies: Sequence[str],
    schedule: ActiveSchedule,
    runtime: RuntimeConfig,
    report: Callable[[list[dict[str, Any]]], None],
    keep_answers: Callable[[str, ConstraintSet], None],
    weight: float,
    clock: float,
) -> list[dict[str, Any]]:
    """The rows of :func:`simulate` for the prepared ``run`` (its constraints: the start's random pairs)."""
    x_train, y_train, x_test, y_test = run.inputs
    start = run.constraints
    spread_run = dataclasses.replace(run, constraints=training_pairs(config, x_train, start))
    model = trained_start(config, spread_run, runtime, schedule.start_epochs)
    start_scores = _scores(model, x_test, y_test, runtime.eval_batch_size)
    start_seconds = time.perf_counter() - clock
    logging.info("seed %d: start with %d random pairs, test ACC %.4f", config.seed, len(start), start_scores["acc"])
    start_weights = model.get_weights()
    rows = []
    for strategy in strategies:
        model.set_weights(start_weights)
        constraints, trained_on, epochs = start, spread_run.constraints, schedule.start_epochs
        curve = [
            {
                "strategy": strategy,
                "seed": config.seed,
                "num_pairs": len(start),
                **start_scores,
                "must_links": int(constraints.must_link_mask.sum()),
                "epochs": epochs,
                "seconds": round(start_seconds, 1),
            }
        ]
        rounds = [(number, budget, schedule.round_epochs) for number, budget in enumerate(schedule.budgets, 1)]
        if schedule.final_epochs:
            rounds.append((len(rounds) + 1, schedule.budgets[-1], schedule.final_epochs))
        for number, budget, round_epochs in rounds:
            clock = time.perf_counter()
            if budget > len(constraints):
                pairs = round_pairs(
                    model, config, x_train, constraints, budget - len(constraints), strategy, number, runtime
                )
                constraints = pair_selection.answered(constraints, pairs, y_train, weight)
                trained_on = training_pairs(config, x_train, constraints)  # spread once per new set of answers
            train_round(model, config, x_train, trained_on, runtime, number, round_epochs)
            epochs += round_epochs
            scores = _scores(model, x_test, y_test, runtime.eval_batch_size)
            curve.append(
                {
                    "strategy": strategy,
                    "seed": config.seed,
                    "num_pairs": len(constraints),
                    **scores,
                    "must_links": int(constraints.must_link_mask.sum()),
                    "epochs": epochs,
                    "seconds": round(time.perf_counter() - clock, 1),
                }
            )
            logging.info("seed %d, %s: %d pairs, test ACC %.4f", config.seed, strategy, len(constraints), scores["acc"])
        keep_answers(strategy, constraints)
        report(curve)
        rows += curve
    return rows
