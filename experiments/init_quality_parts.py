"""The measurement of ``experiments.init_quality``, flag-free: the test ACC of each start strategy by pretraining
length (see that runner's docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np

from dcgmm_tf import DCGMM, ConstraintSet, metrics
from dcgmm_tf.cluster_init import START_STRATEGIES, cluster_start
from dcgmm_tf.data import DataSplits
from dcgmm_tf.pretraining import cluster_prior_from_labels, pretrain_autoencoder
from experiments import results


def check_arguments(pretrain_epochs: Sequence[int], strategies: Sequence[str]) -> list[int]:
    """The pretraining epochs in increasing order; ``ValueError`` for epochs under 1 or an unknown strategy."""
    epochs = sorted(int(e) for e in pretrain_epochs)
    if not epochs or epochs[0] < 1:
        raise ValueError("--pretrain_epochs must all be at least 1")
    if not set(strategies) <= set(START_STRATEGIES):
        raise ValueError(f"--strategies must be among {START_STRATEGIES}, got {list(strategies)}")
    return epochs


def start_quality(
    data: DataSplits,
    seeds: Sequence[int],
    pretrain_epochs: Sequence[int],
    strategies: Sequence[str],
    gmm_states: int,
    num_constraints: int,
    pretrain_on: str,
    output_dir: str | Path,
) -> None:
    """Appends one row per (seed, pretraining epochs, strategy, GMM state) to ``<output_dir>/init_quality.csv``.

    Args:
      data: The data set.
      seeds: Pretraining seeds (each also draws the constraints).
      pretrain_epochs: Autoencoder epochs at which the starts are computed (one autoencoder trained on in turn).
      strategies: Start strategies, among ``dcgmm_tf.cluster_init.START_STRATEGIES``.
      gmm_states: Random states of the starts per checkpoint and strategy.
      num_constraints: Constraints drawn with the seed, for the satisfaction column and the constrained starts.
      pretrain_on: "train" (the training split) or "train_test" (training and test images, the authors' code).
      output_dir: Where init_quality.csv goes.

    Raises:
      ValueError: For pretraining epochs under 1 or an unknown strategy.
    """
    epochs = check_arguments(pretrain_epochs, strategies)
    x_train, y_train, x_test, y_test = data.x_train, data.y_train, data.x_test, data.y_test
    x_pretrain = x_train if pretrain_on == "train" else np.concatenate([x_train, x_test])
    output = Path(output_dir) / "init_quality.csv"
    for seed in seeds:
        keras.utils.set_random_seed(seed)
        constraints = ConstraintSet.from_labels(y_train, num_constraints, seed=seed)
        model = DCGMM(x_train.shape[1:], num_clusters=data.num_classes, likelihood=data.likelihood, seed=seed)
        done = 0
        for total in epochs:
            # Continue the same autoencoder; a new shuffling seed per stretch keeps the order fresh.
            pretrain_autoencoder(model, x_pretrain, epochs=total - done, seed=seed + done, verbose=0)
            done = total
            cluster_prior_from_labels(model, x_train, y_train)
            aligned_acc = metrics.cluster_accuracy(y_test, model.predict(x_test, verbose=0).argmax(-1))
            z = model.embed(x_train)
            for strategy, state in ((s, k) for s in strategies for k in range(gmm_states)):
                start = cluster_start(
                    z, constraints, model.num_clusters, strategy, seed=state, min_variance=2 * model.min_variance
                )
                model.set_cluster_parameters(start.means, start.variances)
                row = {
                    "dataset": data.name,
                    "seed": seed,
                    "pretrain_on": pretrain_on,
                    "pretrain_epochs": total,
                    "strategy": strategy,
                    "gmm_state": state,
                    "test_acc": metrics.cluster_accuracy(y_test, model.predict(x_test, verbose=0).argmax(-1)),
                    "constraint_satisfaction": metrics.constraint_satisfaction(
                        constraints, model.predict(x_train, verbose=0).argmax(-1)
                    ),
                    "label_aligned_test_acc": aligned_acc,
                }
                results.append_row(output, row)
                print(row, flush=True)
