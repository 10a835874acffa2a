"""What a run is and what it leaves: the prepared run it trains on, the trained model, the scored result."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, NamedTuple

import keras
import numpy as np

from dcgmm_tf import runtime
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data import DataSplits
from dcgmm_tf.model import DCGMM


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


@dataclasses.dataclass
class TrainedModel:
    """A trained model, its per-epoch history, the test accuracy of its initial clustering (NaN if none) and, where
    the training scored the test split after its last epoch, the predicted cluster of each test sample."""

    model: Any
    history: dict[str, list]
    start_acc: float
    test_clusters: np.ndarray | None = None


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


def predict_clusters(model: Any, x: np.ndarray, batch_size: int = 1024) -> np.ndarray:
    """The cluster of each row of ``x``: a PCKMeans prediction, or the argmax of a Keras model's output."""
    if isinstance(model, DCGMM):
        return model.cluster_probabilities(x, batch_size).argmax(-1)
    if isinstance(model, keras.Model):
        with runtime.no_retracing_warning():  # each baseline's model traces its predict function once
            return model.predict(x, batch_size=batch_size, verbose=0).argmax(-1)
    return model.predict(x)
