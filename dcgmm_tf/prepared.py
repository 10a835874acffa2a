"""A prepared run: what one run of a :class:`~dcgmm_tf.config.RunConfig` trains on, computed once.

:func:`prepare_run` cuts the data to the configured subsets (recording which rows it kept), shapes the splits for
the networks, checks them, draws or reads the constraints, fixes the number of clusters K (from the whole data
set, before the subsets) and makes the run folder. The runner (:func:`dcgmm_tf.evaluation.train_and_evaluate`),
the active loop and the figure runners all start from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dcgmm_tf import validation
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.constraints import ConstraintSet, spread
from dcgmm_tf.data import DataSplits
from dcgmm_tf.data.features import with_input_features


class Inputs(NamedTuple):
    """A data set's splits as the model takes them (images for convolutional networks)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@dataclasses.dataclass(frozen=True)
class PreparedRun:
    """What a run trains and is scored on.

    Attributes:
      data: The data cut to the run's subsets (flat features, as loaded).
      inputs: The splits of ``data`` shaped for the run's networks.
      constraints: The training constraints, indexing ``data.x_train``.
      answers: The pairs answered (drawn, read or given) before they were spread to neighbours: the pairs the run
        was asked to use, ``constraints`` without spreading.
      num_clusters: The number of clusters K (0: to be chosen from the pairs when the model is pretrained).
      run_dir: Where the run writes its history, logs, backups and model (None: nowhere).
      train_indices: The rows of the whole training split that ``data.x_train`` holds, sorted.
      test_indices: The rows of the whole test split that ``data.x_test`` holds, sorted.
    """

    data: DataSplits
    inputs: Inputs
    constraints: ConstraintSet
    answers: ConstraintSet
    num_clusters: int
    run_dir: Path | None
    train_indices: np.ndarray
    test_indices: np.ndarray


def subset_indices(data: DataSplits, config: RunConfig) -> tuple[np.ndarray, np.ndarray]:
    """The rows of random subsets of ``config.max_train_samples`` / ``max_test_samples`` (drawn with the seed).

    Returns:
      The sorted rows of the training split and of the test split (all rows where there is no limit).
    """
    rng = np.random.default_rng(config.seed)
    kept = []
    for x, limit in ((data.x_train, config.max_train_samples), (data.x_test, config.max_test_samples)):
        kept.append(np.sort(rng.choice(len(x), limit, replace=False)) if 0 < limit < len(x) else np.arange(len(x)))
    return kept[0], kept[1]


def subsets(data: DataSplits, config: RunConfig) -> DataSplits:
    """``data`` cut to the subsets of :func:`subset_indices`."""
    train, test = subset_indices(data, config)
    return _cut(data, train, test)


def _cut(data: DataSplits, train: np.ndarray, test: np.ndarray) -> DataSplits:
    if len(train) == len(data.x_train) and len(test) == len(data.x_test):
        return data
    return dataclasses.replace(
        data,
        x_train=data.x_train[train],
        y_train=data.y_train[train],
        x_test=data.x_test[test],
        y_test=data.y_test[test],
    )


def model_inputs(data: DataSplits, config: RunConfig) -> Inputs:
    """The splits of ``data`` shaped for ``config.architecture``."""
    shape = data.images if config.architecture == "vgg" else (lambda x: x)
    return Inputs(shape(data.x_train), data.y_train, shape(data.x_test), data.y_test)


def make_constraints(config: RunConfig, y_train: np.ndarray) -> ConstraintSet:
    """The run's constraints.

    None for VaDE; ``config.constraints_file`` (every |W| set to ``config.alpha`` when that is given, so a file of
    +1/-1 answers works); or drawn from the training labels.
    """
    if config.method == "vade":
        return ConstraintSet.empty(len(y_train))
    if config.constraints_file:
        read = ConstraintSet.from_csv(config.constraints_file, len(y_train))
        if config.alpha is None:
            return read
        return ConstraintSet(read.i, read.j, np.sign(read.weight) * config.alpha, read.num_samples)
    return ConstraintSet.from_labels(
        y_train,
        config.num_pairs,
        alpha=config.alpha,
        q=config.q,
        link_type=config.link_type,
        seed=config.seed,
        transitive_closure=config.transitive_closure,
    )


def spread_to_neighbours(constraints: ConstraintSet, x: np.ndarray, k: int, factor: float) -> ConstraintSet:
    """``constraints`` and each answer spread to the ``k`` nearest neighbours in ``x`` (the samples' inputs) of either
    end of its pair, at ``factor`` times its weight (not the paper's; see :mod:`dcgmm_tf.constraints.spread`); with
    ``k`` 0, ``constraints`` as they are."""
    if not len(constraints) or not k:
        return constraints
    i, j, weight = constraints.i, constraints.j, constraints.weight
    ends = np.unique(np.concatenate([i, j]))
    found = spread.nearest_neighbours(x, ends, k)
    return ConstraintSet(*spread.spread_pairs(i, j, weight, ends, found, factor), constraints.num_samples)


def training_pairs(config: RunConfig, x_train: np.ndarray, answered: ConstraintSet) -> ConstraintSet:
    """The pairs a run of ``config`` trains with: the ``answered`` ones, spread to nearest neighbours in
    ``x_train`` when ``config.spread_neighbours`` is set (see :func:`spread_to_neighbours`)."""
    return spread_to_neighbours(answered, x_train, config.spread_neighbours, config.spread_weight)


def run_dir_of(config: RunConfig, data_name: str, runtime: RuntimeConfig) -> Path:
    """Where a run keeps its history, logs, backups and model: ``<output_dir>/runs/<method>-<data>-seed<s>``."""
    return Path(runtime.output_dir) / "runs" / f"{config.method}-{data_name}-seed{config.seed}"


def prepare_run(
    config: RunConfig,
    data: DataSplits,
    *,
    constraints: ConstraintSet | Callable[[np.ndarray], ConstraintSet] | None = None,
    num_clusters: int | None = None,
    run_dir: str | Path | None = None,
    use_subsets: bool = True,
    spread: bool = True,
) -> PreparedRun:
    """The prepared run of ``config`` on ``data``; each split is checked here, once.

    Args:
      config: The run's settings.
      data: The whole data set.
      constraints: The training constraints (indexing the training split after the subsets), or a function of
        the training labels that makes them; default: those of :func:`make_constraints`.
      num_clusters: K; default ``config.num_clusters``, the number of classes of the whole ``data`` for -1 (0:
        to be chosen by the trainer, see :func:`dcgmm_tf.starting.with_chosen_clusters`).
      run_dir: The run folder, made here (None: the run writes no files).
      use_subsets: Cut the data to the subsets of ``config`` (off: ``data`` as given).
      spread: Give the run the :func:`training_pairs` of its constraints (off: the answered pairs alone, for a
        caller that adds answers and spreads them itself, as the active loop does each round).

    Returns:
      The prepared run.

    Raises:
      ValueError: On bad data or constraints that do not index the training split.
    """
    if num_clusters is None:
        num_clusters = data.num_classes if config.num_clusters == -1 else config.num_clusters
    if use_subsets:
        train, test = subset_indices(data, config)
    else:
        train, test = np.arange(len(data.x_train)), np.arange(len(data.x_test))
    data = with_input_features(_cut(data, train, test), config.input_features)
    validation.check_data(
        data.x_train, data.y_train, num_clusters=num_clusters or None, likelihood=data.likelihood, name="x_train"
    )
    if len(data.x_test) or use_subsets:
        validation.check_data(
            data.x_test,
            data.y_test,
            num_clusters=(num_clusters or None) if use_subsets else None,
            likelihood=data.likelihood,
            name="x_test",
        )
    if constraints is None:
        constraints = make_constraints(config, data.y_train)
    elif callable(constraints):
        constraints = constraints(data.y_train)
    if constraints.num_samples != len(data.x_train):
        raise ValueError(
            f"the constraints index {constraints.num_samples} samples but x_train holds {len(data.x_train)}"
        )
    answers = constraints
    if spread:
        constraints = training_pairs(config, data.x_train, answers)
    if run_dir is not None:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
    return PreparedRun(data, model_inputs(data, config), constraints, answers, num_clusters, run_dir, train, test)
